import Foundation
import KeychainStorage
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Seconds of the monotonic clock, to show that a call returned at once instead of blocking.
private func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// Files are never trusted: whatever is found where a store or its
/// companions should be, opening returns at once with an error naming the file, and leaves
/// the file as it was.
@Suite("Files that are not what a store should be")
struct HostileFileTests {
    @Test(
        "a FIFO where the store should be is refused within a second with an error naming it",
        .timeLimit(.minutes(1)), arguments: [false, true])
    func fifoStoreIsRefused(create: Bool) throws {
        try withTemporaryDirectory { directory throws in
            let path = directory.file("store.sqlite3")
            #expect(mkfifo(path, 0o600) == 0)
            let elapsed = seconds {
                expectStorageError(.cannotOpen, containing: "\(path) is a FIFO") {
                    _ = try ObjectStore(path: path, create: create)
                }
            }
            #expect(elapsed < 1)
        }
    }

    @Test(
        "a FIFO as the store's -wal, -shm or change counter file is refused within a second",
        .timeLimit(.minutes(1)), arguments: ["-wal", "-shm", "-changes"])
    func fifoCompanionIsRefused(suffix: String) throws {
        try withTemporaryDirectory { directory throws in
            let path = directory.file("store.sqlite3")
            _ = try ObjectStore(path: path, create: true)
            unlink(path + suffix)
            #expect(mkfifo(path + suffix, 0o600) == 0)
            let elapsed = seconds {
                do {
                    let store = try ObjectStore(path: path, create: true)
                    // The counter is not needed to read: a FIFO there refuses only writes.
                    #expect(suffix == "-changes", "opened with a FIFO as \(suffix)")
                    #expect(store.changeCount == nil)
                    expectStorageError(.cannotOpen, containing: "not a regular file") {
                        _ = try store.insert(uniqueKey: nil, attributes: [])
                    }
                } catch let error as StorageError {
                    #expect(error.code == .cannotOpen, "\(error.message)")
                    #expect(error.message.contains("/store.sqlite3" + suffix), "\(error.message)")
                } catch {
                    Issue.record("\(error)")
                }
            }
            #expect(elapsed < 1)
        }
    }

    @Test("a store reached through a symbolic link shares its files and change counter with the real path")
    func symbolicLinkSharesTheCounter() throws {
        try withTemporaryDirectory { directory throws in
            #expect(mkdir(directory.file("real"), 0o700) == 0)
            let target = directory.file("real/store.sqlite3")
            let link = directory.file("link.sqlite3")
            #expect(symlink(target, link) == 0)
            // Created through the link, as a configured path that is a link would be.
            let throughLink = try ObjectStore(path: link, create: true)
            let direct = try ObjectStore(path: target, create: true)
            let before = try #require(throughLink.changeCount)
            _ = try direct.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("x"))])
            #expect(throughLink.changeCount != before, "a write through the other path is seen")
            #expect(try throughLink.find([StoredAttribute(3, bytes("x"))]).count == 1)
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == [
                    "link.sqlite3", "real",
                ])
        }
    }

    @Test("a store in a directory reached through a symbolic link opens")
    func linkedDirectoryOpens() throws {
        try withTemporaryDirectory { directory throws in
            #expect(mkdir(directory.file("real"), 0o700) == 0)
            #expect(symlink(directory.file("real"), directory.file("linked")) == 0)
            let path = directory.file("linked/store.sqlite3")
            _ = try ObjectStore(path: path, create: true).insert(uniqueKey: nil, attributes: [])
            #expect(try sqlite(directory.file("real/store.sqlite3"), "SELECT count(*) FROM objects") == "1")
        }
    }

    /// Files SQLite itself would take for an empty database and write a new one over.
    static let tooShort: [Named<[UInt8]>] = [
        Named("one byte", [0x78]),
        Named("a NUL byte", [0]),
        Named("511 zero bytes", Array(repeating: 0, count: 511)),
        Named("the SQLite header alone", bytes("SQLite format 3\0")),
    ]

    @Test(
        "a store cut down to less than a page is reported as damaged, never made a new store",
        arguments: tooShort)
    func shortFileIsDamaged(_ file: Named<[UInt8]>) throws {
        try withTemporaryDirectory { directory throws in
            let path = directory.file("store.sqlite3")
            #expect(FileManager.default.createFile(atPath: path, contents: Data(file.value)))
            for create in [false, true] {
                expectStorageError(.corrupt, containing: "store \(path) is damaged") {
                    _ = try ObjectStore(path: path, create: create)
                }
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(file.value), "left as it was")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["store.sqlite3"])
        }
    }

    @Test("a negative schema version is reported as damaged, not migrated")
    func negativeSchemaVersionIsDamaged() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory.file("store.sqlite3")
            _ = try ObjectStore(path: path, create: true)
            try sqlite(path, "PRAGMA user_version = -1")
            expectStorageError(.corrupt, containing: "schema version is -1") {
                _ = try ObjectStore(path: path, create: true)
            }
            #expect(try sqlite(path, "PRAGMA user_version") == "-1")
        }
    }

    @Test(
        "a store under a non-ASCII path opens, and its files are named exactly as given",
        arguments: ["josé", "密钥", "日本語 dir", "emoji 🔑", "%C3%A9"])
    func nonASCIIPathOpens(name: String) throws {
        try withTemporaryDirectory { directory throws in
            let folder = directory.file(name)
            #expect(mkdir(folder, 0o700) == 0)
            let path = folder + "/login.sqlite3"
            let object = try ObjectStore(path: path, create: true).insert(
                uniqueKey: nil, attributes: [StoredAttribute(3, bytes("kept"))])
            let reopened = try ObjectStore(path: path, create: false)
            #expect(try reopened.attributes(of: object) == [StoredAttribute(3, bytes("kept"))])
            #expect(try sqlite(path, "SELECT count(*) FROM objects") == "1")
            let names = try FileManager.default.contentsOfDirectory(atPath: folder)
            #expect(names.allSatisfy { $0.hasPrefix("login.sqlite3") }, "\(names)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == [name])
        }
    }

    @Test("a path that starts with two slashes opens the file it names, not a host")
    func doubleSlashPathOpens() throws {
        try withTemporaryDirectory { directory throws in
            let path = "/" + directory.file("store.sqlite3")
            _ = try ObjectStore(path: path, create: true).insert(uniqueKey: nil, attributes: [])
            #expect(access(directory.file("store.sqlite3"), F_OK) == 0)
        }
    }
}

/// The change counter `<store>-changes` is a file like any other (ARCHITECTURE.md §4.3): another
/// process may cut it short, delete it or replace it.
@Suite("A change counter file another process damages")
struct DamagedCounterTests {
    @Test("a counter cut to nothing by another process: no crash, the count is unknown, then new")
    func truncatedCounter() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory.file("store.sqlite3")
            let store = try ObjectStore(path: path, create: true)
            let other = try ObjectStore(path: path, create: false)
            let before = try #require(store.changeCount)
            for size in [0, 4] {
                #expect(truncate(path + "-changes", off_t(size)) == 0)
                // A mapped counter raised SIGBUS here.
                #expect(store.changeCount == nil, "cut to \(size) bytes: nothing may be kept")
                #expect(other.changeCount == nil)
                _ = try other.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("x"))])
                let after = try #require(store.changeCount)
                #expect(after != before && after == other.changeCount)
            }
        }
    }

    @Test("a counter deleted and made again by another process: never a count read before")
    func deletedCounter() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory.file("store.sqlite3")
            let reader = try ObjectStore(path: path, create: true)
            let before = try #require(reader.changeCount)
            #expect(unlink(path + "-changes") == 0)
            // A process that starts now makes a new counter file and writes.
            let writer = try ObjectStore(path: path, create: true)
            _ = try writer.insert(uniqueKey: nil, attributes: [])
            // Readers look at the file's name at most once every few milliseconds (a coarse clock tick).
            usleep(10_000)
            #expect(reader.changeCount == nil, "the file read is gone from its path: unknown")
            let after = try #require(reader.changeCount, "the new file is read")
            #expect(after != before)
            _ = try writer.insert(uniqueKey: nil, attributes: [])
            #expect(reader.changeCount != after, "writes to the new file are seen")
        }
    }

    @Test("a counter replaced by a copy holding the same value is not taken for the old one")
    func replacedCounter() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory.file("store.sqlite3")
            let reader = try ObjectStore(path: path, create: true)
            let before = try #require(reader.changeCount)
            let copy = directory.file("copy")
            #expect(
                FileManager.default.createFile(
                    atPath: copy, contents: try Data(contentsOf: URL(fileURLWithPath: path + "-changes"))))
            #expect(rename(copy, path + "-changes") == 0)
            // Readers look at the file's name at most once every few milliseconds (a coarse clock tick).
            usleep(10_000)
            #expect(reader.changeCount == nil)
            let after = try #require(reader.changeCount)
            #expect(after != before, "a value read from another file never equals one kept")
        }
    }

    @Test("a record whose complement does not match, as a torn or hand-made one, is unknown")
    func inconsistentRecord() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory.file("store.sqlite3")
            let store = try ObjectStore(path: path, create: true)
            let before = try #require(store.changeCount)
            let fd = open(path + "-changes", O_WRONLY)
            #expect(fd >= 0)
            var record: (UInt64, UInt64) = (before, before)
            #expect(withUnsafeBytes(of: &record) { pwrite(fd, $0.baseAddress, 16, 0) } == 16)
            close(fd)
            #expect(store.changeCount == nil)
            try store.setMetadata("x", [1])
            #expect(try #require(store.changeCount) > before, "a writer starts again above any count")
        }
    }

    @Test("reading the count takes about a microsecond at most")
    func readingTheCountIsCheap() throws {
        try withTemporaryStore { store, _ in
            let reads = 100_000
            var known = 0
            let elapsed = seconds {
                for _ in 0..<reads where store.changeCount != nil { known += 1 }
            }
            #expect(known == reads)
            let perRead = elapsed / Double(reads) * 1e6
            print("change count read: \(perRead) µs")
            // Loose: the machine may be loaded; a regression to a map or a path lookup per
            // read would not be caught, a blocking read would.
            #expect(perRead < 10)
        }
    }
}
