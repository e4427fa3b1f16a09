/// One object as a store holds it: its ID, its unique key and its attributes, sealed values
/// still sealed. What a copy of a store moves.
public struct StoredObject: Sendable, Equatable {
    public var id: Int64
    public var uniqueKey: [UInt8]?
    public var attributes: [StoredAttribute]

    public init(id: Int64, uniqueKey: [UInt8]?, attributes: [StoredAttribute]) {
        self.id = id
        self.uniqueKey = uniqueKey
        self.attributes = attributes
    }
}

/// Everything the store of one token holds, as it holds it, read in one snapshot: every object,
/// every metadata value (label, PIN verifiers and the wrapped token key, counters, serial), and
/// the highest object ID it ever gave, so that a copy never gives an ID again either.
public struct StoreContents: Sendable, Equatable {
    public var objects: [StoredObject]
    /// Sorted by name.
    public var metadata: [(name: String, value: [UInt8])]
    public var lastID: Int64

    public static func == (lhs: StoreContents, rhs: StoreContents) -> Bool {
        lhs.objects == rhs.objects && lhs.lastID == rhs.lastID
            && lhs.metadata.elementsEqual(rhs.metadata) { $0.name == $1.name && $0.value == $1.value }
    }
}

/// What an engine does for a copy of a whole store (`StoreMigration`): reads it in one
/// snapshot, and fills an empty store with it in one write transaction, IDs kept.
protocol WholeStoreAccess: StorageEngine {
    /// Every object, metadata value and the last ID given, in one read transaction.
    func contents() throws -> StoreContents
    /// In one write transaction: refuses (`.constraint`) a store holding an object or a
    /// metadata value not named in `ignorable`, unless `replacing`; then removes what the
    /// store holds and writes `contents` as they are, with their IDs, and the lookup index
    /// of their attributes; the next ID given is above `contents.lastID`.
    func load(_ contents: StoreContents, replacing: Bool, ignorable: Set<String>) throws
}

/// Copies the store of one token into another (SQLite to PostgreSQL, or any engine to any),
/// below every rule: rows as they are, sealed values never opened (no key or PIN is needed),
/// metadata with them, so that the same PINs open the copy and its objects keep their IDs and
/// unique IDs. The copy is one write transaction; it is then read back and compared, object
/// by object and attribute by attribute (docs/fleet.md).
public enum StoreMigration {
    /// What a copy moved and what reading it back found.
    public struct Report: Sendable {
        /// The objects copied, each with its attributes.
        public var objects: [StoredObject]
        public var metadataCount: Int
        /// The objects read back with every attribute, the unique key and the ID equal.
        public var verifiedObjects: Int
        /// What reading back found different: object IDs and attribute types, never a value.
        public var mismatches: [String]
    }

    /// Copies `source` into `target`. `target` must hold no object and no metadata but what
    /// `ignorable` names (a value any opening writes), unless `replacing`, which erases it
    /// in the same transaction. Nothing is written when the copy fails.
    public static func copy(
        from source: ObjectStore, to target: ObjectStore, replacing: Bool, ignorable: Set<String> = []
    ) throws -> Report {
        guard let reader = source.engine as? any WholeStoreAccess,
            let writer = target.engine as? any WholeStoreAccess
        else { throw StorageError(.failed, "this store's engine cannot be copied") }
        let contents = try reader.contents()
        try writer.load(contents, replacing: replacing, ignorable: ignorable)
        let copied = try writer.contents()
        var mismatches = differences(contents, copied)
        let integrity = try target.integrityCheck()
        if integrity != "ok" { mismatches.append((nil, "the copy's integrity check: \(integrity)")) }
        let bad = Set(mismatches.compactMap { $0.objectID })
        return Report(
            objects: contents.objects, metadataCount: contents.metadata.count,
            verifiedObjects: contents.objects.count(where: { !bad.contains($0.id) }),
            mismatches: mismatches.map(\.text))
    }

    /// What differs between what was copied and what was read back, object by object.
    static func differences(_ source: StoreContents, _ copy: StoreContents) -> [(
        objectID: Int64?, text: String
    )] {
        var found: [(objectID: Int64?, text: String)] = []
        var copied: [Int64: StoredObject] = [:]
        for object in copy.objects { copied[object.id] = object }
        for object in source.objects {
            guard let other = copied.removeValue(forKey: object.id) else {
                found.append((object.id, "object \(object.id) is missing from the copy"))
                continue
            }
            if other.uniqueKey != object.uniqueKey {
                found.append((object.id, "object \(object.id): its unique key differs"))
            }
            for (index, attribute) in object.attributes.enumerated()
            where index >= other.attributes.count || other.attributes[index] != attribute {
                let type = "0x" + String(attribute.type, radix: 16)
                found.append((object.id, "object \(object.id): attribute \(type) differs"))
            }
            if other.attributes.count > object.attributes.count {
                found.append((object.id, "object \(object.id): the copy has more attributes"))
            }
        }
        for id in copied.keys.sorted() { found.append((id, "object \(id) is in the copy only")) }
        var metadata: [String: [UInt8]] = [:]
        for entry in copy.metadata { metadata[entry.name] = entry.value }
        for entry in source.metadata where metadata.removeValue(forKey: entry.name) != entry.value {
            found.append((nil, "metadata \(entry.name) differs or is missing"))
        }
        for name in metadata.keys.sorted() { found.append((nil, "metadata \(name) is in the copy only")) }
        if copy.lastID < source.lastID {
            found.append(
                (nil, "the copy would give object IDs again (last ID \(copy.lastID) < \(source.lastID))"))
        }
        return found
    }
}

extension ObjectStore {
    /// Everything the store holds, as it holds it, in one snapshot (`StoreMigration`).
    public func contents() throws -> StoreContents {
        guard let engine = engine as? any WholeStoreAccess else {
            throw StorageError(.failed, "this store's engine cannot be read whole")
        }
        return try engine.contents()
    }
}
