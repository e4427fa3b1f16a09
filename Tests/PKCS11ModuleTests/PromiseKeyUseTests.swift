import CPKCS11
import Foundation
import Testing

extension TestToken {
    /// The shared RSA key (RSAParts) as a private key with the given usage, and its public
    /// half able to encrypt and verify.
    func rsaKey(sign: Bool, decrypt: Bool, extra: [Attribute] = [], in session: CK_SESSION_HANDLE) throws
        -> KeyPair
    {
        let parts = try RSAParts.shared.get()
        let privateKey = try createObject(
            overriding(
                parts.privateKeyTemplate(label: "rsa"),
                with: [flag(CKA_SIGN, sign), flag(CKA_DECRYPT, decrypt)] + extra), in: session)
        let publicKey = try createObject(
            [
                Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_PUBLIC_KEY)),
                Attribute(CKA_KEY_TYPE, ulong: CKK_RSA),
                flag(CKA_ENCRYPT, true), flag(CKA_VERIFY, true), flag(CKA_WRAP, true),
                Attribute(CKA_MODULUS, parts.modulus), Attribute(CKA_PUBLIC_EXPONENT, parts.publicExponent),
            ], in: session)
        return KeyPair(publicKey: publicKey, privateKey: privateKey)
    }

    /// A message below the modulus and its raw RSA ciphertext (C_Encrypt(CKM_RSA_X_509)).
    func rawCiphertext(to publicKey: CK_OBJECT_HANDLE, in session: CK_SESSION_HANDLE) throws -> (
        message: [UInt8], ciphertext: [UInt8]
    ) {
        let message = [0x00, 0x01] + randomBytes(254)
        let (rv, ciphertext) = try crypt(
            MechanismBox(CKM_RSA_X_509), key: publicKey, message, encrypt: true, in: session)
        try #require(rv == CKR_OK && ciphertext.count == 256, "raw RSA encryption returned \(rvName(rv))")
        return (message, ciphertext)
    }

    /// C_SignInit and C_Sign with `mechanism` over `data`: the first CK_RV that is not CKR_OK
    /// and the output.
    func signRaw(_ box: MechanismBox, key: CK_OBJECT_HANDLE, _ data: [UInt8], in session: CK_SESSION_HANDLE)
        throws -> (CK_RV, [UInt8])
    {
        let started = try m.C_SignInit(session, &box.mechanism, key)
        guard started == CKR_OK else { return (started, []) }
        var input = data
        var output = [UInt8](repeating: 0, count: 1024)
        var length = CK_ULONG(output.count)
        let rv = try m.C_Sign(session, &input, CK_ULONG(input.count), &output, &length)
        return (rv, rv == CKR_OK ? Array(output.prefix(Int(length))) : [])
    }
}

/// "A key is used only when its usage attribute is TRUE, with the mechanisms its
/// CKA_ALLOWED_MECHANISMS lists, and as the configuration allows" (README "One set of key
/// rules", "CKA_ALLOWED_MECHANISMS", "OpenSSL"; p11keychain.conf(5) rsa-pkcs1-decryption),
/// attacked by the user holding the key.
enum KeyUsePaths {
    static let notPermitted = [UInt(CKR_KEY_FUNCTION_NOT_PERMITTED)]

    static let all: [Attack] = [
        Attack(
            "C_SignInit with a CKA_SIGN=FALSE key", refusal: "CKR_KEY_FUNCTION_NOT_PERMITTED",
            accepted: notPermitted
        ) {
            token, session in
            let pair = try token.generatePair(.p256, privateExtra: [flag(CKA_SIGN, false)], in: session)
            return AttackResult(rv: try token.ecdsaSignInit(pair.privateKey, in: session), secret: [])
        },
        Attack(
            "C_Decrypt(CKM_RSA_PKCS_OAEP) with a CKA_DECRYPT=FALSE key",
            refusal: "CKR_KEY_FUNCTION_NOT_PERMITTED",
            accepted: notPermitted
        ) { token, session in
            let pair = try token.rsaKey(sign: true, decrypt: false, in: session)
            let secret = randomBytes(32)
            let (_, ciphertext) = try token.crypt(
                oaepMechanism(), key: pair.publicKey, secret, encrypt: true, in: session)
            let (rv, plain) = try token.crypt(
                oaepMechanism(), key: pair.privateKey, ciphertext, encrypt: false, in: session)
            return AttackResult(rv: rv, secret: secret, obtained: plain)
        },
        Attack(
            "C_Sign(CKM_RSA_X_509) of a ciphertext with a CKA_SIGN=TRUE, CKA_DECRYPT=FALSE key (raw signing decrypts)",
            refusal: "CKR_KEY_FUNCTION_NOT_PERMITTED", accepted: notPermitted
        ) { token, session in
            let pair = try token.rsaKey(sign: true, decrypt: false, in: session)
            let (message, ciphertext) = try token.rawCiphertext(to: pair.publicKey, in: session)
            let (rv, output) = try token.signRaw(
                MechanismBox(CKM_RSA_X_509), key: pair.privateKey, ciphertext, in: session)
            return AttackResult(rv: rv, secret: Array(message.suffix(32)), obtained: output)
        },
        Attack(
            "C_Decrypt(CKM_RSA_X_509) with a CKA_SIGN=TRUE, CKA_DECRYPT=FALSE key",
            refusal: "CKR_KEY_FUNCTION_NOT_PERMITTED",
            accepted: notPermitted
        ) { token, session in
            let pair = try token.rsaKey(sign: true, decrypt: false, in: session)
            let (message, ciphertext) = try token.rawCiphertext(to: pair.publicKey, in: session)
            let (rv, output) = try token.crypt(
                MechanismBox(CKM_RSA_X_509), key: pair.privateKey, ciphertext, encrypt: false, in: session)
            return AttackResult(rv: rv, secret: Array(message.suffix(32)), obtained: output)
        },
        Attack(
            "C_EncryptInit(CKM_AES_ECB) with a key whose CKA_ALLOWED_MECHANISMS lists only CKM_AES_CBC_PAD",
            refusal: "CKR_MECHANISM_INVALID", accepted: [UInt(CKR_MECHANISM_INVALID)]
        ) { token, session in
            let key = try token.createSecretKey(
                randomBytes(32),
                extra: [Attribute(CKA_ALLOWED_MECHANISMS, encode(CK_ULONG(CKM_AES_CBC_PAD)))],
                in: session)
            let (rv, _) = try token.crypt(
                MechanismBox(CKM_AES_ECB), key: key, randomBytes(16), encrypt: true, in: session)
            return AttackResult(rv: rv, secret: [])
        },
        Attack(
            "C_EncryptInit(CKM_AES_ECB) with a key made with an empty CKA_ALLOWED_MECHANISMS",
            refusal: "the empty list refused at creation, or enforced as none",
            accepted: [UInt(CKR_ATTRIBUTE_VALUE_INVALID), UInt(CKR_MECHANISM_INVALID)]
        ) { token, session in
            let (made, key) = try token.create(
                [
                    Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY)),
                    Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_AES)), Attribute(CKA_VALUE, randomBytes(32)),
                    Attribute(CKA_ALLOWED_MECHANISMS, []),
                ], in: session)
            guard made == CKR_OK else { return AttackResult(rv: made, secret: []) }
            let (rv, _) = try token.crypt(
                MechanismBox(CKM_AES_ECB), key: key, randomBytes(16), encrypt: true, in: session)
            return AttackResult(rv: rv, secret: [])
        },
        Attack(
            "C_SignInit(CKM_ECDSA) with an RSA key", refusal: "CKR_KEY_TYPE_INCONSISTENT",
            accepted: [UInt(CKR_KEY_TYPE_INCONSISTENT)]
        ) { token, session in
            let pair = try token.rsaKey(sign: true, decrypt: true, in: session)
            return AttackResult(
                rv: try token.signInit(session, UInt(CKM_ECDSA), key: pair.privateKey), secret: [])
        },
    ]

    /// With `rsa-pkcs1-decryption = no`, every path that decrypts with an RSA private key.
    static let pkcs1Off: [Attack] = [
        Attack(
            "C_DecryptInit(CKM_RSA_PKCS)", refusal: "CKR_MECHANISM_INVALID",
            accepted: [UInt(CKR_MECHANISM_INVALID)]
        ) { token, session in
            let pair = try token.rsaKey(sign: true, decrypt: true, in: session)
            return AttackResult(
                rv: try token.cipherInit(session, encrypt: false, key: pair.privateKey), secret: [])
        },
        Attack(
            "C_Decrypt(CKM_RSA_X_509), which decrypts PKCS#1 v1.5 by hand",
            refusal: "CKR_MECHANISM_INVALID", accepted: [UInt(CKR_MECHANISM_INVALID)]
        ) { token, session in
            let pair = try token.rsaKey(sign: true, decrypt: true, in: session)
            let (message, ciphertext) = try token.rawCiphertext(to: pair.publicKey, in: session)
            let (rv, output) = try token.crypt(
                MechanismBox(CKM_RSA_X_509), key: pair.privateKey, ciphertext, encrypt: false, in: session)
            return AttackResult(rv: rv, secret: Array(message.suffix(32)), obtained: output)
        },
        Attack(
            "C_Sign(CKM_RSA_X_509) of a ciphertext (raw signing decrypts)",
            refusal: "CKR_MECHANISM_INVALID", accepted: [UInt(CKR_MECHANISM_INVALID)]
        ) { token, session in
            let pair = try token.rsaKey(sign: true, decrypt: true, in: session)
            let (message, ciphertext) = try token.rawCiphertext(to: pair.publicKey, in: session)
            let (rv, output) = try token.signRaw(
                MechanismBox(CKM_RSA_X_509), key: pair.privateKey, ciphertext, in: session)
            return AttackResult(rv: rv, secret: Array(message.suffix(32)), obtained: output)
        },
        Attack(
            "C_UnwrapKey(CKM_RSA_PKCS)", refusal: "CKR_MECHANISM_INVALID",
            accepted: [UInt(CKR_MECHANISM_INVALID)]
        ) { token, session in
            let pair = try token.rsaKey(
                sign: false, decrypt: true, extra: [flag(CKA_UNWRAP, true)], in: session)
            let (rv, _) = try token.unwrap(
                MechanismBox(CKM_RSA_PKCS), unwrappingKey: pair.privateKey, randomBytes(256),
                template: readableSecretKey(type: UInt(CKK_AES)), in: session)
            return AttackResult(rv: rv, secret: [])
        },
    ]
}

/// A host passing hostile numbers (ARCHITECTURE.md §6.1): lengths a parameter cannot have get
/// CKR_MECHANISM_PARAM_INVALID or the length-range code, never CKR_OK or a failure.
enum HostileParameterPaths {
    static let paramInvalid = [UInt(CKR_MECHANISM_PARAM_INVALID)]

    static let all: [Attack] = {
        var rows = [1, 8, 16].map { length in
            Attack(
                "CKM_EDDSA with a \(length)-byte parameter (CK_EDDSA_PARAMS is 24)",
                refusal: "CKR_MECHANISM_PARAM_INVALID", accepted: paramInvalid
            ) { token, session in
                let pair = try token.generatePair(.ed25519, in: session)
                return AttackResult(
                    rv: try token.signRaw(
                        MechanismBox(CKM_EDDSA, parameter: [UInt8](repeating: 0, count: length)),
                        key: pair.privateKey,
                        coreMessage, in: session
                    ).0, secret: [])
            }
        }
        rows += [0, 129, 200, 256].map { length in
            Attack(
                "CKM_AES_GCM with a \(length)-byte IV (1–128 allowed)",
                refusal: "CKR_MECHANISM_PARAM_INVALID", accepted: paramInvalid
            ) { token, session in
                let key = try token.createSecretKey(randomBytes(32), in: session)
                let box = MechanismBox.gcm(iv: [UInt8](repeating: 7, count: length), aad: [], tagBits: 128)
                return AttackResult(
                    rv: try token.crypt(box, key: key, randomBytes(16), encrypt: true, in: session).0,
                    secret: [])
            }
        }
        rows += [("CKM_RSA_PKCS", UInt(CKM_RSA_PKCS)), ("CKM_RSA_X_509", UInt(CKM_RSA_X_509))].flatMap {
            name, type in
            [1, 255].map { length in
                Attack(
                    "C_Decrypt(\(name)) of a \(length)-byte ciphertext under a 2048-bit key",
                    refusal: "CKR_ENCRYPTED_DATA_LEN_RANGE", accepted: [UInt(CKR_ENCRYPTED_DATA_LEN_RANGE)]
                ) { token, session in
                    // Raw RSA is a decryption and a signature at once: it needs both uses.
                    let pair = try token.rsaKey(sign: type == UInt(CKM_RSA_X_509), decrypt: true, in: session)
                    let box = MechanismBox(type)
                    try #require(
                        try token.m.C_DecryptInit(session, &box.mechanism, pair.privateKey) == CKR_OK)
                    // An output buffer of the modulus's size: the length is what is wrong.
                    var input = randomBytes(length)
                    var output = [UInt8](repeating: 0, count: 512)
                    var outputLength = CK_ULONG(output.count)
                    let rv = try token.m.C_Decrypt(
                        session, &input, CK_ULONG(input.count), &output, &outputLength)
                    return AttackResult(rv: rv, secret: [])
                }
            }
        }
        return rows
    }()
}

extension ModuleTests.PromiseTests {
    @Test(
        "A key is used only as its usage attributes and allowed mechanisms say: every other use is refused",
        arguments: KeyUsePaths.all)
    func keysAreUsedOnlyAsAllowed(path: Attack) throws {
        try withPromiseToken { token, session in
            let result = try path.attack(token, session)
            #expect(
                path.accepted.contains(result.rv),
                "\(path.path): expected \(path.refusal), got \(promiseRVName(result.rv))")
            #expect(!result.leaked, "\(path.path): the key decrypted what it may not")
        }
    }

    @Test(
        "rsa-pkcs1-decryption = no leaves no RSA decryption path: each is CKR_MECHANISM_INVALID",
        arguments: KeyUsePaths.pkcs1Off)
    func pkcs1DecryptionOffClosesEveryPath(path: Attack) throws {
        try withPromiseToken(configuration: "rsa-pkcs1-decryption = no\n") { token, session in
            let result = try path.attack(token, session)
            #expect(
                path.accepted.contains(result.rv),
                "\(path.path): expected \(path.refusal), got \(promiseRVName(result.rv))")
            #expect(!result.leaked, "\(path.path): a ciphertext was decrypted")
        }
    }

    @Test(
        "A parameter of a length it cannot have is refused with its code",
        arguments: HostileParameterPaths.all)
    func hostileParameterLengthsAreRefused(path: Attack) throws {
        try withPromiseToken { token, session in
            let result = try path.attack(token, session)
            #expect(
                path.accepted.contains(result.rv),
                "\(path.path): expected \(path.refusal), got \(promiseRVName(result.rv))")
        }
    }
}
