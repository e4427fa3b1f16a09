import KeychainStorage
import Testing

@testable import KeychainCore

/// Session objects are sealed through the session key's kept context (`SealingContext`): a seal
/// ID from its counter, a counter nonce. These tests look at the session store's rows.
@Suite struct SessionSealingTests {
    /// A readable 32-byte generic secret session key holding `value`.
    private func sessionKey(_ value: [UInt8]) -> AttributeSet {
        [
            .class: ulong(ObjectClass.secretKey.rawValue), .keyType: ulong(KeyType.genericSecret.rawValue),
            .token: no, .private: no, .sensitive: no, .extractable: yes, .value: value,
        ]
    }

    private func rows(_ reference: ObjectReference, of token: Token) throws -> AttributeSet {
        let stored = try token.withState { state in
            try state.objects.sessionStore?.attributes(of: reference.rowID)
        }
        var attributes: AttributeSet = [:]
        for row in try #require(stored) { attributes[AttributeType(row.type)] = row.value }
        return attributes
    }

    @Test("session keys made in a row each have their own seal ID and nonce, and each opens to its own value")
    func sealIDsAndNoncesDiffer() throws {
        try withToken { token, _ in
            let values = (0..<8).map { [UInt8](repeating: UInt8($0), count: 32) }
            let references = try values.map {
                try token.createObject(sessionKey($0), context: Contexts.readWrite)
            }
            let stored = try references.map { try rows($0, of: token) }
            let sealIDs = stored.map { $0[.sealID] ?? [] }
            #expect(Set(sealIDs).count == values.count)
            #expect(sealIDs.allSatisfy { $0.count == 16 })
            let nonces = stored.map { Array(($0[.value] ?? []).prefix(12)) }
            #expect(Set(nonces).count == values.count)
            for ((reference, value), row) in zip(zip(references, values), stored) {
                #expect(row[.value] != value, "the value is sealed in the store")
                let read = try token.attributes(
                    of: reference, context: Contexts.readWrite, revealing: [.value])
                #expect(read[.value] == value)
            }
        }
    }

    @Test("a session key's sealed value moved to another session key does not open there")
    func boxesStayBound() throws {
        try withToken { token, _ in
            let first = try token.createObject(
                sessionKey([UInt8](repeating: 1, count: 32)), context: Contexts.readWrite)
            let second = try token.createObject(
                sessionKey([UInt8](repeating: 2, count: 32)), context: Contexts.readWrite)
            let box = try #require(try rows(first, of: token)[.value])
            try token.withState { state in
                try state.objects.sessionStore?.update(
                    second.rowID, attributes: [StoredAttribute(AttributeType.value.rawValue, box)])
            }
            expectKeychainError(.storageCorrupt) {
                _ = try token.attributes(of: second, context: Contexts.readWrite, revealing: [.value])
            }
            let read = try token.attributes(of: first, context: Contexts.readWrite, revealing: [.value])
            #expect(read[.value] == [UInt8](repeating: 1, count: 32))
        }
    }
}
