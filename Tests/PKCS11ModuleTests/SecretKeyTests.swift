import CPKCS11
import Foundation
import Testing

// Secret keys through the module: objects, the AES and MAC mechanisms against
// known answers (NIST SP 800-38A/B/D, RFC 4231), multi-part agreeing with single-part.

/// SP 800-38A's AES-128 key and first two plaintext blocks (F.1–F.5).
private let nistKey = bytes(hex: "2b7e151628aed2a6abf7158809cf4f3c")
private let nistPlaintext = bytes(hex: "6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51")

extension ModuleTests {
    @Suite("Secret keys: objects and their rules")
    struct SecretKeyObjects {
        @Test("An imported AES key has its length and check value, and its value is sensitive")
        func importedKeyAttributes() throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(nistKey, in: session)
                #expect(decodeULong(try token.attribute(CKA_VALUE_LEN, of: key, in: session)) == 16)
                #expect(try token.probe(CKA_VALUE, of: key, in: session).0 == CKR_ATTRIBUTE_SENSITIVE)
                #expect(try token.bool(CKA_PRIVATE, of: key, in: session) == true)
                #expect(try token.bool(CKA_LOCAL, of: key, in: session) == false)
                #expect(try token.bool(CKA_ALWAYS_SENSITIVE, of: key, in: session) == false)
                // v3.0 §4.10: the first three bytes of the ECB encryption of a zero block.
                let (rv, zeroBlock) = try token.crypt(
                    MechanismBox(CKM_AES_ECB), key: key, [UInt8](repeating: 0, count: 16), encrypt: true,
                    in: session)
                #expect(rv == CKR_OK)
                #expect(
                    try token.attribute(CKA_CHECK_VALUE, of: key, in: session) == Array(zeroBlock.prefix(3)))
            }
        }

        @Test("An AES key of 15 bytes, or with a check value that contradicts it, is refused")
        func badValuesAreRefused() throws {
            try withLoggedInToken { token, session in
                let short = try token.create(
                    [
                        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY)),
                        Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_AES)),
                        Attribute(CKA_VALUE, [UInt8](repeating: 1, count: 15)),
                    ], in: session)
                #expect(short.0 == CKR_ATTRIBUTE_VALUE_INVALID)
                let contradicted = try token.create(
                    [
                        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY)),
                        Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_AES)), Attribute(CKA_VALUE, nistKey),
                        Attribute(CKA_CHECK_VALUE, [1, 2, 3]),
                    ], in: session)
                #expect(contradicted.0 == CKR_ATTRIBUTE_VALUE_INVALID)
            }
        }

        @Test(
            "C_GenerateKey makes a local, always-sensitive AES-256 key; a value or a wrong length is refused")
        func generation() throws {
            try withLoggedInToken { token, session in
                let (rv, key) = try token.generateSecretKey(
                    [Attribute(CKA_VALUE_LEN, ulong: 32), Attribute(CKA_TOKEN, bool: true)], in: session)
                #expect(rv == CKR_OK)
                #expect(decodeULong(try token.attribute(CKA_VALUE_LEN, of: key, in: session)) == 32)
                #expect(
                    decodeULong(try token.attribute(CKA_KEY_TYPE, of: key, in: session)) == CK_ULONG(CKK_AES))
                #expect(try token.bool(CKA_LOCAL, of: key, in: session) == true)
                #expect(try token.bool(CKA_ALWAYS_SENSITIVE, of: key, in: session) == true)
                #expect(try token.bool(CKA_NEVER_EXTRACTABLE, of: key, in: session) == true)
                #expect(
                    decodeULong(try token.attribute(CKA_KEY_GEN_MECHANISM, of: key, in: session))
                        == CK_ULONG(CKM_AES_KEY_GEN))
                #expect(
                    try token.generateSecretKey([Attribute(CKA_VALUE_LEN, ulong: 20)], in: session).0
                        == CKR_ATTRIBUTE_VALUE_INVALID)
                #expect(try token.generateSecretKey([], in: session).0 == CKR_TEMPLATE_INCOMPLETE)
                #expect(
                    try token.generateSecretKey(
                        [Attribute(CKA_VALUE_LEN, ulong: 16), Attribute(CKA_VALUE, nistKey)], in: session
                    ).0 == CKR_ATTRIBUTE_READ_ONLY)
                let hmac = try token.generateSecretKey(
                    [
                        Attribute(CKA_VALUE_LEN, ulong: 48),
                        Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_SHA256_HMAC)),
                    ],
                    mechanism: UInt(CKM_GENERIC_SECRET_KEY_GEN), in: session)
                #expect(hmac.0 == CKR_OK)
                #expect(
                    try token.generateSecretKey(
                        [
                            Attribute(CKA_VALUE_LEN, ulong: 16),
                            Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_GENERIC_SECRET)),
                        ],
                        in: session
                    ).0 == CKR_TEMPLATE_INCONSISTENT)
            }
        }

        @Test("A secret key needs a login: without one it is neither made nor found")
        func secretKeysNeedALogin() throws {
            try withToken { token in
                try token.setPINs()
                let session = try token.openSession()
                let (rv, _) = try token.generateSecretKey([Attribute(CKA_VALUE_LEN, ulong: 16)], in: session)
                #expect(rv == CKR_USER_NOT_LOGGED_IN)
            }
        }

        @Test("CKA_ALLOWED_MECHANISMS limits a key to its list, and cannot be changed")
        func allowedMechanisms() throws {
            try withLoggedInToken { token, session in
                let allowed = encode(CK_ULONG(CKM_AES_CBC_PAD)) + encode(CK_ULONG(CKM_AES_CMAC))
                let key = try token.createSecretKey(
                    nistKey, extra: [Attribute(CKA_ALLOWED_MECHANISMS, allowed)], in: session)
                #expect(try token.attribute(CKA_ALLOWED_MECHANISMS, of: key, in: session) == allowed)
                let iv = [UInt8](repeating: 0, count: 16)
                #expect(
                    try token.crypt(
                        MechanismBox(CKM_AES_CBC_PAD, parameter: iv), key: key, [1, 2, 3], encrypt: true,
                        in: session
                    ).0 == CKR_OK)
                #expect(
                    try token.crypt(
                        MechanismBox(CKM_AES_ECB), key: key, nistPlaintext, encrypt: true, in: session
                    ).0 == CKR_MECHANISM_INVALID)
                #expect(try token.mac(MechanismBox(CKM_AES_CMAC), key: key, [1], in: session).0 == CKR_OK)
                #expect(
                    try token.set(
                        [Attribute(CKA_ALLOWED_MECHANISMS, encode(CK_ULONG(CKM_AES_ECB)))], of: key,
                        in: session) == CKR_ATTRIBUTE_READ_ONLY)
                // Key pairs carry the list too: a P-256 key limited to ECDSA-SHA256 refuses raw ECDSA.
                var mechanism = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(CKM_EC_KEY_PAIR_GEN), pParameter: nil, ulParameterLen: 0)
                var publicKey: CK_OBJECT_HANDLE = 0
                var privateKey: CK_OBJECT_HANDLE = 0
                let generate = try token.m.C_GenerateKeyPair
                let rv = withTemplate([Attribute(CKA_EC_PARAMS, p256Parameters)]) { pub, pubCount in
                    withTemplate([
                        Attribute(CKA_SIGN, bool: true),
                        Attribute(CKA_ALLOWED_MECHANISMS, encode(CK_ULONG(CKM_ECDSA_SHA256))),
                    ]) { priv, privCount in
                        generate(session, &mechanism, pub, pubCount, priv, privCount, &publicKey, &privateKey)
                    }
                }
                #expect(rv == CKR_OK)
                #expect(try token.signInit(session, CKM_ECDSA, key: privateKey) == CKR_MECHANISM_INVALID)
                #expect(try token.signInit(session, CKM_ECDSA_SHA256, key: privateKey) == CKR_OK)
            }
        }

        @Test("C_DigestKey digests a readable secret key's value; a sensitive one is CKR_KEY_INDIGESTIBLE")
        func digestKey() throws {
            try withLoggedInToken { token, session in
                let readable = try token.createSecretKey(
                    Array("abc".utf8), type: UInt(CKK_GENERIC_SECRET), extra: extractable, in: session)
                var mechanism = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(CKM_SHA256), pParameter: nil, ulParameterLen: 0)
                #expect(try token.m.C_DigestInit(session, &mechanism) == CKR_OK)
                #expect(try token.m.C_DigestKey(session, readable) == CKR_OK)
                var digest = [UInt8](repeating: 0, count: 32)
                var length = CK_ULONG(32)
                #expect(try token.m.C_DigestFinal(session, &digest, &length) == CKR_OK)
                #expect(
                    digest == bytes(hex: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"))
                let sensitive = try token.createSecretKey(
                    Array("abc".utf8), type: UInt(CKK_GENERIC_SECRET), in: session)
                #expect(try token.m.C_DigestInit(session, &mechanism) == CKR_OK)
                #expect(try token.m.C_DigestKey(session, sensitive) == CKR_KEY_INDIGESTIBLE)
                // The failure ended the digest.
                #expect(try token.m.C_DigestFinal(session, &digest, &length) == CKR_OPERATION_NOT_INITIALIZED)
            }
        }

        @Test("A kept secret key follows changes to its object and is gone after C_Logout")
        func keptKeyFollowsChanges() throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(
                    nistKey, extra: [Attribute(CKA_TOKEN, bool: true)], in: session)
                let ecb = MechanismBox(CKM_AES_ECB)
                #expect(try token.crypt(ecb, key: key, nistPlaintext, encrypt: true, in: session).0 == CKR_OK)
                #expect(try token.set([Attribute(CKA_ENCRYPT, bool: false)], of: key, in: session) == CKR_OK)
                #expect(
                    try token.crypt(ecb, key: key, nistPlaintext, encrypt: true, in: session).0
                        == CKR_KEY_FUNCTION_NOT_PERMITTED)
                #expect(try token.set([Attribute(CKA_ENCRYPT, bool: true)], of: key, in: session) == CKR_OK)
                #expect(try token.crypt(ecb, key: key, nistPlaintext, encrypt: true, in: session).0 == CKR_OK)
                #expect(try token.m.C_Logout(session) == CKR_OK)
                #expect(
                    try token.crypt(ecb, key: key, nistPlaintext, encrypt: true, in: session).0
                        == CKR_KEY_HANDLE_INVALID)
            }
        }

        @Test("A copied secret key encrypts as its source does")
        func copiedKeyWorks() throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(nistKey, in: session)
                let copy = try token.copy(key, with: [Attribute(CKA_TOKEN, bool: true)], in: session)
                let (rv, ciphertext) = try token.crypt(
                    MechanismBox(CKM_AES_ECB), key: copy.1, nistPlaintext, encrypt: true, in: session)
                #expect(copy.0 == CKR_OK)
                #expect(rv == CKR_OK)
                #expect(
                    ciphertext
                        == bytes(hex: "3ad77bb40d7a3660a89ecaf32466ef97 f5d3d58503b9699de785895a96fdbaaf"))
            }
        }
    }

    @Suite("AES mechanisms give the standards' known answers, in one part or many")
    struct AESMechanisms {
        static let partSizes: [[Int]?] = [nil, [1, 15, 17], [16], [7, 7, 7, 100]]

        @Test("AES-ECB and AES-CBC: SP 800-38A F.1.1 and F.2.1", arguments: partSizes)
        func ecbAndCBC(parts: [Int]?) throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(nistKey, in: session)
                let ecb = try token.crypt(
                    MechanismBox(CKM_AES_ECB), key: key, nistPlaintext, encrypt: true, parts: parts,
                    in: session)
                #expect(ecb.0 == CKR_OK)
                #expect(
                    ecb.1 == bytes(hex: "3ad77bb40d7a3660a89ecaf32466ef97 f5d3d58503b9699de785895a96fdbaaf"))
                let iv = bytes(hex: "000102030405060708090a0b0c0d0e0f")
                let cbc = try token.crypt(
                    MechanismBox(CKM_AES_CBC, parameter: iv), key: key, nistPlaintext, encrypt: true,
                    parts: parts, in: session)
                #expect(cbc.0 == CKR_OK)
                #expect(
                    cbc.1 == bytes(hex: "7649abac8119b246cee98e9b12e9197d 5086cb9b507219ee95db113a917678b2"))
                let back = try token.crypt(
                    MechanismBox(CKM_AES_CBC, parameter: iv), key: key, cbc.1, encrypt: false, parts: parts,
                    in: session)
                #expect(back.1 == nistPlaintext)
            }
        }

        @Test("AES-CTR: SP 800-38A F.5.1", arguments: partSizes)
        func ctr(parts: [Int]?) throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(nistKey, in: session)
                let box = MechanismBox(CKM_AES_CTR)
                var parameters = CK_AES_CTR_PARAMS()
                parameters.ulCounterBits = 128
                withUnsafeMutableBytes(of: &parameters.cb) {
                    $0.copyBytes(from: bytes(hex: "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"))
                }
                box.setParameter(parameters)
                let (rv, ciphertext) = try token.crypt(
                    box, key: key, nistPlaintext, encrypt: true, parts: parts, in: session)
                #expect(rv == CKR_OK)
                #expect(
                    ciphertext
                        == bytes(hex: "874d6191b620e3261bef6864990db6ce 9806f66b7970fdff8617187bb9fffdff"))
            }
        }

        @Test("AES-CBC-PAD round-trips every length; bad padding is CKR_ENCRYPTED_DATA_INVALID")
        func cbcPad() throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(nistKey, in: session)
                let iv = [UInt8](repeating: 7, count: 16)
                for length in [0, 1, 15, 16, 17, 33] {
                    let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 11) }
                    let sealed = try token.crypt(
                        MechanismBox(CKM_AES_CBC_PAD, parameter: iv), key: key, message, encrypt: true,
                        in: session)
                    #expect(sealed.0 == CKR_OK)
                    #expect(sealed.1.count == (length / 16 + 1) * 16)
                    let opened = try token.crypt(
                        MechanismBox(CKM_AES_CBC_PAD, parameter: iv), key: key, sealed.1, encrypt: false,
                        parts: [5], in: session)
                    #expect(opened.0 == CKR_OK)
                    #expect(opened.1 == message)
                }
                // A block that decrypts to no valid padding (ECB-encrypt a block ending in 0x00).
                let bad = try token.crypt(
                    MechanismBox(CKM_AES_CBC, parameter: iv), key: key, [UInt8](repeating: 0, count: 16),
                    encrypt: true, in: session)
                let refused = try token.crypt(
                    MechanismBox(CKM_AES_CBC_PAD, parameter: iv), key: key, bad.1, encrypt: false, in: session
                )
                #expect(refused.0 == CKR_ENCRYPTED_DATA_INVALID)
                #expect(refused.1.isEmpty)
                // The operation ended: a new one may start.
                #expect(
                    try token.crypt(
                        MechanismBox(CKM_AES_ECB), key: key, nistPlaintext, encrypt: true, in: session
                    ).0 == CKR_OK)
            }
        }

        @Test(
            "AES-GCM: the GCM specification's test cases 2 and 4, both parameter layouts",
            arguments: [false, true])
        func gcm(legacyLayout: Bool) throws {
            try withLoggedInToken { token, session in
                let zeroKey = try token.createSecretKey([UInt8](repeating: 0, count: 16), in: session)
                let two = try token.crypt(
                    .gcm(
                        iv: [UInt8](repeating: 0, count: 12), aad: [], tagBits: 128,
                        legacyLayout: legacyLayout),
                    key: zeroKey, [UInt8](repeating: 0, count: 16), encrypt: true, in: session)
                #expect(two.0 == CKR_OK)
                #expect(
                    two.1 == bytes(hex: "0388dace60b6a392f328c2b971b2fe78 ab6e47d42cec13bdf53a67b21257bddf"))
                // Test case 4: a 60-byte message with 20 bytes of additional data.
                let key = try token.createSecretKey(
                    bytes(hex: "feffe9928665731c6d6a8f9467308308"), in: session)
                let iv = bytes(hex: "cafebabefacedbaddecaf888")
                let aad = bytes(hex: "feedfacedeadbeeffeedfacedeadbeefabaddad2")
                let plaintext = bytes(
                    hex: """
                        d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525
                        b16aedf5aa0de657ba637b39
                        """)
                let expected = bytes(
                    hex: """
                        42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa05
                        1ba30b396a0aac973d58e091 5bc94fbc3221a5db94fae95ae7121a47
                        """)
                for parts in [nil, [1, 16, 20]] as [[Int]?] {
                    let sealed = try token.crypt(
                        .gcm(iv: iv, aad: aad, tagBits: 128, legacyLayout: legacyLayout), key: key, plaintext,
                        encrypt: true, parts: parts, in: session)
                    #expect(sealed.0 == CKR_OK)
                    #expect(sealed.1 == expected)
                    let opened = try token.crypt(
                        .gcm(iv: iv, aad: aad, tagBits: 128, legacyLayout: legacyLayout), key: key, expected,
                        encrypt: false, parts: parts, in: session)
                    #expect(opened.0 == CKR_OK)
                    #expect(opened.1 == plaintext)
                }
            }
        }

        @Test("A GCM tag that does not verify releases no plaintext: CKR_ENCRYPTED_DATA_INVALID")
        func gcmTagFailure() throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(nistKey, in: session)
                let iv = [UInt8](repeating: 9, count: 12)
                var sealed = try token.crypt(
                    .gcm(iv: iv, aad: [1], tagBits: 96), key: key, nistPlaintext, encrypt: true, in: session
                ).1
                #expect(sealed.count == 32 + 12)
                sealed[sealed.count - 1] ^= 1
                for parts in [nil, [10]] as [[Int]?] {
                    let opened = try token.crypt(
                        .gcm(iv: iv, aad: [1], tagBits: 96), key: key, sealed, encrypt: false, parts: parts,
                        in: session)
                    #expect(opened.0 == CKR_ENCRYPTED_DATA_INVALID)
                    #expect(opened.1.isEmpty)
                }
                // A tag of 64 bits, or no IV, is a bad parameter.
                #expect(
                    try token.crypt(
                        .gcm(iv: iv, aad: [], tagBits: 64), key: key, [1], encrypt: true, in: session
                    ).0 == CKR_MECHANISM_PARAM_INVALID)
                #expect(
                    try token.crypt(
                        .gcm(iv: [], aad: [], tagBits: 128), key: key, [1], encrypt: true, in: session
                    ).0 == CKR_MECHANISM_PARAM_INVALID)
            }
        }

        @Test("A length query and a short buffer keep an AES operation; C_Encrypt after an update is refused")
        func twoCallConvention() throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(nistKey, in: session)
                let box = MechanismBox(CKM_AES_ECB)
                #expect(try token.m.C_EncryptInit(session, &box.mechanism, key) == CKR_OK)
                var input = nistPlaintext
                var length: CK_ULONG = 0
                #expect(try token.m.C_Encrypt(session, &input, 32, nil, &length) == CKR_OK)
                #expect(length == 32)
                var small = [UInt8](repeating: 0, count: 16)
                length = 16
                #expect(try token.m.C_Encrypt(session, &input, 32, &small, &length) == CKR_BUFFER_TOO_SMALL)
                var output = [UInt8](repeating: 0, count: 32)
                length = 32
                #expect(try token.m.C_Encrypt(session, &input, 32, &output, &length) == CKR_OK)
                #expect(
                    output == bytes(hex: "3ad77bb40d7a3660a89ecaf32466ef97 f5d3d58503b9699de785895a96fdbaaf"))
                #expect(try token.m.C_EncryptInit(session, &box.mechanism, key) == CKR_OK)
                length = 32
                #expect(try token.m.C_EncryptUpdate(session, &input, 16, &output, &length) == CKR_OK)
                length = 32
                #expect(try token.m.C_Encrypt(session, &input, 16, &output, &length) == CKR_OPERATION_ACTIVE)
            }
        }

        @Test("A partial block at the end of AES-ECB/CBC is CKR_DATA_LEN_RANGE; a non-AES key is refused")
        func badInput() throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(nistKey, in: session)
                #expect(
                    try token.crypt(
                        MechanismBox(CKM_AES_ECB), key: key, [1, 2, 3], encrypt: true, in: session
                    ).0 == CKR_DATA_LEN_RANGE)
                #expect(
                    try token.crypt(
                        MechanismBox(CKM_AES_CBC, parameter: [1, 2]), key: key, nistPlaintext, encrypt: true,
                        in: session
                    ).0 == CKR_MECHANISM_PARAM_INVALID)
                let hmacKey = try token.createSecretKey(
                    [1, 2, 3], type: UInt(CKK_GENERIC_SECRET), in: session)
                #expect(
                    try token.crypt(
                        MechanismBox(CKM_AES_ECB), key: hmacKey, nistPlaintext, encrypt: true, in: session
                    ).0 == CKR_KEY_TYPE_INCONSISTENT)
                let noEncrypt = try token.createSecretKey(
                    nistKey, extra: [Attribute(CKA_ENCRYPT, bool: false)], in: session)
                #expect(
                    try token.crypt(
                        MechanismBox(CKM_AES_ECB), key: noEncrypt, nistPlaintext, encrypt: true, in: session
                    ).0 == CKR_KEY_FUNCTION_NOT_PERMITTED)
            }
        }
    }

    @Suite("MAC mechanisms give the standards' known answers")
    struct MACMechanisms {
        @Test("HMAC-SHA256: RFC 4231 test case 2, whole and truncated (_GENERAL), in parts")
        func hmac() throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(
                    Array("Jefe".utf8), type: UInt(CKK_GENERIC_SECRET), in: session)
                let data = Array("what do ya want for nothing?".utf8)
                let expected = bytes(hex: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
                for parts in [nil, [1, 5], [28]] as [[Int]?] {
                    let (rv, mac) = try token.mac(
                        MechanismBox(CKM_SHA256_HMAC), key: key, data, parts: parts, in: session)
                    #expect(rv == CKR_OK)
                    #expect(mac == expected)
                }
                #expect(
                    try token.verifyMAC(MechanismBox(CKM_SHA256_HMAC), key: key, data, expected, in: session)
                        == CKR_OK)
                var wrong = expected
                wrong[0] ^= 1
                #expect(
                    try token.verifyMAC(MechanismBox(CKM_SHA256_HMAC), key: key, data, wrong, in: session)
                        == CKR_SIGNATURE_INVALID)
                #expect(
                    try token.verifyMAC(
                        MechanismBox(CKM_SHA256_HMAC), key: key, data, Array(expected.prefix(16)), in: session
                    ) == CKR_SIGNATURE_LEN_RANGE)
                let general = MechanismBox(CKM_SHA256_HMAC_GENERAL)
                general.setParameter(CK_ULONG(16))
                let (rv, short) = try token.mac(general, key: key, data, in: session)
                #expect(rv == CKR_OK)
                #expect(short == Array(expected.prefix(16)))
                // An AES key is not an HMAC key.
                let aes = try token.createSecretKey(nistKey, in: session)
                #expect(
                    try token.mac(MechanismBox(CKM_SHA256_HMAC), key: aes, data, in: session).0
                        == CKR_KEY_TYPE_INCONSISTENT)
            }
        }

        @Test("AES-CMAC: SP 800-38B examples 1 and 2")
        func cmac() throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(nistKey, in: session)
                let empty = try token.mac(MechanismBox(CKM_AES_CMAC), key: key, [], in: session)
                #expect(empty.1 == bytes(hex: "bb1d6929e95937287fa37d129b756746"))
                let one = try token.mac(
                    MechanismBox(CKM_AES_CMAC), key: key, Array(nistPlaintext.prefix(16)), parts: [3],
                    in: session)
                #expect(one.1 == bytes(hex: "070a16b46b4d4144f79bdd9dd04a287c"))
            }
        }
    }
}
