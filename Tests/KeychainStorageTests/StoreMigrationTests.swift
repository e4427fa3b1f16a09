import Foundation
import Testing

@testable import KeychainStorage

private let label: UInt64 = 0x03
private let value: UInt64 = 0x11
private let sealed: UInt64 = 0x8050_4B01

/// A SQLite source with what a token holds: objects with and without a unique key, an empty
/// value, a deleted object (a gap in the IDs), and metadata.
private func makeSource(in directory: TemporaryDirectory) throws -> ObjectStore {
    let source = try ObjectStore(path: directory.file("source.sqlite3"), create: true)
    _ = try source.insert(
        uniqueKey: bytes("cert-1"), attributes: [.init(label, bytes("web")), .init(value, [1, 2])])
    let gone = try source.insert(uniqueKey: nil, attributes: [.init(label, bytes("deleted"))])
    _ = try source.insert(
        uniqueKey: nil,
        attributes: [.init(label, bytes("key")), .init(sealed, [0xA5, 0x5A]), .init(value, [])])
    _ = try source.insert(uniqueKey: nil, attributes: [.init(label, bytes("last"))])
    try source.delete(gone)
    // The last ID given is deleted too: the copy must still never give it again.
    try source.delete(try source.insert(uniqueKey: nil, attributes: [.init(label, bytes("gone too"))]))
    try source.setMetadata("serial", bytes("0011223344556677"))
    try source.setMetadata("pin.user", [9, 8, 7])
    return source
}

@Suite("Copying a whole store into another engine")
struct StoreMigrationTests {
    @Test(
        "a copy keeps every object's ID, unique key and attributes and every metadata value, and reads back equal",
        arguments: TestEngine.allCases)
    func copyReadsBackEqual(_ engine: TestEngine) throws {
        try withTemporaryDirectory { directory in
            let source = try makeSource(in: directory)
            try withTemporaryStore(on: engine) { target, _ in
                let report = try StoreMigration.copy(from: source, to: target, replacing: false)
                #expect(report.mismatches.isEmpty, "\(report.mismatches)")
                #expect(report.objects.count == 3)
                #expect(report.verifiedObjects == 3)
                #expect(report.metadataCount == 2)
                let copied = try target.contents()
                #expect(copied == (try source.contents()))
                #expect(copied.objects.map(\.id) == [1, 3, 4])
                // The lookup index was built: a find by label seeks it.
                #expect(try target.find([.init(label, bytes("key"))]) == [3])
                #expect(try target.metadata("pin.user") == [9, 8, 7])
                // A duplicate unique key is still refused by the copy's own constraint.
                expectStorageError(.constraint) {
                    _ = try target.insert(uniqueKey: bytes("cert-1"), attributes: [])
                }
                // IDs are never given again, not even the source's deleted last one (5).
                // (PostgreSQL's refused insert above may have used up 6.)
                #expect(try target.insert(uniqueKey: nil, attributes: []) > 5)
            }
        }
    }

    @Test(
        "a target holding an object or a PIN is refused and left as it was; only the serial does not count",
        arguments: TestEngine.allCases)
    func nonEmptyTargetIsRefused(_ engine: TestEngine) throws {
        try withTemporaryDirectory { directory in
            let source = try makeSource(in: directory)
            try withTemporaryStore(on: engine) { target, _ in
                try target.setMetadata("serial", bytes("ffff"))
                try target.setMetadata("pin.so", [1])
                expectStorageError(.constraint, containing: "not empty") {
                    _ = try StoreMigration.copy(
                        from: source, to: target, replacing: false, ignorable: ["serial"])
                }
                #expect(try target.metadata("pin.so") == [1])
                #expect(try target.find([]).isEmpty)
                try target.removeMetadata("pin.so")
                let object = try target.insert(uniqueKey: nil, attributes: [.init(label, bytes("mine"))])
                expectStorageError(.constraint, containing: "not empty") {
                    _ = try StoreMigration.copy(
                        from: source, to: target, replacing: false, ignorable: ["serial"])
                }
                #expect(try target.contains(object))
                try target.delete(object)
                // Only the serial is left: empty, and it takes the source's.
                let report = try StoreMigration.copy(
                    from: source, to: target, replacing: false, ignorable: ["serial"])
                #expect(report.mismatches.isEmpty)
                #expect(try target.metadata("serial") == bytes("0011223344556677"))
            }
        }
    }

    @Test("replacing erases what the target held, in the same transaction", arguments: TestEngine.allCases)
    func replacingErasesTheTarget(_ engine: TestEngine) throws {
        try withTemporaryDirectory { directory in
            let source = try makeSource(in: directory)
            try withTemporaryStore(on: engine) { target, _ in
                _ = try target.insert(uniqueKey: bytes("cert-1"), attributes: [.init(label, bytes("old"))])
                try target.setMetadata("pin.so", [1])
                let report = try StoreMigration.copy(from: source, to: target, replacing: true)
                #expect(report.mismatches.isEmpty)
                #expect(try target.find([.init(label, bytes("old"))]).isEmpty)
                #expect(try target.metadata("pin.so") == nil)
                #expect(try target.contents() == (try source.contents()))
            }
        }
    }

    @Test(
        "reading back finds a changed attribute, a missing object and a changed metadata value, naming no value"
    )
    func differencesAreFound() throws {
        let object = StoredObject(
            id: 7, uniqueKey: nil, attributes: [.init(label, bytes("a")), .init(sealed, [1, 2])])
        let source = StoreContents(objects: [object], metadata: [("pin.user", [1])], lastID: 7)
        var changed = source
        changed.objects[0].attributes[1] = .init(sealed, [1, 3])
        changed.metadata = [("pin.user", [2])]
        let found = StoreMigration.differences(source, changed).map(\.text)
        #expect(found.contains("object 7: attribute 0x80504b01 differs"))
        #expect(found.contains("metadata pin.user differs or is missing"))
        #expect(!found.joined().contains("[1, 3]"))
        var missing = source
        missing.objects = []
        missing.lastID = 3
        let gaps = StoreMigration.differences(source, missing).map(\.text)
        #expect(gaps.contains("object 7 is missing from the copy"))
        #expect(gaps.contains { $0.contains("would give object IDs again") })
        #expect(StoreMigration.differences(source, source).isEmpty)
    }
}
