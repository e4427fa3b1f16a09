import CPKCS11
import Testing

// Every RSA private-key path obeys `rsa-pkcs1-decryption`, raw RSA
// obeys the usage flags of what it does (a decryption and a signature at once), and every RSA
// decryption takes exactly one modulus of ciphertext.

extension TestToken {
    /// An RSA-2048 session key pair whose private half has CKA_SIGN and CKA_DECRYPT as given.
    fileprivate func rsaPair(sign: Bool, decrypt: Bool, in session: CK_SESSION_HANDLE) throws -> KeyPair {
        let (rv, pair) = try generateRSA(bits: 2048, sign: sign, decrypt: decrypt, in: session)
        try #require(rv == CKR_OK, "C_GenerateKeyPair returned \(name(of: rv))")
        return pair
    }

    /// C_EncryptInit + C_Encrypt with a parameterless RSA mechanism.
    fileprivate func rsaEncrypt(
        _ type: UInt, key: CK_OBJECT_HANDLE, _ data: [UInt8], in session: CK_SESSION_HANDLE
    ) throws -> (CK_RV, [UInt8]) {
        try rsaCrypt(MechanismBox(type), key: key, data, encrypt: true, in: session)
    }

    /// C_EncryptInit + C_Encrypt or C_DecryptInit + C_Decrypt, single-part, into a buffer
    /// larger than any modulus.
    fileprivate func rsaCrypt(
        _ box: MechanismBox, key: CK_OBJECT_HANDLE, _ data: [UInt8], encrypt: Bool,
        in session: CK_SESSION_HANDLE
    ) throws -> (CK_RV, [UInt8]) {
        let initRV =
            try encrypt
            ? m.C_EncryptInit(session, &box.mechanism, key) : m.C_DecryptInit(session, &box.mechanism, key)
        guard initRV == CKR_OK else { return (initRV, []) }
        var input = data
        var output = [UInt8](repeating: 0, count: 1024)
        var length = CK_ULONG(output.count)
        let rv =
            try encrypt
            ? m.C_Encrypt(session, &input, CK_ULONG(input.count), &output, &length)
            : m.C_Decrypt(session, &input, CK_ULONG(input.count), &output, &length)
        return (rv, Array(output.prefix(Int(clamping: length))))
    }

    /// C_DecryptInit + C_Decrypt of `ciphertext` with `box`; with `query`, a length query
    /// (NULL buffer) comes first and its CK_RV is returned when it fails.
    fileprivate func rsaDecrypt(
        _ box: MechanismBox, key: CK_OBJECT_HANDLE, _ ciphertext: [UInt8], query: Bool,
        in session: CK_SESSION_HANDLE
    ) throws -> CK_RV {
        let initRV = try m.C_DecryptInit(session, &box.mechanism, key)
        guard initRV == CKR_OK else { return initRV }
        var input = ciphertext
        var length: CK_ULONG = 0
        if query {
            let rv = try m.C_Decrypt(session, &input, CK_ULONG(input.count), nil, &length)
            guard rv == CKR_OK else { return rv }
        }
        var output = [UInt8](repeating: 0, count: 1024)
        length = CK_ULONG(output.count)
        return try m.C_Decrypt(session, &input, CK_ULONG(input.count), &output, &length)
    }
}

/// CKM_RSA_PKCS_OAEP with SHA-256, no label.
private func oaepSHA256() -> MechanismBox {
    let box = MechanismBox(CKM_RSA_PKCS_OAEP)
    box.setParameter(
        CK_RSA_PKCS_OAEP_PARAMS(
            hashAlg: CK_MECHANISM_TYPE(CKM_SHA256), mgf: CK_RSA_PKCS_MGF_TYPE(CKG_MGF1_SHA256),
            source: CK_RSA_PKCS_OAEP_SOURCE_TYPE(CKZ_DATA_SPECIFIED), pSourceData: nil, ulSourceDataLen: 0))
    return box
}

extension ModuleTests {
    @Suite(
        "rsa-pkcs1-decryption = no covers every RSA private-key path that can act as a PKCS#1 v1.5 decryption oracle"
    )
    struct RSAPKCS1DecryptionPolicy {
        /// C_Initialize again with `rsa-pkcs1-decryption = no` (the configuration is read then).
        static func turnOff(_ token: TestToken) throws {
            try token.configure("rsa-pkcs1-decryption = no\n")
            _ = try token.m.C_Finalize(nil)
            try #require(try token.m.C_Initialize(nil) == CKR_OK)
        }

        @Test(
            "With the policy off, raw RSA decryption and signing and PKCS#1 v1.5 decryption are CKR_MECHANISM_INVALID; the public operations stay"
        )
        func everyPrivatePathIsOff() throws {
            try withToken { token throws in
                try Self.turnOff(token)
                let session = try token.loggedInSession()
                let pair = try token.rsaPair(sign: true, decrypt: true, in: session)
                let refused: [(String, CK_RV)] = [
                    (
                        "C_DecryptInit(CKM_RSA_PKCS)",
                        try token.cipherInit(session, encrypt: false, key: pair.privateKey)
                    ),
                    (
                        "C_DecryptInit(CKM_RSA_X_509)",
                        try token.m.C_DecryptInit(
                            session, &MechanismBox(CKM_RSA_X_509).mechanism, pair.privateKey)
                    ),
                    (
                        "C_SignInit(CKM_RSA_X_509)",
                        try token.signInit(session, UInt(CKM_RSA_X_509), key: pair.privateKey)
                    ),
                ]
                for (call, rv) in refused {
                    #expect(rv == CKR_MECHANISM_INVALID, "\(call): \(name(of: rv))")
                }
                // The public operations and the other mechanisms stay.
                let (encryptRV, ciphertext) = try token.rsaEncrypt(
                    UInt(CKM_RSA_X_509), key: pair.publicKey, [42], in: session)
                #expect(encryptRV == CKR_OK && ciphertext.count == 256, "\(name(of: encryptRV))")
                #expect(try token.verifyInit(session, UInt(CKM_RSA_X_509), key: pair.publicKey) == CKR_OK)
                #expect(
                    try token.signInit(session, UInt(CKM_SHA256_RSA_PKCS), key: pair.privateKey) == CKR_OK)
                #expect(try token.sign(session, [1, 2, 3]).rv == CKR_OK)
                let oaep = oaepSHA256()
                let (sealRV, sealed) = try token.rsaCrypt(
                    oaep, key: pair.publicKey, [7], encrypt: true, in: session)
                #expect(sealRV == CKR_OK)
                #expect(
                    try token.rsaCrypt(oaep, key: pair.privateKey, sealed, encrypt: false, in: session).1 == [
                        7
                    ])
            }
        }

        @Test(
            "With the policy off, C_GetMechanismInfo takes CKF_DECRYPT, CKF_UNWRAP and CKF_SIGN off CKM_RSA_X_509 and CKF_DECRYPT, CKF_UNWRAP off CKM_RSA_PKCS"
        )
        func mechanismInfoSaysSo() throws {
            try withToken { token throws in
                try Self.turnOff(token)
                let privateFlags = CK_FLAGS(CKF_DECRYPT | CKF_UNWRAP | CKF_SIGN | CKF_SIGN_RECOVER)
                var raw = CK_MECHANISM_INFO()
                #expect(try token.m.C_GetMechanismInfo(0, CK_MECHANISM_TYPE(CKM_RSA_X_509), &raw) == CKR_OK)
                #expect(raw.flags & privateFlags == 0)
                #expect(raw.flags & CK_FLAGS(CKF_ENCRYPT | CKF_VERIFY) == CK_FLAGS(CKF_ENCRYPT | CKF_VERIFY))
                var pkcs1 = CK_MECHANISM_INFO()
                #expect(try token.m.C_GetMechanismInfo(0, CK_MECHANISM_TYPE(CKM_RSA_PKCS), &pkcs1) == CKR_OK)
                #expect(pkcs1.flags & CK_FLAGS(CKF_DECRYPT | CKF_UNWRAP) == 0)
                #expect(pkcs1.flags & CK_FLAGS(CKF_SIGN) != 0)
            }
        }

        @Test("By default raw RSA decrypts and signs with a key that may do both")
        func onByDefault() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.rsaPair(sign: true, decrypt: true, in: session)
                let (rv, ciphertext) = try token.rsaEncrypt(
                    UInt(CKM_RSA_X_509), key: pair.publicKey, [42], in: session)
                #expect(rv == CKR_OK)
                let (decryptRV, plaintext) = try token.rsaCrypt(
                    MechanismBox(CKM_RSA_X_509), key: pair.privateKey, ciphertext, encrypt: false, in: session
                )
                #expect(decryptRV == CKR_OK && plaintext.last == 42)
                var info = CK_MECHANISM_INFO()
                #expect(try token.m.C_GetMechanismInfo(0, CK_MECHANISM_TYPE(CKM_RSA_X_509), &info) == CKR_OK)
                #expect(info.flags & CK_FLAGS(CKF_DECRYPT | CKF_SIGN) == CK_FLAGS(CKF_DECRYPT | CKF_SIGN))
            }
        }
    }

    @Suite("Raw RSA's private operation obeys the usage flags of what it does")
    struct RawRSAUsageFlags {
        @Test(
            "C_Sign(CKM_RSA_X_509) with a CKA_DECRYPT=FALSE key is CKR_KEY_FUNCTION_NOT_PERMITTED: it would decrypt any ciphertext"
        )
        func signNeedsDecrypt() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.rsaPair(sign: true, decrypt: false, in: session)
                let rv = try token.signInit(session, UInt(CKM_RSA_X_509), key: pair.privateKey)
                #expect(rv == CKR_KEY_FUNCTION_NOT_PERMITTED, "\(name(of: rv))")
                // The padded signatures the key may make stay.
                #expect(
                    try token.signInit(session, UInt(CKM_SHA256_RSA_PKCS), key: pair.privateKey) == CKR_OK)
                #expect(try token.sign(session, [1]).rv == CKR_OK)
            }
        }

        @Test(
            "C_Decrypt(CKM_RSA_X_509) with a CKA_SIGN=FALSE key is CKR_KEY_FUNCTION_NOT_PERMITTED: it would sign any padded digest"
        )
        func decryptNeedsSign() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.rsaPair(sign: false, decrypt: true, in: session)
                let rv = try token.m.C_DecryptInit(
                    session, &MechanismBox(CKM_RSA_X_509).mechanism, pair.privateKey)
                #expect(rv == CKR_KEY_FUNCTION_NOT_PERMITTED, "\(name(of: rv))")
                // OAEP decryption, which signs nothing, stays.
                let oaep = oaepSHA256()
                let (sealRV, sealed) = try token.rsaCrypt(
                    oaep, key: pair.publicKey, [9], encrypt: true, in: session)
                #expect(sealRV == CKR_OK)
                #expect(
                    try token.rsaCrypt(oaep, key: pair.privateKey, sealed, encrypt: false, in: session).1 == [
                        9
                    ])
            }
        }
    }

    @Suite("Every RSA decryption takes exactly one modulus of ciphertext")
    struct RSACiphertextLength {
        @Test(
            "C_Decrypt of k-1, k+1, 0 and 1 bytes is CKR_ENCRYPTED_DATA_LEN_RANGE for CKM_RSA_PKCS, CKM_RSA_X_509 and OAEP, length query or not"
        )
        func decryption() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.rsaPair(sign: true, decrypt: true, in: session)
                let (rv, ciphertext) = try token.rsaEncrypt(
                    UInt(CKM_RSA_PKCS), key: pair.publicKey, [5], in: session)
                try #require(rv == CKR_OK && ciphertext.count == 256)
                let wrongLengths: [(String, [UInt8])] = [
                    ("k-1", Array(ciphertext.dropFirst())), ("k+1", [0] + ciphertext), ("0", []), ("1", [1]),
                ]
                let boxes: [(String, () -> MechanismBox)] = [
                    ("CKM_RSA_PKCS", { MechanismBox(CKM_RSA_PKCS) }),
                    ("CKM_RSA_X_509", { MechanismBox(CKM_RSA_X_509) }),
                    ("CKM_RSA_PKCS_OAEP", { oaepSHA256() }),
                ]
                for (mechanism, box) in boxes {
                    for (label, input) in wrongLengths {
                        for query in [false, true] {
                            let rv = try token.rsaDecrypt(
                                box(), key: pair.privateKey, input, query: query, in: session)
                            #expect(
                                rv == CKR_ENCRYPTED_DATA_LEN_RANGE,
                                "\(mechanism), \(label) bytes\(query ? ", length query first" : ""): \(name(of: rv))"
                            )
                        }
                    }
                }
                // The right length decrypts.
                #expect(
                    try token.rsaDecrypt(
                        MechanismBox(CKM_RSA_PKCS), key: pair.privateKey, ciphertext, query: true, in: session
                    ) == CKR_OK)
            }
        }

        @Test("C_UnwrapKey(CKM_RSA_PKCS_OAEP) of k-1, k+1, 0 and 1 bytes is CKR_WRAPPED_KEY_LEN_RANGE")
        func unwrapping() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                var mechanism = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(CKM_RSA_PKCS_KEY_PAIR_GEN), pParameter: nil,
                    ulParameterLen: 0)
                var pair = KeyPair(publicKey: 0, privateKey: 0)
                let generate = try token.m.C_GenerateKeyPair
                let rv = withTemplate([
                    Attribute(CKA_MODULUS_BITS, ulong: 2048), Attribute(CKA_WRAP, bool: true),
                ]) {
                    publicEntries, publicCount in
                    withTemplate([Attribute(CKA_PRIVATE, bool: true), Attribute(CKA_UNWRAP, bool: true)]) {
                        privateEntries, privateCount in
                        generate(
                            session, &mechanism, publicEntries, publicCount, privateEntries, privateCount,
                            &pair.publicKey, &pair.privateKey)
                    }
                }
                try #require(rv == CKR_OK, "\(name(of: rv))")
                let secret = try token.createSecretKey(
                    [UInt8](repeating: 3, count: 16), extra: [Attribute(CKA_EXTRACTABLE, bool: true)],
                    in: session)
                let (wrapRV, wrapped) = try token.wrap(
                    oaepSHA256(), wrappingKey: pair.publicKey, key: secret, in: session)
                try #require(wrapRV == CKR_OK && wrapped.count == 256, "\(name(of: wrapRV))")
                let template = readableSecretKey(type: UInt(CKK_AES))
                for (label, input) in [
                    ("k-1", Array(wrapped.dropFirst())), ("k+1", [0] + wrapped), ("0", []), ("1", [1]),
                ] {
                    let rv = try token.unwrap(
                        oaepSHA256(), unwrappingKey: pair.privateKey, input, template: template, in: session
                    ).0
                    #expect(rv == CKR_WRAPPED_KEY_LEN_RANGE, "\(label) bytes: \(name(of: rv))")
                }
                #expect(
                    try token.unwrap(
                        oaepSHA256(), unwrappingKey: pair.privateKey, wrapped, template: template, in: session
                    ).0
                        == CKR_OK)
            }
        }
    }
}
