import Foundation
import KeychainStorage
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("The change count other processes' readers rely on")
struct ChangeCountTests {
    @Test("every kind of write moves the count to a new even value; reads leave it alone")
    func writesMoveTheCount() throws {
        try withTemporaryStore { store, _ in
            var seen: [UInt64] = []
            func record() throws {
                let count = try #require(store.changeCount, "no write is under way")
                #expect(count % 2 == 0)
                #expect(!seen.contains(count), "a count is never used twice")
                seen.append(count)
            }
            try record()
            let object = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("a"))])
            try record()
            try store.update(object, attributes: [StoredAttribute(3, bytes("b"))])
            try record()
            try store.setMetadata("name", [1])
            try record()
            try store.delete(object)
            try record()
            try store.deleteAllObjects()
            try record()
            _ = try store.find([StoredAttribute(3, bytes("b"))])
            _ = try store.attributes(of: object)
            _ = try store.metadata("name")
            #expect(store.changeCount == seen.last, "reads do not move the count")
        }
    }

    @Test("a write in another connection, as in another process, moves this connection's count")
    func anotherConnectionsWriteIsSeen() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            let reader = try ObjectStore(path: path, create: true)
            let writer = try ObjectStore(path: path, create: false)
            let before = try #require(reader.changeCount)
            _ = try writer.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("x"))])
            let after = try #require(reader.changeCount)
            #expect(after != before)
            #expect(after == writer.changeCount)
        }
    }

    @Test("during a write the count is unknown, in this connection and in others")
    func countIsUnknownDuringAWrite() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            let writer = try ObjectStore(path: path, create: true)
            let other = try ObjectStore(path: path, create: false)
            try writer.write {
                #expect(writer.changeCount == nil)
                #expect(other.changeCount == nil)
            }
            #expect(writer.changeCount != nil)
            #expect(other.changeCount != nil)
        }
    }

    @Test("a write that throws moves the count too: readers read again, which is harmless")
    func rolledBackWriteMovesTheCount() throws {
        struct Abort: Error {}
        try withTemporaryStore { store, _ in
            let before = try #require(store.changeCount)
            #expect(throws: Abort.self) { try store.write { throw Abort() } }
            let after = try #require(store.changeCount)
            #expect(after != before)
        }
    }

    @Test("a writer killed mid-write leaves the count unknown until the next write ends")
    func killedWriterLeavesTheCountUnknown() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            let store = try ObjectStore(path: path, create: true)
            let before = try #require(store.changeCount)
            // What a writer killed between its two steps leaves behind: an odd count.
            try setCounter(of: path, to: before + 1)
            #expect(store.changeCount == nil, "nothing may be kept while the count is odd")
            try store.setMetadata("name", [1])
            let after = try #require(store.changeCount)
            #expect(after > before + 1)
        }
    }

    @Test("the counter file has the store's mode, and an in-memory store counts too")
    func counterFile() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            _ = try ObjectStore(path: path, create: true)
            var status = stat()
            #expect(stat(path + "-changes", &status) == 0)
            #expect(status.st_mode & 0o777 == 0o600)
            #expect(status.st_size == 16, "the counter and its complement")
        }
        let memory = try ObjectStore(path: ":memory:", create: true)
        let before = try #require(memory.changeCount)
        _ = try memory.insert(uniqueKey: nil, attributes: [])
        #expect(memory.changeCount != before)
    }

    @Test("a read-only store whose counter file is missing serves reads with the count unknown")
    func readOnlyWithoutCounter() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            let object = try ObjectStore(path: path, create: true).insert(
                uniqueKey: nil, attributes: [StoredAttribute(3, bytes("kept"))])
            unlink(path + "-changes")
            try withWriteProtected([path, directory.path]) {
                let store = try ObjectStore(path: path, create: false)
                #expect(store.isReadOnly)
                #expect(store.changeCount == nil)
                #expect(try store.attributes(of: object) == [StoredAttribute(3, bytes("kept"))])
            }
        }
    }

    @Test("a store that can be written but not its counter refuses writes and loses nothing")
    func unwritableCounterRefusesWrites() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("store.sqlite3")
            let object = try ObjectStore(path: path, create: true).insert(
                uniqueKey: nil, attributes: [StoredAttribute(3, bytes("kept"))])
            try withWriteProtected([path + "-changes"]) {
                let store = try ObjectStore(path: path, create: true)
                #expect(!store.isReadOnly)
                expectStorageError(.readOnly, containing: "change counter") {
                    _ = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("new"))])
                }
                #expect(try store.find([]) == [object])
            }
        }
    }
}

/// Writes the counter file of the store at `path` as another process would.
private func setCounter(of path: String, to value: UInt64) throws {
    let fd = open(path + "-changes", O_WRONLY)
    guard fd >= 0 else { throw TestFailure("cannot open the counter file") }
    defer { close(fd) }
    var value = value
    guard pwrite(fd, &value, 8, 0) == 8 else { throw TestFailure("cannot write the counter file") }
}
