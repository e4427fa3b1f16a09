/// The on-disk form of an object's attributes: one blob per object, each attribute as its
/// type (8 bytes), its length (4 bytes), both little-endian, then its value. Private to the
/// store; a schema migration changes it if it ever must.
enum AttributeCoding {
    static func encode(_ attributes: [StoredAttribute]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(attributes.reduce(0) { $0 + 12 + $1.value.count })
        for attribute in attributes {
            withUnsafeBytes(of: attribute.type.littleEndian) { bytes += $0 }
            let length = UInt32(truncatingIfNeeded: attribute.value.count)
            withUnsafeBytes(of: length.littleEndian) { bytes += $0 }
            bytes += attribute.value
        }
        return bytes
    }

    /// Whether the attributes in `bytes` hold every term, with exactly its value (what
    /// `ObjectStore.matches` says of `decode(bytes)`), read in place: a find checks each
    /// candidate's class and privacy without copying every attribute out. Nil when the blob
    /// is malformed, as `decode` finds it; at most 64 terms (nil beyond: decode instead).
    /// The term at `skipping`, when given, counts as held (the one the index seek matched).
    static func matches(_ bytes: UnsafeRawBufferPointer, _ terms: [StoredAttribute], skipping: Int? = nil)
        -> Bool?
    {
        guard terms.count <= 64 else { return nil }
        let all: UInt64 = terms.count == 64 ? .max : (1 << UInt64(terms.count)) - 1
        var held: UInt64 = 0
        if let skipping, terms.indices.contains(skipping) { held |= 1 << UInt64(skipping) }
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 12 else { return nil }
            let type = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            let length = Int(
                UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)))
            offset += 12
            guard bytes.count - offset >= length else { return nil }
            let value = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + length])
            for (index, term) in terms.enumerated()
            where term.type == type && term.value.count == length && term.value.elementsEqual(value) {
                held |= 1 << UInt64(index)
            }
            offset += length
        }
        return held == all
    }

    /// The attributes in `bytes`, or nil when the blob is malformed (truncated, overlong).
    static func decode(_ bytes: [UInt8]) -> [StoredAttribute]? {
        var attributes: [StoredAttribute] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 12 else { return nil }
            let type = bytes.withUnsafeBytes {
                UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            }
            let length = bytes.withUnsafeBytes {
                Int(UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)))
            }
            offset += 12
            guard bytes.count - offset >= length else { return nil }
            attributes.append(StoredAttribute(type, Array(bytes[offset..<offset + length])))
            offset += length
        }
        return attributes
    }
}
