internal import KeychainStorage

#if canImport(Glibc)
    import Glibc
#endif

/// Moving a token from a SQLite store into the store its configuration names, PostgreSQL
/// above all (docs/fleet.md): every object with its sealed values as they are, never opened
/// (no PIN is asked: the values stay sealed under the same token key), and every metadata
/// value with them (PIN verifiers, the wrapped token key, counters, label, serial), so that
/// the same PINs open the copy and each object keeps its ID and CKA_UNIQUE_ID. The copy is
/// one write transaction, then read back and compared attribute by attribute
/// (`StoreMigration`).
public enum TokenMigration {
    /// What a migration copied and what reading it back found.
    public struct Report: Sendable {
        /// How many objects of each class were copied, by PKCS#11 name (`CKO_CERTIFICATE`…),
        /// sorted by name.
        public var objectsByClass: [(name: String, count: Int)]
        public var objects: Int
        public var metadata: Int
        /// Objects read back with every attribute, the unique key and the ID byte-equal.
        public var verified: Int
        /// What differs (object IDs and attribute types, never a value); empty when the
        /// copy is exact.
        public var mismatches: [String]
    }

    /// The metadata a store gets by being opened at all (its serial, ``TokenState/store()``):
    /// a target holding only this is empty, and takes the source's.
    static let ignorableMetadata: Set<String> = ["serial"]

    /// Copies the SQLite store at `sourcePath` into the store of `target`. The target must
    /// hold no object and no PIN (a token only ever opened, never initialised), unless
    /// `replacing`, which erases it in the same transaction; nothing is written when the copy
    /// fails. The source is only read.
    public static func migrate(
        fromStoreAt sourcePath: String, to target: TokenConfiguration, replacing: Bool
    ) throws(CoreError) -> Report {
        guard !ObjectStore.isServerLocation(sourcePath) else {
            throw CoreError(.invalidArgument, "the source of a migration is a SQLite store file")
        }
        guard !target.readOnly else {
            throw CoreError(.tokenWriteProtected, "token \(target.name) is configured read-only")
        }
        guard target.isServerStore || resolved(target.path) != resolved(sourcePath) else {
            throw CoreError(.invalidArgument, "the source and the target are the same store")
        }
        let report = try CoreError.mapping { () throws -> StoreMigration.Report in
            let source = try ObjectStore(path: sourcePath, create: false)
            let destination = try ObjectStore.open(
                target.path, token: target.storeName, create: true, durability: target.durability,
                server: target.serverOptions)
            do {
                return try StoreMigration.copy(
                    from: source, to: destination, replacing: replacing, ignorable: ignorableMetadata)
            } catch let error as StorageError where error.code == .constraint {
                throw CoreError(
                    .duplicateItem,
                    "token \(target.name) is not empty: it holds objects or PINs (nothing was copied)")
            }
        }
        var classes: [String: Int] = [:]
        for object in report.objects {
            let value = object.attributes.first { $0.type == AttributeType.class.rawValue }?.value
            let name = value.flatMap(AttributeValue.ulong).map(PKCS11Names.objectClass) ?? "no class"
            classes[name, default: 0] += 1
        }
        return Report(
            objectsByClass: classes.sorted { $0.key < $1.key }.map { (name: $0.key, count: $0.value) },
            objects: report.objects.count, metadata: report.metadataCount, verified: report.verifiedObjects,
            mismatches: report.mismatches)
    }

    /// `path` with its links resolved, or as given when it does not exist yet.
    private static func resolved(_ path: String) -> String {
        guard let real = realpath(path, nil) else { return path }
        defer { free(real) }
        return String(cString: real)
    }
}
