import CPKCS11
import Testing

// C_DeriveKey's per-call path: the base key's agreement is kept by the session, and each
// derived session key is sealed through the session key's kept context. These tests derive
// many keys in a row and change one thing at a time between derivations.

extension ModuleTests {
    @Suite("ECDH session keys derived in a row")
    struct DerivedSessionKeys {
        private typealias Derivation = ModuleTests.Derivation

        /// Two P-256 pairs with CKA_DERIVE (token objects when `token`) and each side's point.
        private static func pairs(
            _ token: TestToken, token onToken: Bool = false, in session: CK_SESSION_HANDLE
        )
            throws -> (alice: KeyPair, bob: KeyPair, alicePoint: [UInt8], bobPoint: [UInt8])
        {
            let derive = [Attribute(CKA_DERIVE, bool: true)]
            let alice = try token.generateKeyPair(
                .p256, token: onToken, privateAttributes: derive, in: session)
            let bob = try token.generateKeyPair(.p256, token: onToken, privateAttributes: derive, in: session)
            return (
                alice, bob, try Derivation.point(token, of: alice.publicKey, in: session),
                try Derivation.point(token, of: bob.publicKey, in: session)
            )
        }

        @Test(
            "Twenty keys derived and read in a row, every other one destroyed at once: each holds the secret")
        func manyInARow() throws {
            try withLoggedInToken { token, session in
                let keys = try Self.pairs(token, in: session)
                let (rv, reference) = try Derivation.ecdh(
                    token, base: keys.bob.privateKey, peerPoint: keys.alicePoint,
                    template: readableSecretKey(),
                    in: session)
                #expect(rv == CKR_OK)
                let secret = try #require(try token.attribute(CKA_VALUE, of: reference, in: session))
                #expect(secret.count == 32)
                var kept: [CK_OBJECT_HANDLE] = []
                for index in 0..<20 {
                    let (rv, key) = try Derivation.ecdh(
                        token, base: keys.alice.privateKey, peerPoint: keys.bobPoint,
                        template: readableSecretKey(), in: session)
                    #expect(rv == CKR_OK)
                    #expect(try token.attribute(CKA_VALUE, of: key, in: session) == secret)
                    if index % 2 == 0 {
                        #expect(try token.m.C_DestroyObject(session, key) == CKR_OK)
                    } else {
                        kept.append(key)
                    }
                }
                for key in kept { #expect(try token.attribute(CKA_VALUE, of: key, in: session) == secret) }
                // A sensitive derived key never shows its value, however it was sealed.
                let (_, sensitive) = try Derivation.ecdh(
                    token, base: keys.alice.privateKey, peerPoint: keys.bobPoint,
                    template: [Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY))], in: session)
                #expect(try token.probe(CKA_VALUE, of: sensitive, in: session).0 == CKR_ATTRIBUTE_SENSITIVE)
            }
        }

        @Test(
            "A base key changed or destroyed through another session between two derivations: the next one sees it"
        )
        func baseChangedThroughAnotherSession() throws {
            try withLoggedInToken { token, session in
                let keys = try Self.pairs(token, token: true, in: session)
                let other = try token.openSession()
                func derive() throws -> CK_RV {
                    try Derivation.ecdh(
                        token, base: keys.alice.privateKey, peerPoint: keys.bobPoint,
                        template: readableSecretKey(),
                        in: session
                    ).0
                }
                #expect(try derive() == CKR_OK)
                #expect(
                    try token.set([Attribute(CKA_DERIVE, bool: false)], of: keys.alice.privateKey, in: other)
                        == CKR_OK)
                #expect(try derive() == CKR_KEY_FUNCTION_NOT_PERMITTED)
                #expect(
                    try token.set([Attribute(CKA_DERIVE, bool: true)], of: keys.alice.privateKey, in: other)
                        == CKR_OK)
                #expect(try derive() == CKR_OK)
                #expect(try token.m.C_DestroyObject(other, keys.alice.privateKey) == CKR_OK)
                #expect(try derive() == CKR_KEY_HANDLE_INVALID)
            }
        }

        @Test(
            "After a logout a private base key derives nothing and its derived keys are gone; a new login derives again"
        )
        func logout() throws {
            try withLoggedInToken { token, session in
                let keys = try Self.pairs(token, token: true, in: session)
                func derive() throws -> (CK_RV, CK_OBJECT_HANDLE) {
                    try Derivation.ecdh(
                        token, base: keys.alice.privateKey, peerPoint: keys.bobPoint,
                        template: readableSecretKey(),
                        in: session)
                }
                let (rv, before) = try derive()
                #expect(rv == CKR_OK)
                let secret = try token.attribute(CKA_VALUE, of: before, in: session)
                #expect(try token.m.C_Logout(session) == CKR_OK)
                let refused = try derive().0
                #expect(refused == CKR_KEY_HANDLE_INVALID || refused == CKR_USER_NOT_LOGGED_IN, "\(refused)")
                #expect(try token.probe(CKA_VALUE, of: before, in: session).0 == CKR_OBJECT_HANDLE_INVALID)
                try token.logInUser(session)
                let (again, after) = try derive()
                #expect(again == CKR_OK)
                #expect(try token.attribute(CKA_VALUE, of: after, in: session) == secret)
            }
        }
    }
}
