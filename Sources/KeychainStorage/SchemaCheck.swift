/// One object of a store's schema, as `sqlite_master` lists it.
struct SchemaObject: Hashable {
    var type: String
    var name: String
    var table: String
    /// Nil for the indexes SQLite makes for UNIQUE columns.
    var sql: String?
}

/// A store's schema holds no stored SQL, and its own tables are as the migrations make them
///.
///
/// The connection already runs no stored SQL (`Database.hardening`: no trigger fires, no view
/// is read, a schema's functions run only if innocuous). On top of that, a store is refused,
/// with an error naming the object, when its schema holds a trigger or a view anywhere, or
/// when one of the tables p11keychain reads and writes (`objects`, `lookup`, `metadata`,
/// `sqlite_sequence`) is defined otherwise or carries an index or object the migrations do not
/// make (a CHECK or DEFAULT that acts on every insert, an expression index). Refused rather
/// than ignored: such objects mean someone other than p11keychain changed the file, and the
/// user should learn it. Other tables and their indexes are inert data p11keychain never
/// reads or writes, and are left alone, as before: an existing SQLite file may become a store
/// (the migrations add ours). A store of an older schema holds a part of the expected objects;
/// one of a newer schema is left to `migrate`, which refuses it.
extension SQLiteStore {
    /// Every object the migrations make, read from an in-memory store they built now. Built
    /// at each check that needs it (`knownSchema` settles the usual store first) rather than
    /// kept: a failure to build it (out of memory) is this open's error, not every later open's.
    static func expectedSchema() throws(StorageError) -> Set<SchemaObject> {
        let database = try Database(path: ":memory:", allowCreate: true)
        for migration in migrations { try database.execute(migration) }
        return try schema(of: database)
    }

    static func schema(of database: Database) throws(StorageError) -> Set<SchemaObject> {
        Set(try schemaRows(of: database))
    }

    /// `sqlite_master`'s rows in its order: a store has a handful, and comparing them one by
    /// one with `knownSchema` costs no hashing of their text on every open.
    static func schemaRows(of database: Database) throws(StorageError) -> [SchemaObject] {
        let statement = try database.statement("SELECT type, name, tbl_name, sql FROM sqlite_master")
        defer { statement.finish() }
        var objects: [SchemaObject] = []
        while try statement.step() {
            objects.append(
                SchemaObject(
                    type: statement.text(0), name: statement.text(1), table: statement.text(2),
                    sql: statement.isNull(3) ? nil : statement.text(3)))
        }
        return objects
    }

    /// What the migrations make, as SQLite lists it (`expectedSchema`, which a test compares
    /// with this). A store holding nothing else passes at once: building the expected schema
    /// in an in-memory store was a third of a module's load. Anything else is compared with
    /// the schema the migrations build now, which is what decides (another SQLite may write
    /// the statements otherwise; text the migrations once made is p11keychain's all the same).
    static let knownSchema: [SchemaObject] = [
        SchemaObject(
            type: "table", name: "objects", table: "objects",
            sql: "CREATE TABLE objects (\n    id INTEGER PRIMARY KEY AUTOINCREMENT,\n"
                + "    unique_key BLOB UNIQUE,\n    attributes BLOB NOT NULL\n)"),
        SchemaObject(type: "index", name: "sqlite_autoindex_objects_1", table: "objects", sql: nil),
        SchemaObject(
            type: "table", name: "sqlite_sequence", table: "sqlite_sequence",
            sql: "CREATE TABLE sqlite_sequence(name,seq)"),
        SchemaObject(
            type: "table", name: "lookup", table: "lookup",
            sql: "CREATE TABLE lookup (\n    type INTEGER NOT NULL,\n    value BLOB NOT NULL,\n"
                + "    object INTEGER NOT NULL,\n    PRIMARY KEY (type, value, object)\n) WITHOUT ROWID"),
        SchemaObject(
            type: "table", name: "metadata", table: "metadata",
            sql:
                "CREATE TABLE metadata (\n    name TEXT PRIMARY KEY,\n    value BLOB NOT NULL\n) WITHOUT ROWID"
        ),
    ]

    /// Refuses a store whose schema holds an object the migrations do not make.
    func checkSchema() throws(StorageError) {
        guard try userVersion() <= SQLiteStore.schemaVersion else { return }
        let found = try SQLiteStore.schemaRows(of: database)
        if found.allSatisfy(SQLiteStore.knownSchema.contains) { return }
        let expected = try SQLiteStore.expectedSchema()
        let ours = Set(expected.map(\.table))
        for object in found where !expected.contains(object) {
            let isStoredSQL = object.type == "trigger" || object.type == "view"
            guard isStoredSQL || ours.contains(object.table) else { continue }
            let known = expected.contains { $0.name == object.name && $0.type == object.type }
            throw StorageError(
                .corrupt,
                "store \(path) holds \(object.type) '\(SQLiteStore.printable(object.name))'"
                    + (known ? " defined otherwise than" : " that is not made by")
                    + " p11keychain: someone else changed its schema, so it is not used "
                    + "(move it away, or drop that \(object.type) with sqlite3 if you made it)")
        }
    }

    /// A name from the file, safe to print: printable ASCII, at most 64 characters.
    private static func printable(_ name: String) -> String {
        String(
            String(
                name.unicodeScalars.map {
                    $0.isASCII && $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?"
                }
            ).prefix(64))
    }
}
