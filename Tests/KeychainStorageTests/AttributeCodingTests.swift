import Testing

@testable import KeychainStorage

@Suite("The on-disk attribute encoding")
struct AttributeCodingTests {
    static let roundTrips: [Named<[StoredAttribute]>] = [
        Named("no attributes", []),
        Named("one empty value", [StoredAttribute(0, [])]),
        Named(
            "several empty values", [StoredAttribute(1, []), StoredAttribute(2, []), StoredAttribute(3, [])]),
        Named("a label", [StoredAttribute(3, Array("Alice Example".utf8))]),
        Named("the largest type code", [StoredAttribute(.max, [0xFF])]),
        Named("a vendor type", [StoredAttribute(0x8000_0000_0000_0001, [1, 2, 3])]),
        Named("a repeated type, kept as given", [StoredAttribute(3, [1]), StoredAttribute(3, [2])]),
        Named("a large value", [StoredAttribute(0x11, (0..<100_000).map { UInt8(truncatingIfNeeded: $0) })]),
        Named(
            "a mix",
            (0..<50).map { StoredAttribute(UInt64($0) * 0x1_0001, Array(repeating: UInt8($0), count: $0)) }
        ),
    ]

    @Test("attributes decode to exactly what was encoded", arguments: roundTrips)
    func roundTrip(_ attributes: Named<[StoredAttribute]>) throws {
        let (name, attributes) = (attributes.name, attributes.value)
        let encoded = AttributeCoding.encode(attributes)
        #expect(encoded.count == attributes.reduce(0) { $0 + 12 + $1.value.count }, "\(name)")
        #expect(AttributeCoding.decode(encoded) == attributes, "\(name)")
    }

    @Test("the encoding is type (8 bytes) and length (4 bytes), little-endian, then the value")
    func knownAnswer() {
        let encoded = AttributeCoding.encode([
            StoredAttribute(0x0102, [0xAA, 0xBB]), StoredAttribute(0x1122_3344_5566_7788, []),
        ])
        #expect(
            encoded == [
                0x02, 0x01, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0xAA, 0xBB,
                0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0, 0, 0, 0,
            ])
    }

    /// Blobs that are not a sequence of whole attributes.
    static let malformed: [Named<[UInt8]>] = [
        Named("a header cut short", [0x03, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0]),
        Named("one byte", [0x03]),
        Named("a value cut short", [0x03, 0, 0, 0, 0, 0, 0, 0, 0x05, 0, 0, 0, 1, 2, 3, 4]),
        Named("a length beyond the blob", [0x03, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]),
        Named("a length of 2 GiB", [0x03, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0x00, 0x80, 1]),
        Named("a whole attribute then a stray byte", [0x03, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0, 0x41, 0x00]),
    ]

    @Test("a malformed blob decodes to nil, never a crash", arguments: malformed)
    func malformedBlob(_ blob: Named<[UInt8]>) {
        #expect(AttributeCoding.decode(blob.value) == nil)
    }

    @Test("every truncation of a valid blob is refused, except at attribute boundaries")
    func truncations() {
        let attributes = [
            StoredAttribute(3, [1, 2, 3]), StoredAttribute(0x102, []), StoredAttribute(0x11, [9]),
        ]
        let encoded = AttributeCoding.encode(attributes)
        let boundaries = [0: 0, 15: 1, 27: 2, 40: 3]
        for length in 0...encoded.count {
            let decoded = AttributeCoding.decode(Array(encoded.prefix(length)))
            if let count = boundaries[length] {
                #expect(decoded == Array(attributes.prefix(count)), "length \(length)")
            } else {
                #expect(decoded == nil, "length \(length)")
            }
        }
    }

    @Test("an empty blob is an object with no attributes")
    func emptyBlob() {
        #expect(AttributeCoding.decode([]) == [])
    }
}
