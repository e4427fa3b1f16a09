/// A store that lives in this process's memory only, for session objects (v2.40 §6.7.1): they
/// die with the session or the process, so nothing is written anywhere and no other process
/// reads them. The same contract as the SQLite and PostgreSQL engines (``StorageEngine``), over
/// a dictionary: an ECDH C_DeriveKey stores its session key and C_DestroyObject removes it, and
/// an in-memory SQLite database spent about 30 µs of SQL on that pair, a third of the derivation.
///
/// Writes are rolled back whole when their body throws, from a journal of what each change
/// replaced. IDs are never reused. Not thread-safe: the owner (the token, under its lock)
/// serialises calls.
public final class MemoryStore: StorageEngine {
    private struct Object {
        var uniqueKey: [UInt8]?
        var attributes: [StoredAttribute]
    }

    /// What a change replaced, to undo it.
    private enum Undo {
        case object(Int64, Object?)
        case uniqueKey([UInt8], Int64?)
        case metadata(String, [UInt8]?)
    }

    private var objects: [Int64: Object] = [:]
    private var uniqueKeys: [[UInt8]: Int64] = [:]
    private var metadataValues: [String: [UInt8]] = [:]
    private var lastID: Int64 = 0
    /// Moves at the end of every write; read as nil during one.
    private var writes: UInt64 = 0
    private var writing = false
    private var depth = 0
    private var journal: [Undo] = []
    private var heldAttemptLocks: Set<Int> = []

    public init() {}

    public var path: String { ":memory:" }
    public var isReadOnly: Bool { false }
    public var isInTransaction: Bool { depth > 0 }
    public var changeCount: UInt64? { writing ? nil : writes }

    public func read<T>(_ body: () throws -> T) throws -> T {
        depth += 1
        defer { depth -= 1 }
        return try body()
    }

    public func write<T>(_ body: () throws -> T) throws -> T {
        if writing { return try body() }
        writing = true
        depth += 1
        journal.removeAll(keepingCapacity: true)
        defer {
            depth -= 1
            writing = false
            writes &+= 1
            journal.removeAll(keepingCapacity: true)
        }
        do {
            return try body()
        } catch {
            for undo in journal.reversed() {
                switch undo {
                case .object(let id, let object): objects[id] = object
                case .uniqueKey(let key, let id): uniqueKeys[key] = id
                case .metadata(let name, let value): metadataValues[name] = value
                }
            }
            throw error
        }
    }

    public func insert(uniqueKey: [UInt8]?, attributes: [StoredAttribute]) throws -> Int64 {
        try write {
            if let uniqueKey, uniqueKeys[uniqueKey] != nil {
                throw StorageError(.constraint, "the unique key is taken in store \(path)")
            }
            guard lastID < Int64.max else { throw StorageError(.full, "store \(path) has no IDs left") }
            lastID += 1
            let id = lastID
            if let uniqueKey { setUniqueKey(uniqueKey, to: id) }
            setObject(id, Object(uniqueKey: uniqueKey, attributes: attributes))
            return id
        }
    }

    public func delete(_ id: Int64) throws -> Bool {
        try write {
            guard let object = objects[id] else { return false }
            if let key = object.uniqueKey { setUniqueKey(key, to: nil) }
            setObject(id, nil)
            return true
        }
    }

    public func deleteAllObjects() throws {
        try write {
            for id in Array(objects.keys) { _ = try delete(id) }
        }
    }

    public func contains(_ id: Int64) throws -> Bool { objects[id] != nil }

    public func attributes(of id: Int64) throws -> [StoredAttribute]? { objects[id]?.attributes }

    public func update(_ id: Int64, attributes changes: [StoredAttribute], uniqueKey: [UInt8]?) throws {
        try write {
            guard var object = objects[id] else {
                throw StorageError(.failed, "object \(id) does not exist in store \(path)")
            }
            if let uniqueKey, uniqueKey != object.uniqueKey {
                if uniqueKeys[uniqueKey] != nil {
                    throw StorageError(.constraint, "the unique key is taken in store \(path)")
                }
                if let old = object.uniqueKey { setUniqueKey(old, to: nil) }
                setUniqueKey(uniqueKey, to: id)
                object.uniqueKey = uniqueKey
            }
            for change in changes {
                if let index = object.attributes.firstIndex(where: { $0.type == change.type }) {
                    object.attributes[index] = change
                } else {
                    object.attributes.append(change)
                }
            }
            setObject(id, object)
        }
    }

    public func find(_ terms: [StoredAttribute]) throws -> [Int64] {
        try records(matching: terms).map(\.id)
    }

    public func records(matching terms: [StoredAttribute]) throws -> [(
        id: Int64, attributes: [StoredAttribute]
    )] {
        objects.filter { ObjectStore.matches($0.value.attributes, terms) }
            .map { (id: $0.key, attributes: $0.value.attributes) }
            .sorted { $0.id < $1.id }
    }

    public func metadata(_ name: String) throws -> [UInt8]? { metadataValues[name] }

    public func setMetadata(_ name: String, _ value: [UInt8]) throws {
        try write { setMetadataValue(name, value) }
    }

    public func removeMetadata(_ name: String) throws {
        try write { setMetadataValue(name, nil) }
    }

    public func integrityCheck() throws -> String { "ok" }

    public func holdAttemptLock(_ slot: Int) throws(StorageError) -> AttemptLock? {
        let slot = try AttemptLock.checked(slot)
        guard heldAttemptLocks.insert(slot).inserted else { return nil }
        return AttemptLock(release: { [weak self] in self?.heldAttemptLocks.remove(slot) })
    }

    public func isAttemptLockHeld(_ slot: Int) throws(StorageError) -> Bool {
        heldAttemptLocks.contains(try AttemptLock.checked(slot))
    }

    // MARK: Journalled changes (inside `write`)

    private func setObject(_ id: Int64, _ object: Object?) {
        journal.append(.object(id, objects[id]))
        objects[id] = object
    }

    private func setUniqueKey(_ key: [UInt8], to id: Int64?) {
        journal.append(.uniqueKey(key, uniqueKeys[key]))
        uniqueKeys[key] = id
    }

    private func setMetadataValue(_ name: String, _ value: [UInt8]?) {
        journal.append(.metadata(name, metadataValues[name]))
        metadataValues[name] = value
    }
}
