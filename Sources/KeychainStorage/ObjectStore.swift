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

/// What every storage engine does for one token's store: transactions, objects and their
/// attributes, finds, token metadata, the change count and the PIN-attempt locks
/// (ARCHITECTURE.md §4.5). `KeychainCore` reaches an engine only through ``ObjectStore`` and
/// does not know which one it is. Not thread-safe: the owner serialises calls.
public protocol StorageEngine: AnyObject {
    /// Where the store is, fit for messages: never a password or other secret.
    var path: String { get }
    /// True when this process cannot write the store.
    var isReadOnly: Bool { get }
    /// True inside `read`/`write`.
    var isInTransaction: Bool { get }
    /// A value that stays the same for as long as nobody, anywhere, writes the store; nil
    /// while unknown (a write under way, the server unreachable). What was read between two
    /// equal values may be kept until the value changes. A server's engine may answer with
    /// the value it confirmed within its freshness bound (ServerOptions): what is kept then
    /// outlives another host's write by at most that bound.
    var changeCount: UInt64? { get }
    /// Runs `body` in one read transaction (a consistent snapshot); nested calls join it.
    func read<T>(_ body: () throws -> T) throws -> T
    /// Runs `body` in one write transaction, rolled back whole if it throws.
    func write<T>(_ body: () throws -> T) throws -> T
    /// Inserts an object and returns its ID, never reused; `.constraint` when `uniqueKey`
    /// is taken.
    func insert(uniqueKey: [UInt8]?, attributes: [StoredAttribute]) throws -> Int64
    /// Removes an object; false when it did not exist.
    func delete(_ id: Int64) throws -> Bool
    /// Removes every object (token re-initialisation).
    func deleteAllObjects() throws
    func contains(_ id: Int64) throws -> Bool
    /// Every attribute of the object, or nil when it does not exist.
    func attributes(of id: Int64) throws -> [StoredAttribute]?
    /// Sets (inserts or replaces) attributes of an existing object, and its unique key when
    /// given, in one transaction.
    func update(_ id: Int64, attributes: [StoredAttribute], uniqueKey: [UInt8]?) throws
    /// IDs of the objects holding every term with exactly its value, in insertion order.
    func find(_ terms: [StoredAttribute]) throws -> [Int64]
    /// The objects `find` finds, each with every attribute, from one snapshot.
    func records(matching terms: [StoredAttribute]) throws -> [(id: Int64, attributes: [StoredAttribute])]
    func metadata(_ name: String) throws -> [UInt8]?
    func setMetadata(_ name: String, _ value: [UInt8]) throws
    func removeMetadata(_ name: String) throws
    /// The engine's own consistency check; "ok" when sound.
    func integrityCheck() throws -> String
    /// Takes the PIN-attempt lock of `slot` for as long as the result lives; nil when another
    /// holder, on any host, has it. Released however its holder ends (ARCHITECTURE.md §6.4).
    func holdAttemptLock(_ slot: Int) throws(StorageError) -> AttemptLock?
    /// Whether any holder, this process included, has the attempt lock of `slot`.
    func isAttemptLockHeld(_ slot: Int) throws(StorageError) -> Bool
}

/// The store of one token, over whichever engine its configuration names: SQLite (a file
/// path, the default) or PostgreSQL (`postgresql:` and a libpq connection string).
///
/// Knows rows and attribute codes, not PKCS#11 rules (those live in KeychainCore). Every
/// public operation runs inside `read` or `write`, one transaction each (ARCHITECTURE.md §4.4).
/// Not thread-safe: the owner serialises calls.
public final class ObjectStore {
    let engine: any StorageEngine

    /// The store over `engine`.
    public init(engine: any StorageEngine) { self.engine = engine }

    /// Opens (and, when `create`, creates) the SQLite store at `path` (``SQLiteStore``).
    /// `":memory:"` gives a private in-memory SQLite store (session objects use ``MemoryStore``).
    public convenience init(path: String, create: Bool, durability: Durability = .normal)
        throws(StorageError)
    {
        self.init(engine: try SQLiteStore(path: path, create: create, durability: durability))
    }

    /// The prefix of a store location served by PostgreSQL; the rest is a libpq connection
    /// string or URI.
    public static let postgresPrefix = "postgresql:"

    /// True when `location` names a database server rather than a file.
    public static func isServerLocation(_ location: String) -> Bool {
        location.hasPrefix(postgresPrefix)
    }

    /// `location` fit for messages: a server's host, port, database and user, never its
    /// password; a file's path as it is.
    public static func printable(_ location: String) -> String {
        guard isServerLocation(location) else { return location }
        return PostgresConnection.label(of: String(location.dropFirst(postgresPrefix.count)))
            ?? "postgresql:(a connection string that does not parse)"
    }

    /// The store of token `token` at `location`: a PostgreSQL store (schema named after the
    /// token, with `server`'s freshness bound and timeout) when it starts with `postgresql:`,
    /// else the SQLite file at that path.
    public static func open(
        _ location: String, token: String, create: Bool, durability: Durability = .normal,
        server: ServerOptions = ServerOptions()
    ) throws(StorageError) -> ObjectStore {
        guard isServerLocation(location) else {
            return try ObjectStore(path: location, create: create, durability: durability)
        }
        let conninfo = String(location.dropFirst(postgresPrefix.count))
        return ObjectStore(
            engine: try PostgresStore(conninfo: conninfo, token: token, create: create, options: server))
    }

    /// Where the store is, fit for messages (no password).
    public var path: String { engine.path }
    /// True when this process cannot write the store (permissions, read-only mount, a standby).
    public var isReadOnly: Bool { engine.isReadOnly }
    /// True inside `read`/`write`: what is read now comes from that transaction's snapshot.
    public var isInTransaction: Bool { engine.isInTransaction }
    /// A value that stays the same for as long as nobody, in any process or on any host,
    /// writes the store; nil while a write is under way or the count cannot be read. What was
    /// read between two equal values may be kept until the value changes.
    public var changeCount: UInt64? { engine.changeCount }

    // MARK: Transactions

    /// Runs `body` in one read transaction (a consistent snapshot).
    public func read<T>(_ body: () throws -> T) throws -> T { try engine.read(body) }

    /// Runs `body` in one write transaction; rolls everything back if it throws.
    public func write<T>(_ body: () throws -> T) throws -> T { try engine.write(body) }

    // MARK: Objects

    /// Inserts an object; returns its ID, which is never reused, so that an ID can serve as
    /// a handle and in a unique ID for the life of the store. Throws `.constraint` when
    /// `uniqueKey` is already taken.
    public func insert(uniqueKey: [UInt8]?, attributes: [StoredAttribute]) throws -> Int64 {
        try engine.insert(uniqueKey: uniqueKey, attributes: attributes)
    }

    /// Removes an object. Returns false when it did not exist.
    @discardableResult
    public func delete(_ id: Int64) throws -> Bool { try engine.delete(id) }

    /// Removes every object (token re-initialisation).
    public func deleteAllObjects() throws { try engine.deleteAllObjects() }

    /// True when the object exists.
    public func contains(_ id: Int64) throws -> Bool { try engine.contains(id) }

    /// One attribute's value, or nil when the object does not have it.
    public func attribute(_ type: UInt64, of id: Int64) throws -> [UInt8]? {
        try engine.attributes(of: id)?.first { $0.type == type }?.value
    }

    /// Every attribute of the object, or nil when the object does not exist.
    public func attributes(of id: Int64) throws -> [StoredAttribute]? { try engine.attributes(of: id) }

    /// Sets (inserts or replaces) attributes of an existing object, and optionally its
    /// unique key, in one transaction.
    public func update(_ id: Int64, attributes changes: [StoredAttribute], uniqueKey: [UInt8]? = nil)
        throws
    {
        try engine.update(id, attributes: changes, uniqueKey: uniqueKey)
    }

    // MARK: Find

    /// The attribute types finds are driven by, and so the only ones in the `lookup` index:
    /// label (3), application (0x10), object ID (0x12), issuer (0x81), serial number (0x82),
    /// subject (0x101), ID (0x102) and a key's application tag (vendor 0x80504B11, Apple's
    /// kSecAttrApplicationTag, the usual way to find a key). No store written before the tag
    /// existed holds one, so adding it needed no migration. An object is one row plus one
    /// lookup row for each of these it has: an insert touches a handful of pages (measured:
    /// 67 page writes per certificate with one row per attribute and an index over all of
    /// them).
    /// A certificate's trust marker (vendor 0x80504B41, KeychainCore's Trust.swift) joined
    /// later the same way: evaluation finds the few certificates with trust settings among
    /// thousands by one seek.
    /// A generic or internet password's account (vendor 0x80504B10, kSecAttrAccount) joined
    /// with schema version 2, which rebuilt the index of existing stores: a keychain finds a
    /// password by service and account among thousands of the same service by one seek.
    public static let indexedTypes: Set<UInt64> = [
        3, 0x10, 0x12, 0x81, 0x82, 0x101, 0x102, 0x8050_4B10, 0x8050_4B11, 0x8050_4B41,
    ]

    /// IDs of the objects holding every attribute in `terms` with exactly that value, in
    /// insertion order. The first term of an indexed type drives the lookup (an index seek;
    /// put the most selective first); with no indexed term, every object is visited.
    public func find(_ terms: [StoredAttribute]) throws -> [Int64] { try engine.find(terms) }

    /// The objects `find` finds, each with every attribute, in one read transaction.
    public func records(matching terms: [StoredAttribute]) throws -> [(
        id: Int64, attributes: [StoredAttribute]
    )] {
        try engine.records(matching: terms)
    }

    /// True when `attributes` hold every term, with exactly its value.
    public static func matches(_ attributes: [StoredAttribute], _ terms: [StoredAttribute]) -> Bool {
        terms.allSatisfy { term in attributes.contains(term) }
    }

    // MARK: Metadata

    /// A token metadata value (label, PIN verifiers, counters), or nil when unset.
    public func metadata(_ name: String) throws -> [UInt8]? { try engine.metadata(name) }

    public func setMetadata(_ name: String, _ value: [UInt8]) throws { try engine.setMetadata(name, value) }

    public func removeMetadata(_ name: String) throws { try engine.removeMetadata(name) }

    /// Runs the engine's own consistency check; returns its report ("ok" when sound).
    public func integrityCheck() throws -> String { try engine.integrityCheck() }

    // MARK: PIN attempts

    /// Takes the attempt lock of `slot` (0 ..< `AttemptLock.slots`) for as long as the
    /// returned value lives; nil when another holder, in any process, has it. Call inside a
    /// write transaction.
    public func holdAttemptLock(_ slot: Int) throws(StorageError) -> AttemptLock? {
        try engine.holdAttemptLock(try AttemptLock.checked(slot))
    }

    /// Whether a holder, in any process (this one included), has the attempt lock of `slot`.
    public func isAttemptLockHeld(_ slot: Int) throws(StorageError) -> Bool {
        try engine.isAttemptLockHeld(try AttemptLock.checked(slot))
    }
}
