#if canImport(Glibc)
    import Glibc
#endif

/// One attribute row: a type code and its value bytes. The store does not interpret either.
public struct StoredAttribute: Sendable, Equatable {
    public var type: UInt64
    public var value: [UInt8]

    public init(_ type: UInt64, _ value: [UInt8]) {
        self.type = type
        self.value = value
    }
}

/// How hard each commit pushes data to the disk (SQLite `PRAGMA synchronous` in WAL mode).
public enum Durability: String, Sendable {
    /// A commit survives the death of the process (the WAL is written before the call
    /// returns); a power cut may lose the last commits but never corrupts the store.
    case normal
    /// Every commit is also fsync'ed: it survives a power cut.
    case full
}

/// The SQLite store of one token: objects, their attributes and token metadata.
///
/// Knows rows and attribute codes, not PKCS#11 rules (those live in KeychainCore). Every
/// public operation runs inside `read` or `write`, one transaction each (DESIGN §3).
/// Not thread-safe: the owner serialises calls.
public final class ObjectStore {
    private var database: Database
    public var path: String { database.path }
    /// True when this process cannot write the store (permissions, read-only mount).
    public var isReadOnly: Bool { database.isReadOnly }
    private var inTransaction = false

    /// Values longer than this are not indexed (DER blobs): the partial index stays small
    /// and lookups by label, ID, subject, issuer and serial stay index seeks.
    public static let indexedValueLimit = 256

    /// Opens (and, when `create`, creates) the store at `path` and brings its schema up to
    /// date. `":memory:"` gives a private in-memory store (session objects).
    public init(path: String, create: Bool, durability: Durability = .normal)
        throws(StorageError)
    {
        if create, path != ":memory:" { ObjectStore.createFile(path) }
        database = try Database(path: path, allowCreate: create)
        do {
            try configure(durability: durability)
        } catch let error where database.isReadOnly && error.code != .newerSchema {
            // A read-only WAL store whose -shm cannot be created: read it as a snapshot.
            database = try Database.openImmutable(path: path)
            try configure(durability: durability)
        }
    }

    /// Creates the file with mode 0600 before SQLite does, so that it never exists with
    /// looser permissions (SQLite gives -wal and -shm the same mode).
    private static func createFile(_ path: String) {
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        if fd >= 0 { close(fd) }
    }

    private func configure(durability: Durability) throws(StorageError) {
        database.setBusyTimeout(milliseconds: 5_000)
        try database.execute("PRAGMA foreign_keys = ON")
        if !database.isReadOnly {
            try database.execute("PRAGMA secure_delete = ON")
            if database.path != ":memory:" {
                try database.execute("PRAGMA journal_mode = WAL")
            }
            try database.execute(
                durability == .full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
        }
        try migrate()
    }

    // MARK: Transactions

    /// Runs `body` in one read transaction (a consistent snapshot).
    public func read<T>(_ body: () throws -> T) throws -> T {
        try transaction(begin: "BEGIN", body)
    }

    /// Runs `body` in one write transaction; rolls everything back if it throws.
    public func write<T>(_ body: () throws -> T) throws -> T {
        guard !database.isReadOnly else {
            throw StorageError(.readOnly, "store \(path) is read-only for this process")
        }
        return try transaction(begin: "BEGIN IMMEDIATE", body)
    }

    private func transaction<T>(begin: String, _ body: () throws -> T) throws -> T {
        if inTransaction { return try body() }
        try database.execute(begin)
        inTransaction = true
        defer { inTransaction = false }
        do {
            let result = try body()
            try database.execute("COMMIT")
            return result
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
    }

    // MARK: Schema

    /// Schema versions, applied in order inside one transaction. Never edit a shipped entry:
    /// add the next one.
    private static let migrations: [String] = [
        // 1: objects, their attributes, token metadata.
        """
        CREATE TABLE objects (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            uid TEXT NOT NULL UNIQUE,
            unique_key BLOB UNIQUE
        );
        CREATE TABLE attributes (
            object INTEGER NOT NULL REFERENCES objects(id) ON DELETE CASCADE,
            type INTEGER NOT NULL,
            value BLOB NOT NULL,
            PRIMARY KEY (object, type)
        ) WITHOUT ROWID;
        CREATE INDEX attributes_lookup ON attributes (type, value)
            WHERE length(value) <= 256;
        CREATE TABLE metadata (
            name TEXT PRIMARY KEY,
            value BLOB NOT NULL
        ) WITHOUT ROWID;
        """
    ]

    public static var schemaVersion: Int64 { Int64(migrations.count) }

    private func migrate() throws(StorageError) {
        let version = try userVersion()
        if version > ObjectStore.schemaVersion {
            throw StorageError(
                .newerSchema,
                "store \(path) has schema version \(version); this p11keychain knows up to "
                    + "\(ObjectStore.schemaVersion): upgrade p11keychain")
        }
        guard version < ObjectStore.schemaVersion, !database.isReadOnly else { return }
        try database.execute("BEGIN IMMEDIATE")
        do {
            // Another process may have migrated while we waited for the lock.
            let current = try userVersion()
            for index in Int(current)..<ObjectStore.migrations.count {
                try database.execute(ObjectStore.migrations[index])
            }
            try database.execute("PRAGMA user_version = \(ObjectStore.schemaVersion)")
            try database.execute("COMMIT")
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
    }

    private func userVersion() throws(StorageError) -> Int64 {
        let statement = try database.statement("PRAGMA user_version")
        _ = try statement.step()
        return statement.int64(0)
    }

    // MARK: Objects

    /// Inserts an object; returns its row ID, which is never reused.
    /// Throws `.constraint` when `uniqueKey` is already taken.
    public func insert(uid: String, uniqueKey: [UInt8]?, attributes: [StoredAttribute])
        throws -> Int64
    {
        try write {
            let statement = try database.statement(
                "INSERT INTO objects (uid, unique_key) VALUES (?1, ?2)")
            statement.bind(1, uid)
            if let uniqueKey { statement.bind(2, uniqueKey) }
            try statement.run()
            let id = database.lastInsertedRowID
            try storeAttributes(attributes, of: id)
            return id
        }
    }

    /// Removes an object and its attributes. Returns false when it did not exist.
    @discardableResult
    public func delete(_ id: Int64) throws -> Bool {
        try write {
            let statement = try database.statement("DELETE FROM objects WHERE id = ?1")
            statement.bind(1, id)
            try statement.run()
            return database.changes > 0
        }
    }

    /// Removes every object (token re-initialisation).
    public func deleteAllObjects() throws {
        try write {
            try database.statement("DELETE FROM objects").run()
        }
    }

    /// True when the object exists.
    public func contains(_ id: Int64) throws -> Bool {
        try read {
            let statement = try database.statement("SELECT 1 FROM objects WHERE id = ?1")
            statement.bind(1, id)
            return try statement.step()
        }
    }

    /// The object's UID, or nil when it does not exist.
    public func uid(of id: Int64) throws -> String? {
        try read {
            let statement = try database.statement("SELECT uid FROM objects WHERE id = ?1")
            statement.bind(1, id)
            return try statement.step() ? statement.text(0) : nil
        }
    }

    /// The row ID of the object with this UID, or nil.
    public func id(forUID uid: String) throws -> Int64? {
        try read {
            let statement = try database.statement("SELECT id FROM objects WHERE uid = ?1")
            statement.bind(1, uid)
            return try statement.step() ? statement.int64(0) : nil
        }
    }

    /// One attribute's value, or nil when the object does not have it.
    public func attribute(_ type: UInt64, of id: Int64) throws -> [UInt8]? {
        try read {
            let statement = try database.statement(
                "SELECT value FROM attributes WHERE object = ?1 AND type = ?2")
            statement.bind(1, id)
            statement.bind(2, Int64(bitPattern: type))
            return try statement.step() ? statement.bytes(0) : nil
        }
    }

    /// Every attribute of the object, or nil when the object does not exist.
    public func attributes(of id: Int64) throws -> [StoredAttribute]? {
        try read {
            let statement = try database.statement(
                "SELECT type, value FROM attributes WHERE object = ?1")
            statement.bind(1, id)
            var attributes: [StoredAttribute] = []
            while try statement.step() {
                attributes.append(
                    StoredAttribute(UInt64(bitPattern: statement.int64(0)), statement.bytes(1)))
            }
            if attributes.isEmpty, try !contains(id) { return nil }
            return attributes
        }
    }

    /// Sets (inserts or replaces) attributes of an existing object, and optionally its
    /// unique key, in one transaction.
    public func update(_ id: Int64, attributes: [StoredAttribute], uniqueKey: [UInt8]? = nil)
        throws
    {
        try write {
            try storeAttributes(attributes, of: id)
            if let uniqueKey {
                let statement = try database.statement(
                    "UPDATE objects SET unique_key = ?2 WHERE id = ?1")
                statement.bind(1, id)
                statement.bind(2, uniqueKey)
                try statement.run()
            }
        }
    }

    private func storeAttributes(_ attributes: [StoredAttribute], of id: Int64) throws {
        let statement = try database.statement(
            "INSERT OR REPLACE INTO attributes (object, type, value) VALUES (?1, ?2, ?3)")
        for attribute in attributes {
            statement.reset()
            statement.bind(1, id)
            statement.bind(2, Int64(bitPattern: attribute.type))
            statement.bind(3, attribute.value)
            try statement.run()
        }
    }

    // MARK: Find

    /// IDs of the objects holding every attribute in `terms` with exactly that value, in
    /// insertion order. Put the most selective term first: the first term whose value is
    /// short enough to be indexed drives the lookup (an index seek); the others are checked
    /// by primary key on the candidates only. With no indexable term, every object is visited.
    public func find(_ terms: [StoredAttribute]) throws -> [Int64] {
        var ordered = terms
        if let driver = terms.firstIndex(where: { $0.value.count <= ObjectStore.indexedValueLimit }),
            driver != 0
        {
            ordered.swapAt(0, driver)
        }
        let indexed = ordered.first.map { $0.value.count <= ObjectStore.indexedValueLimit } ?? false
        let sql = ObjectStore.findSQL(terms: ordered.count, indexed: indexed)
        return try read {
            let statement = try database.statement(sql)
            var parameter: Int32 = 1
            for term in ordered {
                statement.bind(parameter, Int64(bitPattern: term.type))
                statement.bind(parameter + 1, term.value)
                parameter += 2
            }
            var ids: [Int64] = []
            while try statement.step() { ids.append(statement.int64(0)) }
            return ids
        }
    }

    /// Builds the find query for a number of terms. Only constant fragments and parameter
    /// numbers go into the text; values are always bound. CROSS JOIN fixes the join order
    /// so SQLite drives from the first term.
    private static func findSQL(terms: Int, indexed: Bool) -> String {
        var from: [String]
        var conditions: [String] = []
        var first = 0
        if indexed {
            from = ["attributes AS t0"]
            conditions.append("t0.type = ?1 AND t0.value = ?2 AND length(t0.value) <= 256")
            first = 1
        } else {
            from = ["objects AS o"]
        }
        let key = indexed ? "t0.object" : "o.id"
        for index in first..<terms {
            from.append("attributes AS t\(index)")
            conditions.append(
                "t\(index).object = \(key) AND t\(index).type = ?\(2 * index + 1) "
                    + "AND t\(index).value = ?\(2 * index + 2)")
        }
        var sql = "SELECT \(key) FROM " + from.joined(separator: " CROSS JOIN ")
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        return sql + " ORDER BY \(key)"
    }

    // MARK: Metadata

    /// A token metadata value (label, PIN verifiers, counters), or nil when unset.
    public func metadata(_ name: String) throws -> [UInt8]? {
        try read {
            let statement = try database.statement("SELECT value FROM metadata WHERE name = ?1")
            statement.bind(1, name)
            return try statement.step() ? statement.bytes(0) : nil
        }
    }

    public func setMetadata(_ name: String, _ value: [UInt8]) throws {
        try write {
            let statement = try database.statement(
                "INSERT OR REPLACE INTO metadata (name, value) VALUES (?1, ?2)")
            statement.bind(1, name)
            statement.bind(2, value)
            try statement.run()
        }
    }

    /// Runs SQLite's own consistency check; returns its report ("ok" when sound).
    public func integrityCheck() throws -> String {
        try read {
            let statement = try database.statement("PRAGMA integrity_check")
            var lines: [String] = []
            while try statement.step() { lines.append(statement.text(0)) }
            return lines.joined(separator: "\n")
        }
    }
}
