import KeychainCore
import Testing

/// A generic password is a data object with an account (vendor attribute) and a service
/// (CKA_APPLICATION). Two tokens over one store file stand for two processes.
@Suite("One generic password per service and account, across processes")
struct PasswordUniquenessTests {
    static func password(service: String, account: String, label: String = "p") -> AttributeSet {
        dataTemplate(label: label, [.application: bytes(service), .account: bytes(account), .value: [1]])
    }

    private func withTwoTokens(_ body: (_ first: Token, _ second: Token) throws -> Void) throws {
        try withToken { first, _ in
            let second = Token(configuration: first.configuration)
            try body(first, second)
        }
    }

    @Test("a second password for a pair is refused, whichever process stores it; the first is kept")
    func secondPasswordIsRefused() throws {
        try withTwoTokens { first, second in
            let kept = try first.createObject(
                Self.password(service: "s", account: "a"), context: Contexts.readWrite)
            expectKeychainError(.duplicateItem, containing: "generic password") {
                _ = try second.createObject(
                    Self.password(service: "s", account: "a", label: "second"), context: Contexts.readWrite)
            }
            #expect(try first.findObjects([.application: bytes("s")], context: Contexts.readWrite) == [kept])
        }
    }

    @Test("other pairs, and data objects without an account, never conflict")
    func otherPairsDoNotConflict() throws {
        try withTwoTokens { first, second in
            _ = try first.createObject(
                Self.password(service: "ab", account: "c"), context: Contexts.readWrite)
            _ = try second.createObject(
                Self.password(service: "a", account: "bc"), context: Contexts.readWrite)
            _ = try second.createObject(
                Self.password(service: "ab", account: "d"), context: Contexts.readWrite)
            for _ in 0..<2 {
                _ = try first.createObject(
                    dataTemplate(label: "x", [.application: bytes("ab")]), context: Contexts.readWrite)
            }
        }
    }

    @Test("changing a password's service or account onto another's pair is refused and changes nothing")
    func updateOntoATakenPair() throws {
        try withTwoTokens { first, second in
            _ = try first.createObject(Self.password(service: "s", account: "a"), context: Contexts.readWrite)
            let other = try second.createObject(
                Self.password(service: "s", account: "b"), context: Contexts.readWrite)
            expectKeychainError(.duplicateItem, containing: "generic password") {
                try second.updateObject(other, with: [.account: bytes("a")], context: Contexts.readWrite)
            }
            #expect(try second.attributes(of: other, context: Contexts.readWrite)[.account] == bytes("b"))
            // Moved to a free pair, its old pair is free again.
            try second.updateObject(other, with: [.account: bytes("c")], context: Contexts.readWrite)
            _ = try first.createObject(Self.password(service: "s", account: "b"), context: Contexts.readWrite)
        }
    }

    @Test("a copy of a password keeps its pair, so it is refused")
    func copyIsRefused() throws {
        try withToken { token, _ in
            let original = try token.createObject(
                Self.password(service: "s", account: "a"), context: Contexts.readWrite)
            expectKeychainError(.duplicateItem, containing: "generic password") {
                _ = try token.copyObject(original, with: [:], context: Contexts.readWrite)
            }
            _ = try token.copyObject(original, with: [.account: bytes("copy")], context: Contexts.readWrite)
        }
    }
}
