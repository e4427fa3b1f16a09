import Foundation
import KeychainStorage
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A store another user made or may write is refused, and no SQL stored in
/// a store runs (ARCHITECTURE.md §6.1: the attacker is another uid, or a writer of the store file).
@Suite("Stores another user made or may write, and SQL planted in a store")
struct ForeignStoreTests {
    /// A store with one object, closed again; its path.
    private func makeStore(in directory: TemporaryDirectory) throws -> String {
        let path = directory.file("store.sqlite3")
        let store = try ObjectStore(path: path, create: true)
        _ = try store.insert(uniqueKey: [1], attributes: [StoredAttribute(3, bytes("before"))])
        return path
    }

    @Test(
        "a store writable by its group or by others is refused with an error naming it and the fix",
        arguments: [0o666, 0o660, 0o606, 0o620])
    func looseModeIsRefused(mode: Int) throws {
        try withTemporaryDirectory { directory in
            let path = try makeStore(in: directory)
            #expect(chmod(path, mode_t(mode)) == 0)
            for create in [false, true] {
                expectStorageError(.cannotOpen, containing: "\(path) is writable by") {
                    _ = try ObjectStore(path: path, create: create)
                }
                expectStorageError(.cannotOpen, containing: "chmod go-w \(path)") {
                    _ = try ObjectStore(path: path, create: create)
                }
            }
            #expect(chmod(path, 0o600) == 0)
            #expect(
                try ObjectStore(path: path, create: false).find([StoredAttribute(3, bytes("before"))]).count
                    == 1)
        }
    }

    @Test("a store owned by another uid is refused, even to root, with an error naming the owner and the fix")
    func foreignOwnerIsRefused() throws {
        try withTemporaryDirectory { directory in
            let path = try makeStore(in: directory)
            try #require(getuid() == 0, "needs root to give the file to nobody (tests run as root in CI)")
            #expect(chown(path, 65_534, 65_534) == 0)
            expectStorageError(.cannotOpen, containing: "\(path) belongs to uid 65534") {
                _ = try ObjectStore(path: path, create: true)
            }
            expectStorageError(.cannotOpen, containing: "chown \(geteuid()) \(path)") {
                _ = try ObjectStore(path: path, create: false)
            }
        }
    }

    @Test(
        "a -wal, -shm or -journal another user may write is refused",
        arguments: ["-wal", "-shm", "-journal"])
    func looseCompanionIsRefused(suffix: String) throws {
        try withTemporaryDirectory { directory in
            let path = try makeStore(in: directory)
            let companion = path + suffix
            if access(companion, F_OK) != 0 {
                #expect(FileManager.default.createFile(atPath: companion, contents: Data()))
            }
            #expect(chmod(companion, 0o666) == 0)
            let reason = "store.sqlite3\(suffix) is writable by its group and others"
            expectStorageError(.cannotOpen, containing: reason) {
                _ = try ObjectStore(path: path, create: true)
            }
        }
    }

    @Test("a new store is made 0600")
    func newStoreIsPrivate() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("new.sqlite3")
            _ = try ObjectStore(path: path, create: true)
            var info = stat()
            #expect(stat(path, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o600)
        }
    }

    @Test("a trigger planted while the store is open never fires: the copy table it fills stays empty")
    func plantedTriggerDoesNotFire() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            let store = try ObjectStore(path: path, create: true)
            _ = try store.insert(uniqueKey: [1], attributes: [StoredAttribute(3, bytes("first"))])
            try sqlite(
                path,
                "CREATE TABLE copies (attributes BLOB); CREATE TRIGGER copy AFTER INSERT ON objects "
                    + "BEGIN INSERT INTO copies VALUES (new.attributes); END; "
                    + "CREATE TRIGGER keep AFTER INSERT ON metadata "
                    + "BEGIN INSERT INTO copies VALUES (new.value); END;")
            _ = try? store.insert(uniqueKey: [2], attributes: [StoredAttribute(3, bytes("secret"))])
            _ = try? store.setMetadata("user.pin", bytes("record"))
            #expect(try sqlite(path, "SELECT count(*) FROM copies") == "0")
        }
    }

    @Test("a view planted in place of a table while the store is open is never read")
    func plantedViewIsNotRead() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            let store = try ObjectStore(path: path, create: true)
            try store.setMetadata("user.failures", [9, 0, 0, 0])
            try sqlite(
                path,
                "ALTER TABLE metadata RENAME TO kept; "
                    + "CREATE VIEW metadata AS SELECT name, zeroblob(4) AS value FROM kept;")
            let read = try? store.metadata("user.failures")
            #expect(read != [0, 0, 0, 0], "the planted view answered the read")
        }
    }

    @Test(
        "a store with a planted trigger, view or changed table is refused with an error naming it; nothing runs",
        arguments: [
            "CREATE TRIGGER copy AFTER INSERT ON objects BEGIN INSERT INTO copies VALUES (new.attributes); END",
            "CREATE VIEW everything AS SELECT * FROM objects",
            "CREATE INDEX sneaky ON metadata (length(value))",
        ])
    func plantedObjectIsRefused(sql: String) throws {
        try withTemporaryDirectory { directory in
            let path = try makeStore(in: directory)
            try sqlite(path, "CREATE TABLE copies (attributes BLOB); \(sql)")
            let name = sql.split(separator: " ")[2]
            for create in [false, true] {
                expectStorageError(.corrupt, containing: "'\(name)'") {
                    let store = try ObjectStore(path: path, create: create)
                    _ = try store.insert(uniqueKey: [2], attributes: [StoredAttribute(3, bytes("secret"))])
                }
            }
            #expect(try sqlite(path, "SELECT count(*) FROM copies") == "0")
        }
    }
}
