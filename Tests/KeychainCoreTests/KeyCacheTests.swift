import KeychainCore
import Testing

/// Two tokens over one store file stand for two processes: each has its own SQLite
/// connection and maps the store's change counter on its own.
@Suite("Private keys kept between signatures, and other processes' changes")
struct KeyCacheTests {
    /// CKA_EC_PARAMS of P-256: the OID 1.2.840.10045.3.1.7 in DER.
    static let p256: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]

    /// Runs `body` with two logged-in tokens on one store and an EC key pair made by the first.
    private func withTwoTokens(
        _ body: (_ first: Token, _ second: Token, _ key: ObjectReference) throws -> Void,
        publicKey: ((_ first: Token, _ second: Token, _ key: ObjectReference) throws -> Void)? = nil
    ) throws {
        try withToken { first, directory in
            try logInUser(first)
            let second = Token(configuration: first.configuration)
            try second.logIn(.user, pin: bytes("user-pin-0000"))
            let pair = try first.generateKeyPair(
                .ec(curveParameters: Self.p256),
                publicTemplate: [.token: yes, .verify: yes, .label: bytes("k")],
                privateTemplate: [.token: yes, .private: yes, .sign: yes, .label: bytes("k")],
                context: Contexts.user)
            try body(first, second, pair.privateKey)
            try publicKey?(first, second, pair.publicKey)
        }
    }

    @Test("while nobody writes the store, the same parsed key is handed out")
    func unchangedStoreKeepsTheKey() throws {
        try withTwoTokens { first, _, key in
            let one = try first.privateKey(key, context: Contexts.user)
            let two = try first.privateKey(key, context: Contexts.user)
            #expect(one.key === two.key)
            #expect(two.attributes.bool(.sign) == true)
        }
    }

    @Test("a usage flag cleared by another process is seen on the next use of the key")
    func anotherProcessesUpdateIsSeen() throws {
        try withTwoTokens { first, second, key in
            #expect(try first.privateKey(key, context: Contexts.user).attributes.bool(.sign) == true)
            try second.updateObject(key, with: [.sign: [0]], context: Contexts.user)
            #expect(try first.privateKey(key, context: Contexts.user).attributes.bool(.sign) == false)
            try second.updateObject(key, with: [.label: bytes("renamed")], context: Contexts.user)
            #expect(try first.privateKey(key, context: Contexts.user).attributes[.label] == bytes("renamed"))
        }
    }

    @Test("a key destroyed by another process is gone for this one at once")
    func anotherProcessesDestroyIsSeen() throws {
        try withTwoTokens { first, second, key in
            _ = try first.privateKey(key, context: Contexts.user)
            try second.destroyObject(key, context: Contexts.user)
            expectKeychainError(.objectNotFound) { _ = try first.privateKey(key, context: Contexts.user) }
        }
    }

    @Test("a write elsewhere in the store re-reads the key but keeps the parsed key")
    func unrelatedWriteKeepsTheParsedKey() throws {
        try withTwoTokens { first, second, key in
            let before = try first.privateKey(key, context: Contexts.user)
            _ = try second.createObject(dataTemplate(label: "other"), context: Contexts.user)
            let after = try first.privateKey(key, context: Contexts.user)
            #expect(before.key === after.key)
        }
    }

    @Test("a public key's usage flag cleared or the key destroyed by another process is seen at once")
    func publicKeyChangesAreSeen() throws {
        try withTwoTokens(
            { _, _, _ in },
            publicKey: { first, second, key in
                let one = try first.publicKey(key, context: Contexts.user)
                #expect(one.attributes.bool(.verify) == true)
                #expect(try first.publicKey(key, context: Contexts.user).key === one.key)
                try second.updateObject(key, with: [.verify: [0]], context: Contexts.user)
                #expect(try first.publicKey(key, context: Contexts.user).attributes.bool(.verify) == false)
                try second.destroyObject(key, context: Contexts.user)
                expectKeychainError(.objectNotFound) { _ = try first.publicKey(key, context: Contexts.user) }
            })
    }

    @Test("the public half of a private key object comes without any secret attribute")
    func publicHalfOfAPrivateKey() throws {
        try withTwoTokens { first, _, key in
            let attributes = try first.publicKey(key, context: Contexts.user).attributes
            #expect(attributes.bool(.sign) == true)
            #expect(attributes[.value] == nil && attributes[.privateExponent] == nil)
        }
    }

    @Test("after logout the kept key is not served, to this context or any other")
    func logoutDropsTheKey() throws {
        try withTwoTokens { first, _, key in
            _ = try first.privateKey(key, context: Contexts.user)
            first.logOut()
            expectKeychainError(.objectNotFound) {
                _ = try first.privateKey(key, context: Contexts.readWrite)
            }
            expectKeychainError(.objectNotFound) { _ = try first.privateKey(key, context: Contexts.user) }
        }
    }
}
