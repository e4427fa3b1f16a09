import KeychainCore
import Testing

/// `Token.read` (C_GetAttributeValue) serves an object it read while the store's change
/// counter stands still: what another connection changes, deletes or hides must still show.
@Suite("Reading an object kept since the last read")
struct KeptReadsTests {
    @Test("a label read, then changed by another connection, reads as changed; deleted, as gone")
    func otherConnectionSeen() throws {
        try withToken { first, _ in
            let reference = try first.createObject(
                dataTemplate(label: "one"), context: Contexts.readWrite)
            #expect(
                try first.read([.label], of: reference, context: Contexts.readWrite) == [.value(bytes("one"))]
            )
            #expect(
                try first.read([.label], of: reference, context: Contexts.readWrite) == [.value(bytes("one"))]
            )

            // Another connection to the store, as another process has.
            let second = Token(configuration: first.configuration)
            _ = try second.updateObjects(
                [reference], with: [.label: bytes("two")], context: Contexts.readWrite)
            #expect(
                try first.read([.label], of: reference, context: Contexts.readWrite) == [.value(bytes("two"))]
            )
            try second.destroyObject(reference, context: Contexts.readWrite)
            expectKeychainError(.objectNotFound) {
                _ = try first.read([.label], of: reference, context: Contexts.readWrite)
            }
        }
    }

    @Test("a private object read while logged in is not read from what was kept after the logout")
    func privateObjectHiddenAfterLogout() throws {
        try withToken { token, _ in
            try logInUser(token)
            let reference = try token.createObject(
                dataTemplate(label: "secret", [.private: yes]), context: Contexts.user)
            #expect(
                try token.read([.label], of: reference, context: Contexts.user) == [.value(bytes("secret"))])
            token.logOut()
            expectKeychainError(.objectNotFound) {
                _ = try token.read([.label], of: reference, context: Contexts.user)
            }
            expectKeychainError(.objectNotFound) {
                _ = try token.read([.label], of: reference, context: Contexts.readWrite)
            }
        }
    }
}
