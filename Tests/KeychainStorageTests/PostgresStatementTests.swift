import Foundation
import KeychainStorage
import Testing

/// The PostgreSQL engine's statements: prepared once per connection, an object and its lookup
/// rows written by one statement (ARCHITECTURE.md §4.5).
@Suite("The PostgreSQL engine's statements")
struct PostgresStatementTests {
    @Test(
        "an insert writes one lookup row per distinct indexed value, none for an object without one, and none for a refused duplicate"
    )
    func lookupRowsOfOneStatement() throws {
        try withTemporaryStore(on: .postgresql) { store, place in
            let plain = try store.insert(
                uniqueKey: nil, attributes: [StoredAttribute(0x11, bytes("not indexed"))])
            let label = StoredAttribute(3, bytes("label"))
            let indexed = try store.insert(
                uniqueKey: bytes("key"),
                attributes: [label, StoredAttribute(0x102, []), StoredAttribute(0x101, bytes("label"))])
            expectStorageError(.constraint) {
                _ = try store.insert(
                    uniqueKey: bytes("key"), attributes: [StoredAttribute(3, bytes("other"))])
            }
            #expect(try place.query("SELECT count(*) FROM lookup WHERE object = \(plain)") == "0")
            #expect(try place.query("SELECT count(*) FROM lookup WHERE object = \(indexed)") == "3")
            #expect(try place.query("SELECT count(*) FROM lookup") == "3", "the duplicate made none")
            #expect(try store.find([label]) == [indexed])
            #expect(try store.find([StoredAttribute(0x102, [])]) == [indexed], "an empty value is found")
            #expect(try store.find([StoredAttribute(3, bytes("other"))]).isEmpty)
            #expect(try store.integrityCheck() == "ok")
        }
    }

    @Test("a connection the server ended is made again, with its statements prepared again")
    func statementsPreparedAgainOnANewConnection() throws {
        try withTemporaryStore(on: .postgresql) { _, place in
            let store = try ObjectStore.open(
                place.location + " application_name=\(place.token)", token: place.token, create: false)
            let label = StoredAttribute(3, bytes("before"))
            let first = try store.insert(uniqueKey: nil, attributes: [label])
            #expect(try store.find([label]) == [first])
            try place.query(
                "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE application_name = '\(place.token)'"
            )
            // The first call after it learns that the connection is gone (an error naming the token).
            expectStorageError(.failed, containing: "token \(place.token)") { _ = try store.find([label]) }
            #expect(try store.find([label]) == [first])
            let second = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("after"))])
            #expect(try store.find([StoredAttribute(3, bytes("after"))]) == [second])
        }
    }
}
