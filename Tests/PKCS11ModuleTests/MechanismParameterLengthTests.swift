import CPKCS11
import Testing

// Every mechanism parameter is checked at parsing against exactly
// what its mechanism (and the cipher behind it) takes: a length other than the structure's,
// a NULL parameter with a length, or a field out of the cipher's range is
// CKR_MECHANISM_PARAM_INVALID before any key is looked at.

/// Zeroed bytes for a parameter: enough for every structure, so a wrong length never makes
/// the module read beyond them.
private let zeroes = [UInt8](repeating: 0, count: 128)

/// One call of a function that takes a mechanism, with `parameter` (NULL when nil) and
/// `length`, on key handle 0: a parameter accepted shows as a key or template error instead.
private func call(
    _ token: TestToken, _ function: String, _ type: UInt, parameter: [UInt8]?, length: CK_ULONG,
    in session: CK_SESSION_HANDLE
) throws -> CK_RV {
    let box = MechanismBox(type, parameter: parameter)
    box.mechanism.ulParameterLen = length
    if parameter == nil { box.mechanism.pParameter = nil }
    let m = token.m
    switch function {
    case "C_SignInit": return try m.C_SignInit(session, &box.mechanism, 0)
    case "C_VerifyInit": return try m.C_VerifyInit(session, &box.mechanism, 0)
    case "C_EncryptInit": return try m.C_EncryptInit(session, &box.mechanism, 0)
    case "C_DecryptInit": return try m.C_DecryptInit(session, &box.mechanism, 0)
    case "C_WrapKey":
        var length: CK_ULONG = 0
        return try m.C_WrapKey(session, &box.mechanism, 0, 0, nil, &length)
    case "C_UnwrapKey":
        var wrapped = [UInt8](repeating: 0, count: 24)
        var key: CK_OBJECT_HANDLE = 0
        let unwrap = try m.C_UnwrapKey
        return withTemplate(readableSecretKey()) {
            unwrap(session, &box.mechanism, 0, &wrapped, CK_ULONG(wrapped.count), $0, $1, &key)
        }
    case "C_DeriveKey":
        var key: CK_OBJECT_HANDLE = 0
        let derive = try m.C_DeriveKey
        return withTemplate(readableSecretKey(length: 16)) {
            derive(session, &box.mechanism, 0, $0, $1, &key)
        }
    case "C_GenerateKey":
        return try token.generateSecretKey(
            [Attribute(CKA_VALUE_LEN, ulong: 16)], mechanism: type, in: session, box: box)
    case "C_GenerateKeyPair":
        var pair = KeyPair(publicKey: 0, privateKey: 0)
        let generate = try m.C_GenerateKeyPair
        return withTemplate([Attribute(CKA_EC_PARAMS, p256Parameters)]) { publicEntries, publicCount in
            generate(
                session, &box.mechanism, publicEntries, publicCount, nil, 0, &pair.publicKey, &pair.privateKey
            )
        }
    default:
        Issue.record("no call \(function)")
        return CKR_GENERAL_ERROR
    }
}

extension TestToken {
    /// C_GenerateKey with the mechanism of `box`.
    fileprivate func generateSecretKey(
        _ template: [Attribute], mechanism: UInt, in session: CK_SESSION_HANDLE, box: MechanismBox
    ) throws -> CK_RV {
        var key: CK_OBJECT_HANDLE = 0
        let generate = try m.C_GenerateKey
        return withTemplate(template) { generate(session, &box.mechanism, $0, $1, &key) }
    }
}

/// What each parser takes: the mechanism, a function that parses it, and the parameter
/// lengths it accepts (empty: none; 0 is always "no parameter").
private let parsers: [(function: String, mechanism: UInt, name: String, sizes: [Int])] = [
    ("C_SignInit", UInt(CKM_RSA_PKCS), "CKM_RSA_PKCS", []),
    ("C_SignInit", UInt(CKM_RSA_X_509), "CKM_RSA_X_509", []),
    ("C_SignInit", UInt(CKM_SHA256_RSA_PKCS), "CKM_SHA256_RSA_PKCS", []),
    ("C_SignInit", UInt(CKM_ECDSA), "CKM_ECDSA", []),
    ("C_VerifyInit", UInt(CKM_ECDSA_SHA256), "CKM_ECDSA_SHA256", []),
    ("C_SignInit", UInt(CKM_RSA_PKCS_PSS), "CKM_RSA_PKCS_PSS", [MemoryLayout<CK_RSA_PKCS_PSS_PARAMS>.size]),
    ("C_SignInit", UInt(CKM_EDDSA), "CKM_EDDSA", [3 * MemoryLayout<CK_ULONG>.size]),
    ("C_SignInit", UInt(CKM_SHA256_HMAC), "CKM_SHA256_HMAC", []),
    ("C_SignInit", UInt(CKM_SHA256_HMAC_GENERAL), "CKM_SHA256_HMAC_GENERAL", [MemoryLayout<CK_ULONG>.size]),
    ("C_SignInit", UInt(CKM_AES_CMAC), "CKM_AES_CMAC", []),
    (
        "C_EncryptInit", UInt(CKM_RSA_PKCS_OAEP), "CKM_RSA_PKCS_OAEP",
        [MemoryLayout<CK_RSA_PKCS_OAEP_PARAMS>.size]
    ),
    ("C_EncryptInit", UInt(CKM_AES_ECB), "CKM_AES_ECB", []),
    ("C_EncryptInit", UInt(CKM_AES_CBC), "CKM_AES_CBC", [16]),
    ("C_DecryptInit", UInt(CKM_AES_CBC_PAD), "CKM_AES_CBC_PAD", [16]),
    ("C_EncryptInit", UInt(CKM_AES_CTR), "CKM_AES_CTR", [MemoryLayout<CK_AES_CTR_PARAMS>.size]),
    // CK_GCM_PARAMS in v2.40's layout (no ulIvBits) and v3.0's.
    (
        "C_DecryptInit", UInt(CKM_AES_GCM), "CKM_AES_GCM",
        [
            2 * MemoryLayout<UnsafeRawPointer>.size + 3 * MemoryLayout<CK_ULONG>.size,
            MemoryLayout<CK_GCM_PARAMS>.size,
        ]
    ),
    ("C_WrapKey", UInt(CKM_AES_KEY_WRAP), "CKM_AES_KEY_WRAP", [8]),
    ("C_UnwrapKey", UInt(CKM_AES_KEY_WRAP_PAD), "CKM_AES_KEY_WRAP_PAD", [4]),
    ("C_DeriveKey", UInt(CKM_ECDH1_DERIVE), "CKM_ECDH1_DERIVE", [MemoryLayout<CK_ECDH1_DERIVE_PARAMS>.size]),
    ("C_DeriveKey", UInt(CKM_HKDF_DERIVE), "CKM_HKDF_DERIVE", [MemoryLayout<CK_HKDF_PARAMS>.size]),
    ("C_GenerateKey", UInt(CKM_AES_KEY_GEN), "CKM_AES_KEY_GEN", []),
    ("C_GenerateKeyPair", UInt(CKM_EC_KEY_PAIR_GEN), "CKM_EC_KEY_PAIR_GEN", []),
]

extension ModuleTests {
    @Suite("Mechanism parameters of the wrong length are CKR_MECHANISM_PARAM_INVALID")
    struct ParameterLengths {
        @Test(
            "CKM_EDDSA takes no parameter or exactly a CK_EDDSA_PARAMS: 1, 8, 23, 25 or a huge length is CKR_MECHANISM_PARAM_INVALID"
        )
        func edDSA() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.ed25519, in: session)
                let size = 3 * MemoryLayout<CK_ULONG>.size
                let box = MechanismBox(CKM_EDDSA, parameter: zeroes)
                for length in [1, 8, size - 1, size + 1, Int(Int32.max)] + [-1] {
                    box.mechanism.ulParameterLen = length < 0 ? CK_ULONG.max : CK_ULONG(length)
                    let rv = try token.m.C_SignInit(session, &box.mechanism, pair.privateKey)
                    #expect(
                        rv == CKR_MECHANISM_PARAM_INVALID,
                        "length \(box.mechanism.ulParameterLen): \(name(of: rv))")
                }
                for length in [0, size] {
                    box.mechanism.ulParameterLen = CK_ULONG(length)
                    #expect(
                        try token.m.C_SignInit(session, &box.mechanism, pair.privateKey) == CKR_OK,
                        "length \(length)")
                    #expect(try token.sign(session, [1, 2, 3]).rv == CKR_OK)
                }
                // NULL and no length is no parameter too.
                var none = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(CKM_EDDSA), pParameter: nil, ulParameterLen: 0)
                #expect(try token.m.C_SignInit(session, &none, pair.privateKey) == CKR_OK)
                #expect(try token.sign(session, [1]).rv == CKR_OK)
            }
        }

        @Test(
            "Every parser compares the length with its structure's exactly: one byte less or more, one byte, or NULL with a length is CKR_MECHANISM_PARAM_INVALID"
        )
        func everyParser() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                for parser in parsers {
                    var wrong: [(String, [UInt8]?, CK_ULONG)] = [
                        ("1 byte", zeroes, 1), ("NULL with 8", nil, 8), ("huge", zeroes, CK_ULONG.max),
                    ]
                    if parser.sizes.isEmpty { wrong.append(("8 bytes", zeroes, 8)) }
                    for size in parser.sizes where size > 1 {
                        wrong += [
                            ("\(size - 1) bytes", zeroes, CK_ULONG(size - 1)),
                            ("\(size + 1) bytes", zeroes, CK_ULONG(size + 1)),
                            ("NULL with \(size)", nil, CK_ULONG(size)),
                        ]
                    }
                    for (label, parameter, length) in wrong
                    where !parser.sizes.contains(Int(clamping: length)) || parameter == nil {
                        let rv = try call(
                            token, parser.function, parser.mechanism, parameter: parameter, length: length,
                            in: session)
                        #expect(
                            rv == CKR_MECHANISM_PARAM_INVALID,
                            "\(parser.function)(\(parser.name)), parameter \(label): \(name(of: rv))")
                    }
                }
            }
        }
    }

    @Suite("AES-GCM parameters are checked against what the cipher takes")
    struct GCMParameters {
        /// CK_GCM_PARAMS (v3.0 layout) whose IV pointer holds `available` bytes but whose
        /// lengths say `ivLength` and `aadLength`.
        static func parameters(
            ivLength: CK_ULONG, available: Int = 512, aadLength: CK_ULONG = 0, tagBits: CK_ULONG = 128
        ) -> MechanismBox {
            let box = MechanismBox(CKM_AES_GCM)
            let iv = box.copy([UInt8](repeating: 7, count: available)).baseAddress
            let aad = aadLength == 0 ? nil : box.copy([UInt8](repeating: 1, count: 64)).baseAddress
            box.setParameter(
                CK_GCM_PARAMS(
                    pIv: iv?.assumingMemoryBound(to: UInt8.self), ulIvLen: ivLength, ulIvBits: ivLength &* 8,
                    pAAD: aad?.assumingMemoryBound(to: UInt8.self), ulAADLen: aadLength, ulTagBits: tagBits))
            return box
        }

        @Test(
            "IVs of 1, 12 and 128 bytes encrypt and decrypt; 0, 129, 256, 257 and huge are CKR_MECHANISM_PARAM_INVALID in both directions"
        )
        func ivLengths() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let key = try token.createSecretKey([UInt8](repeating: 0x42, count: 16), in: session)
                let message = Array("galois counter mode".utf8)
                for length: CK_ULONG in [1, 12, 128] {
                    let (rv, sealed) = try token.crypt(
                        Self.parameters(ivLength: length), key: key, message, encrypt: true, in: session)
                    #expect(rv == CKR_OK, "IV of \(length) bytes: \(name(of: rv))")
                    let (openRV, opened) = try token.crypt(
                        Self.parameters(ivLength: length), key: key, sealed, encrypt: false, in: session)
                    #expect(
                        openRV == CKR_OK && opened == message, "IV of \(length) bytes: \(name(of: openRV))")
                }
                for length: CK_ULONG in [0, 129, 256, 257, 1 << 40, CK_ULONG.max] {
                    for encrypt in [true, false] {
                        let (rv, _) = try token.crypt(
                            Self.parameters(ivLength: length), key: key, message, encrypt: encrypt,
                            in: session)
                        #expect(
                            rv == CKR_MECHANISM_PARAM_INVALID,
                            "IV of \(length) bytes, \(encrypt ? "encrypting" : "decrypting"): \(name(of: rv))"
                        )
                    }
                }
            }
        }

        @Test(
            "Tags of 96 to 128 bits in whole bytes are taken; 0, 88, 95, 100, 129, 136 and huge are CKR_MECHANISM_PARAM_INVALID; so is additional data beyond 1 MiB"
        )
        func tagAndAdditionalData() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let key = try token.createSecretKey([UInt8](repeating: 0x42, count: 16), in: session)
                for bits: CK_ULONG in [96, 104, 112, 120, 128] {
                    let (rv, sealed) = try token.crypt(
                        Self.parameters(ivLength: 12, tagBits: bits), key: key, [1, 2], encrypt: true,
                        in: session)
                    #expect(
                        rv == CKR_OK && sealed.count == 2 + Int(bits / 8), "\(bits)-bit tag: \(name(of: rv))")
                }
                for bits: CK_ULONG in [0, 88, 95, 100, 129, 136, CK_ULONG.max] {
                    let (rv, _) = try token.crypt(
                        Self.parameters(ivLength: 12, tagBits: bits), key: key, [1, 2], encrypt: true,
                        in: session)
                    #expect(rv == CKR_MECHANISM_PARAM_INVALID, "\(bits)-bit tag: \(name(of: rv))")
                }
                for length: CK_ULONG in [(1 << 20) + 1, CK_ULONG.max] {
                    let (rv, _) = try token.crypt(
                        Self.parameters(ivLength: 12, aadLength: length), key: key, [1], encrypt: true,
                        in: session)
                    #expect(
                        rv == CKR_MECHANISM_PARAM_INVALID,
                        "\(length) bytes of additional data: \(name(of: rv))")
                }
            }
        }
    }
}
