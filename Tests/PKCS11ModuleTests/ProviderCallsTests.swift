import CPKCS11
import Foundation
import Testing

// OpenSSL 3's pkcs11-provider is not packaged for Debian 12, so these tests make the calls it
// makes (key usages, allowed mechanisms, public session keys, copies) and check the answers it relies on:
// it reads CKA_ALLOWED_MECHANISMS of every key to decide what a key may do, imports PEM keys
// and HKDF input as public session objects before any login, copies token keys, uses
// RSA-PSS-only keys for TLS 1.3, and tells X25519 keys by their usage attributes.

/// CKM_EC_MONTGOMERY_KEY_PAIR_GEN (v3.0 §2.3.7), which p11-kit 0.24's header lacks; the key
/// type and the X25519/X448 OIDs are Support/KeyAttributeSupport.swift's.
private let montgomeryKeyPairGen: CK_MECHANISM_TYPE = 0x1056

/// CKA_ALLOWED_MECHANISMS's value: an array of CK_MECHANISM_TYPE.
private func mechanismList(_ types: [UInt]) -> [UInt8] {
    types.flatMap { encode(CK_ULONG($0)) }
}

/// One way a key comes to be, and the handle of the key to read.
struct KeyMaker: Sendable, CustomTestStringConvertible {
    var name: String
    var make: @Sendable (TestToken, CK_SESSION_HANDLE) throws -> CK_OBJECT_HANDLE

    var testDescription: String { name }
}

extension TestToken {
    /// A Montgomery (X25519 or X448) key pair generated with only CKA_DERIVE asked for.
    fileprivate func montgomeryPair(_ oid: [UInt8], in session: CK_SESSION_HANDLE) throws -> KeyPair {
        var mechanism = CK_MECHANISM(mechanism: montgomeryKeyPairGen, pParameter: nil, ulParameterLen: 0)
        var pair = KeyPair(publicKey: 0, privateKey: 0)
        let generate = try m.C_GenerateKeyPair
        let rv = withTemplate([Attribute(CKA_EC_PARAMS, oid), flag(CKA_TOKEN, true)]) {
            publicEntries, publicCount in
            withTemplate([flag(CKA_TOKEN, true), flag(CKA_DERIVE, true)]) { privateEntries, privateCount in
                generate(
                    session, &mechanism, publicEntries, publicCount, privateEntries, privateCount,
                    &pair.publicKey,
                    &pair.privateKey)
            }
        }
        try #require(rv == CKR_OK, "C_GenerateKeyPair(X25519/X448) returned \(rvName(rv))")
        return pair
    }

    /// CKM_SHA256_RSA_PKCS_PSS or CKM_RSA_PKCS_PSS with SHA-256, MGF1-SHA-256 and a 32-byte salt.
    fileprivate func pssSign(
        _ type: UInt, key: CK_OBJECT_HANDLE, _ message: [UInt8], in session: CK_SESSION_HANDLE
    )
        throws -> (CK_RV, [UInt8])
    {
        let box = MechanismBox(type)
        box.setParameter(
            CK_RSA_PKCS_PSS_PARAMS(
                hashAlg: CK_MECHANISM_TYPE(CKM_SHA256), mgf: CK_ULONG(CKG_MGF1_SHA256), sLen: 32))
        let started = try m.C_SignInit(session, &box.mechanism, key)
        guard started == CKR_OK else { return (started, []) }
        var input = message
        var signature = [UInt8](repeating: 0, count: 512)
        var length = CK_ULONG(signature.count)
        let rv = try m.C_Sign(session, &input, CK_ULONG(input.count), &signature, &length)
        return (rv, rv == CKR_OK ? Array(signature.prefix(Int(length))) : [])
    }
}

enum ProviderKeys {
    static let all: [KeyMaker] = [
        KeyMaker(name: "generated P-256 private key") { token, session in
            try token.generatePair(.p256, in: session).privateKey
        },
        KeyMaker(name: "generated P-256 public key") { token, session in
            try token.generatePair(.p256, in: session).publicKey
        },
        KeyMaker(name: "generated RSA-2048 private key") { token, session in
            try token.generatePair(.rsa2048, in: session).privateKey
        },
        KeyMaker(name: "generated RSA-2048 public key") { token, session in
            try token.generatePair(.rsa2048, in: session).publicKey
        },
        KeyMaker(name: "generated Ed25519 private key") { token, session in
            try token.generatePair(.ed25519, in: session).privateKey
        },
        KeyMaker(name: "generated X25519 private key") { token, session in
            try token.montgomeryPair(x25519OID, in: session).privateKey
        },
        KeyMaker(name: "generated X25519 public key") { token, session in
            try token.montgomeryPair(x25519OID, in: session).publicKey
        },
        KeyMaker(name: "created P-256 private key") { token, session in
            try token.createObject(
                ecPrivateKeyTemplate(scalar: randomP256Scalar(), label: "created"), in: session)
        },
        KeyMaker(name: "created RSA private key") { token, session in
            try token.createObject(
                try RSAParts.shared.get().privateKeyTemplate(label: "created"), in: session)
        },
        KeyMaker(name: "created RSA public key") { token, session in
            let parts = try RSAParts.shared.get()
            return try token.createObject(
                [
                    Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_PUBLIC_KEY)),
                    Attribute(CKA_KEY_TYPE, ulong: CKK_RSA),
                    Attribute(CKA_MODULUS, parts.modulus),
                    Attribute(CKA_PUBLIC_EXPONENT, parts.publicExponent),
                ], in: session)
        },
        KeyMaker(name: "created AES secret key") { token, session in
            try token.createSecretKey(randomBytes(32), in: session)
        },
        KeyMaker(name: "created generic secret (session, public)") { token, session in
            try token.createSecretKey(
                randomBytes(32), type: UInt(CKK_GENERIC_SECRET),
                extra: [flag(CKA_TOKEN, false), flag(CKA_PRIVATE, false), flag(CKA_DERIVE, true)], in: session
            )
        },
        KeyMaker(name: "generated AES secret key") { token, session in
            let (rv, key) = try token.generateSecretKey(
                [Attribute(CKA_VALUE_LEN, ulong: 32), flag(CKA_TOKEN, true)], in: session)
            try #require(rv == CKR_OK, "C_GenerateKey returned \(rvName(rv))")
            return key
        },
        KeyMaker(name: "derived (HKDF) generic secret") { token, session in
            let base = try token.createSecretKey(
                hkdfInput, type: UInt(CKK_GENERIC_SECRET), extra: [flag(CKA_DERIVE, true)], in: session)
            let (rv, key) = try token.derive(
                rfc5869Mechanism(UInt(CKM_HKDF_DERIVE)), baseKey: base,
                template: readableSecretKey(length: 32),
                in: session)
            try #require(rv == CKR_OK, "C_DeriveKey returned \(rvName(rv))")
            return key
        },
        KeyMaker(name: "copied P-256 private key (session copy)") { token, session in
            let key = try token.generatePair(.p256, in: session).privateKey
            let (rv, copy) = try token.copy(key, with: [flag(CKA_TOKEN, false)], in: session)
            try #require(rv == CKR_OK, "C_CopyObject returned \(rvName(rv))")
            return copy
        },
    ]
}

extension ModuleTests {
    @Suite("The calls OpenSSL 3's pkcs11-provider makes, and the answers it relies on")
    struct ProviderCalls {
        @Test(
            "CKA_ALLOWED_MECHANISMS of a key made without a list reads CKR_OK and empty",
            arguments: ProviderKeys.all)
        func allowedMechanismsOfEveryKey(maker: KeyMaker) throws {
            try withPromiseToken { token, session in
                let key = try maker.make(token, session)
                let (rv, length) = try token.probe(CKA_ALLOWED_MECHANISMS, of: key, in: session)
                #expect(
                    rv == CKR_OK,
                    "\(maker.name): C_GetAttributeValue(CKA_ALLOWED_MECHANISMS) returned \(rvName(rv))")
                #expect(
                    rv != CKR_OK || length == 0, "\(maker.name): CKA_ALLOWED_MECHANISMS has \(length) bytes")
            }
        }

        @Test(
            "An RSA-PSS-only key (CKA_ALLOWED_MECHANISMS = RSA-PSS, SHA256-RSA-PSS) reads its list back, signs with PSS and refuses PKCS#1 v1.5",
            arguments: ["generated", "created"])
        func rsaPSSOnlyKeys(how: String) throws {
            let list = mechanismList([UInt(CKM_RSA_PKCS_PSS), UInt(CKM_SHA256_RSA_PKCS_PSS)])
            try withPromiseToken { token, session in
                let allowed = Attribute(CKA_ALLOWED_MECHANISMS, list)
                let privateKey: CK_OBJECT_HANDLE
                let publicKey: CK_OBJECT_HANDLE
                if how == "generated" {
                    let (rv, pair) = try token.generate(.rsa2048, privateExtra: [allowed], in: session)
                    try #require(rv == CKR_OK, "C_GenerateKeyPair returned \(rvName(rv))")
                    (privateKey, publicKey) = (pair.privateKey, pair.publicKey)
                } else {
                    let parts = try RSAParts.shared.get()
                    privateKey = try token.createObject(
                        parts.privateKeyTemplate(label: "pss", extra: [allowed]), in: session)
                    publicKey = try token.createObject(
                        [
                            Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_PUBLIC_KEY)),
                            Attribute(CKA_KEY_TYPE, ulong: CKK_RSA), flag(CKA_VERIFY, true),
                            Attribute(CKA_MODULUS, parts.modulus),
                            Attribute(CKA_PUBLIC_EXPONENT, parts.publicExponent),
                        ], in: session)
                }
                #expect(try token.attribute(CKA_ALLOWED_MECHANISMS, of: privateKey, in: session) == list)
                for type in [UInt(CKM_SHA256_RSA_PKCS_PSS)] {
                    let (rv, signature) = try token.pssSign(type, key: privateKey, coreMessage, in: session)
                    #expect(rv == CKR_OK, "PSS signing returned \(rvName(rv))")
                    let box = MechanismBox(type)
                    box.setParameter(
                        CK_RSA_PKCS_PSS_PARAMS(
                            hashAlg: CK_MECHANISM_TYPE(CKM_SHA256), mgf: CK_ULONG(CKG_MGF1_SHA256), sLen: 32))
                    #expect(try token.m.C_VerifyInit(session, &box.mechanism, publicKey) == CKR_OK)
                    var message = coreMessage
                    var bytes = signature
                    #expect(
                        try token.m.C_Verify(
                            session, &message, CK_ULONG(message.count), &bytes, CK_ULONG(bytes.count))
                            == CKR_OK)
                }
                // Raw PSS over a SHA-256 digest, as the provider signs in TLS.
                let digest = try token.digest(coreMessage, mechanism: UInt(CKM_SHA256))
                #expect(
                    try token.pssSign(UInt(CKM_RSA_PKCS_PSS), key: privateKey, digest, in: session).0
                        == CKR_OK)
                for type in [CKM_RSA_PKCS, CKM_SHA256_RSA_PKCS, CKM_RSA_X_509] {
                    let rv = try token.signInit(session, UInt(type), key: privateKey)
                    #expect(
                        rv == CKR_MECHANISM_INVALID,
                        "C_SignInit(0x\(String(type, radix: 16))) returned \(rvName(rv))")
                }
            }
        }

        @Test(
            "Public session keys (CKA_TOKEN=FALSE, CKA_PRIVATE=FALSE) are made and used before any login"
        )
        func publicSessionKeysBeforeLogin() throws {
            try withPromiseTokenLoggedOut { token, session in
                let publicSession = [flag(CKA_TOKEN, false), flag(CKA_PRIVATE, false)]
                // A PEM EC key imported as the provider does, then used to sign.
                let scalar = randomP256Scalar()
                let template = overriding(
                    ecPrivateKeyTemplate(scalar: scalar, label: "imported"),
                    with: publicSession + [flag(CKA_DERIVE, true)])
                let (imported, key) = try token.create(template, in: session)
                #expect(
                    imported == CKR_OK,
                    "C_CreateObject(EC private key, public session) returned \(rvName(imported))")
                if imported == CKR_OK {
                    let (signed, signature) = try token.sign(coreMessage, with: key, .p256, in: session)
                    #expect(signed == CKR_OK, "signing with it returned \(rvName(signed))")
                    #expect(!signature.isEmpty)
                    // ECDH from it into a public session key (the provider's ecdh test).
                    let derived = try token.ecdh(from: key, extra: publicSession, in: session)
                    #expect(derived == CKR_OK, "ECDH from it returned \(rvName(derived))")
                }
                // HKDF input as a generic secret, derived from (the provider's hkdf test).
                let (made, base) = try token.create(
                    [
                        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY)),
                        Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_GENERIC_SECRET)),
                        Attribute(CKA_VALUE, hkdfInput), flag(CKA_DERIVE, true),
                        flag(CKA_SENSITIVE, false), flag(CKA_EXTRACTABLE, true),
                    ] + publicSession, in: session)
                #expect(
                    made == CKR_OK, "C_CreateObject(generic secret, public session) returned \(rvName(made))")
                if made == CKR_OK {
                    let (rv, derived) = try token.derive(
                        rfc5869Mechanism(UInt(CKM_HKDF_DERIVE)), baseKey: base,
                        template: readableSecretKey(length: 42) + publicSession, in: session)
                    #expect(rv == CKR_OK, "HKDF from it returned \(rvName(rv))")
                    if rv == CKR_OK {
                        #expect(try token.attribute(CKA_VALUE, of: derived, in: session) == hkdfOutput)
                    }
                }
                // Session objects never reach the disk.
                #expect(
                    token.storeFiles(containing: scalar).isEmpty, "the session key's scalar is in the store")
                // A token key still needs the login.
                let (tokenKey, _) = try token.create(
                    ecPrivateKeyTemplate(
                        scalar: randomP256Scalar(), label: "token", extra: [flag(CKA_PRIVATE, false)]),
                    in: session)
                #expect(tokenKey == CKR_USER_NOT_LOGGED_IN, "a token key before login: \(rvName(tokenKey))")
            }
        }

        @Test("A copy of a token key works and keeps its usage; an unmodifiable key's copy cannot add usage")
        func copiesOfTokenKeys() throws {
            try withPromiseToken { token, session in
                let usage: [CK_ATTRIBUTE_TYPE] = [
                    CKA_SIGN, CKA_DECRYPT, CKA_DERIVE, CKA_UNWRAP, CKA_MODIFIABLE,
                ]
                let pair = try token.generatePair(.p256, privateExtra: [flag(CKA_DERIVE, false)], in: session)
                for template in [[flag(CKA_TOKEN, false)], [flag(CKA_TOKEN, true)]] {
                    let (rv, copy) = try token.copy(pair.privateKey, with: template, in: session)
                    try #require(rv == CKR_OK, "C_CopyObject returned \(rvName(rv))")
                    for type in usage {
                        #expect(
                            try token.bool(type, of: copy, in: session)
                                == token.bool(type, of: pair.privateKey, in: session),
                            "the copy's attribute 0x\(String(type, radix: 16)) differs")
                    }
                    let (signed, signature) = try token.sign(coreMessage, with: copy, .p256, in: session)
                    #expect(signed == CKR_OK)
                    #expect(
                        try token.verify(
                            signature, over: coreMessage, with: pair.publicKey, .p256, in: session) == CKR_OK)
                }
                // Unmodifiable: a copy may not add what the original lacks.
                let fixed = try token.generatePair(
                    .p256, privateExtra: [flag(CKA_MODIFIABLE, false), flag(CKA_DERIVE, false)], in: session)
                let before = try token.find([], in: session).count
                for template in [
                    [flag(CKA_DERIVE, true)], [flag(CKA_TOKEN, false), flag(CKA_DERIVE, true)],
                    [flag(CKA_TOKEN, false), flag(CKA_MODIFIABLE, true)],
                ] {
                    let (rv, _) = try token.copy(fixed.privateKey, with: template, in: session)
                    #expect(
                        rv == CKR_ATTRIBUTE_READ_ONLY || rv == CKR_ACTION_PROHIBITED,
                        "C_CopyObject of an unmodifiable key adding usage returned \(rvName(rv))")
                }
                #expect(
                    try token.find([], in: session).count == before, "a refused copy left an object behind")
                let (plain, copy) = try token.copy(
                    fixed.privateKey, with: [flag(CKA_TOKEN, false)], in: session)
                if plain == CKR_OK {
                    #expect(try token.bool(CKA_MODIFIABLE, of: copy, in: session) == false)
                    #expect(try token.bool(CKA_DERIVE, of: copy, in: session) == false)
                    #expect(try token.set([flag(CKA_DERIVE, true)], of: copy, in: session) != CKR_OK)
                }
            }
        }

        @Test(
            "X25519 and X448 private keys read CKA_DERIVE TRUE and CKA_SIGN, CKA_DECRYPT FALSE",
            arguments: ["X25519", "X448"])
        func montgomeryKeyAttributes(curve: String) throws {
            try withPromiseToken { token, session in
                let pair = try token.montgomeryPair(curve == "X25519" ? x25519OID : x448OID, in: session)
                #expect(
                    decodeULong(try token.attribute(CKA_KEY_TYPE, of: pair.privateKey, in: session))
                        == montgomeryKeyType)
                #expect(try token.bool(CKA_DERIVE, of: pair.privateKey, in: session) == true)
                for type in [CKA_SIGN, CKA_DECRYPT, CKA_SIGN_RECOVER, CKA_UNWRAP] {
                    #expect(
                        try token.bool(CK_ATTRIBUTE_TYPE(type), of: pair.privateKey, in: session) == false,
                        "\(curve) private key: attribute 0x\(String(type, radix: 16)) reads TRUE")
                }
            }
        }
    }
}
