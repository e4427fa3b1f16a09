import CPKCS11
import Testing

extension ModuleTests {
    /// The module's side of the core's one key-use check; `KeyUseRulesTests` (KeychainTests)
    /// is the Swift face's, over the same rules.
    @Suite("A key is used only as its usage attributes allow")
    struct KeyUse {
        @Test(
            "CKA_SIGN or CKA_DECRYPT false: C_SignInit and C_DecryptInit are CKR_KEY_FUNCTION_NOT_PERMITTED")
        func usageAttributesAreObeyed() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.rsa2048, in: session)
                #expect(
                    try token.set([Attribute(CKA_SIGN, bool: false)], of: pair.privateKey, in: session)
                        == CKR_OK)
                #expect(
                    try token.signInit(session, CKM_SHA256_RSA_PKCS, key: pair.privateKey)
                        == CKR_KEY_FUNCTION_NOT_PERMITTED)
                #expect(
                    try token.set([Attribute(CKA_DECRYPT, bool: false)], of: pair.privateKey, in: session)
                        == CKR_OK)
                #expect(
                    try token.cipherInit(session, encrypt: false, key: pair.privateKey)
                        == CKR_KEY_FUNCTION_NOT_PERMITTED)
                // Usage attributes may be turned back on (v2.40 §4.9): the key then signs again.
                #expect(
                    try token.set([Attribute(CKA_SIGN, bool: true)], of: pair.privateKey, in: session)
                        == CKR_OK)
                #expect(try token.signInit(session, CKM_SHA256_RSA_PKCS, key: pair.privateKey) == CKR_OK)
                #expect(
                    try token.signInit(session, CKM_ECDSA_SHA256, key: pair.privateKey)
                        == CKR_OPERATION_ACTIVE)
            }
        }

        @Test("A key of the wrong type for the mechanism is CKR_KEY_TYPE_INCONSISTENT")
        func keyTypeMustFitTheMechanism() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.p256, in: session)
                #expect(
                    try token.signInit(session, CKM_SHA256_RSA_PKCS, key: pair.privateKey)
                        == CKR_KEY_TYPE_INCONSISTENT)
            }
        }
    }
}
