import CPKCS11
import Testing

extension ModuleTests {
    @Suite("The two-call convention for every function that returns bytes (v2.40 §5.2)")
    struct OutputBuffers {
        @Test("C_Sign: a length query and a short buffer keep the signature; a full one makes it and ends it")
        func signTwoCalls() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.p256, in: session)
                var data = [UInt8](repeating: 3, count: 20)
                #expect(try token.signInit(session, CKM_ECDSA_SHA256, key: pair.privateKey) == CKR_OK)
                var length: CK_ULONG = 0
                #expect(try token.m.C_Sign(session, &data, 20, nil, &length) == CKR_OK)
                #expect(length == 64)
                let short = try token.sign(session, data, capacity: 63)
                #expect(short.rv == CKR_BUFFER_TOO_SMALL && short.length == 64)
                let full = try token.sign(session, data, capacity: 100)
                #expect(full.rv == CKR_OK && full.length == 64)
                #expect(try token.sign(session, data).rv == CKR_OPERATION_NOT_INITIALIZED)
                #expect(try token.verifyInit(session, CKM_ECDSA_SHA256, key: pair.publicKey) == CKR_OK)
                var signature = full.signature
                #expect(try token.m.C_Verify(session, &data, 20, &signature, 64) == CKR_OK)
            }
        }

        @Test("C_Encrypt and C_Decrypt: length queries and short buffers keep the operation")
        func cipherTwoCalls() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.rsa2048, in: session)
                var message = Array("seventeen bytes!!".utf8)
                var ciphertext = [UInt8](repeating: 0, count: 256)
                var length: CK_ULONG = 0
                #expect(try token.cipherInit(session, encrypt: true, key: pair.publicKey) == CKR_OK)
                #expect(try token.m.C_Encrypt(session, &message, 17, nil, &length) == CKR_OK)
                #expect(length == 256)
                length = 255
                #expect(
                    try token.m.C_Encrypt(session, &message, 17, &ciphertext, &length) == CKR_BUFFER_TOO_SMALL
                )
                #expect(length == 256)
                #expect(try token.m.C_Encrypt(session, &message, 17, &ciphertext, &length) == CKR_OK)
                #expect(
                    try token.m.C_Encrypt(session, &message, 17, &ciphertext, &length)
                        == CKR_OPERATION_NOT_INITIALIZED)

                var plain = [UInt8](repeating: 0, count: 256)
                #expect(try token.cipherInit(session, encrypt: false, key: pair.privateKey) == CKR_OK)
                length = 0
                #expect(try token.m.C_Decrypt(session, &ciphertext, 256, nil, &length) == CKR_OK)
                #expect(length == 256)  // a bound: the plaintext's length is known only afterwards
                length = 4
                #expect(
                    try token.m.C_Decrypt(session, &ciphertext, 256, &plain, &length) == CKR_BUFFER_TOO_SMALL)
                #expect(length == 17)
                #expect(try token.m.C_Decrypt(session, &ciphertext, 256, &plain, &length) == CKR_OK)
                #expect(Array(plain.prefix(Int(length))) == message)
                #expect(
                    try token.m.C_Decrypt(session, &ciphertext, 256, &plain, &length)
                        == CKR_OPERATION_NOT_INITIALIZED)
            }
        }

        @Test("C_GetSlotList and C_GetMechanismList report the count on a query and on a short array")
        func listTwoCalls() throws {
            try withToken { token throws in
                var count: CK_ULONG = 0
                #expect(try token.m.C_GetMechanismList(0, nil, &count) == CKR_OK)
                let mechanisms = count
                #expect(mechanisms > 1)
                var list = [CK_MECHANISM_TYPE](repeating: 0, count: Int(mechanisms))
                count = mechanisms - 1
                #expect(try token.m.C_GetMechanismList(0, &list, &count) == CKR_BUFFER_TOO_SMALL)
                #expect(count == mechanisms)
                #expect(try token.m.C_GetMechanismList(0, &list, &count) == CKR_OK)
                #expect(list.contains(CK_MECHANISM_TYPE(CKM_ECDSA_SHA256)))
                var slots = [CK_SLOT_ID](repeating: 9, count: 2)
                count = 0
                #expect(try token.m.C_GetSlotList(0, &slots, &count) == CKR_BUFFER_TOO_SMALL)
                #expect(count == 1)
                #expect(try token.m.C_GetSlotList(0, &slots, &count) == CKR_OK)
                #expect(count == 1 && slots[0] == 0)
            }
        }

        @Test("C_GetAttributeValue gives CK_UNAVAILABLE_INFORMATION for a short buffer and copies the rest")
        func attributeTwoCalls() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createObject(
                    dataTemplate(label: "twelve bytes", value: [1, 2]), in: session)
                var label = [UInt8](repeating: 0, count: 11)
                var value = [UInt8](repeating: 0, count: 2)
                let rv = try label.withUnsafeMutableBytes { labelBytes in
                    try value.withUnsafeMutableBytes { valueBytes in
                        var entries = [
                            CK_ATTRIBUTE(
                                type: CK_ATTRIBUTE_TYPE(CKA_LABEL), pValue: labelBytes.baseAddress,
                                ulValueLen: 11),
                            CK_ATTRIBUTE(
                                type: CK_ATTRIBUTE_TYPE(CKA_VALUE), pValue: valueBytes.baseAddress,
                                ulValueLen: 2),
                            CK_ATTRIBUTE(
                                type: CK_ATTRIBUTE_TYPE(CKA_APPLICATION), pValue: nil, ulValueLen: 0),
                        ]
                        let rv = try token.m.C_GetAttributeValue(session, object, &entries, 3)
                        #expect(entries[0].ulValueLen == unavailableInformation)
                        #expect(entries[1].ulValueLen == 2)
                        #expect(entries[2].ulValueLen == CK_ULONG("p11keychain tests".utf8.count))
                        return rv
                    }
                }
                #expect(rv == CKR_BUFFER_TOO_SMALL)
                #expect(value == [1, 2])
            }
        }
    }
}
