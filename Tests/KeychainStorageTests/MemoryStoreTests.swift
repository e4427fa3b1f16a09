import Testing

@testable import KeychainStorage

/// The session-object store keeps the storage contract the SQLite and PostgreSQL engines keep
/// (ObjectStoreTests), in memory.
@Suite("The in-memory store of session objects")
struct MemoryStoreTests {
    private let label: UInt64 = 0x03
    private let id: UInt64 = 0x102

    @Test("an object reads back as stored, and IDs are never reused after a delete")
    func insertReadDelete() throws {
        let store = ObjectStore(engine: MemoryStore())
        let first = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(label, bytes("a"))])
        #expect(try store.attributes(of: first) == [StoredAttribute(label, bytes("a"))])
        #expect(try store.contains(first))
        #expect(try store.delete(first))
        #expect(try !store.delete(first))
        #expect(try store.attributes(of: first) == nil)
        let second = try store.insert(uniqueKey: nil, attributes: [])
        #expect(second > first)
    }

    @Test("a find returns every object holding all terms, in insertion order")
    func findInInsertionOrder() throws {
        let store = ObjectStore(engine: MemoryStore())
        let a = try store.insert(
            uniqueKey: nil, attributes: [StoredAttribute(label, bytes("x")), StoredAttribute(id, [1])])
        _ = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(label, bytes("y"))])
        let c = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(label, bytes("x"))])
        #expect(try store.find([StoredAttribute(label, bytes("x"))]) == [a, c])
        #expect(try store.find([StoredAttribute(label, bytes("x")), StoredAttribute(id, [1])]) == [a])
        #expect(try store.find([]).count == 3)
        #expect(try store.records(matching: [StoredAttribute(id, [1])]).map(\.id) == [a])
    }

    @Test("a unique key is refused twice, and freed by its object's deletion")
    func uniqueKeys() throws {
        let store = ObjectStore(engine: MemoryStore())
        let first = try store.insert(uniqueKey: [1], attributes: [])
        expectStorageError(.constraint) { _ = try store.insert(uniqueKey: [1], attributes: []) }
        let second = try store.insert(uniqueKey: [2], attributes: [])
        expectStorageError(.constraint) { try store.update(second, attributes: [], uniqueKey: [1]) }
        try store.delete(first)
        _ = try store.insert(uniqueKey: [1], attributes: [])
    }

    @Test("an update replaces attributes of the same type and appends new ones")
    func updateMerges() throws {
        let store = ObjectStore(engine: MemoryStore())
        let object = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(label, bytes("old"))])
        try store.update(
            object, attributes: [StoredAttribute(label, bytes("new")), StoredAttribute(id, [7])])
        #expect(
            try store.attributes(of: object) == [
                StoredAttribute(label, bytes("new")), StoredAttribute(id, [7]),
            ])
        expectStorageError(.failed) { try store.update(object + 1, attributes: []) }
    }

    @Test("a write that throws rolls back its inserts, updates, deletions, keys and metadata")
    func throwingWriteRollsBack() throws {
        struct Abort: Error {}
        let store = ObjectStore(engine: MemoryStore())
        let kept = try store.insert(uniqueKey: [9], attributes: [StoredAttribute(label, bytes("kept"))])
        #expect(throws: Abort.self) {
            try store.write {
                _ = try store.insert(uniqueKey: [1], attributes: [StoredAttribute(label, bytes("lost"))])
                try store.update(kept, attributes: [StoredAttribute(label, bytes("changed"))])
                try store.setMetadata("name", bytes("lost"))
                try store.delete(kept)
                throw Abort()
            }
        }
        #expect(try store.find([]) == [kept])
        #expect(try store.attributes(of: kept) == [StoredAttribute(label, bytes("kept"))])
        #expect(try store.metadata("name") == nil)
        expectStorageError(.constraint) { _ = try store.insert(uniqueKey: [9], attributes: []) }
        _ = try store.insert(uniqueKey: [1], attributes: [])
    }

    @Test("the change count is unknown during a write and moves after each one")
    func changeCount() throws {
        let store = ObjectStore(engine: MemoryStore())
        let before = try #require(store.changeCount)
        try store.write {
            #expect(store.changeCount == nil)
            _ = try store.insert(uniqueKey: nil, attributes: [])
        }
        let after = try #require(store.changeCount)
        #expect(after != before)
        _ = try store.attributes(of: 1)
        #expect(store.changeCount == after)
    }

    @Test("metadata is stored, replaced and removed; deleteAllObjects keeps it")
    func metadata() throws {
        let store = ObjectStore(engine: MemoryStore())
        try store.setMetadata("a", [1])
        try store.setMetadata("a", [])
        #expect(try store.metadata("a") == [])
        _ = try store.insert(uniqueKey: [1], attributes: [])
        try store.deleteAllObjects()
        #expect(try store.find([]) == [])
        #expect(try store.metadata("a") == [])
        _ = try store.insert(uniqueKey: [1], attributes: [])
        try store.removeMetadata("a")
        #expect(try store.metadata("a") == nil)
    }
}
