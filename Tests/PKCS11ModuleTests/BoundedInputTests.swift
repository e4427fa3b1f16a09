import CPKCS11
import Testing

extension ModuleTests {
    @Suite("Bounded inputs: multi-part raw operations and RSA key sizes")
    struct BoundedInputs {
        @Test(
            "Multi-part raw ECDSA collects at most 1024 bytes: more is CKR_DATA_LEN_RANGE and ends the operation"
        )
        func rawECDSAInputBounded() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.p256, in: session)
                var part = [UInt8](repeating: 7, count: 1000)
                #expect(try token.signInit(session, CKM_ECDSA, key: pair.privateKey) == CKR_OK)
                #expect(try token.m.C_SignUpdate(session, &part, 1000) == CKR_OK)
                #expect(try token.m.C_SignUpdate(session, &part, 24) == CKR_OK)
                #expect(try token.m.C_SignUpdate(session, &part, 1) == CKR_DATA_LEN_RANGE)
                #expect(try token.m.C_SignUpdate(session, &part, 1) == CKR_OPERATION_NOT_INITIALIZED)
                // Single-part too, and verification likewise.
                #expect(try token.signInit(session, CKM_ECDSA, key: pair.privateKey) == CKR_OK)
                var long = [UInt8](repeating: 7, count: 1025)
                #expect(try token.sign(session, long).rv == CKR_DATA_LEN_RANGE)
                #expect(try token.verifyInit(session, CKM_ECDSA, key: pair.publicKey) == CKR_OK)
                #expect(try token.m.C_VerifyUpdate(session, &long, 1025) == CKR_DATA_LEN_RANGE)
                #expect(try token.m.C_VerifyUpdate(session, &part, 1) == CKR_OPERATION_NOT_INITIALIZED)
                // A hashing mechanism takes any amount, part by part.
                #expect(try token.signInit(session, CKM_ECDSA_SHA256, key: pair.privateKey) == CKR_OK)
                for _ in 0..<4 { #expect(try token.m.C_SignUpdate(session, &long, 1025) == CKR_OK) }
            }
        }

        @Test("Multi-part raw RSA signing, encryption and decryption collect at most one modulus")
        func rsaInputBounded() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.rsa2048, in: session)
                var part = [UInt8](repeating: 7, count: 200)
                var output = [UInt8](repeating: 0, count: 256)
                var length: CK_ULONG = 256
                #expect(try token.signInit(session, CKM_RSA_PKCS, key: pair.privateKey) == CKR_OK)
                #expect(try token.m.C_SignUpdate(session, &part, 200) == CKR_OK)
                #expect(try token.m.C_SignUpdate(session, &part, 57) == CKR_DATA_LEN_RANGE)
                #expect(try token.m.C_SignUpdate(session, &part, 1) == CKR_OPERATION_NOT_INITIALIZED)

                #expect(try token.cipherInit(session, encrypt: true, key: pair.publicKey) == CKR_OK)
                #expect(try token.m.C_EncryptUpdate(session, &part, 200, &output, &length) == CKR_OK)
                #expect(
                    try token.m.C_EncryptUpdate(session, &part, 57, &output, &length) == CKR_DATA_LEN_RANGE)
                #expect(
                    try token.m.C_EncryptUpdate(session, &part, 1, &output, &length)
                        == CKR_OPERATION_NOT_INITIALIZED)

                #expect(try token.cipherInit(session, encrypt: false, key: pair.privateKey) == CKR_OK)
                #expect(try token.m.C_DecryptUpdate(session, &part, 200, &output, &length) == CKR_OK)
                #expect(
                    try token.m.C_DecryptUpdate(session, &part, 57, &output, &length)
                        == CKR_ENCRYPTED_DATA_LEN_RANGE)
                #expect(
                    try token.m.C_DecryptUpdate(session, &part, 1, &output, &length)
                        == CKR_OPERATION_NOT_INITIALIZED)

                // A whole message in parts that fit still encrypts, and decrypts back.
                var message = Array("bounded but whole".utf8)
                #expect(try token.cipherInit(session, encrypt: true, key: pair.publicKey) == CKR_OK)
                #expect(try token.m.C_EncryptUpdate(session, &message, 7, &output, &length) == CKR_OK)
                var rest = Array(message[7...])
                #expect(
                    try token.m.C_EncryptUpdate(session, &rest, CK_ULONG(rest.count), &output, &length)
                        == CKR_OK)
                length = 256
                #expect(try token.m.C_EncryptFinal(session, &output, &length) == CKR_OK)
                #expect(length == 256)
                #expect(try token.cipherInit(session, encrypt: false, key: pair.privateKey) == CKR_OK)
                var plain = [UInt8](repeating: 0, count: 256)
                var plainLength: CK_ULONG = 256
                #expect(try token.m.C_Decrypt(session, &output, 256, &plain, &plainLength) == CKR_OK)
                #expect(Array(plain.prefix(Int(plainLength))) == message)
            }
        }

        @Test(
            "C_GenerateKeyPair accepts exactly the RSA sizes C_GetMechanismInfo advertises",
            arguments: [
                (512, false), (1023, false), (1024, true), (8192, true), (8193, false), (16384, false),
            ])
        func rsaKeySizes(bits: Int, accepted: Bool) throws {
            try withToken { token throws in
                var info = CK_MECHANISM_INFO()
                #expect(
                    try token.m.C_GetMechanismInfo(0, CK_MECHANISM_TYPE(CKM_RSA_PKCS_KEY_PAIR_GEN), &info)
                        == CKR_OK)
                #expect(info.ulMinKeySize == 1024 && info.ulMaxKeySize == 8192)
                #expect(
                    accepted == (CK_ULONG(bits) >= info.ulMinKeySize && CK_ULONG(bits) <= info.ulMaxKeySize))
                guard !accepted else { return }  // an accepted size is generated by the other tests
                let session = try token.loggedInSession()
                var mechanism = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(CKM_RSA_PKCS_KEY_PAIR_GEN), pParameter: nil,
                    ulParameterLen: 0)
                var publicKey: CK_OBJECT_HANDLE = 0
                var privateKey: CK_OBJECT_HANDLE = 0
                let generate = try token.m.C_GenerateKeyPair
                let rv = withTemplate([Attribute(CKA_MODULUS_BITS, ulong: CK_ULONG(bits))]) {
                    entries, count in
                    generate(session, &mechanism, entries, count, nil, 0, &publicKey, &privateKey)
                }
                #expect(rv == CKR_KEY_SIZE_RANGE, "\(bits) bits: \(name(of: rv))")
            }
        }
    }
}
