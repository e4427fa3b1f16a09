/// The PostgreSQL engine's side of a whole-store copy (`StoreMigration`). Runs inside the
/// store's own transactions, which check the schema first; the object IDs' sequence is the
/// identity column's (`pg_get_serial_sequence`).
extension PostgresStore: WholeStoreAccess {
    func contents() throws -> StoreContents {
        try read {
            var objects: [StoredObject] = []
            let rows = try connection.execute("SELECT id, unique_key, attributes FROM objects ORDER BY id")
            for row in 0..<rows.count {
                guard let id = rows.int64(row, 0), let attributes = AttributeCoding.decode(rows.bytes(row, 2))
                else { throw StorageError(.corrupt, "an object of \(path) has malformed attributes") }
                objects.append(
                    StoredObject(
                        id: id, uniqueKey: rows.isNull(row, 1) ? nil : rows.bytes(row, 1),
                        attributes: attributes))
            }
            let names = try connection.execute("SELECT name, value FROM metadata ORDER BY name COLLATE \"C\"")
            let metadata = (0..<names.count).map { (name: names.text($0, 0), value: names.bytes($0, 1)) }
            // NULL until the sequence first gave an ID.
            let sequence = try connection.execute(
                "SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('objects', 'id')::regclass), 0)"
            )
            let given = sequence.int64(0, 0) ?? 0
            return StoreContents(
                objects: objects, metadata: metadata, lastID: max(given, objects.last?.id ?? 0))
        }
    }

    func load(_ contents: StoreContents, replacing: Bool, ignorable: Set<String>) throws {
        try write {
            if !replacing {
                let objects = try connection.execute("SELECT 1 FROM objects LIMIT 1")
                let names = try connection.execute("SELECT name FROM metadata")
                if objects.count > 0
                    || (0..<names.count).contains(where: { !ignorable.contains(names.text($0, 0)) })
                {
                    throw StorageError(.constraint, "\(path) is not empty")
                }
            }
            // The lookup rows go with their objects (ON DELETE CASCADE).
            try connection.execute("DELETE FROM objects")
            try connection.execute("DELETE FROM metadata")
            for object in contents.objects {
                try connection.execute(
                    "INSERT INTO objects (id, unique_key, attributes) OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3)",
                    [
                        .int(object.id), object.uniqueKey.map { .bytes($0) } ?? .null,
                        .bytes(AttributeCoding.encode(object.attributes)),
                    ])
                try addLookups(object.attributes, of: object.id)
            }
            for entry in contents.metadata {
                try connection.execute(
                    "INSERT INTO metadata (name, value) VALUES ($1, $2)",
                    [.text(entry.name), .bytes(entry.value)])
            }
            // The next ID given is above every ID the source ever gave (and above the copy's).
            try connection.execute(
                "SELECT setval(pg_get_serial_sequence('objects', 'id'), greatest($1::bigint, 1), $1::bigint >= 1)",
                [.int(contents.lastID)])
        }
    }
}
