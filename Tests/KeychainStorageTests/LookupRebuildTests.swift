import KeychainStorage
import Testing

@Suite("Schema version 2: the lookup index of an older store is rebuilt")
struct LookupRebuildTests {
    @Test("an account stored before accounts were indexed is found by its account after the upgrade")
    func accountOfAnOlderStoreIsFound() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            let account = StoredAttribute(0x8050_4B10, bytes("alice"))
            let label = StoredAttribute(3, bytes("mail"))
            let object = try ObjectStore(path: path, create: true).insert(
                uniqueKey: nil, attributes: [label, account])
            // As schema version 1 left it: no lookup row for the account.
            _ = try sqlite(
                path, "DELETE FROM lookup WHERE type = \(0x8050_4B10); PRAGMA user_version = 1")
            #expect(try sqlite(path, "SELECT count(*) FROM lookup") == "1")

            let upgraded = try ObjectStore(path: path, create: false)
            #expect(try upgraded.find([account]) == [object])
            #expect(try upgraded.find([label]) == [object], "the other lookups are rebuilt too")
            #expect(try sqlite(path, "PRAGMA user_version") == String(SQLiteStore.schemaVersion))
            #expect(try sqlite(path, "SELECT count(*) FROM lookup") == "2")
            #expect(try upgraded.integrityCheck() == "ok")
        }
    }
}
