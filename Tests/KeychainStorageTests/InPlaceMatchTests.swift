import Testing

@testable import KeychainStorage

/// `AttributeCoding.matches` reads a stored blob in place for a find's other terms: it must
/// say what matching the decoded attributes says, and find the same malformed blobs.
@Suite("Matching a find's terms on the stored attributes in place")
struct InPlaceMatchTests {
    static let stored = [
        StoredAttribute(0, [1, 0, 0, 0, 0, 0, 0, 0]), StoredAttribute(3, Array("label".utf8)),
        StoredAttribute(2, [0]), StoredAttribute(0x11, []), StoredAttribute(3, Array("again".utf8)),
    ]

    static let termSets: [[StoredAttribute]] = [
        [], [StoredAttribute(0, [1, 0, 0, 0, 0, 0, 0, 0])], [StoredAttribute(0, [2, 0, 0, 0, 0, 0, 0, 0])],
        [StoredAttribute(2, [0]), StoredAttribute(3, Array("label".utf8))],
        [StoredAttribute(2, [1])], [StoredAttribute(3, Array("again".utf8))],
        [StoredAttribute(3, Array("labe".utf8))], [StoredAttribute(0x11, [])], [StoredAttribute(0x12, [])],
        [StoredAttribute(2, [0]), StoredAttribute(2, [0])],
    ]

    @Test("in place and decoded agree on every term set", arguments: termSets)
    func agreesWithDecoding(_ terms: [StoredAttribute]) {
        let blob = AttributeCoding.encode(Self.stored)
        let inPlace = blob.withUnsafeBytes { AttributeCoding.matches($0, terms) }
        #expect(inPlace == ObjectStore.matches(Self.stored, terms))
    }

    @Test("a blob cut short or with an overlong length is malformed in place as when decoded")
    func malformedAlike() {
        let blob = AttributeCoding.encode(Self.stored)
        for cut in [1, 5, 11, 12, 13, blob.count - 1] {
            let short = Array(blob.prefix(cut))
            #expect(AttributeCoding.decode(short) == nil, "cut at \(cut)")
            #expect(short.withUnsafeBytes { AttributeCoding.matches($0, [StoredAttribute(2, [0])]) } == nil)
        }
        var overlong = blob
        overlong[8] = 0xFF
        #expect(AttributeCoding.decode(overlong) == nil)
        #expect(overlong.withUnsafeBytes { AttributeCoding.matches($0, []) } == nil)
    }

    @Test("a find by an indexed term and another term returns the same objects as before")
    func findMatchesOtherTerms() throws {
        try withTemporaryStore { store, _ in
            let one = try store.insert(uniqueKey: nil, attributes: Self.stored)
            let two = try store.insert(
                uniqueKey: nil,
                attributes: [StoredAttribute(3, Array("label".utf8)), StoredAttribute(2, [1])])
            #expect(try store.find([StoredAttribute(3, Array("label".utf8))]) == [one, two])
            #expect(
                try store.find([StoredAttribute(3, Array("label".utf8)), StoredAttribute(2, [1])]) == [two])
            #expect(
                try store.find([StoredAttribute(3, Array("label".utf8)), StoredAttribute(2, [0])]) == [one])
            #expect(
                try store.find([StoredAttribute(3, Array("none".utf8)), StoredAttribute(2, [0])]).isEmpty)
        }
    }
}
