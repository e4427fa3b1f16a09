import KeychainStorage
import Testing

/// What only the PostgreSQL engine has: a server that drops connections, a connection string
/// that may hold a password, a schema several hosts migrate (docs/fleet.md).
@Suite("The PostgreSQL engine")
struct PostgresStoreTests {
    @Test("a connection the server dropped is made again by the next call, and the first fails cleanly")
    func droppedConnectionIsMadeAgain() throws {
        try withTemporaryStore(on: .postgresql) { _, place in
            // Its own application name: the other tests' connections run beside it.
            let store = try ObjectStore.open(
                place.location + " application_name=\(place.token)", token: place.token, create: false)
            let object = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("kept"))])
            let ended = try place.query(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '\(place.token)'"
            )
            #expect(ended == "1", "the store's one connection was ended")
            // The first call finds the connection broken: a storage error naming the token.
            do {
                _ = try store.attributes(of: object)
            } catch let error as StorageError {
                #expect(error.code == .failed && error.message.contains(place.token), "\(error)")
            }
            #expect(try store.attributes(of: object) == [StoredAttribute(3, bytes("kept"))])
            #expect(try store.find([StoredAttribute(3, bytes("kept"))]) == [object])
        }
    }

    @Test("an unreachable server is an error naming the token, never the password, and opening does not fail")
    func unreachableServerIsNamedWithoutSecrets() throws {
        let store = try ObjectStore.open(
            "postgresql:host=/nonexistent/socket dbname=x user=someone password=hunter2-secret connect_timeout=2",
            token: "Fleet", create: true)
        expectStorageError(.failed, containing: "token Fleet") { _ = try store.metadata("label") }
        do {
            _ = try store.find([])
            Issue.record("a find with the server down succeeded")
        } catch {
            #expect(!"\(error)".contains("hunter2"), "the message: \(error)")
            #expect("\(error)".contains("unreachable"), "the message: \(error)")
        }
        #expect(!ObjectStore.printable("postgresql:host=h password=hunter2-secret").contains("hunter2"))
        #expect(store.changeCount == nil, "nothing is kept while the count cannot be read")
    }

    @Test("a schema of a newer version than the code is refused with a message naming the token")
    func newerSchemaIsRefused() throws {
        try withTemporaryStore(on: .postgresql) { _, place in
            try place.query("UPDATE store_state SET version = version + 1")
            expectStorageError(.newerSchema, containing: "upgrade p11keychain") {
                _ = try place.open(create: false).metadata("label")
            }
        }
    }

    @Test("a write on one connection moves the change count another connection reads")
    func changeCountIsSharedAcrossConnections() throws {
        try withTemporaryStore(on: .postgresql) { store, place in
            let other = try place.open(create: false)
            let before = try #require(other.changeCount)
            #expect(other.changeCount == before, "no write, no change")
            _ = try store.insert(uniqueKey: nil, attributes: [])
            #expect(try #require(other.changeCount) != before)
        }
    }

    @Test("a PIN-attempt lock is held until its holder lets it go, and seen from another connection")
    func attemptLockIsSeenAcrossConnections() throws {
        try withTemporaryStore(on: .postgresql) { store, place in
            let other = try place.open(create: false)
            var lock = try store.holdAttemptLock(3)
            #expect(lock != nil)
            #expect(try other.isAttemptLockHeld(3))
            #expect(try other.holdAttemptLock(3) == nil, "a second holder is refused")
            #expect(try !other.isAttemptLockHeld(4))
            lock = nil
            #expect(try !other.isAttemptLockHeld(3), "released when its holder goes")
            #expect(try other.holdAttemptLock(3) != nil)
        }
    }

    @Test("a row changed by hand to a malformed value is reported as corrupt, never a crash")
    func malformedRowIsCorrupt() throws {
        try withTemporaryStore(on: .postgresql) { store, place in
            let object = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("x"))])
            try place.query("UPDATE objects SET attributes = '\\x0102'::bytea")
            expectStorageError(.corrupt, containing: "object \(object)") {
                _ = try store.attributes(of: object)
            }
            #expect(try store.integrityCheck() != "ok")
        }
    }
}
