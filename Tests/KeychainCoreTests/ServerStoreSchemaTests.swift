import Foundation
import KeychainCore
import Testing

/// A token section's `schema`: the PostgreSQL schema its store is in, the token's name unless
/// the section says (docs/fleet.md). Renaming a section without it points the token at another
/// schema; with it, at the same store.
@Suite struct ServerStoreSchemaTests {
    private func configuration(_ text: String) throws -> Configuration {
        var configuration = try Configuration.load(environment: [
            "P11KEYCHAIN_CONF": "/dev/null", "P11KEYCHAIN_DIR": "/data", "HOME": "/h",
        ])
        try configuration.apply(text, file: "a.conf", home: "/h")
        return configuration
    }

    @Test("the schema is the token's name unless the section names one, and the printed store shows it")
    func schemaKey() throws {
        let parsed = try configuration(
            "[token Fleet]\nstore = postgresql:host=db password=secret\nschema = fleet_2024\n"
                + "[token Other]\nstore = postgresql:host=db\n")
        let fleet = try #require(parsed.tokens.first { $0.name == "Fleet" })
        let other = try #require(parsed.tokens.first { $0.name == "Other" })
        #expect(fleet.storeName == "fleet_2024")
        #expect(other.storeName == "Other")
        #expect(fleet.printableStore.hasSuffix(" schema fleet_2024"), "\(fleet.printableStore)")
        #expect(!fleet.printableStore.contains("secret"))
        #expect(other.printableStore.hasSuffix(" schema Other"), "\(other.printableStore)")
    }

    @Test(
        "a schema on a file's token, an empty one or one longer than 63 bytes is refused with its line",
        arguments: [
            "[token T]\npath = /data/t.sqlite3\nschema = t\n",
            "[token T]\nstore = postgresql:host=db\nschema =\n",
            "[token T]\nstore = postgresql:host=db\nschema = \(String(repeating: "s", count: 64))\n",
        ])
    func badSchema(text: String) throws {
        var configuration = try configuration("")
        do {
            try configuration.apply(text, file: "a.conf", home: "/h")
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.reason.contains("schema"), "\(error)")
            #expect((1...3).contains(error.line), "\(error)")
        }
    }

    @Test("a renamed section with schema = its old name opens the same store; without it, another")
    func renamedSection() throws {
        guard let conninfo = ProcessInfo.processInfo.environment["P11KEYCHAIN_TEST_POSTGRES"] else {
            throw TestFailure(
                "P11KEYCHAIN_TEST_POSTGRES is not set: run under scripts/pg-test-cluster.sh run swift test …")
        }
        let old = "old_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let new = "new_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        defer {
            for schema in [old, new] {
                _ = try? runProgram(
                    "psql", [conninfo, "-qtAX", "-c", "DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE"])
            }
        }
        let store = "postgresql:" + conninfo
        let original = Token(configuration: TokenConfiguration(name: old, path: store))
        try original.open()
        var renamed = TokenConfiguration(name: new, path: store)
        renamed.schema = old
        let kept = Token(configuration: renamed)
        try kept.open()
        let moved = Token(configuration: TokenConfiguration(name: new, path: store))
        try moved.open()
        #expect(!original.serialNumber.isEmpty)
        #expect(kept.serialNumber == original.serialNumber, "the same store")
        #expect(moved.serialNumber != original.serialNumber, "a new schema, a new store")
    }
}
