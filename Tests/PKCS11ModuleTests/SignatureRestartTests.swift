import CPKCS11
import Testing

// A session's finished signature or verification is restarted by its next C_SignInit or
// C_VerifyInit with the same key object and mechanism, without reading the key again while
// the store is unchanged. These tests change one thing at a time between two operations and
// show the restart answers as a first use would.

extension ModuleTests {
    @Suite("A restarted signature answers as a first use would")
    struct SignatureRestart {
        @Test("Signatures in a row, single- and multi-part and with another hash between, each verify")
        func signaturesInARowVerify() throws {
            try withLoggedInToken { token, session in
                let pair = try token.generatePair(.p256, in: session)
                for type in [CKM_ECDSA_SHA256, CKM_ECDSA_SHA256, CKM_ECDSA_SHA384, CKM_ECDSA_SHA256] {
                    for multiPart in [false, true, false] {
                        let signature = try token.signature(
                            of: coreMessage, type, key: pair.privateKey, multiPart: multiPart, in: session)
                        #expect(signature.count == 64, "\(type), multi-part \(multiPart)")
                        #expect(
                            try token.verification(
                                of: signature, over: coreMessage, type, key: pair.publicKey, in: session)
                                == CKR_OK, "\(type), multi-part \(multiPart)")
                    }
                }
                // A raw signature of the parts given: a restart starts with no part collected.
                let digest = Array(coreMessage.prefix(32))
                for multiPart in [true, true, false] {
                    let signature = try token.signature(
                        of: digest, CKM_ECDSA, key: pair.privateKey, multiPart: multiPart, in: session)
                    #expect(
                        try token.verification(
                            of: signature, over: digest, CKM_ECDSA, key: pair.publicKey, in: session)
                            == CKR_OK)
                }
            }
        }

        @Test(
            "A key changed or destroyed through another session between two signatures: the next one sees it")
        func changedThroughAnotherSession() throws {
            try withLoggedInToken { token, session in
                let pair = try token.generatePair(.p256, in: session)
                let other = try token.openSession()
                #expect(try token.sign(coreMessage, with: pair.privateKey, .p256, in: session).0 == CKR_OK)
                #expect(try token.set([flag(CKA_SIGN, false)], of: pair.privateKey, in: other) == CKR_OK)
                #expect(
                    try token.sign(coreMessage, with: pair.privateKey, .p256, in: session).0
                        == CKR_KEY_FUNCTION_NOT_PERMITTED)
                #expect(try token.set([flag(CKA_SIGN, true)], of: pair.privateKey, in: other) == CKR_OK)
                #expect(try token.sign(coreMessage, with: pair.privateKey, .p256, in: session).0 == CKR_OK)
                #expect(try token.m.C_DestroyObject(other, pair.privateKey) == CKR_OK)
                #expect(
                    try token.sign(coreMessage, with: pair.privateKey, .p256, in: session).0
                        == CKR_KEY_HANDLE_INVALID)
            }
        }

        @Test("A public key whose CKA_VERIFY turns false between two verifications: the second is refused")
        func verificationSeesTheChange() throws {
            try withLoggedInToken { token, session in
                let pair = try token.generatePair(.rsa2048, in: session)
                let other = try token.openSession()
                let (rv, signature) = try token.sign(
                    coreMessage, with: pair.privateKey, .rsa2048, in: session)
                try #require(rv == CKR_OK)
                for _ in 0..<2 {
                    #expect(
                        try token.verify(
                            signature, over: coreMessage, with: pair.publicKey, .rsa2048, in: session)
                            == CKR_OK)
                }
                #expect(try token.set([flag(CKA_VERIFY, false)], of: pair.publicKey, in: other) == CKR_OK)
                #expect(
                    try token.verify(
                        signature, over: coreMessage, with: pair.publicKey, .rsa2048, in: session)
                        == CKR_KEY_FUNCTION_NOT_PERMITTED)
            }
        }

        @Test(
            "A key allowed CKM_ECDSA_SHA256 only: after a signature, CKM_ECDSA_SHA384 and CKM_ECDSA are refused"
        )
        func allowedMechanismsOnRestart() throws {
            try withLoggedInToken { token, session in
                let only = Attribute(
                    CKA_ALLOWED_MECHANISMS, withUnsafeBytes(of: CK_ULONG(CKM_ECDSA_SHA256)) { Array($0) })
                let pair = try token.generatePair(.p256, privateExtra: [only], in: session)
                for refused in [CKM_ECDSA_SHA384, CKM_ECDSA] {
                    #expect(try token.signInit(session, CKM_ECDSA_SHA256, key: pair.privateKey) == CKR_OK)
                    #expect(try token.sign(session, coreMessage).rv == CKR_OK)
                    #expect(
                        try token.signInit(session, refused, key: pair.privateKey) == CKR_MECHANISM_INVALID)
                }
                #expect(try token.signInit(session, CKM_ECDSA_SHA256, key: pair.privateKey) == CKR_OK)
                #expect(try token.sign(session, coreMessage).rv == CKR_OK)
            }
        }

        @Test(
            "After C_Logout, the session that signed answers a private key's C_SignInit as a fresh session does"
        )
        func logoutEndsTheRestart() throws {
            try withLoggedInToken { token, session in
                let pair = try token.generatePair(.p256, in: session)
                #expect(try token.sign(coreMessage, with: pair.privateKey, .p256, in: session).0 == CKR_OK)
                #expect(try token.m.C_Logout(session) == CKR_OK)
                let fresh = try token.openSession()
                let first = try token.signInit(fresh, CKM_ECDSA_SHA256, key: pair.privateKey)
                #expect(first != CKR_OK)
                #expect(try token.signInit(session, CKM_ECDSA_SHA256, key: pair.privateKey) == first)
                try token.logInUser(session)
                #expect(try token.sign(coreMessage, with: pair.privateKey, .p256, in: session).0 == CKR_OK)
            }
        }

        @Test("A CKA_ALWAYS_AUTHENTICATE key needs the PIN again before every signature, the second one too")
        func alwaysAuthenticateIsNeverRestarted() throws {
            try withLoggedInToken { token, session in
                let pair = try token.generatePair(
                    .p256, privateExtra: [flag(CKA_ALWAYS_AUTHENTICATE, true)], in: session)
                for _ in 0..<2 {
                    #expect(try token.signInit(session, CKM_ECDSA_SHA256, key: pair.privateKey) == CKR_OK)
                    #expect(
                        try token.login(session, as: CK_USER_TYPE(CKU_CONTEXT_SPECIFIC), pin: coreUserPIN)
                            == CKR_OK)
                    #expect(try token.sign(session, coreMessage).rv == CKR_OK)
                    #expect(try token.signInit(session, CKM_ECDSA_SHA256, key: pair.privateKey) == CKR_OK)
                    #expect(try token.sign(session, coreMessage).rv == CKR_USER_NOT_LOGGED_IN)
                }
            }
        }
    }
}

extension TestToken {
    /// A signature of `message` with mechanism `type` (no parameter): one C_Sign, or two
    /// C_SignUpdate and C_SignFinal with `multiPart`. Empty when a call fails.
    fileprivate func signature(
        of message: [UInt8], _ type: UInt, key: CK_OBJECT_HANDLE, multiPart: Bool,
        in session: CK_SESSION_HANDLE
    ) throws -> [UInt8] {
        guard try signInit(session, type, key: key) == CKR_OK else { return [] }
        guard multiPart else {
            let signed = try sign(session, message)
            return signed.rv == CKR_OK ? signed.signature : []
        }
        var first = Array(message.prefix(message.count / 2))
        var rest = Array(message.dropFirst(message.count / 2))
        guard try m.C_SignUpdate(session, &first, CK_ULONG(first.count)) == CKR_OK,
            try m.C_SignUpdate(session, &rest, CK_ULONG(rest.count)) == CKR_OK
        else { return [] }
        var output = [UInt8](repeating: 0, count: 512)
        var length = CK_ULONG(output.count)
        guard try m.C_SignFinal(session, &output, &length) == CKR_OK else { return [] }
        return Array(output.prefix(Int(clamping: length)))
    }

    /// C_VerifyInit and C_Verify of `signature` over `message` with mechanism `type`.
    fileprivate func verification(
        of signature: [UInt8], over message: [UInt8], _ type: UInt, key: CK_OBJECT_HANDLE,
        in session: CK_SESSION_HANDLE
    ) throws -> CK_RV {
        let started = try verifyInit(session, type, key: key)
        guard started == CKR_OK else { return started }
        var input = message
        var bytes = signature
        return try m.C_Verify(session, &input, CK_ULONG(input.count), &bytes, CK_ULONG(bytes.count))
    }
}
