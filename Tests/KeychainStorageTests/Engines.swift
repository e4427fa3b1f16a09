import Foundation
import KeychainStorage
import Testing

/// The engines the storage suite runs against. PostgreSQL needs a server:
/// `scripts/pg-test-cluster.sh run swift test …` starts a throwaway one and names it in
/// `P11KEYCHAIN_TEST_POSTGRES`. Without it the PostgreSQL cases fail, never pass unrun.
enum TestEngine: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgresql

    var testDescription: String { rawValue }
}

/// Where a test's store is, and how to reach it from outside the store (another connection,
/// as another process's or host's would be).
struct TestPlace {
    var engine: TestEngine
    /// The store location a token section names (a file path or `postgresql:…`).
    var location: String
    /// The token (the PostgreSQL schema).
    var token: String
    /// What the store's error messages name: the file's directory, or the token's schema.
    var name: String
    var conninfo: String

    /// A new connection to the store.
    func open(create: Bool = true) throws -> ObjectStore {
        try ObjectStore.open(location, token: token, create: create)
    }

    /// Runs `sql` outside the store (sqlite3 shell, psql) and returns what it prints.
    @discardableResult
    func query(_ sql: String) throws -> String {
        switch engine {
        case .sqlite: try sqlite(location, sql)
        case .postgresql:
            try run("psql", [conninfo, "-qtAX", "-c", "SET search_path TO \"\(token)\"", "-c", sql])
        }
    }
}

/// A new, empty store on `engine`: a file in its own temporary directory, or a schema of its
/// own on the test server (dropped afterwards).
func withTemporaryStore<T>(on engine: TestEngine, _ body: (ObjectStore, TestPlace) throws -> T) throws -> T {
    switch engine {
    case .sqlite:
        return try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            let place = TestPlace(
                engine: .sqlite, location: path, token: "test", name: directory.path, conninfo: "")
            return try body(try place.open(), place)
        }
    case .postgresql:
        guard let conninfo = ProcessInfo.processInfo.environment["P11KEYCHAIN_TEST_POSTGRES"] else {
            throw TestFailure(
                "P11KEYCHAIN_TEST_POSTGRES is not set: run under scripts/pg-test-cluster.sh run swift test …")
        }
        let token = "test_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let place = TestPlace(
            engine: .postgresql, location: ObjectStore.postgresPrefix + conninfo, token: token,
            name: "schema \(token)", conninfo: conninfo)
        defer {
            _ = try? run("psql", [conninfo, "-qtAX", "-c", "DROP SCHEMA IF EXISTS \"\(token)\" CASCADE"])
        }
        return try body(try place.open(), place)
    }
}
