import Foundation
import Testing

@testable import KeychainStorage

#if canImport(Glibc)
    import Glibc
#endif

/// Readers read the change counter from a shared mapping of its file (CounterPage): these
/// tests prove the mapping is what they read, and that a file cut short, deleted or replaced
/// under it falls back to `pread` and reopening, with no SIGBUS and no stale value.
@Suite("A change counter read from a mapped file")
struct MappedCounterTests {
    @Test("a reader reads the count from the mapping, and sees another connection's writes there")
    func readsTheMapping() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory.file("store.sqlite3")
            let reader = try SQLiteStore(path: path, create: true)
            let writer = try SQLiteStore(path: path, create: false)
            let before = try #require(reader.changeCount)
            #expect(reader.changes.isMapped)
            _ = try writer.insert(uniqueKey: nil, attributes: [StoredAttribute(3, Array("x".utf8))])
            let after = try #require(reader.changeCount)
            #expect(after != before && after == writer.changeCount)
            #expect(reader.changes.isMapped, "the write was seen through the mapping")
        }
    }

    @Test("a counter cut short under the mapping reads as unknown, then new, then mapped again")
    func truncatedUnderTheMapping() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory.file("store.sqlite3")
            let reader = try SQLiteStore(path: path, create: true)
            let writer = try SQLiteStore(path: path, create: false)
            for size in [0, 4, 12] {
                let before = try #require(reader.changeCount)
                usleep(10_000)  // the next read looks at the file, and maps it again
                #expect(reader.changeCount == before)
                #expect(reader.changes.isMapped, "mapped before the cut (\(size) bytes)")
                #expect(truncate(path + "-changes", off_t(size)) == 0)
                // Without the guard, this read raised SIGBUS (size 0).
                #expect(reader.changeCount == nil, "cut to \(size) bytes: nothing may be kept")
                #expect(!reader.changes.isMapped)
                _ = try writer.insert(uniqueKey: nil, attributes: [])
                let after = try #require(reader.changeCount, "read with pread")
                #expect(after != before && after == writer.changeCount)
                usleep(10_000)
                #expect(reader.changeCount == after)
                #expect(reader.changes.isMapped, "the whole record is mapped again")
                _ = try writer.insert(uniqueKey: nil, attributes: [])
                #expect(reader.changeCount != after, "writes are seen through the new mapping")
            }
        }
    }

    @Test("a counter deleted or replaced under the mapping is never read for the new one")
    func replacedUnderTheMapping() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory.file("store.sqlite3")
            let reader = try SQLiteStore(path: path, create: true)
            let before = try #require(reader.changeCount)
            #expect(reader.changes.isMapped)
            // Replaced by a copy of the same record: the mapping still shows the old file.
            let copy = directory.file("copy")
            #expect(
                FileManager.default.createFile(
                    atPath: copy, contents: try Data(contentsOf: URL(fileURLWithPath: path + "-changes"))))
            #expect(rename(copy, path + "-changes") == 0)
            let writer = try SQLiteStore(path: path, create: true)
            _ = try writer.insert(uniqueKey: nil, attributes: [])
            // Readers look at the file's name at most once every few milliseconds (a coarse clock tick).
            usleep(10_000)
            #expect(reader.changeCount == nil, "the mapped file is gone from its path")
            let replaced = try #require(reader.changeCount)
            #expect(replaced != before)
            #expect(reader.changes.isMapped, "the new file is mapped")
            // Deleted: a new file made by the next writer.
            #expect(unlink(path + "-changes") == 0)
            let another = try SQLiteStore(path: path, create: true)
            _ = try another.insert(uniqueKey: nil, attributes: [])
            usleep(10_000)
            #expect(reader.changeCount == nil)
            let renewed = try #require(reader.changeCount)
            #expect(renewed != replaced && renewed != before)
            _ = try another.insert(uniqueKey: nil, attributes: [])
            #expect(reader.changeCount != renewed)
        }
    }

    @Test("counters closed give their pages back: many stores opened one after another all map")
    func pagesAreReused() throws {
        try withTemporaryDirectory { directory throws in
            for round in 0..<(CounterRegion.pages + 64) {
                let store = try SQLiteStore(path: directory.file("store\(round % 3).sqlite3"), create: true)
                #expect(store.changeCount != nil)
                #expect(store.changes.isMapped, "round \(round)")
            }
        }
    }
}
