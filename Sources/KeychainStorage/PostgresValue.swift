internal import CLibPQ

/// A value bound to a statement or read from a row, in libpq's binary format.
enum PostgresValue {
    case int(Int64)
    case bytes([UInt8])
    case text(String)
    case null
    /// A one-dimensional `bigint[]` without NULLs.
    case ints([Int64])
    /// A one-dimensional `bytea[]` without NULLs.
    case byteStrings([[UInt8]])

    /// The server's type OID of the value (0: let the server infer it, for NULL).
    var type: Oid {
        switch self {
        case .int: 20  // int8
        case .bytes: 17  // bytea
        case .text: 25  // text
        case .null: 0
        case .ints: 1016  // int8[]
        case .byteStrings: 1001  // bytea[]
        }
    }

    /// Appends the binary form of the value to `buffer` (nothing for NULL); false when a length
    /// does not fit the format's 32-bit fields.
    func encode(into buffer: inout [UInt8]) -> Bool {
        switch self {
        case .int(let value): withUnsafeBytes(of: value.bigEndian) { buffer += $0 }
        case .bytes(let value): buffer += value
        case .text(let value): buffer += Array(value.utf8)
        case .null: break
        case .ints(let values):
            guard Self.arrayHeader(count: values.count, element: 20, into: &buffer) else { return false }
            for value in values {
                Self.append(Int32(8), to: &buffer)
                withUnsafeBytes(of: value.bigEndian) { buffer += $0 }
            }
        case .byteStrings(let values):
            guard Self.arrayHeader(count: values.count, element: 17, into: &buffer) else { return false }
            for value in values {
                guard let length = Int32(exactly: value.count) else { return false }
                Self.append(length, to: &buffer)
                buffer += value
            }
        }
        return true
    }

    /// An array's header (array_send's format): dimensions, a no-NULLs flag, the element type,
    /// then the one dimension's length and lower bound 1; an empty array has no dimension.
    private static func arrayHeader(count: Int, element: Oid, into buffer: inout [UInt8]) -> Bool {
        guard let length = Int32(exactly: count) else { return false }
        append(length == 0 ? 0 : 1, to: &buffer)
        append(0, to: &buffer)
        withUnsafeBytes(of: element.bigEndian) { buffer += $0 }
        if length > 0 {
            append(length, to: &buffer)
            append(1, to: &buffer)
        }
        return true
    }

    private static func append(_ value: Int32, to buffer: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { buffer += $0 }
    }
}
