/// The PostgreSQL engine: the store of one token in one schema of a database several hosts
/// share (ARCHITECTURE.md §4.5, docs/fleet.md).
///
/// - **One schema per token**, named after the token (its configuration section), so several
///   tokens share one database and a role's rights can be given per token. Every statement is
///   constant text over unqualified names; the connection's `search_path` names the schema
///   (set with a bound value when it connects).
/// - **Versioned migrations** (`store_state.version`), applied in one transaction under a
///   transaction-level advisory lock, so hosts opening a new token at once create it once; a
///   schema newer than the code is refused.
/// - **Uniqueness is the database's**: `objects.unique_key` is UNIQUE.
/// - **Transactions**: a write begins by bumping the token's change count
///   (`UPDATE store_state … RETURNING`), which takes that row's lock: writers of one token,
///   on every host, queue behind each other as SQLite's `BEGIN IMMEDIATE` makes them, and as
///   each later statement (READ COMMITTED) sees every commit made before the lock was granted,
///   a write reads what it changes fresh, with no serialization failures to retry. A read
///   transaction is REPEATABLE READ READ ONLY: one snapshot.
/// - **The change count** is that counter row: caches kept while it stands are revalidated by
///   one query, and a write on any host moves it at its commit.
/// - **PIN-attempt locks** are session advisory locks held by a connection of their own,
///   keyed by the schema's OID and the slot: the server drops them when the holder's
///   connection ends, however its process ends.
public final class PostgresStore: StorageEngine {
    let connection: PostgresConnection
    private let conninfo: String
    private let token: String
    private let create: Bool
    /// The schema's OID, read when the schema is first checked: the attempt locks' key.
    private var schemaOID: Int64?
    private var inTransaction = false
    private var writing = false
    private let options: ServerOptions
    /// The change count last confirmed with the server: when (monotonic seconds) and on which
    /// connection (`PostgresConnection.generation`). nil: ask the server.
    private var confirmed: (count: UInt64, time: Double, connection: Int)?
    /// The connection generation this store LISTENs on for its schema's channel, if any.
    private var listening: Int?

    public var path: String { "\(connection.label) schema \(token)" }
    public var isReadOnly: Bool { false }
    public var isInTransaction: Bool { inTransaction }

    /// Schema versions, applied in order inside one transaction. Never edit a shipped entry:
    /// add the next one. Lookup rows hold the SHA-256 of the value (a B-tree entry has a size
    /// limit; a label does not), and a find checks every term against the object's attributes.
    static let migrations: [String] = [
        """
        CREATE TABLE objects (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            unique_key bytea UNIQUE,
            attributes bytea NOT NULL
        );
        CREATE TABLE lookup (
            type bigint NOT NULL,
            hash bytea NOT NULL,
            object bigint NOT NULL REFERENCES objects (id) ON DELETE CASCADE,
            PRIMARY KEY (type, hash, object)
        );
        CREATE INDEX lookup_object ON lookup (object);
        CREATE TABLE metadata (
            name text PRIMARY KEY,
            value bytea NOT NULL
        );
        CREATE TABLE store_state (
            id int PRIMARY KEY CHECK (id = 1),
            version int NOT NULL,
            change_count bigint NOT NULL
        );
        INSERT INTO store_state VALUES (1, 0, 1);
        """
    ]

    public static var schemaVersion: Int64 { Int64(migrations.count) }

    /// A store of token `token` at the server `conninfo` names. Connects on first use, not
    /// now: a server that is down makes calls fail (`.failed`, "unreachable") until it is up.
    /// `options`: how long the change count may be relied on, how long a wait may last.
    public init(conninfo: String, token: String, create: Bool, options: ServerOptions = ServerOptions())
        throws(StorageError)
    {
        guard let label = PostgresConnection.label(of: conninfo) else {
            throw StorageError(
                .cannotOpen, "token \(token): its postgresql: connection string does not parse")
        }
        guard !token.isEmpty, token.utf8.count <= 63, !token.utf8.contains(0) else {
            throw StorageError(.cannotOpen, "token \(token): a PostgreSQL schema name has 1 to 63 bytes")
        }
        self.conninfo = conninfo
        self.token = token
        self.create = create
        self.options = options
        connection = PostgresConnection(
            conninfo: conninfo, label: "token \(token) (\(label))", options: options,
            setup: [("SELECT set_config('search_path', $1, false)", [.text(Self.quoted(token))])])
        // Created (or checked) now when the server answers, as a file is at its opening;
        // when it does not, the first call tries again and reports why.
        try? prepare()
    }

    /// `name` as a quoted SQL identifier (for `search_path`, a bound value).
    private static func quoted(_ name: String) -> String {
        "\"" + name.replacingAll("\"", with: "\"\"") + "\""
    }

    // MARK: Schema

    /// Creates or migrates the schema once per store; checks its version.
    private func prepare() throws(StorageError) {
        guard schemaOID == nil else { return }
        try connection.execute("BEGIN")
        do {
            try connection.execute(
                "SELECT pg_advisory_xact_lock(hashtext('p11keychain schema ' || $1))", [.text(token)])
            var oid = try namespaceOID()
            if oid == nil, create {
                let statement = try connection.execute(
                    "SELECT format('CREATE SCHEMA %I', $1::text)", [.text(token)])
                try connection.execute(statement.text(0, 0), script: true)
                oid = try namespaceOID()
            }
            guard let oid else {
                throw StorageError(
                    .cannotOpen, "\(connection.label): schema \(token) does not exist (p11keychain init)")
            }
            let state = try connection.execute(
                "SELECT to_regclass($1 || '.store_state') IS NOT NULL", [.text(Self.quoted(token))])
            var version: Int64 = 0
            if state.bool(0, 0) {
                version = try connection.execute("SELECT version FROM store_state").int64(0, 0) ?? -1
            }
            guard version <= Self.schemaVersion else {
                throw StorageError(
                    .newerSchema,
                    "\(path) has schema version \(version); this p11keychain knows up to \(Self.schemaVersion): upgrade p11keychain"
                )
            }
            guard version >= 0 else {
                throw StorageError(.corrupt, "\(path) is damaged: its schema version is unreadable")
            }
            if version < Self.schemaVersion {
                for migration in Self.migrations.dropFirst(Int(version)) {
                    try connection.execute(migration, script: true)
                }
                try connection.execute(
                    "UPDATE store_state SET version = $1, change_count = change_count + 1",
                    [.int(Self.schemaVersion)])
            }
            try connection.execute("COMMIT")
            schemaOID = oid
        } catch let error as StorageError {
            rollBack()
            throw error
        } catch {
            rollBack()
            throw StorageError(.failed, "\(path): \(error)")
        }
    }

    private func namespaceOID() throws(StorageError) -> Int64? {
        let rows = try connection.execute(
            "SELECT oid::bigint FROM pg_namespace WHERE nspname = $1", [.text(token)])
        return rows.count == 1 ? rows.int64(0, 0) : nil
    }

    // MARK: Transactions

    public func read<T>(_ body: () throws -> T) throws -> T {
        try transaction(writing: false, body)
    }

    public func write<T>(_ body: () throws -> T) throws -> T {
        if inTransaction, !writing {
            throw StorageError(.failed, "\(path): a write inside a read transaction")
        }
        return try transaction(writing: true, body)
    }

    private func transaction<T>(writing: Bool, _ body: () throws -> T) throws -> T {
        if inTransaction { return try body() }
        try prepare()
        if connection.isInTransaction { rollBack() }
        inTransaction = true
        self.writing = writing
        defer {
            inTransaction = false
            self.writing = false
        }
        var count: Int64?
        do {
            if writing {
                // The writers' queue: this row's lock, held until the commit, taken in the
                // round trip that begins the transaction (a pipeline). The notification is
                // sent by the commit, to every host that listens (changeCount).
                count = try connection.executeInOneTrip([
                    ("BEGIN", []),
                    (
                        "WITH bump AS (UPDATE store_state SET change_count = change_count + 1 RETURNING change_count) "
                            + "SELECT change_count, pg_notify($1, '')::text FROM bump", [.text(try channel())]
                    ),
                ]).int64(0, 0)
                confirmed = nil
            } else {
                try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            }
            let result = try body()
            try connection.execute("COMMIT")
            // The count this write left: nobody could move it before the commit let go of the row.
            // Relied on only while later writes are announced to this connection.
            if let count, listening == connection.generation {
                confirmed = (UInt64(bitPattern: count), PostgresConnection.now(), connection.generation)
            }
            return result
        } catch {
            rollBack()
            throw error
        }
    }

    /// Ends the open transaction after a failure. A lost connection took its transaction with
    /// it: nothing to roll back, and connecting again here would only add a wait.
    private func rollBack() {
        // try?: the caller reports the failure that got here; a ROLLBACK that fails too means
        // the connection broke, and the server ends the transaction with it.
        if connection.isOpen { _ = try? connection.execute("ROLLBACK") }
    }

    /// Runs one statement of a public call: in the open transaction, or on its own (one
    /// statement is its own snapshot) after the schema is checked.
    @discardableResult
    private func statement(_ sql: String, _ parameters: [PostgresValue] = []) throws(StorageError)
        -> PostgresRows
    {
        if !inTransaction { try prepare() }
        return try connection.execute(sql, parameters)
    }

    /// The channel of this token's writes: one per schema (its OID: a channel name is at most
    /// 63 bytes, a token's name may be as long).
    private func channel() throws(StorageError) -> String {
        try prepare()
        guard let oid = schemaOID else { throw StorageError(.failed, "\(path): the schema is not checked") }
        return "p11keychain_\(oid)"
    }

    /// The count confirmed less than `freshness-ms` ago on this connection, when no other host
    /// has announced a write since (ARCHITECTURE.md §4.5); else asked of the server (a round
    /// trip). Inside a transaction, the transaction's own snapshot is asked.
    /// nil when unknown (inside a write, or the server did not answer): the caller then reads
    /// again instead of trusting what it kept, the safe path, and the next call reports the error.
    public var changeCount: UInt64? {
        guard !writing else { return nil }
        if !inTransaction, options.freshnessMilliseconds > 0, let confirmed,
            confirmed.connection == connection.generation,
            (PostgresConnection.now() - confirmed.time) * 1000 < Double(options.freshnessMilliseconds),
            !connection.takeNotifications()
        {
            return confirmed.count
        }
        confirmed = nil
        if !inTransaction, options.freshnessMilliseconds > 0 {
            listen()
            // What was announced before this read is in the count it reads.
            _ = connection.takeNotifications()
        }
        // try?: an unreachable server makes the count unknown (nil), and an unknown count keeps
        // nothing: every caller then reads again, and that read reports the failure.
        guard let rows = try? statement("SELECT change_count FROM store_state"), rows.count == 1,
            let count = rows.int64(0, 0)
        else { return nil }
        let value = UInt64(bitPattern: count)
        // A snapshot's count may be older than now: it confirms nothing for later calls.
        if !inTransaction { confirmed = (value, PostgresConnection.now(), connection.generation) }
        return value
    }

    /// LISTENs on this token's channel on the current connection, once per connection, before
    /// the count is read: a write committed after the read is announced. A server that refuses
    /// (a standby) leaves the bound alone to hold; the next connection tries again.
    private func listen() {
        guard listening == nil || listening != connection.generation else { return }
        // try?: without it, what is kept still lasts no longer than the bound.
        guard let channel = try? channel(),
            (try? connection.execute("LISTEN \(channel)", script: true)) != nil
        else { return }
        listening = connection.generation
    }

    // MARK: Objects

    public func insert(uniqueKey: [UInt8]?, attributes: [StoredAttribute]) throws -> Int64 {
        try write {
            // One statement, one round trip: the object and its lookup rows (the foreign key
            // is checked at the statement's end, when both are there). ON CONFLICT DO NOTHING:
            // a duplicate leaves the transaction usable (the caller may go on after
            // `.constraint`); the UNIQUE constraint still decides, and no lookup row is made.
            let (types, values) = Self.lookupRows(attributes)
            let rows = try statement(
                "WITH inserted AS (INSERT INTO objects (unique_key, attributes) VALUES ($1, $2) "
                    + "ON CONFLICT (unique_key) DO NOTHING RETURNING id), "
                    + "indexed AS (INSERT INTO lookup (type, hash, object) "
                    + "SELECT entry.type, sha256(entry.value), inserted.id "
                    + "FROM inserted, unnest($3::bigint[], $4::bytea[]) AS entry (type, value) "
                    + "ON CONFLICT DO NOTHING) "
                    + "SELECT id FROM inserted",
                [
                    uniqueKey.map { .bytes($0) } ?? .null, .bytes(AttributeCoding.encode(attributes)), types,
                    values,
                ])
            guard rows.count == 1, let id = rows.int64(0, 0) else {
                throw StorageError(.constraint, "\(path): an object with this unique key exists")
            }
            return id
        }
    }

    public func delete(_ id: Int64) throws -> Bool {
        try write { try statement("DELETE FROM objects WHERE id = $1", [.int(id)]).changed == 1 }
    }

    public func deleteAllObjects() throws {
        _ = try write { try statement("DELETE FROM objects") }
    }

    public func contains(_ id: Int64) throws -> Bool {
        try statement("SELECT 1 FROM objects WHERE id = $1", [.int(id)]).count == 1
    }

    public func attributes(of id: Int64) throws -> [StoredAttribute]? {
        let rows = try statement("SELECT attributes FROM objects WHERE id = $1", [.int(id)])
        guard rows.count == 1 else { return nil }
        return try decode(rows.bytes(0, 0), of: id)
    }

    private func decode(_ bytes: [UInt8], of id: Int64) throws(StorageError) -> [StoredAttribute] {
        guard let attributes = AttributeCoding.decode(bytes) else {
            throw StorageError(.corrupt, "object \(id) of \(path) has malformed attributes")
        }
        return attributes
    }

    public func update(_ id: Int64, attributes changes: [StoredAttribute], uniqueKey: [UInt8]?) throws {
        try write {
            guard var attributes = try attributes(of: id) else {
                throw StorageError(.failed, "object \(id) does not exist in \(path)")
            }
            for change in changes {
                if let index = attributes.firstIndex(where: { $0.type == change.type }) {
                    attributes[index] = change
                } else {
                    attributes.append(change)
                }
            }
            if let uniqueKey {
                // Writers are serialised (the change count's row lock): the check holds until
                // the commit, and the UNIQUE constraint stays the rule.
                let taken = try statement(
                    "SELECT 1 FROM objects WHERE unique_key = $1 AND id <> $2", [.bytes(uniqueKey), .int(id)])
                if taken.count > 0 {
                    throw StorageError(.constraint, "\(path): an object with this unique key exists")
                }
            }
            try statement("DELETE FROM lookup WHERE object = $1", [.int(id)])
            try addLookups(attributes, of: id)
            try statement(
                "UPDATE objects SET attributes = $2, unique_key = coalesce($3, unique_key) WHERE id = $1",
                [.int(id), .bytes(AttributeCoding.encode(attributes)), uniqueKey.map { .bytes($0) } ?? .null])
        }
    }

    func addLookups(_ attributes: [StoredAttribute], of id: Int64) throws(StorageError) {
        let (types, values) = Self.lookupRows(attributes)
        try statement(
            "INSERT INTO lookup (type, hash, object) SELECT entry.type, sha256(entry.value), $3 "
                + "FROM unnest($1::bigint[], $2::bytea[]) AS entry (type, value) ON CONFLICT DO NOTHING",
            [types, values, .int(id)])
    }

    /// The indexed attributes of an object (`ObjectStore.indexedTypes`), as the two arrays a
    /// statement makes its lookup rows of: their types and their values.
    private static func lookupRows(_ attributes: [StoredAttribute]) -> (PostgresValue, PostgresValue) {
        let indexed = attributes.filter { ObjectStore.indexedTypes.contains($0.type) }
        return (.ints(indexed.map { Int64(bitPattern: $0.type) }), .byteStrings(indexed.map(\.value)))
    }

    // MARK: Find

    public func find(_ terms: [StoredAttribute]) throws -> [Int64] {
        try records(matching: terms).map(\.id)
    }

    /// One statement (its own snapshot, or the open transaction's): the index seek by the
    /// first indexed term and each candidate's attributes, checked here against every term.
    public func records(matching terms: [StoredAttribute]) throws -> [(
        id: Int64, attributes: [StoredAttribute]
    )] {
        let rows: PostgresRows
        if let driver = terms.first(where: { ObjectStore.indexedTypes.contains($0.type) }) {
            rows = try statement(
                "SELECT objects.id, objects.attributes FROM lookup JOIN objects ON objects.id = lookup.object "
                    + "WHERE lookup.type = $1 AND lookup.hash = sha256($2) ORDER BY objects.id",
                [.int(Int64(bitPattern: driver.type)), .bytes(driver.value)])
        } else {
            rows = try statement("SELECT id, attributes FROM objects ORDER BY id")
        }
        var found: [(id: Int64, attributes: [StoredAttribute])] = []
        for row in 0..<rows.count {
            guard let id = rows.int64(row, 0) else { continue }
            let attributes = try decode(rows.bytes(row, 1), of: id)
            if ObjectStore.matches(attributes, terms) { found.append((id, attributes)) }
        }
        return found
    }

    // MARK: Metadata

    public func metadata(_ name: String) throws -> [UInt8]? {
        let rows = try statement("SELECT value FROM metadata WHERE name = $1", [.text(name)])
        return rows.count == 1 ? rows.bytes(0, 0) : nil
    }

    public func setMetadata(_ name: String, _ value: [UInt8]) throws {
        _ = try write {
            try statement(
                "INSERT INTO metadata (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                [.text(name), .bytes(value)])
        }
    }

    public func removeMetadata(_ name: String) throws {
        _ = try write { try statement("DELETE FROM metadata WHERE name = $1", [.text(name)]) }
    }

    /// Every object's attributes decode, and every indexed attribute has its lookup row.
    public func integrityCheck() throws -> String {
        try read {
            var problems: [String] = []
            let rows = try statement("SELECT id, attributes FROM objects ORDER BY id")
            for row in 0..<rows.count {
                let id = rows.int64(row, 0) ?? -1
                guard let attributes = AttributeCoding.decode(rows.bytes(row, 1)) else {
                    problems.append("object \(id): malformed attributes")
                    continue
                }
                let indexed = attributes.filter { ObjectStore.indexedTypes.contains($0.type) }
                let lookups = try statement("SELECT count(*) FROM lookup WHERE object = $1", [.int(id)])
                if lookups.int64(0, 0) != Int64(Set(indexed.map { IndexKey($0) }).count) {
                    problems.append("object \(id): lookup rows do not match its attributes")
                }
            }
            return problems.isEmpty ? "ok" : problems.joined(separator: "\n")
        }
    }

    private struct IndexKey: Hashable {
        var type: UInt64
        var value: [UInt8]
        init(_ attribute: StoredAttribute) {
            type = attribute.type
            value = attribute.value
        }
    }

    // MARK: PIN attempts

    /// The advisory lock key of `slot`: the schema's OID in the high half, the slot in the
    /// low (`pg_locks` shows them as `classid` and `objid`).
    private func lockKey(_ slot: Int) throws(StorageError) -> Int64 {
        try prepare()
        guard let oid = schemaOID else { throw StorageError(.failed, "\(path): the schema is not checked") }
        return oid << 32 | Int64(slot)
    }

    public func holdAttemptLock(_ slot: Int) throws(StorageError) -> AttemptLock? {
        let key = try lockKey(slot)
        let holder = PostgresConnection(conninfo: conninfo, label: connection.label, options: options)
        guard try holder.execute("SELECT pg_try_advisory_lock($1)", [.int(key)]).bool(0, 0) else {
            return nil
        }
        return AttemptLock(release: { holder.closeReleasingLocks() })
    }

    public func isAttemptLockHeld(_ slot: Int) throws(StorageError) -> Bool {
        let key = try lockKey(slot)
        return try statement(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
                + "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                + "AND classid = ($1 >> 32)::oid AND objid = ($1 & 4294967295)::oid)",
            [.int(key)]
        ).bool(0, 0)
    }
}

extension String {
    /// `self` with every `target` replaced (no Foundation in the module's targets).
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for character in self { if character == target { out += replacement } else { out.append(character) } }
        return out
    }
}
