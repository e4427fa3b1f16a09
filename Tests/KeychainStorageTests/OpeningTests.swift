import Foundation
import KeychainStorage
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Opening and creating a store")
struct OpeningTests {
    @Test("a new store has the current schema version, WAL journaling and mode 0600")
    func newStoreIsSetUp() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            let store = try ObjectStore(path: path, create: true)
            #expect(store.path == path)
            #expect(!store.isReadOnly)
            #expect(SQLiteStore.schemaVersion >= 1)
            #expect(try sqlite(path, "PRAGMA user_version") == String(SQLiteStore.schemaVersion))
            #expect(try sqlite(path, "PRAGMA journal_mode") == "wal")
            #expect(
                try sqlite(
                    path,
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
                )
                    == "lookup\nmetadata\nobjects")
            var status = stat()
            #expect(stat(path, &status) == 0)
            #expect(status.st_mode & 0o777 == 0o600, "a store is private to its owner")
            #expect(try store.integrityCheck() == "ok")
        }
    }

    @Test("a store opened with full durability works like any other")
    func fullDurability() throws {
        try withTemporaryDirectory { directory in
            let store = try ObjectStore(
                path: directory.file("store.sqlite3"), create: true, durability: .full)
            let object = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("x"))])
            #expect(try store.find([StoredAttribute(3, bytes("x"))]) == [object])
        }
    }

    @Test("reopening a store keeps its objects and does not migrate it again")
    func reopeningKeepsObjects() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            let object = try ObjectStore(path: path, create: true).insert(
                uniqueKey: [1], attributes: [StoredAttribute(3, bytes("kept"))])
            let reopened = try ObjectStore(path: path, create: false)
            #expect(try reopened.attributes(of: object) == [StoredAttribute(3, bytes("kept"))])
            #expect(try reopened.find([StoredAttribute(3, bytes("kept"))]) == [object])
            #expect(try sqlite(path, "PRAGMA user_version") == String(SQLiteStore.schemaVersion))
        }
    }

    @Test("an empty file and an empty database are migrated to the current schema")
    func emptyDatabasesAreMigrated() throws {
        try withTemporaryDirectory { directory in
            let emptyFile = directory.file("empty.sqlite3")
            #expect(FileManager.default.createFile(atPath: emptyFile, contents: Data()))
            let unversioned = directory.file("unversioned.sqlite3")
            // A database with an unrelated table and user_version 0: migration adds ours.
            try sqlite(unversioned, "CREATE TABLE unrelated (x); INSERT INTO unrelated VALUES (1)")
            for path in [emptyFile, unversioned] {
                let store = try ObjectStore(path: path, create: false)
                #expect(try sqlite(path, "PRAGMA user_version") == String(SQLiteStore.schemaVersion))
                let object = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("x"))])
                #expect(try store.find([StoredAttribute(3, bytes("x"))]) == [object])
            }
            #expect(try sqlite(unversioned, "SELECT x FROM unrelated") == "1", "nothing else is touched")
        }
    }

    @Test(
        "a store written by a newer schema is refused with a message naming the file",
        arguments: [false, true])
    func newerSchemaIsRefused(create: Bool) throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            _ = try ObjectStore(path: path, create: true).insert(uniqueKey: nil, attributes: [])
            let newer = SQLiteStore.schemaVersion + 1
            try sqlite(path, "PRAGMA user_version = \(newer)")
            expectStorageError(.newerSchema, containing: path) {
                _ = try ObjectStore(path: path, create: create)
            }
            expectStorageError(.newerSchema, containing: "schema version \(newer)") {
                _ = try ObjectStore(path: path, create: create)
            }
            #expect(try sqlite(path, "PRAGMA user_version") == String(newer), "the file is left alone")
            #expect(try sqlite(path, "SELECT count(*) FROM objects") == "1")
        }
    }

    @Test("a newer schema is refused on a store this process cannot write, too")
    func newerSchemaIsRefusedReadOnly() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            _ = try ObjectStore(path: path, create: true)
            try sqlite(path, "PRAGMA user_version = \(SQLiteStore.schemaVersion + 1)")
            try withWriteProtected([path, directory.path]) {
                expectStorageError(.newerSchema, containing: path) {
                    _ = try ObjectStore(path: path, create: false)
                }
            }
        }
    }

    /// Files that are not SQLite databases.
    static let notDatabases: [Named<[UInt8]>] = [
        Named("random bytes", (0..<8192).map { _ in UInt8.random(in: 0...255) }),
        Named("text", bytes(String(repeating: "not a database\n", count: 300))),
        Named("a short file", [0x53, 0x51, 0x4C]),
        Named("a damaged header", bytes("SQLite format 3\0") + Array(repeating: 0xFF, count: 4080)),
    ]

    @Test(
        "a file that is not a store is refused with an error naming it, never a crash",
        arguments: notDatabases)
    func notADatabaseIsRefused(_ file: Named<[UInt8]>) throws {
        let (name, contents) = (file.name, file.value)
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            #expect(FileManager.default.createFile(atPath: path, contents: Data(contents)))
            for create in [false, true] {
                do {
                    _ = try ObjectStore(path: path, create: create)
                    Issue.record("\(name): opened as a store")
                } catch let error as StorageError {
                    #expect(error.code == .corrupt, "\(name): \(error.message)")
                    #expect(error.message.contains(path), "\(name): \(error.message)")
                }
            }
            #expect(
                try Data(contentsOf: URL(fileURLWithPath: path)) == Data(contents), "\(name): left as it was")
        }
    }

    @Test("a store cut short is reported as an error, never a crash")
    func truncatedStoreIsReported() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            do {
                let store = try ObjectStore(path: path, create: true)
                for index in 0..<200 {
                    _ = try store.insert(
                        uniqueKey: [UInt8(index)],
                        attributes: [StoredAttribute(3, Array(repeating: UInt8(index), count: 300))])
                }
            }
            // Closing the last connection checkpoints the WAL into the file.
            #expect(access(path + "-wal", F_OK) != 0)
            let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
            #expect(truncate(path, off_t(size / 2)) == 0)
            do {
                let store = try ObjectStore(path: path, create: false)
                _ = try store.find([StoredAttribute(3, Array(repeating: 199, count: 300))])
                _ = try store.find([StoredAttribute(0x11, [1])])
                #expect(try store.integrityCheck() != "ok", "a damaged store does not report itself sound")
            } catch let error as StorageError {
                #expect(error.code == .corrupt, "\(error.message)")
                #expect(error.message.contains(path), "\(error.message)")
            }
        }
    }

    @Test("a malformed attribute blob is reported as corrupt with the object and the file")
    func malformedBlobIsCorrupt() throws {
        try withTemporaryStore { store, _ in
            let object = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("x"))])
            try sqlite(
                store.path, "UPDATE objects SET attributes = x'0300000000000000FF' WHERE id = \(object)")
            expectStorageError(.corrupt, containing: "object \(object) of store \(store.path)") {
                _ = try store.attributes(of: object)
            }
            // A scan meets it too; an index lookup with no other terms does not load it.
            expectStorageError(.corrupt) { _ = try store.find([StoredAttribute(0x11, [1])]) }
            #expect(try store.find([StoredAttribute(3, bytes("x"))]) == [object])
            expectStorageError(.corrupt) { try store.update(object, attributes: []) }
        }
    }

    @Test("a missing store is not created when creation is not asked for")
    func missingStoreIsNotCreated() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("missing.sqlite3")
            expectStorageError(.cannotOpen, containing: path) {
                _ = try ObjectStore(path: path, create: false)
            }
            #expect(access(path, F_OK) != 0, "nothing is created")
        }
    }

    @Test("a store in a missing directory cannot be opened or created", arguments: [false, true])
    func missingDirectoryIsReported(create: Bool) throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("absent/store.sqlite3")
            expectStorageError(.cannotOpen, containing: path) {
                _ = try ObjectStore(path: path, create: create)
            }
            #expect(access(directory.file("absent"), F_OK) != 0, "no directory is created")
        }
    }

    @Test("a directory where the store should be is refused")
    func directoryIsRefused() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            #expect(mkdir(path, 0o700) == 0)
            expectStorageError(.cannotOpen, containing: path) {
                _ = try ObjectStore(path: path, create: true)
            }
        }
    }

    @Test("paths with URI characters open the file they name")
    func uriCharactersInPath() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("a%20b?mode=ro#x.sqlite3")
            let store = try ObjectStore(path: path, create: true)
            _ = try store.insert(uniqueKey: nil, attributes: [])
            #expect(!store.isReadOnly)
            #expect(access(path, F_OK) == 0, "the file is named exactly as given")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
                    !$0.hasPrefix("a%20b?mode=ro#x.sqlite3")
                } == [])
        }
    }
}

@Suite("A store this process cannot write")
struct ReadOnlyTests {
    /// A store with one object, closed (its WAL checkpointed away), then write-protected.
    private static func withReadOnlyStore(_ body: (String, Int64, TemporaryDirectory) throws -> Void) throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            let object = try ObjectStore(path: path, create: true).insert(
                uniqueKey: [1], attributes: [StoredAttribute(3, bytes("kept"))])
            try ObjectStore(path: path, create: false).setMetadata("serial", bytes("s"))
            try withWriteProtected([path, directory.path]) { try body(path, object, directory) }
        }
    }

    @Test(
        "is opened read-only: reads work, every write is refused, and no file changes",
        arguments: [false, true])
    func readOnlyStoreIsServed(create: Bool) throws {
        try ReadOnlyTests.withReadOnlyStore { path, object, directory in
            let before = try snapshot(of: directory)
            let store = try ObjectStore(path: path, create: create)
            #expect(store.isReadOnly)
            #expect(try store.attributes(of: object) == [StoredAttribute(3, bytes("kept"))])
            #expect(try store.find([StoredAttribute(3, bytes("kept"))]) == [object])
            #expect(try store.find([]) == [object])
            #expect(try store.metadata("serial") == bytes("s"))
            #expect(try store.integrityCheck() == "ok")
            expectStorageError(.readOnly, containing: path) {
                _ = try store.insert(uniqueKey: nil, attributes: [])
            }
            expectStorageError(.readOnly, containing: path) { try store.update(object, attributes: []) }
            expectStorageError(.readOnly, containing: path) { try store.delete(object) }
            expectStorageError(.readOnly, containing: path) { try store.deleteAllObjects() }
            expectStorageError(.readOnly, containing: path) { try store.setMetadata("serial", []) }
            expectStorageError(.readOnly, containing: path) { try store.write {} }
            #expect(try snapshot(of: directory) == before)
        }
    }

    @Test("an old schema is read as it is, not migrated")
    func oldSchemaIsNotMigrated() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            try sqlite(path, "PRAGMA journal_mode = DELETE")
            try withWriteProtected([path, directory.path]) {
                let store = try ObjectStore(path: path, create: false)
                #expect(store.isReadOnly)
                #expect(try sqlite(path, "PRAGMA user_version") == "0")
            }
        }
    }
}
