import CPKCS11
import Testing

extension ModuleTests {
    @Suite("rsa-pkcs1-decryption = no takes PKCS#1 v1.5 decryption off the token")
    struct PKCS1DecryptionSwitch {
        @Test(
            "With the key off, C_DecryptInit(CKM_RSA_PKCS) is CKR_MECHANISM_INVALID; encryption and the info say so"
        )
        func decryptionTurnedOff() throws {
            try withToken { token throws in
                // The configuration is read at C_Initialize.
                try token.configure("rsa-pkcs1-decryption = no\n")
                _ = try token.m.C_Finalize(nil)
                try #require(try token.m.C_Initialize(nil) == CKR_OK)
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.rsa2048, in: session)
                #expect(
                    try token.cipherInit(session, encrypt: false, key: pair.privateKey)
                        == CKR_MECHANISM_INVALID)
                #expect(try token.cipherInit(session, encrypt: true, key: pair.publicKey) == CKR_OK)
                var info = CK_MECHANISM_INFO()
                #expect(try token.m.C_GetMechanismInfo(0, CK_MECHANISM_TYPE(CKM_RSA_PKCS), &info) == CKR_OK)
                #expect(info.flags & CK_FLAGS(CKF_DECRYPT) == 0)
                #expect(info.flags & CK_FLAGS(CKF_ENCRYPT) != 0)
            }
        }

        @Test("By default CKM_RSA_PKCS decryption is offered")
        func decryptionOnByDefault() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.rsa2048, in: session)
                #expect(try token.cipherInit(session, encrypt: false, key: pair.privateKey) == CKR_OK)
                var info = CK_MECHANISM_INFO()
                #expect(try token.m.C_GetMechanismInfo(0, CK_MECHANISM_TYPE(CKM_RSA_PKCS), &info) == CKR_OK)
                #expect(info.flags & CK_FLAGS(CKF_DECRYPT) != 0)
            }
        }
    }
}
