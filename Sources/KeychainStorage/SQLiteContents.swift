/// The SQLite engine's side of a whole-store copy (`StoreMigration`).
extension SQLiteStore: WholeStoreAccess {
    func contents() throws -> StoreContents {
        try read {
            var objects: [StoredObject] = []
            let rows = try database.statement("SELECT id, unique_key, attributes FROM objects ORDER BY id")
            while try rows.step() {
                let id = rows.int64(0)
                guard let attributes = AttributeCoding.decode(rows.bytes(2)) else {
                    throw StorageError(.corrupt, "object \(id) of store \(path) has malformed attributes")
                }
                objects.append(
                    StoredObject(
                        id: id, uniqueKey: rows.isNull(1) ? nil : rows.bytes(1), attributes: attributes))
            }
            var metadata: [(name: String, value: [UInt8])] = []
            let names = try database.statement("SELECT name, value FROM metadata ORDER BY name")
            while try names.step() { metadata.append((names.text(0), names.bytes(1))) }
            // AUTOINCREMENT keeps the highest ID ever given here (none before the first insert).
            let sequence = try database.statement("SELECT seq FROM sqlite_sequence WHERE name = 'objects'")
            let given = try sequence.step() ? sequence.int64(0) : 0
            return StoreContents(
                objects: objects, metadata: metadata, lastID: max(given, objects.last?.id ?? 0))
        }
    }

    func load(_ contents: StoreContents, replacing: Bool, ignorable: Set<String>) throws {
        try write {
            if !replacing { try checkEmpty(ignorable: ignorable) }
            try database.statement("DELETE FROM lookup").run()
            try database.statement("DELETE FROM objects").run()
            try database.statement("DELETE FROM metadata").run()
            for object in contents.objects {
                let insert = try database.statement(
                    "INSERT INTO objects (id, unique_key, attributes) VALUES (?1, ?2, ?3)")
                insert.bind(1, object.id)
                if let key = object.uniqueKey { insert.bind(2, key) }
                insert.bind(3, AttributeCoding.encode(object.attributes))
                try insert.run()
                try addLookups(object.attributes, of: object.id)
            }
            for entry in contents.metadata {
                let insert = try database.statement("INSERT INTO metadata (name, value) VALUES (?1, ?2)")
                insert.bind(1, entry.name)
                insert.bind(2, entry.value)
                try insert.run()
            }
            // The inserts raised the sequence to the highest ID copied; the source's may be higher.
            let raise = try database.statement(
                "UPDATE sqlite_sequence SET seq = max(seq, ?1) WHERE name = 'objects'")
            raise.bind(1, contents.lastID)
            try raise.run()
            if database.changes == 0, contents.lastID > 0 {
                let create = try database.statement(
                    "INSERT INTO sqlite_sequence (name, seq) VALUES ('objects', ?1)")
                create.bind(1, contents.lastID)
                try create.run()
            }
        }
    }

    private func checkEmpty(ignorable: Set<String>) throws {
        let objects = try database.statement("SELECT 1 FROM objects LIMIT 1")
        defer { objects.finish() }
        var held = try objects.step()
        let names = try database.statement("SELECT name FROM metadata")
        while !held, try names.step() { held = !ignorable.contains(names.text(0)) }
        names.finish()
        if held { throw StorageError(.constraint, "store \(path) is not empty") }
    }
}
