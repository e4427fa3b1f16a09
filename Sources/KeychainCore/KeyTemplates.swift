// Attribute-array attributes (v2.40 §4.7–4.10): CKA_WRAP_TEMPLATE on a wrapping key says what a
// key must look like to be wrapped by it; CKA_UNWRAP_TEMPLATE and CKA_DERIVE_TEMPLATE on an
// unwrapping or base key are merged into the template of every key it makes. Their values are
// kept in one canonical byte form (`AttributeArray`); the PKCS#11 face converts from and to
// CK_ATTRIBUTE arrays.

extension AttributeType {
    /// CKF_ARRAY_ATTRIBUTE | 0x211, 0x212, 0x213.
    public static let wrapTemplate = AttributeType(0x4000_0211)
    public static let unwrapTemplate = AttributeType(0x4000_0212)
    public static let deriveTemplate = AttributeType(0x4000_0213)

    /// True for the attributes whose value is an array of attributes.
    public var isAttributeArray: Bool {
        self == .wrapTemplate || self == .unwrapTemplate || self == .deriveTemplate
    }
}

/// The stored form of an attribute array: each attribute, in type order, as its type and
/// length (eight bytes each, little-endian) and its value.
public enum AttributeArray {
    /// The most attributes one array holds.
    public static let maximumCount = 64

    public static func encode(_ attributes: AttributeSet) -> [UInt8] {
        var bytes: [UInt8] = []
        for (type, value) in attributes.sorted(by: { $0.key < $1.key }) {
            bytes += withUnsafeBytes(of: type.rawValue.littleEndian) { Array($0) }
            bytes += withUnsafeBytes(of: UInt64(value.count).littleEndian) { Array($0) }
            bytes += value
        }
        return bytes
    }

    /// The attributes of `bytes`, or nil when they are not an encoding `encode` makes (a
    /// length past the end, a type twice, a nested array, too many entries).
    public static func decode(_ bytes: [UInt8]) -> AttributeSet? {
        var attributes: AttributeSet = [:]
        var offset = 0
        func word() -> UInt64? {
            guard bytes.count - offset >= 8 else { return nil }
            let value = bytes[offset..<offset + 8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            offset += 8
            return value
        }
        while offset < bytes.count {
            guard let rawType = word(), let rawLength = word(), let length = Int(exactly: rawLength),
                length <= bytes.count - offset
            else { return nil }
            let type = AttributeType(rawType)
            guard !type.isAttributeArray, attributes[type] == nil, attributes.count < maximumCount else {
                return nil
            }
            attributes[type] = Array(bytes[offset..<offset + length])
            offset += length
        }
        return attributes
    }
}

extension Token {
    /// `template` with a key's CKA_UNWRAP_TEMPLATE or CKA_DERIVE_TEMPLATE (`type`) merged in:
    /// an attribute the two give differently is CKR_TEMPLATE_INCONSISTENT (v2.40 §5.13–5.14).
    static func merged(_ template: AttributeSet, with type: AttributeType, of key: AttributeSet?)
        throws(CoreError) -> AttributeSet
    {
        guard let encoded = key?[type] else { return template }
        guard let imposed = AttributeArray.decode(encoded) else {
            throw CoreError(.storageCorrupt, "a key's \(type) does not decode")
        }
        var result = template
        for (attribute, value) in imposed {
            if let given = template[attribute], given != value {
                throw CoreError(.templateInconsistent, "attribute \(attribute) contradicts the key's \(type)")
            }
            result[attribute] = value
        }
        return result
    }

    /// A derivation's template with its base key's CKA_DERIVE_TEMPLATE merged in: what the
    /// derived key's length and kind are read from.
    package static func derivationTemplate(_ template: AttributeSet, base: AttributeSet) throws(CoreError)
        -> AttributeSet
    {
        try merged(template, with: .deriveTemplate, of: base)
    }

    /// Checks a key to be wrapped against the wrapping key's CKA_WRAP_TEMPLATE: each attribute
    /// it names must have that value on the key (`visible`: the key's attributes without its
    /// sealed values, which a template cannot match).
    static func checkWrapTemplate(of wrappingKey: AttributeSet, against visible: AttributeSet)
        throws(CoreError)
    {
        guard let encoded = wrappingKey[.wrapTemplate] else { return }
        guard let required = AttributeArray.decode(encoded) else {
            throw CoreError(.storageCorrupt, "the wrapping key's CKA_WRAP_TEMPLATE does not decode")
        }
        for (type, value) in required where visible[type] != value {
            throw CoreError(
                .keyNotWrappable, "the key does not match the wrapping key's CKA_WRAP_TEMPLATE (\(type))")
        }
    }
}
