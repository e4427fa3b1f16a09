import CPKCS11
import Testing

/// A template as text for failure messages: "{CKA_SENSITIVE=00}".
private func describe(_ template: [Attribute]) -> String {
    let names: [CK_ATTRIBUTE_TYPE: String] = [
        CK_ATTRIBUTE_TYPE(CKA_TOKEN): "CKA_TOKEN", CK_ATTRIBUTE_TYPE(CKA_LABEL): "CKA_LABEL",
        CK_ATTRIBUTE_TYPE(CKA_SENSITIVE): "CKA_SENSITIVE",
        CK_ATTRIBUTE_TYPE(CKA_EXTRACTABLE): "CKA_EXTRACTABLE",
    ]
    let entries = template.map { entry in
        (names[entry.type] ?? "CKA_0x" + String(entry.type, radix: 16)) + "=" + hex(entry.value ?? [])
    }
    return "{" + entries.joined(separator: ", ") + "}"
}

/// The attributes the token alone decides (v2.40 §4.9 table 28 footnote 2/4/6): each with two
/// values a template might try.
struct TokenDecidedAttribute: Sendable, CustomTestStringConvertible {
    var name: String
    var type: CK_ATTRIBUTE_TYPE
    var values: [[UInt8]]

    var testDescription: String { name }

    static let all: [TokenDecidedAttribute] = [
        TokenDecidedAttribute(name: "CKA_ALWAYS_SENSITIVE", type: CKA_ALWAYS_SENSITIVE, values: [[1], [0]]),
        TokenDecidedAttribute(
            name: "CKA_NEVER_EXTRACTABLE", type: CKA_NEVER_EXTRACTABLE, values: [[1], [0]]),
        TokenDecidedAttribute(name: "CKA_LOCAL", type: CKA_LOCAL, values: [[1], [0]]),
        TokenDecidedAttribute(
            name: "CKA_KEY_GEN_MECHANISM", type: CKA_KEY_GEN_MECHANISM,
            values: [encode(CK_ULONG(CKM_EC_KEY_PAIR_GEN)), encode(unavailableInformation)]),
    ]
}

extension ModuleTests {
    /// The rules kept in the core, shown through the built module: one-way key
    /// attributes, working copies, sealing by attribute type, and a login that ends with the
    /// token. Nested in `ModuleTests`, so its suites run serialized with the other module
    /// suites; `swift test --filter CoreRulesTests` runs them all.
    @Suite("The core rules")
    struct CoreRulesTests {}
}

extension ModuleTests.CoreRulesTests {
    /// The one-way rules of v2.40 §4.9 (CKA_SENSITIVE only turns on,
    /// CKA_EXTRACTABLE only turns off, the history attributes are the token's) hold for every
    /// way a key comes to be or changes: create, generate, copy and update.
    @Suite("C_CopyObject, C_CreateObject and C_SetAttributeValue obey the one-way key rules")
    struct OneWayKeyRules {
        @Test(
            "A copy of a sensitive, unextractable key cannot turn CKA_SENSITIVE off or CKA_EXTRACTABLE on: CKR_ATTRIBUTE_READ_ONLY and nothing is stored"
        )
        func copyCannotRevealAKey() throws {
            try withLoggedInToken { token, session throws in
                let pair = try token.generatePair(.p256, in: session)
                let before = try token.find([], in: session)
                let templates: [[Attribute]] = [
                    [flag(CKA_SENSITIVE, false)],
                    [flag(CKA_EXTRACTABLE, true)],
                    [flag(CKA_SENSITIVE, false), flag(CKA_EXTRACTABLE, true)],
                    [flag(CKA_TOKEN, false), flag(CKA_SENSITIVE, false), flag(CKA_EXTRACTABLE, true)],
                ]
                for template in templates {
                    let (rv, copied) = try token.copy(pair.privateKey, with: template, in: session)
                    #expect(
                        rv == CKR_ATTRIBUTE_READ_ONLY,
                        "C_CopyObject(sensitive key, \(describe(template))) returned \(rvName(rv))")
                    if rv == CKR_OK {
                        // What the issue saw: the copy gives the secret scalar away.
                        let (read, _) = try token.probe(CKA_VALUE, of: copied, in: session)
                        #expect(
                            read == CKR_ATTRIBUTE_SENSITIVE,
                            "C_GetAttributeValue(CKA_VALUE) of that copy returned \(rvName(read))")
                    }
                }
                #expect(try token.find([], in: session) == before, "a refused copy left an object behind")
                #expect(
                    try token.probe(CKA_VALUE, of: pair.privateKey, in: session).0 == CKR_ATTRIBUTE_SENSITIVE)
            }
        }

        @Test(
            "CKA_ALWAYS_SENSITIVE, CKA_NEVER_EXTRACTABLE, CKA_LOCAL and CKA_KEY_GEN_MECHANISM in a copy, create, generate or set template are CKR_ATTRIBUTE_READ_ONLY",
            arguments: TokenDecidedAttribute.all)
        func tokenDecidedAttributesAreNeverSettable(attribute: TokenDecidedAttribute) throws {
            try withLoggedInToken { token, session throws in
                let pair = try token.generatePair(.p256, in: session)
                let before = try token.find([], in: session)
                for value in attribute.values {
                    let entry = Attribute(attribute.type, value)
                    let shown = "\(attribute.name)=\(hex(value))"
                    let copied = try token.copy(pair.privateKey, with: [entry], in: session).0
                    #expect(
                        copied == CKR_ATTRIBUTE_READ_ONLY,
                        "C_CopyObject {\(shown)} returned \(rvName(copied))")
                    let sessionCopy = try token.copy(
                        pair.privateKey, with: [flag(CKA_TOKEN, false), entry], in: session
                    ).0
                    #expect(
                        sessionCopy == CKR_ATTRIBUTE_READ_ONLY,
                        "C_CopyObject {CKA_TOKEN=FALSE, \(shown)} returned \(rvName(sessionCopy))")
                    let template = ecPrivateKeyTemplate(
                        scalar: randomP256Scalar(), label: "imported", extra: [entry])
                    let created = try token.create(template, in: session).0
                    #expect(
                        created == CKR_ATTRIBUTE_READ_ONLY,
                        "C_CreateObject(EC private key, \(shown)) returned \(rvName(created))")
                    let generated = try token.generate(.p256, privateExtra: [entry], in: session).0
                    #expect(
                        generated == CKR_ATTRIBUTE_READ_ONLY,
                        "C_GenerateKeyPair(private template with \(shown)) returned \(rvName(generated))")
                    let changed = try token.set([entry], of: pair.privateKey, in: session)
                    #expect(
                        changed == CKR_ATTRIBUTE_READ_ONLY,
                        "C_SetAttributeValue {\(shown)} returned \(rvName(changed))")
                }
                #expect(try token.find([], in: session) == before, "a refused template left an object behind")
            }
        }

        @Test(
            "A plain copy of a sensitive key, token or session, keeps its secret unreadable and its CKA_ALWAYS_SENSITIVE and CKA_NEVER_EXTRACTABLE",
            arguments: [KeyKind.rsa2048, .p256])
        func plainCopyKeepsTheKeySensitive(kind: KeyKind) throws {
            try withLoggedInToken { token, session throws in
                let pair = try token.generatePair(kind, in: session)
                let original = pair.privateKey
                let always = try token.bool(CKA_ALWAYS_SENSITIVE, of: original, in: session)
                let never = try token.bool(CKA_NEVER_EXTRACTABLE, of: original, in: session)
                try #require(always == true && never == true, "a generated sensitive key is always sensitive")
                for template in [[], [flag(CKA_TOKEN, false)], [Attribute(CKA_LABEL, string: "relabelled")]] {
                    let (rv, copied) = try token.copy(original, with: template, in: session)
                    try #require(rv == CKR_OK, "C_CopyObject \(describe(template)) returned \(rvName(rv))")
                    let secrets: [CK_ATTRIBUTE_TYPE] =
                        kind == .rsa2048
                        ? [CKA_PRIVATE_EXPONENT, CKA_PRIME_1, CKA_PRIME_2, CKA_COEFFICIENT] : [CKA_VALUE]
                    for secret in secrets {
                        let (read, length) = try token.probe(secret, of: copied, in: session)
                        #expect(
                            read == CKR_ATTRIBUTE_SENSITIVE && length == unavailableInformation,
                            "copy \(describe(template)): C_GetAttributeValue(CKA_0x\(String(secret, radix: 16))) returned \(rvName(read))"
                        )
                    }
                    #expect(try token.bool(CKA_SENSITIVE, of: copied, in: session) == true)
                    #expect(try token.bool(CKA_EXTRACTABLE, of: copied, in: session) == false)
                    #expect(try token.bool(CKA_ALWAYS_SENSITIVE, of: copied, in: session) == always)
                    #expect(try token.bool(CKA_NEVER_EXTRACTABLE, of: copied, in: session) == never)
                }
            }
        }

        @Test(
            "A copy of an extractable, non-sensitive key may turn CKA_SENSITIVE on or CKA_EXTRACTABLE off; its CKA_ALWAYS_SENSITIVE and CKA_NEVER_EXTRACTABLE stay FALSE"
        )
        func copyMayOnlyTightenAKey() throws {
            try withLoggedInToken { token, session throws in
                let pair = try token.generatePair(
                    .p256, privateExtra: [flag(CKA_SENSITIVE, false), flag(CKA_EXTRACTABLE, true)],
                    in: session)
                let original = pair.privateKey
                try #require(try token.probe(CKA_VALUE, of: original, in: session).0 == CKR_OK)
                try #require(try token.bool(CKA_ALWAYS_SENSITIVE, of: original, in: session) == false)
                try #require(try token.bool(CKA_NEVER_EXTRACTABLE, of: original, in: session) == false)
                let templates: [[Attribute]] = [
                    [flag(CKA_SENSITIVE, true)],
                    [flag(CKA_TOKEN, false), flag(CKA_SENSITIVE, true)],
                    [flag(CKA_EXTRACTABLE, false)],
                ]
                for template in templates {
                    let (rv, copied) = try token.copy(original, with: template, in: session)
                    try #require(rv == CKR_OK, "C_CopyObject \(describe(template)) returned \(rvName(rv))")
                    let (read, _) = try token.probe(CKA_VALUE, of: copied, in: session)
                    #expect(
                        read == CKR_ATTRIBUTE_SENSITIVE,
                        "copy \(describe(template)): C_GetAttributeValue(CKA_VALUE) returned \(rvName(read))")
                    #expect(
                        try token.bool(CKA_ALWAYS_SENSITIVE, of: copied, in: session) == false,
                        "copy \(describe(template)) of a key that was once not sensitive")
                    #expect(
                        try token.bool(CKA_NEVER_EXTRACTABLE, of: copied, in: session) == false,
                        "copy \(describe(template)) of a key that was once extractable")
                }
            }
        }

        @Test(
            "C_SetAttributeValue cannot turn CKA_SENSITIVE off or CKA_EXTRACTABLE back on: CKR_ATTRIBUTE_READ_ONLY"
        )
        func setCannotLoosenAKey() throws {
            try withLoggedInToken { token, session throws in
                let key = try token.generatePair(.p256, in: session).privateKey
                for template in [
                    [flag(CKA_SENSITIVE, false)], [flag(CKA_EXTRACTABLE, true)],
                    [flag(CKA_SENSITIVE, false), flag(CKA_EXTRACTABLE, true)],
                ] {
                    let rv = try token.set(template, of: key, in: session)
                    #expect(
                        rv == CKR_ATTRIBUTE_READ_ONLY,
                        "C_SetAttributeValue \(describe(template)) returned \(rvName(rv))")
                }
                #expect(try token.bool(CKA_SENSITIVE, of: key, in: session) == true)
                #expect(try token.bool(CKA_EXTRACTABLE, of: key, in: session) == false)
                #expect(try token.probe(CKA_VALUE, of: key, in: session).0 == CKR_ATTRIBUTE_SENSITIVE)
            }
        }

        @Test(
            "C_SetAttributeValue making an extractable key unextractable keeps CKA_NEVER_EXTRACTABLE FALSE, and a non-sensitive key sensitive keeps CKA_ALWAYS_SENSITIVE FALSE"
        )
        func tighteningKeepsTheHistory() throws {
            try withLoggedInToken { token, session throws in
                let key = try token.generatePair(
                    .p256, privateExtra: [flag(CKA_SENSITIVE, false), flag(CKA_EXTRACTABLE, true)],
                    in: session
                ).privateKey
                let unextractable = try token.set([flag(CKA_EXTRACTABLE, false)], of: key, in: session)
                try #require(
                    unextractable == CKR_OK,
                    "C_SetAttributeValue {CKA_EXTRACTABLE=FALSE} returned \(rvName(unextractable))")
                #expect(try token.bool(CKA_EXTRACTABLE, of: key, in: session) == false)
                #expect(try token.bool(CKA_NEVER_EXTRACTABLE, of: key, in: session) == false)
                let sensitive = try token.set([flag(CKA_SENSITIVE, true)], of: key, in: session)
                try #require(
                    sensitive == CKR_OK,
                    "C_SetAttributeValue {CKA_SENSITIVE=TRUE} returned \(rvName(sensitive))")
                #expect(try token.bool(CKA_ALWAYS_SENSITIVE, of: key, in: session) == false)
                #expect(try token.probe(CKA_VALUE, of: key, in: session).0 == CKR_ATTRIBUTE_SENSITIVE)
                // And back is refused.
                #expect(
                    try token.set([flag(CKA_EXTRACTABLE, true)], of: key, in: session)
                        == CKR_ATTRIBUTE_READ_ONLY)
            }
        }
    }

    /// C_CopyObject of a key carries its key material, so the copy signs like
    /// the original (OpenSSL's pkcs11-provider copies every token key into a session object
    /// and signs with the copy).
    @Suite("A copied key is a working key")
    struct CopiedKeys {
        @Test(
            "A token copy and a session copy of a private key sign, and the original public key verifies their signatures",
            arguments: KeyKind.allCases)
        func copiesSign(kind: KeyKind) throws {
            try withLoggedInToken { token, session throws in
                let pair = try token.generatePair(kind, in: session)
                let (signed, reference) = try token.sign(
                    coreMessage, with: pair.privateKey, kind, in: session)
                try #require(signed == CKR_OK, "signing with the original returned \(rvName(signed))")
                try #require(
                    try token.verify(reference, over: coreMessage, with: pair.publicKey, kind, in: session)
                        == CKR_OK)
                let copies: [(String, [Attribute])] = [
                    ("token copy", [flag(CKA_TOKEN, true), Attribute(CKA_LABEL, string: "token copy")]),
                    ("session copy", [flag(CKA_TOKEN, false)]),
                ]
                for (what, template) in copies {
                    let (rv, copied) = try token.copy(pair.privateKey, with: template, in: session)
                    try #require(rv == CKR_OK, "C_CopyObject (\(what)) returned \(rvName(rv))")
                    let (signedByCopy, signature) = try token.sign(
                        coreMessage, with: copied, kind, in: session)
                    #expect(
                        signedByCopy == CKR_OK, "signing with the \(what) returned \(rvName(signedByCopy))")
                    if signedByCopy == CKR_OK {
                        let verified = try token.verify(
                            signature, over: coreMessage, with: pair.publicKey, kind, in: session)
                        #expect(
                            verified == CKR_OK,
                            "the original public key verifying the \(what)'s signature returned \(rvName(verified))"
                        )
                    }
                }
                // A copied public key verifies too.
                let (rv, publicCopy) = try token.copy(
                    pair.publicKey, with: [flag(CKA_TOKEN, false)], in: session)
                try #require(rv == CKR_OK, "C_CopyObject (public key) returned \(rvName(rv))")
                let verified = try token.verify(
                    reference, over: coreMessage, with: publicCopy, kind, in: session)
                #expect(
                    verified == CKR_OK,
                    "the copied public key verifying the original's signature returned \(rvName(verified))")
            }
        }

        @Test(
            "A copy of a private key still signs after the original is destroyed, and a token copy after the module is restarted",
            arguments: KeyKind.allCases)
        func copySurvivesTheOriginal(kind: KeyKind) throws {
            try withLoggedInToken { token, session throws in
                let pair = try token.generatePair(kind, in: session)
                let (rv1, tokenCopy) = try token.copy(
                    pair.privateKey,
                    with: [flag(CKA_TOKEN, true), Attribute(CKA_LABEL, string: "kept copy")],
                    in: session)
                let (rv2, sessionCopy) = try token.copy(
                    pair.privateKey, with: [flag(CKA_TOKEN, false)], in: session)
                try #require(
                    rv1 == CKR_OK && rv2 == CKR_OK, "C_CopyObject returned \(rvName(rv1)), \(rvName(rv2))")
                try #require(try token.m.C_DestroyObject(session, pair.privateKey) == CKR_OK)
                for (what, copied) in [("token copy", tokenCopy), ("session copy", sessionCopy)] {
                    let (signed, signature) = try token.sign(coreMessage, with: copied, kind, in: session)
                    #expect(
                        signed == CKR_OK,
                        "signing with the \(what) after the original's destruction returned \(rvName(signed))"
                    )
                    if signed == CKR_OK {
                        #expect(
                            try token.verify(
                                signature, over: coreMessage, with: pair.publicKey, kind, in: session)
                                == CKR_OK)
                    }
                }
                // The token copy is stored with its key material: a new process finds it and signs.
                try #require(try token.m.C_Finalize(nil) == CKR_OK)
                try #require(try token.m.C_Initialize(nil) == CKR_OK)
                let again = try token.openSession()
                try token.logInUser(again)
                let found = try token.find(
                    [
                        Attribute(CKA_CLASS, ulong: CKO_PRIVATE_KEY),
                        Attribute(CKA_LABEL, string: "kept copy"),
                    ], in: again)
                try #require(
                    found.count == 1, "private keys labelled 'kept copy' after a restart: \(found.count)")
                let publicKeys = try token.find([Attribute(CKA_CLASS, ulong: CKO_PUBLIC_KEY)], in: again)
                try #require(publicKeys.count == 1)
                let (signed, signature) = try token.sign(coreMessage, with: found[0], kind, in: again)
                #expect(
                    signed == CKR_OK, "signing with the token copy after a restart returned \(rvName(signed))"
                )
                if signed == CKR_OK {
                    #expect(
                        try token.verify(signature, over: coreMessage, with: publicKeys[0], kind, in: again)
                            == CKR_OK)
                }
            }
        }
    }
}
