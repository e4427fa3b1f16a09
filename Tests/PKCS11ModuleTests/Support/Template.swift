import CPKCS11

/// One entry of a template as a test writes it. `value` nil with a non-zero `length` gives
/// the NULL-pValue entries of the bad-input tests.
struct Attribute: Sendable {
    var type: CK_ATTRIBUTE_TYPE
    var value: [UInt8]?
    var length: CK_ULONG

    init(_ type: CK_ATTRIBUTE_TYPE, _ value: [UInt8]) {
        self.type = type
        self.value = value
        self.length = CK_ULONG(value.count)
    }

    init(_ type: CK_ATTRIBUTE_TYPE, bool: Bool) {
        self.init(type, [bool ? 1 : 0])
    }

    init(_ type: CK_ATTRIBUTE_TYPE, ulong: CK_ULONG) {
        self.init(type, encode(ulong))
    }

    init(_ type: CK_ATTRIBUTE_TYPE, string: String) {
        self.init(type, Array(string.utf8))
    }

    /// An entry with a NULL pValue and the given length.
    static func null(_ type: CK_ATTRIBUTE_TYPE, length: CK_ULONG) -> Attribute {
        var attribute = Attribute(type, [])
        attribute.value = nil
        attribute.length = length
        return attribute
    }
}

/// A CK_ULONG as the module stores it: eight native-endian bytes.
func encode(_ value: CK_ULONG) -> [UInt8] {
    withUnsafeBytes(of: value) { Array($0) }
}

/// The CK_ULONG in `bytes`, or nil unless it is exactly eight bytes.
func decodeULong(_ bytes: [UInt8]?) -> CK_ULONG? {
    guard let bytes, bytes.count == MemoryLayout<CK_ULONG>.size else { return nil }
    return bytes.withUnsafeBytes { $0.loadUnaligned(as: CK_ULONG.self) }
}

/// Lays `attributes` out as a C array of CK_ATTRIBUTE whose values live for the duration of
/// `body`. An empty template is passed as a NULL pointer and count 0.
func withTemplate<R>(
    _ attributes: [Attribute], _ body: (UnsafeMutablePointer<CK_ATTRIBUTE>?, CK_ULONG) throws -> R
) rethrows -> R {
    var buffers: [UnsafeMutableRawPointer] = []
    defer { buffers.forEach { $0.deallocate() } }
    var entries: [CK_ATTRIBUTE] = attributes.map { attribute in
        guard let value = attribute.value else {
            return CK_ATTRIBUTE(type: attribute.type, pValue: nil, ulValueLen: attribute.length)
        }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(value.count, 1), alignment: 8)
        buffers.append(buffer)
        value.withUnsafeBytes { source in
            if let base = source.baseAddress { buffer.copyMemory(from: base, byteCount: source.count) }
        }
        return CK_ATTRIBUTE(type: attribute.type, pValue: buffer, ulValueLen: attribute.length)
    }
    if entries.isEmpty { return try body(nil, 0) }
    return try entries.withUnsafeMutableBufferPointer { try body($0.baseAddress, CK_ULONG($0.count)) }
}

/// A fixed-size, blank-padded CK_UTF8CHAR field as a string, padding kept.
func text<Field>(_ field: Field) -> String {
    withUnsafeBytes(of: field) { String(decoding: $0, as: UTF8.self) }
}

/// `string` blank-padded to `width` bytes, as the spec lays out CK_*_INFO text fields.
func padded(_ string: String, to width: Int) -> String {
    string + String(repeating: " ", count: max(0, width - string.utf8.count))
}
