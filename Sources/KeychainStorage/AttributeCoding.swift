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
