internal import KeychainCore

/// The type an Apple attribute's value was given as (CFString, CFData or CFNumber). Apple's keychain
/// returns each attribute as the type it was given; this one does too (KeychainCore
/// `AppleValueTypes` keeps the record).
public enum ItemValueType: Hashable, Sendable {
    /// Text (CFString): stored as its UTF-8.
    case string
    /// Bytes (CFData): stored as given.
    case data
    /// A number (CFNumber): stored as its decimal text, matched as that text.
    case number

    init(_ type: AppleValueType) {
        switch type {
        case .string: self = .string
        case .data: self = .data
        case .number: self = .number
        }
    }

    var stored: AppleValueType {
        switch self {
        case .string: .string
        case .data: .data
        case .number: .number
        }
    }
}

/// The Apple attributes whose value may be given as text or as bytes.
public enum ItemValueAttribute: Hashable, Sendable, CaseIterable {
    /// kSecAttrService of a generic password, kSecAttrServer of an internet password.
    case service
    /// kSecAttrAccount.
    case account
    /// kSecAttrLabel.
    case label
    /// kSecAttrGeneric: bytes unless given as text.
    case generic
    /// kSecAttrComment.
    case comment
    /// kSecAttrDescription.
    case itemDescription
    /// kSecAttrPath.
    case path
    /// kSecAttrSecurityDomain.
    case securityDomain
    /// kSecAttrApplicationTag of a key: bytes unless given as text.
    case applicationTag

    var attributeType: AttributeType {
        switch self {
        case .service: .application
        case .account: .account
        case .label: .label
        case .generic: .generic
        case .comment: .comment
        case .itemDescription: .itemDescription
        case .path: .path
        case .securityDomain: .securityDomain
        case .applicationTag: .applicationTag
        }
    }

    /// The type the attribute has unless given as another.
    public var usualType: ItemValueType {
        ItemValueType(AppleValueTypes.usualType(of: attributeType))
    }
}

extension ItemAttributes {
    /// The stored record of `valueTypes`; nil when every attribute has its usual type.
    var valueTypesRecord: [UInt8]? {
        var record = AppleValueTypes()
        for (attribute, type) in valueTypes {
            record.types[attribute.attributeType] = type.stored
        }
        let encoded = record.encoded
        return encoded.isEmpty ? nil : encoded
    }

    /// The types recorded on a stored object.
    static func valueTypes(stored attributes: AttributeSet) -> [ItemValueAttribute: ItemValueType] {
        let record = AppleValueTypes(stored: attributes)
        var types: [ItemValueAttribute: ItemValueType] = [:]
        for attribute in ItemValueAttribute.allCases {
            guard let type = record.types[attribute.attributeType] else { continue }
            types[attribute] = ItemValueType(type)
        }
        return types
    }

    /// The values of a stored object that are bytes but not UTF-8 text, for the attributes
    /// held as text (`binaryValues`).
    static func binaryValues(stored attributes: AttributeSet) -> [ItemValueAttribute: [UInt8]] {
        var values: [ItemValueAttribute: [UInt8]] = [:]
        for attribute in ItemValueAttribute.allCases where attribute.usualType == .string {
            guard let bytes = attributes[attribute.attributeType],
                String(validating: bytes, as: UTF8.self) == nil
            else { continue }
            values[attribute] = bytes
        }
        return values
    }

    /// The type `attribute` comes back as: the one it was given as, else its usual type.
    public func valueType(of attribute: ItemValueAttribute) -> ItemValueType {
        valueTypes[attribute] ?? attribute.usualType
    }
}
