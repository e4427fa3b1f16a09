#if canImport(Glibc)
    import Glibc
#endif

/// The SQLite engine: the store of one token in one file (ARCHITECTURE.md §4.1).
///
/// Knows rows and attribute codes, not PKCS#11 rules (those live in KeychainCore). Every
/// public operation runs inside `read` or `write`, one transaction each (ARCHITECTURE.md §4.4).
/// Not thread-safe: the owner serialises calls.
public final class SQLiteStore: StorageEngine {
    private(set) var database: Database
    public var path: String { database.path }
    /// True when this process cannot write the store (permissions, read-only mount).
    public var isReadOnly: Bool { database.isReadOnly }
    private var inTransaction = false
    /// True inside `read`/`write`: what is read now comes from that transaction's snapshot.
    public var isInTransaction: Bool { inTransaction }
    let changes: ChangeCounter

    /// A value that stays the same for as long as nobody, in any process, writes the store;
    /// nil while a write is under way. What was read between two equal values may be kept
    /// until the value changes (ChangeCounter).
    public var changeCount: UInt64? { changes.value }

    /// Opens (and, when `create`, creates) the store at `path` and brings its schema up to
    /// date. `":memory:"` gives a private in-memory store (session objects).
    ///
    /// The file is checked first (StoreFile): a FIFO, a device, a directory, a file that is
    /// not an SQLite database, or one another user owns or may write, is refused with an
    /// error naming it, and is never written. A system store (root's, this process not root)
    /// is opened read-only. No SQL stored in the file runs (`Database`, `SchemaCheck`).
    /// Creating, migrating and switching to WAL wait for other processes like any write
    /// (`Database.retryingWhileBusy`).
    public init(path: String, create: Bool, durability: Durability = .normal)
        throws(StorageError)
    {
        var isSystemStore = false
        // Resolved once: each `realpath` is a `readlink` per component of the path.
        var resolvedPath = path
        if path != ":memory:" {
            var verdict = try StoreFile.check(path)
            if verdict.contents == .missing, create {
                StoreFile.create(path)
                // What is there now, made by us or by someone quicker, passes the same check.
                verdict = try StoreFile.check(path)
            }
            isSystemStore = verdict.isSystemStore
            resolvedPath = StoreFile.resolved(path)
            try StoreFile.checkCompanions(of: resolvedPath, storeIsSystem: isSystemStore)
        }
        database = try Database(path: path, allowCreate: create && !isSystemStore, readOnly: isSystemStore)
        changes =
            path == ":memory:"
            ? ChangeCounter()
            : ChangeCounter(storePath: resolvedPath, create: !database.isReadOnly)
        do {
            try configure(durability: durability)
        } catch let error
            where database.isReadOnly && error.code != .newerSchema && error.code != .corrupt
        {
            // A read-only WAL store whose -shm cannot be created: read it as a snapshot.
            database = try Database(path: path, allowCreate: false, immutable: true)
            try configure(durability: durability)
        }
    }

    private func configure(durability: Durability) throws(StorageError) {
        database.setBusyTimeout()
        try database.retryingWhileBusy { () throws(StorageError) in try checkSchema() }
        try database.execute("PRAGMA foreign_keys = ON")
        if database.path != ":memory:" {
            try database.execute("PRAGMA cache_size = \(SQLiteStore.pageCacheKibibytes)")
        }
        if !database.isReadOnly {
            try database.execute("PRAGMA secure_delete = ON")
            if database.path != ":memory:" {
                try database.retryingWhileBusy { () throws(StorageError) in try switchToWAL() }
                try database.execute("PRAGMA wal_autocheckpoint = \(SQLiteStore.checkpointPages)")
            }
            try database.execute(
                durability == .full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
        }
        try database.retryingWhileBusy { () throws(StorageError) in try migrate() }
    }

    /// The most of the store's pages one connection keeps in memory, in KiB (SQLite's
    /// `cache_size` takes a negative number as KiB). SQLite's default, 2 MiB, held a sixth of a
    /// store of 10,000 certificates, so most finds read a page from the file (a `pread` of
    /// 4 KiB, about an eighth of a find); 16 MiB holds all of such a store. The cache fills
    /// only with the pages a process reads, and is dropped when another process writes
    /// (ARCHITECTURE.md §11.2).
    static let pageCacheKibibytes = -16_384

    /// How many pages the WAL gathers before a commit copies them into the store
    /// (`wal_autocheckpoint`; SQLite's default is 1,000). A certificate import writes about nine
    /// pages, so at 1,000 every 110th import also synced the WAL, copied it and synced the store,
    /// and those checkpoints were half of an import's time at 3,000 certificates. At 2,000 a
    /// page written again before the checkpoint is copied once, and the imports ran 1.14× as
    /// fast (4,000 gained no more; bench/README.md). The WAL file reaches about 8 MiB. Durability
    /// is unchanged: a commit is in the WAL, which a killed process does not lose either way,
    /// and `synchronous = yes` syncs every commit (ARCHITECTURE.md §4.1).
    static let checkpointPages = 2_000

    /// Switches the store to WAL unless another process did. Reading the mode first keeps the
    /// write lock the switch needs to a store's first opening. A file system without the
    /// shared memory WAL needs keeps the mode SQLite falls back to, as before.
    private func switchToWAL() throws(StorageError) {
        func mode(_ sql: StaticString) throws(StorageError) -> String {
            let statement = try database.statement(sql)
            defer { statement.finish() }
            return try statement.step() ? statement.text(0) : ""
        }
        guard try mode("PRAGMA journal_mode") != "wal" else { return }
        _ = try mode("PRAGMA journal_mode = WAL")
    }

    // MARK: Transactions

    /// Runs `body` in one read transaction (a consistent snapshot).
    public func read<T>(_ body: () throws -> T) throws -> T {
        try transaction(begin: "BEGIN", writing: false, body)
    }

    /// Runs `body` in one write transaction; rolls everything back if it throws.
    public func write<T>(_ body: () throws -> T) throws -> T {
        guard !database.isReadOnly else {
            throw StorageError(.readOnly, "store \(path) is read-only for this process")
        }
        if !changes.isWritable, !inTransaction {
            // Other processes keep what they read until the counter moves: writing without
            // moving it would leave them serving stale values.
            changes.retry()
            if !changes.isWritable, let failure = changes.failure { throw failure }
        }
        return try transaction(begin: "BEGIN IMMEDIATE", writing: true, body)
    }

    private func transaction<T>(begin: StaticString, writing: Bool, _ body: () throws -> T) throws -> T {
        if inTransaction { return try body() }
        // Prepared once like every other statement: a signature's key lookup is one
        // transaction, and compiling BEGIN and COMMIT each time was a measurable part of it.
        try database.statement(begin).run()
        inTransaction = true
        defer {
            inTransaction = false
            if writing { changes.endWrite() }
        }
        do {
            if writing { try changes.beginWrite() }
            let result = try body()
            database.resetStatements()
            try database.statement("COMMIT").run()
            return result
        } catch {
            database.resetStatements()
            _ = try? database.statement("ROLLBACK").run()
            throw error
        }
    }

    // MARK: Schema

    /// Schema versions, applied in order inside one transaction. Never edit a shipped entry:
    /// add the next one.
    static let migrations: [String] = [
        // 1: objects (all attributes of one object in one row), the lookup index of the
        //    attributes finds are driven by, token metadata.
        """
        CREATE TABLE objects (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            unique_key BLOB UNIQUE,
            attributes BLOB NOT NULL
        );
        CREATE TABLE lookup (
            type INTEGER NOT NULL,
            value BLOB NOT NULL,
            object INTEGER NOT NULL,
            PRIMARY KEY (type, value, object)
        ) WITHOUT ROWID;
        CREATE TABLE metadata (
            name TEXT PRIMARY KEY,
            value BLOB NOT NULL
        ) WITHOUT ROWID;
        """,
        // 2: the lookup index gains kSecAttrAccount (vendor 0x80504B10) and the trust marker
        //    (0x80504B41). SQL cannot read the attribute blobs: `migrate` rebuilds the index
        //    from every object's attributes after this step (`lookupRebuilds`).
        "DELETE FROM lookup",
    ]

    /// The schema versions whose step empties the lookup index for `migrate` to rebuild it
    /// from every object's attributes (the index gained types the objects already hold).
    private static let lookupRebuilds: Set<Int64> = [2]

    public static var schemaVersion: Int64 { Int64(migrations.count) }

    private func migrate() throws(StorageError) {
        let version = try checkedUserVersion()
        guard version < SQLiteStore.schemaVersion, !database.isReadOnly else { return }
        try database.execute("BEGIN IMMEDIATE")
        defer { changes.endWrite() }
        do {
            try changes.beginWrite()
            // Another process may have migrated while we waited for the lock.
            let current = try checkedUserVersion()
            var rebuild = false
            for (index, migration) in SQLiteStore.migrations.enumerated() where Int64(index) >= current {
                try database.execute(migration)
                rebuild = rebuild || SQLiteStore.lookupRebuilds.contains(Int64(index) + 1)
            }
            if rebuild { try rebuildLookups() }
            try database.execute("PRAGMA user_version = \(SQLiteStore.schemaVersion)")
            try database.execute("COMMIT")
        } catch {
            try? database.execute("ROLLBACK")
            throw error
        }
    }

    /// The stored schema version, checked: a file's number is not trusted (a negative one
    /// would index before the first migration).
    private func checkedUserVersion() throws(StorageError) -> Int64 {
        let version = try userVersion()
        if version > SQLiteStore.schemaVersion {
            throw StorageError(
                .newerSchema,
                "store \(path) has schema version \(version); this p11keychain knows up to "
                    + "\(SQLiteStore.schemaVersion): upgrade p11keychain")
        }
        guard version >= 0 else {
            throw StorageError(.corrupt, "store \(path) is damaged: its schema version is \(version)")
        }
        return version
    }

    func userVersion() throws(StorageError) -> Int64 {
        let statement = try database.statement("PRAGMA user_version")
        defer { statement.finish() }
        _ = try statement.step()
        return statement.int64(0)
    }

    // MARK: Objects

    /// Inserts an object; returns its row ID, which is never reused (AUTOINCREMENT), so
    /// that an ID can serve as a handle and in a unique ID for the life of the store.
    /// Throws `.constraint` when `uniqueKey` is already taken.
    public func insert(uniqueKey: [UInt8]?, attributes: [StoredAttribute]) throws -> Int64 {
        try write {
            let statement = try database.statement(
                "INSERT INTO objects (unique_key, attributes) VALUES (?1, ?2)")
            if let uniqueKey { statement.bind(1, uniqueKey) }
            statement.bind(2, AttributeCoding.encode(attributes))
            try statement.run()
            let id = database.lastInsertedRowID
            try addLookups(attributes, of: id)
            return id
        }
    }

    /// Removes an object. Returns false when it did not exist.
    @discardableResult
    public func delete(_ id: Int64) throws -> Bool {
        try write {
            guard let attributes = try attributes(of: id) else { return false }
            try removeLookups(attributes, of: id)
            let statement = try database.statement("DELETE FROM objects WHERE id = ?1")
            statement.bind(1, id)
            try statement.run()
            return true
        }
    }

    /// Removes every object (token re-initialisation).
    public func deleteAllObjects() throws {
        try write {
            try database.statement("DELETE FROM lookup").run()
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

    /// Every attribute of the object, or nil when the object does not exist.
    public func attributes(of id: Int64) throws -> [StoredAttribute]? {
        // One statement is its own consistent snapshot: no BEGIN/COMMIT around it (this is
        // the read every C_SignInit makes). The statement is finished before returning, so
        // its snapshot does not outlive the call.
        let statement = try database.statement("SELECT attributes FROM objects WHERE id = ?1")
        defer { if !inTransaction { statement.finish() } }
        statement.bind(1, id)
        guard try statement.step() else { return nil }
        return try decode(statement.bytes(0), of: id)
    }

    private func decode(_ bytes: [UInt8], of id: Int64) throws(StorageError) -> [StoredAttribute] {
        guard let attributes = AttributeCoding.decode(bytes) else {
            throw StorageError(.corrupt, "object \(id) of store \(path) has malformed attributes")
        }
        return attributes
    }

    /// Sets (inserts or replaces) attributes of an existing object, and optionally its
    /// unique key, in one transaction.
    public func update(_ id: Int64, attributes changes: [StoredAttribute], uniqueKey: [UInt8]? = nil)
        throws
    {
        try write {
            guard var attributes = try attributes(of: id) else {
                throw StorageError(.failed, "object \(id) does not exist in store \(path)")
            }
            var replaced: [StoredAttribute] = []
            for change in changes {
                if let index = attributes.firstIndex(where: { $0.type == change.type }) {
                    replaced.append(attributes[index])
                    attributes[index] = change
                } else {
                    attributes.append(change)
                }
            }
            try removeLookups(replaced, of: id)
            try addLookups(changes, of: id)
            let statement = try database.statement(
                "UPDATE objects SET attributes = ?2, unique_key = coalesce(?3, unique_key) WHERE id = ?1")
            statement.bind(1, id)
            statement.bind(2, AttributeCoding.encode(attributes))
            if let uniqueKey { statement.bind(3, uniqueKey) }
            try statement.run()
        }
    }

    /// Fills the (empty) lookup index from every object's attributes: a migration step.
    private func rebuildLookups() throws(StorageError) {
        do {
            let statement = try database.statement("SELECT id, attributes FROM objects ORDER BY id")
            var objects: [(Int64, [UInt8])] = []
            while try statement.step() { objects.append((statement.int64(0), statement.bytes(1))) }
            statement.finish()
            for (id, bytes) in objects { try addLookups(try decode(bytes, of: id), of: id) }
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.corrupt, "store \(path): rebuilding its lookup index failed: \(error)")
        }
    }

    func addLookups(_ attributes: [StoredAttribute], of id: Int64) throws {
        try runForLookups(
            "INSERT OR IGNORE INTO lookup (type, value, object) VALUES (?1, ?2, ?3)", attributes, of: id)
    }

    private func removeLookups(_ attributes: [StoredAttribute], of id: Int64) throws {
        try runForLookups(
            "DELETE FROM lookup WHERE type = ?1 AND value = ?2 AND object = ?3", attributes, of: id)
    }

    /// Runs `sql` once for each indexed attribute, bound as (type, value, object).
    private func runForLookups(_ sql: StaticString, _ attributes: [StoredAttribute], of id: Int64) throws {
        let statement = try database.statement(sql)
        for attribute in attributes where ObjectStore.indexedTypes.contains(attribute.type) {
            statement.reset()
            statement.bind(1, Int64(bitPattern: attribute.type))
            statement.bind(2, attribute.value)
            statement.bind(3, id)
            try statement.run()
        }
    }

    // MARK: Find

    /// IDs of the objects holding every attribute in `terms` with exactly that value, in
    /// insertion order. The first term of an indexed type drives the lookup (an index
    /// seek; put the most selective first), and only its candidates are loaded to check the
    /// other terms. With no indexed term, every object is visited.
    ///
    /// An indexed find is one statement, its own consistent snapshot, as `attributes(of:)`:
    /// the seek and each candidate's attributes, with no BEGIN and COMMIT around it (each
    /// transaction takes and drops SQLite's read lock, two `fcntl`s and an `fstat`, and the
    /// two statements cost as much again: a third of a find by label).
    public func find(_ terms: [StoredAttribute]) throws -> [Int64] {
        guard let driver = terms.firstIndex(where: { ObjectStore.indexedTypes.contains($0.type) })
        else { return try read { try scan(matching: terms) } }
        let statement = try database.statement(
            """
            SELECT lookup.object, objects.attributes FROM lookup JOIN objects ON objects.id = lookup.object \
            WHERE lookup.type = ?1 AND lookup.value = ?2 ORDER BY lookup.object
            """)
        // Finished before returning, so that its snapshot does not outlive the call.
        defer { if !inTransaction { statement.finish() } }
        statement.bind(1, Int64(bitPattern: terms[driver].type))
        statement.bind(2, terms[driver].value)
        var found: [Int64] = []
        while try statement.step() {
            let id = statement.int64(0)
            guard terms.count > 1 else {
                found.append(id)
                continue
            }
            // The other terms checked in the row's bytes in place, the driver's counted as
            // matched: no copy of the terms without it, unless the bytes must be decoded.
            var matches = statement.withBytes(1) { AttributeCoding.matches($0, terms, skipping: driver) }
            if matches == nil {
                var rest = terms
                rest.remove(at: driver)
                matches = ObjectStore.matches(try decode(statement.bytes(1), of: id), rest)
            }
            if matches == true { found.append(id) }
        }
        return found
    }

    /// The objects the lookup index holds for `term` (its type and value), in insertion
    /// order; inside a read or write transaction.
    private func indexed(_ term: StoredAttribute) throws -> [Int64] {
        let statement = try database.statement(
            "SELECT object FROM lookup WHERE type = ?1 AND value = ?2 ORDER BY object")
        statement.bind(1, Int64(bitPattern: term.type))
        statement.bind(2, term.value)
        var candidates: [Int64] = []
        while try statement.step() { candidates.append(statement.int64(0)) }
        return candidates
    }

    /// The objects `find` finds, each with every attribute, in one read transaction: each
    /// candidate of the index seek is read once, to check the other terms and to be returned.
    public func records(matching terms: [StoredAttribute]) throws -> [(
        id: Int64, attributes: [StoredAttribute]
    )] {
        try read {
            guard let driver = terms.firstIndex(where: { ObjectStore.indexedTypes.contains($0.type) })
            else { return try scanRecords(matching: terms) }
            let candidates = try indexed(terms[driver])
            var rest = terms
            rest.remove(at: driver)
            var found: [(id: Int64, attributes: [StoredAttribute])] = []
            for id in candidates {
                guard let attributes = try attributes(of: id), ObjectStore.matches(attributes, rest) else {
                    continue
                }
                found.append((id, attributes))
            }
            return found
        }
    }

    private func scanRecords(matching terms: [StoredAttribute]) throws
        -> [(id: Int64, attributes: [StoredAttribute])]
    {
        let statement = try database.statement("SELECT id, attributes FROM objects ORDER BY id")
        var found: [(id: Int64, attributes: [StoredAttribute])] = []
        while try statement.step() {
            let id = statement.int64(0)
            let attributes = try decode(statement.bytes(1), of: id)
            if ObjectStore.matches(attributes, terms) { found.append((id, attributes)) }
        }
        return found
    }

    private func scan(matching terms: [StoredAttribute]) throws -> [Int64] {
        var ids: [Int64] = []
        if terms.isEmpty {
            let statement = try database.statement("SELECT id FROM objects ORDER BY id")
            while try statement.step() { ids.append(statement.int64(0)) }
            return ids
        }
        let statement = try database.statement("SELECT id, attributes FROM objects ORDER BY id")
        while try statement.step() {
            let id = statement.int64(0)
            if ObjectStore.matches(try decode(statement.bytes(1), of: id), terms) { ids.append(id) }
        }
        return ids
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

    public func removeMetadata(_ name: String) throws {
        try write {
            let statement = try database.statement("DELETE FROM metadata WHERE name = ?1")
            statement.bind(1, name)
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
