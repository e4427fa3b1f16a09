import CPKCS11
import Testing

// CKM_RSA_PKCS signs its input as given, and an empty input is one (v2.40 §2.1.6: at most k − 11
// bytes). OpenSSL 3.0's verification takes an empty recovered input for a failure, so a
// signature of nothing the module made did not verify (found by the fuzzer's sign-verify oracle).

extension ModuleTests {
    @Suite("A signature of the empty input")
    struct EmptyMessageSignature {
        @Test("CKM_RSA_PKCS of zero bytes verifies; a signature of one byte does not verify as one of zero")
        func rsaPKCSOfNothing() throws {
            try withLoggedInToken { token, session in
                let pair = try token.generateKeyPair(.rsa2048, in: session)
                let mechanism = UInt(CKM_RSA_PKCS)
                try #require(try token.signInit(session, mechanism, key: pair.privateKey) == CKR_OK)
                let nothing = try token.sign(session, [])
                #expect(nothing.rv == CKR_OK)
                #expect(nothing.length == 256)
                try #require(try token.signInit(session, mechanism, key: pair.privateKey) == CKR_OK)
                let one = try token.sign(session, [0])
                #expect(one.rv == CKR_OK)
                for (signature, expected) in [
                    (nothing.signature, CKR_OK), (one.signature, CKR_SIGNATURE_INVALID),
                ] {
                    try #require(try token.verifyInit(session, mechanism, key: pair.publicKey) == CKR_OK)
                    var input: [UInt8] = []
                    var copy = signature
                    let rv = try token.m.C_Verify(session, &input, 0, &copy, CK_ULONG(copy.count))
                    #expect(rv == expected)
                }
                // And the empty input against the one-byte signature's own input, for contrast.
                try #require(try token.verifyInit(session, mechanism, key: pair.publicKey) == CKR_OK)
                var zero: [UInt8] = [0]
                var copy = one.signature
                #expect(try token.m.C_Verify(session, &zero, 1, &copy, CK_ULONG(copy.count)) == CKR_OK)
            }
        }
    }
}
