import Foundation
import KeychainStorage
import Testing

/// What a PostgreSQL store does with bad input from its server: wrong credentials, a missing
/// schema, a wait longer than `timeout-ms`, a connection that drops inside a write. Each is an
/// error naming the token and the cause, with no credential in it and nothing half-written
/// (ARCHITECTURE.md §4.5).
@Suite("The PostgreSQL engine's bad input")
struct PostgresBadInputTests {
    @Test(
        "a role the server does not know is refused with a message naming the token and the role, never the password"
    )
    func wrongCredentials() throws {
        try withTemporaryStore(on: .postgresql) { _, place in
            let store = try ObjectStore.open(
                place.location + " user=no_such_role password=hunter2-secret", token: place.token,
                create: false)
            do {
                _ = try store.metadata("label")
                Issue.record("a store opened with an unknown role answered")
            } catch let error as StorageError {
                #expect(error.message.contains("token \(place.token)"), "\(error)")
                #expect(error.message.contains("no_such_role"), "the cause: \(error)")
                #expect(!error.message.contains("hunter2"), "\(error)")
            }
        }
    }

    @Test("a token whose schema does not exist is refused, not created, when it may not be written")
    func missingSchema() throws {
        try withTemporaryStore(on: .postgresql) { _, place in
            let token = place.token + "_missing"
            let store = try ObjectStore.open(place.location, token: token, create: false)
            expectStorageError(.cannotOpen, containing: "schema \(token) does not exist") {
                _ = try store.find([])
            }
            #expect(try place.query("SELECT count(*) FROM pg_namespace WHERE nspname = '\(token)'") == "0")
        }
    }

    @Test(
        "a write that waits longer than timeout-ms for another host's lock fails busy in time, and writes nothing"
    )
    func waitLongerThanTheTimeout() throws {
        try withTemporaryStore(on: .postgresql) { _, place in
            let store = try ObjectStore.open(
                place.location, token: place.token, create: false,
                server: ServerOptions(timeoutMilliseconds: 1000))
            // Another host holds the writers' lock (the change count's row) for 4 s.
            let holder = Process()
            holder.executableURL = URL(fileURLWithPath: "/usr/bin/psql")
            holder.arguments = [
                place.conninfo, "-qtAX", "-c",
                "BEGIN; UPDATE \"\(place.token)\".store_state SET change_count = change_count + 1; "
                    + "SELECT pg_sleep(4); COMMIT",
            ]
            try holder.run()
            defer { holder.waitUntilExit() }
            var held = false
            for _ in 0..<200 where !held {
                held =
                    try place.query(
                        "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(4)%' AND state = 'active' AND pid <> pg_backend_pid()"
                    ) == "1"
                if !held { usleep(50_000) }
            }
            try #require(held, "the other host holds the lock")
            let start = Date()
            expectStorageError(.busy, containing: "token \(place.token)") {
                _ = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("late"))])
            }
            let waited = Date().timeIntervalSince(start)
            #expect(waited < 3, "waited \(waited) s with timeout-ms = 1000")
            holder.waitUntilExit()
            #expect(try store.find([StoredAttribute(3, bytes("late"))]).isEmpty, "nothing was written")
        }
    }

    @Test(
        "a server that stops answering fails the call after timeout-ms, and the next call once it answers works"
    )
    func frozenServer() throws {
        try withTemporaryStore(on: .postgresql) { _, place in
            let store = try ObjectStore.open(
                place.location + " application_name=\(place.token)", token: place.token, create: false,
                server: ServerOptions(timeoutMilliseconds: 1000))
            try store.setMetadata("kept", bytes("value"))
            let backend = try #require(
                Int32(
                    try place.query(
                        "SELECT pid FROM pg_stat_activity WHERE application_name = '\(place.token)'")))
            // Frozen: its socket stays open, and it can enforce no statement_timeout of its own.
            #expect(kill(backend, SIGSTOP) == 0)
            defer { kill(backend, SIGCONT) }
            let start = Date()
            expectStorageError(.failed, containing: "did not answer within 1500 ms") {
                _ = try store.metadata("kept")
            }
            let waited = Date().timeIntervalSince(start)
            #expect(waited < 4, "waited \(waited) s with timeout-ms = 1000")
            kill(backend, SIGCONT)
            #expect(try store.metadata("kept") == bytes("value"))
        }
    }

    @Test("a connection that drops inside a write leaves nothing of it, and the next call works")
    func connectionDropsInsideAWrite() throws {
        try withTemporaryStore(on: .postgresql) { _, place in
            let store = try ObjectStore.open(
                place.location + " application_name=\(place.token)", token: place.token, create: false)
            do {
                try store.write {
                    _ = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("first"))])
                    try place.query(
                        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE application_name = '\(place.token)'"
                    )
                    _ = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("second"))])
                }
                Issue.record("the write went on after its connection dropped")
            } catch let error as StorageError {
                #expect(error.message.contains("token \(place.token)"), "\(error)")
            }
            #expect(try store.find([StoredAttribute(3, bytes("first"))]).isEmpty, "nothing half-written")
            #expect(try store.find([StoredAttribute(3, bytes("second"))]).isEmpty)
            _ = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("after"))])
            #expect(try store.find([StoredAttribute(3, bytes("after"))]).count == 1)
        }
    }
}
