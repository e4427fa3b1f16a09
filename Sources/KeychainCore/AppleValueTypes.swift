// Apple's keychain returns each attribute as the type it was given: an account given as
// CFData comes back as CFData, one given as CFString as CFString, and a query matches either
// by the value's bytes (a string by its UTF-8). The token stores every value as bytes; this is
// the record of which attributes were given as another type than their usual one, and the one
// rule for keeping it true across changes (ARCHITECTURE.md §7.1).

extension AttributeType {
    /// p11keychain's own (CKA_P11K_VALUE_TYPES): which of an item's Apple attributes were
    /// given as another type than their usual one (`AppleValueTypes.encoded`). Readable and
    /// settable like the other Apple attributes; never matched as a search term.
    public static let valueTypes = AttributeType(0x8050_4B33)
}

/// The type an Apple attribute's value was given as.
public enum AppleValueType: UInt8, Sendable, Hashable {
    /// CFString: the value's bytes are its UTF-8.
    case string = 0
    /// CFData: the bytes as given.
    case data = 1
    /// CFNumber: the bytes are the number's decimal text (Apple stores a number given for a
    /// text attribute as given, and returns it as a number).
    case number = 2
}

/// Which attributes of one item were given as which type; an attribute not listed has its
/// usual type (`usualType(of:)`).
public struct AppleValueTypes: Sendable, Hashable {
    public var types: [AttributeType: AppleValueType]

    public init(_ types: [AttributeType: AppleValueType] = [:]) { self.types = types }

    /// The record stored on an object; an unreadable record (truncated, unknown type code)
    /// reads as empty: every attribute then has its usual type.
    public init(stored attributes: AttributeSet) {
        types = [:]
        guard let bytes = attributes[.valueTypes], bytes.count % Self.entrySize == 0 else { return }
        var offset = 0
        while offset < bytes.count {
            let end = offset + Self.entrySize
            guard let type = AttributeValue.ulong(Array(bytes[offset..<(end - 1)])),
                let kind = AppleValueType(rawValue: bytes[end - 1])
            else { return }
            types[AttributeType(type)] = kind
            offset = end
        }
    }

    /// The type `attribute` has unless recorded otherwise: bytes for the attributes Apple
    /// declares as CFData (kSecAttrGeneric, a key's application tag and application label),
    /// text for every other.
    public static func usualType(of attribute: AttributeType) -> AppleValueType {
        [AttributeType.generic, .applicationTag, .id].contains(attribute) ? .data : .string
    }

    /// The type `attribute` comes back as.
    public func type(of attribute: AttributeType) -> AppleValueType {
        types[attribute] ?? Self.usualType(of: attribute)
    }

    /// The stored form: for each attribute not of its usual type, its type as a CK_ULONG and
    /// one byte of type code, in attribute order (so equal records have equal bytes); empty
    /// when every attribute has its usual type.
    public var encoded: [UInt8] {
        types.filter { $0.value != Self.usualType(of: $0.key) }
            .sorted { $0.key.rawValue < $1.key.rawValue }
            .flatMap { AttributeValue.encode($0.key.rawValue) + [$0.value.rawValue] }
    }

    private static let entrySize = MemoryLayout<UInt64>.size + 1

    /// A change's record, made whole: an attribute the change sets takes the type the change
    /// gives it (its usual type when the change does not say), every other keeps its recorded
    /// type. So a change of the account alone cannot lose the service's type, and an account
    /// given anew as text no longer comes back as data. Applied to every change of an object
    /// (`Token.updateObjects`).
    static func settle(_ changes: inout AttributeSet, current: AttributeSet) {
        let given = AppleValueTypes(stored: changes)
        var settled = AppleValueTypes(stored: current)
        for type in changes.keys where type != .valueTypes { settled.types[type] = nil }
        settled.types.merge(given.types) { _, new in new }
        let encoded = settled.encoded
        if encoded != (current[.valueTypes] ?? []) {
            changes[.valueTypes] = encoded
        } else {
            changes[.valueTypes] = nil
        }
    }
}
