import Foundation
import KeychainStorage
import Testing

#if canImport(Glibc)
    import Glibc
#endif

// Attribute codes the store indexes (ObjectStore.indexedTypes) and some it does not. The
// store knows no PKCS#11: these are only numbers to it.
private let label: UInt64 = 0x03
private let application: UInt64 = 0x10
private let objectID: UInt64 = 0x12
private let issuer: UInt64 = 0x81
private let serial: UInt64 = 0x82
private let subject: UInt64 = 0x101
private let id: UInt64 = 0x102
private let objectClass: UInt64 = 0x00
private let value: UInt64 = 0x11
private let vendor: UInt64 = 0x8000_0001
/// p11keychain's vendor attribute for Apple's kSecAttrApplicationTag (searchable).
private let applicationTag: UInt64 = 0x8050_4B11
private let account: UInt64 = 0x8050_4B10
/// A certificate's trust marker (KeychainCore Trust.swift): finds the certificates with trust settings.
private let trustMarker: UInt64 = 0x8050_4B41

@Suite("Objects in a store")
struct ObjectTests {
    @Test(
        "an inserted object reads back with every attribute, in order, empty values included",
        arguments: TestEngine.allCases)
    func insertedObjectReadsBack(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place in
            let attributes = [
                StoredAttribute(objectClass, [1, 0, 0, 0, 0, 0, 0, 0]),
                StoredAttribute(label, bytes("Alice")),
                StoredAttribute(value, Array(repeating: 0xA5, count: 70_000)),
                StoredAttribute(id, []),
                StoredAttribute(vendor, [0]),
            ]
            let object = try store.insert(uniqueKey: nil, attributes: attributes)
            #expect(try store.attributes(of: object) == attributes)
            #expect(try store.attribute(label, of: object) == bytes("Alice"))
            #expect(try store.attribute(id, of: object) == [], "an empty value is a value, not a missing one")
            #expect(try store.attribute(subject, of: object) == nil, "an attribute the object lacks is nil")
            #expect(try store.contains(object))
        }
    }

    @Test("an object with no attributes is stored and reads back empty", arguments: TestEngine.allCases)
    func objectWithoutAttributes(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place in
            let object = try store.insert(uniqueKey: nil, attributes: [])
            #expect(try store.attributes(of: object) == [])
            #expect(try store.find([]) == [object])
        }
    }

    @Test("a missing object reads as nil and is not contained", arguments: TestEngine.allCases)
    func missingObject(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place throws in
            #expect(try store.attributes(of: 42) == nil)
            #expect(try store.attribute(label, of: 42) == nil)
            #expect(try !store.contains(42))
            #expect(try !store.delete(42), "deleting a missing object reports false")
        }
    }

    @Test("a deleted object is gone, and so are its lookup entries", arguments: TestEngine.allCases)
    func deleteRemovesObjectAndLookups(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place in
            let kept = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(label, bytes("same"))])
            let deleted = try store.insert(
                uniqueKey: [9], attributes: [StoredAttribute(label, bytes("same"))])
            #expect(try store.delete(deleted))
            #expect(try !store.contains(deleted))
            #expect(try store.attributes(of: deleted) == nil)
            #expect(try store.find([StoredAttribute(label, bytes("same"))]) == [kept])
            // Its unique key is free again.
            _ = try store.insert(uniqueKey: [9], attributes: [])
            #expect(try store.integrityCheck() == "ok")
        }
    }

    @Test("deleteAllObjects empties the store but keeps its metadata", arguments: TestEngine.allCases)
    func deleteAllObjects(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place in
            for index in 0..<5 {
                _ = try store.insert(
                    uniqueKey: [UInt8(index)], attributes: [StoredAttribute(label, bytes("x"))])
            }
            try store.setMetadata("serial", bytes("0123"))
            try store.deleteAllObjects()
            #expect(try store.find([]) == [])
            #expect(try store.find([StoredAttribute(label, bytes("x"))]) == [], "no lookup entry survives")
            #expect(try store.metadata("serial") == bytes("0123"))
            // Unique keys are free again.
            _ = try store.insert(uniqueKey: [0], attributes: [])
            #expect(try store.integrityCheck() == "ok")
        }
    }

    @Test(
        "updating sets new attributes, replaces existing ones and moves their lookup entries",
        arguments: TestEngine.allCases)
    func updateReplacesAndAdds(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place in
            let object = try store.insert(
                uniqueKey: nil,
                attributes: [StoredAttribute(label, bytes("old")), StoredAttribute(value, [1])])
            try store.update(
                object, attributes: [StoredAttribute(label, bytes("new")), StoredAttribute(id, [7, 7])])
            #expect(
                try store.attributes(of: object) == [
                    StoredAttribute(label, bytes("new")), StoredAttribute(value, [1]),
                    StoredAttribute(id, [7, 7]),
                ])
            #expect(try store.find([StoredAttribute(label, bytes("old"))]) == [])
            #expect(try store.find([StoredAttribute(label, bytes("new"))]) == [object])
            #expect(try store.find([StoredAttribute(id, [7, 7])]) == [object])
            #expect(try store.integrityCheck() == "ok")
        }
    }

    @Test("updating a missing object fails and creates nothing", arguments: TestEngine.allCases)
    func updateOfMissingObject(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place throws in
            expectStorageError(.failed, containing: place.name) {
                try store.update(5, attributes: [StoredAttribute(label, bytes("x"))])
            }
            #expect(try store.find([]) == [])
            #expect(try store.find([StoredAttribute(label, bytes("x"))]) == [])
        }
    }
}

@Suite("Finding objects")
struct FindTests {
    /// Three objects: two share a label, two share a class, one has a vendor attribute.
    private static func populate(_ store: ObjectStore) throws -> [Int64] {
        [
            try store.insert(
                uniqueKey: nil,
                attributes: [
                    StoredAttribute(objectClass, [1]), StoredAttribute(label, bytes("shared")),
                    StoredAttribute(subject, [0x30, 1]), StoredAttribute(id, [1]),
                ]),
            try store.insert(
                uniqueKey: nil,
                attributes: [
                    StoredAttribute(objectClass, [1]), StoredAttribute(label, bytes("shared")),
                    StoredAttribute(subject, [0x30, 2]), StoredAttribute(id, [2]),
                    StoredAttribute(vendor, [1]),
                ]),
            try store.insert(
                uniqueKey: nil,
                attributes: [
                    StoredAttribute(objectClass, [0]), StoredAttribute(label, bytes("other")),
                    StoredAttribute(application, bytes("app")), StoredAttribute(value, bytes("shared")),
                ]),
        ]
    }

    /// Terms and the indices (into `populate`'s objects) they must find.
    static let cases: [Named<([StoredAttribute], [Int])>] = [
        Named("no terms", ([], [0, 1, 2])),
        Named("an indexed term", ([StoredAttribute(label, bytes("shared"))], [0, 1])),
        Named(
            "two indexed terms", ([StoredAttribute(label, bytes("shared")), StoredAttribute(id, [2])], [1])),
        Named(
            "an indexed and a plain term",
            ([StoredAttribute(id, [1]), StoredAttribute(objectClass, [1])], [0])),
        Named(
            "a plain term first",
            ([StoredAttribute(objectClass, [1]), StoredAttribute(subject, [0x30, 2])], [1])),
        Named("a plain term alone", ([StoredAttribute(objectClass, [1])], [0, 1])),
        Named("a vendor term alone", ([StoredAttribute(vendor, [1])], [1])),
        Named("a value no object has", ([StoredAttribute(label, bytes("none"))], [])),
        Named("a plain value no object has", ([StoredAttribute(objectClass, [9])], [])),
        Named(
            "an indexed term contradicted by a plain one",
            ([StoredAttribute(label, bytes("other")), StoredAttribute(objectClass, [1])], [])),
        Named("a value under another type", ([StoredAttribute(label, bytes("app"))], [])),
        Named(
            "a plain value under an indexed type",
            ([StoredAttribute(label, bytes("shared")), StoredAttribute(value, bytes("shared"))], [])),
        Named("an attribute the objects lack", ([StoredAttribute(serial, [2, 1, 1])], [])),
        Named("an empty value", ([StoredAttribute(issuer, [])], [])),
    ]

    @Test(
        "find returns exactly the objects holding every term, in insertion order",
        arguments: cases, TestEngine.allCases)
    func findMatchesEveryTerm(_ query: Named<([StoredAttribute], [Int])>, _ engine: TestEngine) throws {
        let (terms, expected) = query.value
        try withTemporaryStore(on: engine) { store, _ in
            let objects = try FindTests.populate(store)
            #expect(try store.find(terms) == expected.map { objects[$0] })
        }
    }

    @Test("an empty value is found as a value of its own", arguments: TestEngine.allCases)
    func emptyValueIsFound(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place in
            let empty = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(label, [])])
            _ = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(label, [0])])
            #expect(try store.find([StoredAttribute(label, [])]) == [empty])
        }
    }

    @Test("the indexed types are the ones finds are driven by")
    func indexedTypes() {
        #expect(
            ObjectStore.indexedTypes == [
                label, application, objectID, issuer, serial, subject, id, account, applicationTag,
                trustMarker,
            ])
    }

    @Test(
        "every indexed type finds its object through the lookup index",
        arguments: [
            label, application, objectID, issuer, serial, subject, id, applicationTag,
        ], TestEngine.allCases)
    func everyIndexedTypeFinds(_ type: UInt64, _ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place in
            _ = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(type, [1, 2])])
            let object = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(type, [1, 2, 3])])
            #expect(try store.find([StoredAttribute(type, [1, 2, 3])]) == [object])
            let rows = try place.query("SELECT count(*) FROM lookup WHERE type = \(type)")
            #expect(rows == "2", "one lookup row per object holding the type")
        }
    }

    @Test("attributes of other types get no lookup row", arguments: TestEngine.allCases)
    func plainTypesAreNotIndexed(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place in
            _ = try store.insert(
                uniqueKey: nil, attributes: [StoredAttribute(value, [1]), StoredAttribute(vendor, [2])])
            #expect(try place.query("SELECT count(*) FROM lookup") == "0")
        }
    }
}

@Suite("Uniqueness and transactions")
struct TransactionTests {
    @Test(
        "a taken unique key is refused as a constraint error and nothing of the second object is stored",
        arguments: TestEngine.allCases)
    func uniqueKeyIsEnforced(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place in
            let first = try store.insert(
                uniqueKey: [1, 2, 3], attributes: [StoredAttribute(label, bytes("first"))])
            expectStorageError(.constraint, containing: place.name) {
                _ = try store.insert(
                    uniqueKey: [1, 2, 3], attributes: [StoredAttribute(label, bytes("second"))])
            }
            #expect(try store.find([]) == [first])
            #expect(try store.find([StoredAttribute(label, bytes("second"))]) == [])
            #expect(try store.attributes(of: first) == [StoredAttribute(label, bytes("first"))])
            #expect(try store.integrityCheck() == "ok")
        }
    }

    @Test("objects without a unique key never conflict", arguments: TestEngine.allCases)
    func missingUniqueKeysDoNotConflict(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place in
            let objects = try (0..<3).map { _ in
                try store.insert(uniqueKey: nil, attributes: [StoredAttribute(label, bytes("same"))])
            }
            #expect(try store.find([StoredAttribute(label, bytes("same"))]) == objects)
        }
    }

    @Test(
        "an update to a taken unique key is refused and leaves the object as it was",
        arguments: TestEngine.allCases)
    func updateToTakenUniqueKey(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place in
            _ = try store.insert(uniqueKey: [1], attributes: [])
            let second = try store.insert(
                uniqueKey: [2], attributes: [StoredAttribute(label, bytes("before"))])
            expectStorageError(.constraint) {
                try store.update(second, attributes: [StoredAttribute(label, bytes("after"))], uniqueKey: [1])
            }
            #expect(try store.attributes(of: second) == [StoredAttribute(label, bytes("before"))])
            #expect(try store.find([StoredAttribute(label, bytes("before"))]) == [second])
            #expect(
                try store.find([StoredAttribute(label, bytes("after"))]) == [],
                "the lookup change rolled back")
            // Its own key is kept: a third object cannot take it.
            expectStorageError(.constraint) { _ = try store.insert(uniqueKey: [2], attributes: []) }
        }
    }

    @Test("a write that throws rolls back everything it did", arguments: TestEngine.allCases)
    func throwingWriteRollsBack(_ engine: TestEngine) throws {
        struct Abort: Error {}
        try withTemporaryStore(on: engine) { store, place in
            let kept = try store.insert(uniqueKey: nil, attributes: [StoredAttribute(label, bytes("kept"))])
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
            #expect(try store.find([StoredAttribute(label, bytes("lost"))]) == [])
            #expect(try store.find([StoredAttribute(label, bytes("kept"))]) == [kept])
            #expect(try store.metadata("name") == nil)
            // The store is usable afterwards, and the rolled-back unique key is free.
            _ = try store.insert(uniqueKey: [1], attributes: [])
            #expect(try store.integrityCheck() == "ok")
        }
    }

    @Test(
        "a constraint failure inside a batch rolls back the objects inserted before it",
        arguments: TestEngine.allCases)
    func batchWithDuplicateRollsBack(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place throws in
            #expect(throws: StorageError.self) {
                try store.write {
                    _ = try store.insert(uniqueKey: [1], attributes: [StoredAttribute(label, bytes("a"))])
                    _ = try store.insert(uniqueKey: [2], attributes: [StoredAttribute(label, bytes("b"))])
                    _ = try store.insert(uniqueKey: [1], attributes: [StoredAttribute(label, bytes("c"))])
                }
            }
            #expect(try store.find([]) == [])
            #expect(try place.query("SELECT count(*) FROM lookup") == "0")
        }
    }

    @Test("a write returns its body's value and commits it", arguments: TestEngine.allCases)
    func writeCommits(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place in
            let objects = try store.write {
                [
                    try store.insert(uniqueKey: nil, attributes: []),
                    try store.insert(uniqueKey: nil, attributes: []),
                ]
            }
            #expect(try store.read { try store.find([]) } == objects)
            // Seen by another connection: committed, not just visible inside this one.
            #expect(try place.query("SELECT count(*) FROM objects") == "2")
        }
    }
}

@Suite("Metadata")
struct MetadataTests {
    @Test(
        "metadata is nil until set, then reads back, and a second set replaces it",
        arguments: TestEngine.allCases)
    func metadataRoundTrip(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place in
            #expect(try store.metadata("label") == nil)
            try store.setMetadata("label", bytes("first"))
            #expect(try store.metadata("label") == bytes("first"))
            try store.setMetadata("label", bytes("second"))
            #expect(try store.metadata("label") == bytes("second"))
            #expect(try store.metadata("Label") == nil, "names are case-sensitive")
        }
    }

    @Test("an empty metadata value is stored as empty, not as missing", arguments: TestEngine.allCases)
    func emptyMetadata(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place in
            try store.setMetadata("flags", [])
            #expect(try store.metadata("flags") == [])
        }
    }

    @Test("metadata survives closing and reopening the store", arguments: TestEngine.allCases)
    func metadataPersists(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { _, place in
            try place.open(create: true).setMetadata("serial", [0, 1, 0xFF])
            #expect(try place.open(create: false).metadata("serial") == [0, 1, 0xFF])
        }
    }
}

@Suite("Object IDs")
struct ObjectIDTests {
    @Test(
        "IDs increase with every insert and are never reused after a delete", arguments: TestEngine.allCases)
    func idsAreNeverReused(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place in
            var objects: [Int64] = []
            for index in 0..<100 {
                objects.append(
                    try store.insert(uniqueKey: nil, attributes: [StoredAttribute(id, [UInt8(index)])]))
            }
            #expect(zip(objects, objects.dropFirst()).allSatisfy { $0 < $1 }, "strictly increasing")
            let highest = try #require(objects.last)
            try store.delete(highest)
            for object in objects.prefix(50) { try store.delete(object) }
            let afterDelete = try store.insert(uniqueKey: nil, attributes: [])
            #expect(afterDelete > highest, "the deleted highest ID is not handed out again")
            try store.deleteAllObjects()
            let afterClear = try store.insert(uniqueKey: nil, attributes: [])
            #expect(afterClear > afterDelete, "not even after every object is gone")
        }
    }

    @Test("IDs are not reused across reopening the store", arguments: TestEngine.allCases)
    func idsSurviveReopening(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { _, place in
            let first = try place.open(create: true)
            let object = try first.insert(uniqueKey: nil, attributes: [])
            try first.delete(object)
            let second = try place.open(create: false)
            #expect(try second.insert(uniqueKey: nil, attributes: []) > object)
        }
    }
}

@Suite("Several connections")
struct ConnectionTests {
    @Test(
        "a write through one connection is seen by another connection's next read",
        arguments: TestEngine.allCases)
    func writesAreSeenAcrossConnections(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { _, place in
            let writer = try place.open(create: true)
            let reader = try place.open(create: false)
            #expect(try reader.find([]) == [])

            let object = try writer.insert(uniqueKey: [1], attributes: [StoredAttribute(label, bytes("a"))])
            #expect(try reader.find([StoredAttribute(label, bytes("a"))]) == [object])
            #expect(try reader.attributes(of: object) == [StoredAttribute(label, bytes("a"))])

            try reader.update(object, attributes: [StoredAttribute(label, bytes("b"))])
            #expect(try writer.attribute(label, of: object) == bytes("b"))

            try writer.setMetadata("serial", bytes("1234"))
            #expect(try reader.metadata("serial") == bytes("1234"))

            // The unique key is enforced across connections too.
            expectStorageError(.constraint) { _ = try reader.insert(uniqueKey: [1], attributes: []) }

            try reader.delete(object)
            #expect(try !writer.contains(object))
            #expect(try writer.find([]) == [])
        }
    }

    @Test(
        "a change made by another program (the sqlite3 shell, psql) is seen on the next read",
        arguments: TestEngine.allCases)
    func outsideChangesAreSeen(_ engine: TestEngine) throws {
        try withTemporaryStore(on: engine) { store, place in
            try store.setMetadata("label", bytes("before"))
            #expect(try store.metadata("label") == bytes("before"))
            try place.query(
                engine == .sqlite
                    ? "UPDATE metadata SET value = CAST('after' AS BLOB) WHERE name = 'label'"
                    : "UPDATE metadata SET value = convert_to('after', 'UTF8') WHERE name = 'label'")
            #expect(try store.metadata("label") == bytes("after"))
        }
    }

    @Test("in-memory stores are private to their connection")
    func memoryStoresAreIndependent() throws {
        let first = try ObjectStore(path: ":memory:", create: true)
        let second = try ObjectStore(path: ":memory:", create: true)
        #expect(!first.isReadOnly)
        let object = try first.insert(uniqueKey: [1], attributes: [StoredAttribute(label, bytes("s"))])
        #expect(try first.find([StoredAttribute(label, bytes("s"))]) == [object])
        #expect(try second.find([]) == [])
        _ = try second.insert(uniqueKey: [1], attributes: [])
        #expect(try first.integrityCheck() == "ok")
    }
}
