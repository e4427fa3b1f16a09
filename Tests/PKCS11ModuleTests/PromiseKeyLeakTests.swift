import CPKCS11
import Foundation
import Testing

/// "A sensitive key never leaves the token" (README "How the token behaves": key pairs,
/// secret keys, wrapping, one set of key rules; p11keychain(1) generate-key), attacked by
/// every path the PKCS#11 face offers. The attacker is the user, logged in, with keys of
/// their own; the victim is a sensitive, unextractable key. Each row says what the module
/// must answer, and every byte the attacker obtains (values read, blobs wrapped, keys
/// derived and read back) is searched for the victim's secret.
enum KeyLeakPaths {
    static let unextractable = [UInt(CKR_KEY_UNEXTRACTABLE)]
    static let readOnly = [UInt(CKR_ATTRIBUTE_READ_ONLY)]
    /// A mechanism the module does not offer, or offers but refuses here.
    static let noSuchDerivation = [
        UInt(CKR_MECHANISM_INVALID), UInt(CKR_KEY_FUNCTION_NOT_PERMITTED), UInt(CKR_TEMPLATE_INCONSISTENT),
        UInt(CKR_KEY_TYPE_INCONSISTENT),
    ]

    static let reads: [Attack] = [
        Attack(
            "C_GetAttributeValue(CKA_VALUE) of a sensitive AES key", refusal: "CKR_ATTRIBUTE_SENSITIVE",
            accepted: [UInt(CKR_ATTRIBUTE_SENSITIVE)]
        ) { token, session in
            let secret = randomBytes(32)
            let key = try token.victimSecret(secret, in: session)
            let (rv, value) = try token.read(CKA_VALUE, of: key, in: session)
            return AttackResult(rv: rv, secret: secret, obtained: value)
        },
        Attack(
            "C_GetAttributeValue(CKA_VALUE) of a sensitive P-256 private key",
            refusal: "CKR_ATTRIBUTE_SENSITIVE",
            accepted: [UInt(CKR_ATTRIBUTE_SENSITIVE)]
        ) { token, session in
            let scalar = randomP256Scalar()
            let key = try token.createObject(
                ecPrivateKeyTemplate(scalar: scalar, label: "victim", extra: victimKeyAttributes), in: session
            )
            let (rv, value) = try token.read(CKA_VALUE, of: key, in: session)
            return AttackResult(rv: rv, secret: scalar, obtained: value)
        },
        Attack(
            "C_GetAttributeValue(CKA_VALUE) of a sensitive Ed25519 private key",
            refusal: "CKR_ATTRIBUTE_SENSITIVE", accepted: [UInt(CKR_ATTRIBUTE_SENSITIVE)]
        ) { token, session in
            let seed = randomBytes(32)
            let key = try token.createObject(
                ed25519PrivateKeyTemplate(seed: seed, label: "victim", extra: victimKeyAttributes),
                in: session)
            let (rv, value) = try token.read(CKA_VALUE, of: key, in: session)
            return AttackResult(rv: rv, secret: seed, obtained: value)
        },
        Attack(
            "C_GetAttributeValue of each private part of a sensitive RSA key (d, p, q, dP, dQ, qInv)",
            refusal: "CKR_ATTRIBUTE_SENSITIVE", accepted: [UInt(CKR_ATTRIBUTE_SENSITIVE)]
        ) { token, session in
            let parts = try RSAParts.shared.get()
            let key = try token.createObject(
                parts.privateKeyTemplate(label: "victim", extra: victimKeyAttributes), in: session)
            var first = CK_RV(CKR_OK)
            var obtained: [UInt8] = []
            for type in [
                CKA_PRIVATE_EXPONENT, CKA_PRIME_1, CKA_PRIME_2, CKA_EXPONENT_1, CKA_EXPONENT_2,
                CKA_COEFFICIENT,
            ] {
                let (rv, value) = try token.read(CK_ATTRIBUTE_TYPE(type), of: key, in: session)
                if first == CKR_OK { first = rv }
                obtained += value
            }
            return AttackResult(rv: first, secret: parts.privateExponent + parts.prime1, obtained: obtained)
        },
    ]

    /// C_WrapKey of the victim under a key the attacker holds, with each wrapping mechanism
    /// and each cipher that might serve as one.
    static let wraps: [Attack] = {
        let mechanisms: [(String, @Sendable () -> MechanismBox)] = [
            ("CKM_AES_KEY_WRAP", { MechanismBox(CKM_AES_KEY_WRAP) }),
            ("CKM_AES_KEY_WRAP_KWP", { MechanismBox(CKM_AES_KEY_WRAP_KWP) }),
            ("CKM_AES_KEY_WRAP_PAD", { MechanismBox(CKM_AES_KEY_WRAP_PAD) }),
            ("CKM_AES_CBC_PAD", { cbcMechanism(UInt(CKM_AES_CBC_PAD)) }),
            ("CKM_AES_CBC", { cbcMechanism(UInt(CKM_AES_CBC)) }),
            ("CKM_AES_ECB", { MechanismBox(CKM_AES_ECB) }),
        ]
        var rows = mechanisms.map { name, mechanism in
            Attack(
                "C_WrapKey(\(name)) of a sensitive AES key under the attacker's AES key",
                refusal: "CKR_KEY_UNEXTRACTABLE (or the mechanism does not wrap)",
                accepted: unextractable + [UInt(CKR_MECHANISM_INVALID)]
            ) { token, session in
                let secret = randomBytes(32)
                let key = try token.victimSecret(secret, in: session)
                let kek = try token.attackerKey(in: session)
                return try token.wrapAndRecover(
                    key, under: kek, unwrappingWith: kek, mechanism: mechanism, secret: secret, in: session)
            }
        }
        rows.append(
            Attack(
                "C_WrapKey(CKM_RSA_PKCS_OAEP) of a sensitive AES key under the attacker's RSA public key",
                refusal: "CKR_KEY_UNEXTRACTABLE", accepted: unextractable
            ) { token, session in
                let secret = randomBytes(32)
                let key = try token.victimSecret(secret, in: session)
                let pair = try token.generatePair(
                    .rsa2048, privateExtra: [flag(CKA_UNWRAP, true), flag(CKA_DECRYPT, true)], in: session)
                try #require(try token.set([flag(CKA_WRAP, true)], of: pair.publicKey, in: session) == CKR_OK)
                return try token.wrapAndRecover(
                    key, under: pair.publicKey, unwrappingWith: pair.privateKey, mechanism: oaepMechanism,
                    secret: secret, in: session)
            })
        rows.append(
            Attack(
                "C_WrapKey(CKM_AES_KEY_WRAP_KWP) of a sensitive P-256 private key under the attacker's AES key",
                refusal: "CKR_KEY_UNEXTRACTABLE", accepted: unextractable
            ) { token, session in
                let scalar = randomP256Scalar()
                let key = try token.createObject(
                    ecPrivateKeyTemplate(scalar: scalar, label: "victim", extra: victimKeyAttributes),
                    in: session)
                let kek = try token.attackerKey(in: session)
                let (rv, wrapped) = try token.wrap(
                    MechanismBox(CKM_AES_KEY_WRAP_KWP), wrappingKey: kek, key: key, in: session)
                return AttackResult(rv: rv, secret: scalar, obtained: wrapped)
            })
        rows.append(
            Attack(
                "C_WrapKey of a CKA_WRAP_WITH_TRUSTED key under the attacker's untrusted AES key",
                refusal: "CKR_KEY_NOT_WRAPPABLE", accepted: [UInt(CKR_KEY_NOT_WRAPPABLE)]
            ) { token, session in
                let secret = randomBytes(32)
                let key = try token.wrapWithTrustedVictim(secret, in: session)
                let kek = try token.attackerKey(in: session)
                return try token.wrapAndRecover(
                    key, under: kek, unwrappingWith: kek, mechanism: { MechanismBox(CKM_AES_KEY_WRAP) },
                    secret: secret, in: session)
            })
        return rows
    }()

    /// C_CopyObject and C_SetAttributeValue loosening the victim, then reading or wrapping it.
    static let loosening: [Attack] = {
        let templates: [(String, [Attribute])] = [
            ("CKA_SENSITIVE=FALSE", [flag(CKA_SENSITIVE, false)]),
            ("CKA_EXTRACTABLE=TRUE", [flag(CKA_EXTRACTABLE, true)]),
            (
                "CKA_TOKEN=FALSE, CKA_PRIVATE=FALSE, CKA_SENSITIVE=FALSE, CKA_EXTRACTABLE=TRUE",
                [
                    flag(CKA_TOKEN, false), flag(CKA_PRIVATE, false), flag(CKA_SENSITIVE, false),
                    flag(CKA_EXTRACTABLE, true),
                ]
            ),
        ]
        var rows: [Attack] = []
        for (text, template) in templates {
            rows.append(
                Attack(
                    "C_CopyObject {\(text)} of a sensitive AES key, then read or wrap the copy",
                    refusal: "CKR_ATTRIBUTE_READ_ONLY", accepted: readOnly
                ) { token, session in
                    let secret = randomBytes(32)
                    let key = try token.victimSecret(secret, in: session)
                    let (rv, copy) = try token.copy(key, with: template, in: session)
                    guard rv == CKR_OK else { return AttackResult(rv: rv, secret: secret) }
                    let kek = try token.attackerKey(in: session)
                    var result = try token.wrapAndRecover(
                        copy, under: kek, unwrappingWith: kek, mechanism: { MechanismBox(CKM_AES_KEY_WRAP) },
                        secret: secret, in: session)
                    result.obtained += try token.read(CKA_VALUE, of: copy, in: session).1
                    result.rv = rv
                    return result
                })
            guard template.count < 4 else { continue }
            rows.append(
                Attack(
                    "C_SetAttributeValue {\(text)} of a sensitive AES key, then read or wrap it",
                    refusal: "CKR_ATTRIBUTE_READ_ONLY", accepted: readOnly
                ) { token, session in
                    let secret = randomBytes(32)
                    let key = try token.victimSecret(secret, in: session)
                    let rv = try token.set(template, of: key, in: session)
                    guard rv == CKR_OK else { return AttackResult(rv: rv, secret: secret) }
                    let kek = try token.attackerKey(in: session)
                    var result = try token.wrapAndRecover(
                        key, under: kek, unwrappingWith: kek, mechanism: { MechanismBox(CKM_AES_KEY_WRAP) },
                        secret: secret, in: session)
                    result.obtained += try token.read(CKA_VALUE, of: key, in: session).1
                    result.rv = rv
                    return result
                })
        }
        return rows
    }()

    /// The SO's trusted, wrap-only, unmodifiable key copied by the user with
    /// more usage, or copied plainly and trusted still.
    static let trustedCopies: [Attack] = [
        Attack(
            "C_CopyObject {CKA_UNWRAP=TRUE} of the SO's trusted wrap-only unmodifiable key, then wrap a CKA_WRAP_WITH_TRUSTED key under it and unwrap it readable",
            refusal: "CKR_ATTRIBUTE_READ_ONLY or CKR_ACTION_PROHIBITED",
            accepted: readOnly + [UInt(CKR_ACTION_PROHIBITED)]
        ) { token, session in
            let trusted = try token.trustedWrapOnlyKey(in: session)
            let secret = randomBytes(32)
            let victim = try token.wrapWithTrustedVictim(secret, in: session)
            let (rv, copy) = try token.copy(trusted, with: [flag(CKA_UNWRAP, true)], in: session)
            guard rv == CKR_OK else { return AttackResult(rv: rv, secret: secret) }
            var result = try token.wrapAndRecover(
                victim, under: copy, unwrappingWith: copy, mechanism: { MechanismBox(CKM_AES_KEY_WRAP) },
                secret: secret, in: session)
            result.rv = rv
            return result
        },
        Attack(
            "C_CopyObject {CKA_DECRYPT=TRUE} of the SO's trusted wrap-only unmodifiable key, then invert AES-KW of a CKA_WRAP_WITH_TRUSTED key with C_Decrypt(CKM_AES_ECB)",
            refusal: "CKR_ATTRIBUTE_READ_ONLY or CKR_ACTION_PROHIBITED",
            accepted: readOnly + [UInt(CKR_ACTION_PROHIBITED)]
        ) { token, session in
            let trusted = try token.trustedWrapOnlyKey(in: session)
            let secret = randomBytes(32)
            let victim = try token.wrapWithTrustedVictim(secret, in: session)
            let (rv, copy) = try token.copy(trusted, with: [flag(CKA_DECRYPT, true)], in: session)
            guard rv == CKR_OK else { return AttackResult(rv: rv, secret: secret) }
            let (wrapped, blob) = try token.wrap(
                MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: trusted, key: victim, in: session)
            guard wrapped == CKR_OK else { return AttackResult(rv: rv, secret: secret) }
            let clear = try token.invertAESKeyWrap(blob, with: copy, in: session) ?? []
            return AttackResult(rv: rv, secret: secret, obtained: clear)
        },
        Attack(
            "C_CopyObject {CKA_TOKEN=FALSE} of the SO's trusted key, then C_WrapKey of a CKA_WRAP_WITH_TRUSTED key under the copy: the copy is not trusted",
            refusal: "CKR_KEY_NOT_WRAPPABLE (or the copy refused)",
            accepted: [
                UInt(CKR_KEY_NOT_WRAPPABLE), UInt(CKR_ATTRIBUTE_READ_ONLY), UInt(CKR_ACTION_PROHIBITED),
            ]
        ) { token, session in
            let trusted = try token.trustedWrapOnlyKey(in: session)
            let secret = randomBytes(32)
            let victim = try token.wrapWithTrustedVictim(secret, in: session)
            let (rv, copy) = try token.copy(trusted, with: [flag(CKA_TOKEN, false)], in: session)
            guard rv == CKR_OK else { return AttackResult(rv: rv, secret: secret) }
            #expect(
                try token.bool(CKA_TRUSTED, of: copy, in: session) != true, "the user's copy is CKA_TRUSTED")
            let (wrapped, blob) = try token.wrap(
                MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: copy, key: victim, in: session)
            return AttackResult(rv: wrapped, secret: secret, obtained: blob)
        },
    ]

    /// C_DeriveKey from the victim into something the attacker reads, and C_DigestKey.
    static let derivations: [Attack] = [
        Attack(
            "C_DeriveKey(CKM_HKDF_DATA) {CKA_PRIVATE=FALSE} from a sensitive secret, read without login and from the store file",
            refusal: "the data object is private and sealed (or the template is refused)",
            accepted: [UInt(CKR_OK), UInt(CKR_TEMPLATE_INCONSISTENT), UInt(CKR_ATTRIBUTE_VALUE_INVALID)]
        ) { token, session in
            let base = try token.victimSecret(
                hkdfInput, type: UInt(CKK_GENERIC_SECRET), extra: [flag(CKA_DERIVE, true)], in: session)
            let template = [
                Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_DATA)), Attribute(CKA_VALUE_LEN, ulong: 42),
                flag(CKA_TOKEN, true), flag(CKA_PRIVATE, false), Attribute(CKA_LABEL, string: "derived"),
            ]
            let (rv, _) = try token.derive(
                rfc5869Mechanism(UInt(CKM_HKDF_DATA)), baseKey: base, template: template, in: session)
            let obtained = try token.valuesReadableWithoutLogin(in: session) + token.storeBytes()
            return AttackResult(rv: rv, secret: hkdfOutput, obtained: obtained)
        },
        Attack(
            "C_DeriveKey(CKM_HKDF_DERIVE) with neither extract nor expand (the identity) into a readable key",
            refusal: "CKR_MECHANISM_PARAM_INVALID", accepted: [UInt(CKR_MECHANISM_PARAM_INVALID)]
        ) { token, session in
            let secret = randomBytes(32)
            let base = try token.victimSecret(
                secret, type: UInt(CKK_GENERIC_SECRET), extra: [flag(CKA_DERIVE, true)], in: session)
            return try token.deriveReadable(
                rfc5869Mechanism(UInt(CKM_HKDF_DERIVE), identity: true), from: base, length: 32,
                secret: secret,
                in: session)
        },
        Attack(
            "C_DeriveKey(CKM_CONCATENATE_BASE_AND_DATA) into a readable key",
            refusal: "refused (the module offers no concatenation)", accepted: noSuchDerivation
        ) { token, session in
            let secret = randomBytes(32)
            let base = try token.victimSecret(
                secret, type: UInt(CKK_GENERIC_SECRET), extra: [flag(CKA_DERIVE, true)], in: session)
            return try token.deriveReadable(
                stringDataMechanism(UInt(CKM_CONCATENATE_BASE_AND_DATA), data: [0]), from: base, length: nil,
                secret: secret, in: session)
        },
        Attack(
            "C_DeriveKey(CKM_CONCATENATE_DATA_AND_BASE) into a readable key",
            refusal: "refused (the module offers no concatenation)", accepted: noSuchDerivation
        ) { token, session in
            let secret = randomBytes(32)
            let base = try token.victimSecret(
                secret, type: UInt(CKK_GENERIC_SECRET), extra: [flag(CKA_DERIVE, true)], in: session)
            return try token.deriveReadable(
                stringDataMechanism(UInt(CKM_CONCATENATE_DATA_AND_BASE), data: [0]), from: base, length: nil,
                secret: secret, in: session)
        },
        Attack(
            "C_DeriveKey(CKM_CONCATENATE_BASE_AND_KEY) with the attacker's key into a readable key",
            refusal: "refused (the module offers no concatenation)", accepted: noSuchDerivation
        ) { token, session in
            let secret = randomBytes(32)
            let base = try token.victimSecret(
                secret, type: UInt(CKK_GENERIC_SECRET), extra: [flag(CKA_DERIVE, true)], in: session)
            let other = try token.createSecretKey(
                randomBytes(16), type: UInt(CKK_GENERIC_SECRET), extra: attackerAttributes, in: session)
            return try token.deriveReadable(
                ulongMechanism(UInt(CKM_CONCATENATE_BASE_AND_KEY), other), from: base, length: nil,
                secret: secret, in: session)
        },
        Attack(
            "C_DeriveKey(CKM_XOR_BASE_AND_DATA) with zero data into a readable key",
            refusal: "refused (the module offers no XOR)", accepted: noSuchDerivation
        ) { token, session in
            let secret = randomBytes(32)
            let base = try token.victimSecret(
                secret, type: UInt(CKK_GENERIC_SECRET), extra: [flag(CKA_DERIVE, true)], in: session)
            return try token.deriveReadable(
                stringDataMechanism(UInt(CKM_XOR_BASE_AND_DATA), data: [UInt8](repeating: 0, count: 32)),
                from: base, length: nil, secret: secret, in: session)
        },
        Attack(
            "C_DeriveKey(CKM_EXTRACT_KEY_FROM_KEY) from bit 0 into a readable key",
            refusal: "refused (the module offers no extraction)", accepted: noSuchDerivation
        ) { token, session in
            let secret = randomBytes(32)
            let base = try token.victimSecret(
                secret, type: UInt(CKK_GENERIC_SECRET), extra: [flag(CKA_DERIVE, true)], in: session)
            return try token.deriveReadable(
                ulongMechanism(UInt(CKM_EXTRACT_KEY_FROM_KEY), 0), from: base, length: 32, secret: secret,
                in: session)
        },
        Attack(
            "C_DigestKey of a sensitive AES key", refusal: "CKR_KEY_INDIGESTIBLE",
            accepted: [UInt(CKR_KEY_INDIGESTIBLE)]
        ) { token, session in
            let secret = randomBytes(32)
            let key = try token.victimSecret(secret, in: session)
            let digest = try token.digest(secret, mechanism: UInt(CKM_SHA256))
            var mechanism = CK_MECHANISM(
                mechanism: CK_MECHANISM_TYPE(CKM_SHA256), pParameter: nil, ulParameterLen: 0)
            try #require(try token.m.C_DigestInit(session, &mechanism) == CKR_OK)
            let rv = try token.m.C_DigestKey(session, key)
            var output = [UInt8](repeating: 0, count: 64)
            var length = CK_ULONG(output.count)
            let final = try token.m.C_DigestFinal(session, &output, &length)
            let obtained = final == CKR_OK ? Array(output.prefix(Int(length))) : []
            return AttackResult(rv: rv, secret: digest, obtained: obtained)
        },
    ]

    /// CKA_CHECK_VALUE of a sensitive secret so short that its SHA-1 prefix
    /// names it after a search of 2^(8 × length).
    static let checkValues: [Attack] = [1, 3].map { length in
        Attack(
            "CKA_CHECK_VALUE of a sensitive \(length)-byte generic secret (searchable in 2^\(8 * length))",
            refusal: "no check value that names the key (or such a key refused)",
            accepted: [
                UInt(CKR_OK), UInt(CKR_ATTRIBUTE_SENSITIVE), UInt(CKR_ATTRIBUTE_TYPE_INVALID),
                UInt(CKR_ATTRIBUTE_VALUE_INVALID), UInt(CKR_TEMPLATE_INCONSISTENT),
            ]
        ) { token, session in
            let secret = randomBytes(length)
            let checkValue = Array(try token.digest(secret, mechanism: UInt(CKM_SHA_1)).prefix(3))
            var template = [
                Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY)),
                Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_GENERIC_SECRET)), Attribute(CKA_VALUE, secret),
            ]
            template += victimAttributes
            let (created, key) = try token.create(template, in: session)
            guard created == CKR_OK else { return AttackResult(rv: created, secret: checkValue) }
            let (rv, value) = try token.read(CKA_CHECK_VALUE, of: key, in: session)
            return AttackResult(rv: rv, secret: checkValue, obtained: value)
        }
    }

    static let all = reads + wraps + loosening + trustedCopies + derivations + checkValues
}

extension ModuleTests {
    /// The promise suites (Tests/SECURITY.md): each promise of the README and the
    /// man pages attacked by every path the module offers, one table row per path.
    @Suite("Promises, attacked by every path")
    struct PromiseTests {}
}

extension ModuleTests.PromiseTests {
    @Test(
        "A sensitive key never leaves the token: every path is refused and yields no byte of it",
        arguments: KeyLeakPaths.all)
    func aSensitiveKeyNeverLeaves(path: Attack) throws {
        try withPromiseToken { token, session in
            let result = try path.attack(token, session)
            #expect(
                path.accepted.contains(result.rv),
                "\(path.path): expected \(path.refusal) (\(describe(path.accepted))), got \(promiseRVName(result.rv))"
            )
            #expect(!result.leaked, "\(path.path): the attacker obtained the victim's secret")
        }
    }
}
