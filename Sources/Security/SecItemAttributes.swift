internal import Foundation
internal import Keychain
internal import LocalAuthentication

// The attributes and `kSecUse…` keys every item class takes: parsed once here,
// returned once here, so that each class's request only adds its own keys.

private let allOperations = Set(ItemOperation.allCases)
private let searchOperations: Set<ItemOperation> = [.add, .copyMatching, .update, .delete]
/// The dates: matched by queries (SecItemCopyMatching, SecItemUpdate's and SecItemDelete's),
/// never given to SecItemAdd or changed.
private let queryOnly: Set<ItemOperation> = [.copyMatching, .update, .delete]
private let setByKeychain = "the keychain sets it"

/// The keys that say what a search returns and how many, and the persistent reference that
/// names one item: the same for every item class.
let resultSpecs: [String: KeySpec] = [
    kSecValuePersistentRef as String: KeySpec(name: "kSecValuePersistentRef", operations: queryOnly),
    kSecReturnData as String: KeySpec(name: "kSecReturnData", operations: [.add, .copyMatching]),
    kSecReturnAttributes as String: KeySpec(name: "kSecReturnAttributes", operations: [.add, .copyMatching]),
    kSecReturnRef as String: KeySpec(name: "kSecReturnRef", operations: [.add, .copyMatching]),
    kSecReturnPersistentRef as String: KeySpec(
        name: "kSecReturnPersistentRef", operations: [.add, .copyMatching]),
    kSecMatchLimit as String: KeySpec(name: "kSecMatchLimit", operations: queryOnly),
]

/// The keys of Apple's common item attributes and of the `kSecUse…` options.
let itemAttributeSpecs: [String: KeySpec] = [
    kSecAttrAccessible as String: KeySpec(name: "kSecAttrAccessible", operations: allOperations),
    kSecAttrAccessGroup as String: KeySpec(name: "kSecAttrAccessGroup", operations: allOperations),
    kSecAttrSynchronizable as String: KeySpec(name: "kSecAttrSynchronizable", operations: allOperations),
    kSecAttrAccessControl as String: KeySpec(
        name: "kSecAttrAccessControl", operations: [.add],
        notChangeable: "access control is fixed when the item is added"),
    kSecAttrComment as String: KeySpec(name: "kSecAttrComment", operations: allOperations),
    kSecAttrDescription as String: KeySpec(name: "kSecAttrDescription", operations: allOperations),
    kSecAttrCreator as String: KeySpec(name: "kSecAttrCreator", operations: allOperations),
    kSecAttrType as String: KeySpec(name: "kSecAttrType", operations: allOperations),
    kSecAttrIsInvisible as String: KeySpec(name: "kSecAttrIsInvisible", operations: allOperations),
    kSecAttrIsNegative as String: KeySpec(name: "kSecAttrIsNegative", operations: allOperations),
    kSecAttrCreationDate as String: KeySpec(
        name: "kSecAttrCreationDate", operations: queryOnly, notChangeable: setByKeychain),
    kSecAttrModificationDate as String: KeySpec(
        name: "kSecAttrModificationDate", operations: queryOnly, notChangeable: setByKeychain),
    kSecUseDataProtectionKeychain as String: KeySpec(
        name: "kSecUseDataProtectionKeychain", operations: searchOperations),
    kSecUseAuthenticationUI as String: KeySpec(name: "kSecUseAuthenticationUI", operations: searchOperations),
    kSecUseAuthenticationContext as String: KeySpec(
        name: "kSecUseAuthenticationContext", operations: searchOperations),
    kSecUseOperationPrompt as String: KeySpec(name: "kSecUseOperationPrompt", operations: searchOperations),
    kSecUseNoAuthenticationUI as String: KeySpec(
        name: "kSecUseNoAuthenticationUI", operations: searchOperations),
]

/// The common keys keys take: Apple's attributes of every item class and the `kSecUse…`
/// options, without the password classes' descriptive ones (comment, creator…), which Apple's
/// key items do not have.
let keyAttributeSpecs = itemAttributeSpecs.filter { key, _ in !passwordOnlyKeys.contains(key) }

/// The common keys certificates take: as keys', without access control (a certificate is a
/// public item here: nothing would be enforced).
let certificateAttributeSpecs = keyAttributeSpecs.filter { key, _ in key != kSecAttrAccessControl as String }

private let passwordOnlyKeys: Set<String> = [
    kSecAttrComment as String, kSecAttrDescription as String, kSecAttrCreator as String,
    kSecAttrType as String, kSecAttrIsInvisible as String, kSecAttrIsNegative as String,
]

/// Apple's `kSecUseAuthenticationUI` values.
enum AuthenticationUI {
    case allow, fail, skip
}

/// The common attributes and `kSecUse…` options of one request.
struct ItemAttributeRequest {
    var attributes = ItemAttributes()
    /// `kSecAttrSynchronizable: kSecAttrSynchronizableAny`.
    var anySynchronizable = false
    var authenticationUI = AuthenticationUI.allow
    /// The PIN given as `kSecUseAuthenticationContext`: one copy, wiped when the last key
    /// found with it (which keeps it, as Apple's keys keep their LAContext) is released.
    var authentication: AuthenticationContext?

    /// Reads `key` if it is a common one; false when it is not.
    mutating func read(_ key: String, _ name: String, _ value: Any, for operation: ItemOperation)
        throws(KeychainError) -> Bool
    {
        switch key {
        case kSecAttrAccessible:
            let given = try typed(value, name, "a kSecAttrAccessible… value") as String
            guard let accessibility = Accessibility(rawValue: given) else {
                throw KeychainError(.parameter, "kSecAttrAccessible must be a kSecAttrAccessible… value")
            }
            if attributes.accessControl != nil, attributes.accessibility != accessibility {
                throw KeychainError(
                    .parameter, "kSecAttrAccessible contradicts the protection of kSecAttrAccessControl")
            }
            attributes.accessibility = accessibility
        case kSecAttrAccessGroup: attributes.accessGroup = try typed(value, name, "a CFString") as String
        case kSecAttrSynchronizable:
            if let any = value as? String, any == kSecAttrSynchronizableAny as String, operation != .add,
                operation != .changes
            {
                anySynchronizable = true
            } else {
                attributes.synchronizable = try boolean(value, name)
            }
        case kSecAttrAccessControl:
            guard let control = value as? SecAccessControl else {
                throw KeychainError(
                    .parameter, "kSecAttrAccessControl must be a SecAccessControl, not \(typeName(value))")
            }
            if let accessibility = attributes.accessibility, accessibility != control.protection {
                throw KeychainError(
                    .parameter, "kSecAttrAccessible contradicts the protection of kSecAttrAccessControl")
            }
            attributes.accessibility = control.protection
            attributes.accessControl = control.flags
        case kSecAttrGeneric: attributes.generic = try bytes(value, name, .generic, into: &attributes)
        case kSecAttrComment: attributes.comment = try text(value, name, .comment, into: &attributes)
        case kSecAttrDescription:
            attributes.itemDescription = try text(value, name, .itemDescription, into: &attributes)
        case kSecAttrCreator: attributes.creator = try fourCharCode(value, name)
        case kSecAttrType: attributes.type = try fourCharCode(value, name)
        case kSecAttrIsInvisible: attributes.isInvisible = try boolean(value, name)
        case kSecAttrIsNegative: attributes.isNegative = try boolean(value, name)
        case kSecAttrCreationDate: attributes.creationDate = try typed(value, name, "a CFDate") as Date
        case kSecAttrModificationDate:
            attributes.modificationDate = try typed(value, name, "a CFDate") as Date
        case kSecUseDataProtectionKeychain: _ = try boolean(value, name)  // one keychain here
        case kSecUseOperationPrompt: _ = try typed(value, name, "a CFString") as String  // no prompt here
        case kSecUseNoAuthenticationUI: if try boolean(value, name) { authenticationUI = .fail }
        case kSecUseAuthenticationUI:
            switch try typed(value, name, "a kSecUseAuthenticationUI… value") as String {
            case kSecUseAuthenticationUIAllow: authenticationUI = .allow
            case kSecUseAuthenticationUIFail: authenticationUI = .fail
            case kSecUseAuthenticationUISkip: authenticationUI = .skip
            default:
                throw KeychainError(
                    .parameter, "kSecUseAuthenticationUI must be a kSecUseAuthenticationUI… value")
            }
        case kSecUseAuthenticationContext:
            // Apple's LAContext (LocalAuthentication's, holding the PIN as its
            // .applicationPassword credential), or the user's PIN itself, as text or bytes.
            var pin: [UInt8]
            if let context = value as? LAContext {
                // A context without a credential authenticates nothing, as one not evaluated.
                guard let credential = context.keychainPIN() else {
                    authentication = nil
                    return true
                }
                pin = credential
            } else if let text = value as? String {
                pin = Array(text.utf8)
            } else if let data = value as? Data {
                pin = Array(data)
            } else {
                throw KeychainError(
                    .parameter,
                    "kSecUseAuthenticationContext must be an LAContext, or the user PIN as a CFString or CFData, not "
                        + typeName(value))
            }
            authentication = AuthenticationContext(pin)
            pin.withUnsafeMutableBytes { bytes in
                if let base = bytes.baseAddress { explicit_bzero(base, bytes.count) }
            }
        default: return false
        }
        return true
    }
}

/// A FourCharCode given as a CFNumber.
private func fourCharCode(_ value: Any, _ name: String) throws(KeychainError) -> UInt32 {
    guard let code = UInt32(exactly: try integer(value, name)) else {
        throw KeychainError(.parameter, "\(name) must be a FourCharCode (a 32-bit unsigned number)")
    }
    return code
}

/// The common attributes as `kSecReturnAttributes` gives them: `pdmn`, `sync`, the dates and
/// what is set.
func returnedItemAttributes(_ attributes: ItemAttributes) -> [String: Any] {
    var dictionary: [String: Any] = [
        kSecAttrAccessible as String: (attributes.accessibility ?? .whenUnlocked).rawValue,
        kSecAttrSynchronizable as String: attributes.synchronizable ?? false,
    ]
    if let value = attributes.accessGroup { dictionary[kSecAttrAccessGroup] = value }
    if let value = attributes.creationDate { dictionary[kSecAttrCreationDate] = value }
    if let value = attributes.modificationDate { dictionary[kSecAttrModificationDate] = value }
    if let flags = attributes.accessControl {
        dictionary[kSecAttrAccessControl] = SecAccessControl(
            protection: attributes.accessibility ?? .whenUnlocked, flags: flags)
    }
    if let value = attributes.comment { dictionary[kSecAttrComment] = returned(value, .comment, attributes) }
    if let value = attributes.itemDescription {
        dictionary[kSecAttrDescription] = returned(value, .itemDescription, attributes)
    }
    if let value = attributes.generic { dictionary[kSecAttrGeneric] = returned(value, .generic, attributes) }
    if let value = attributes.creator { dictionary[kSecAttrCreator] = Int(value) }
    if let value = attributes.type { dictionary[kSecAttrType] = Int(value) }
    if let value = attributes.isInvisible { dictionary[kSecAttrIsInvisible] = value }
    if let value = attributes.isNegative { dictionary[kSecAttrIsNegative] = value }
    return dictionary
}

/// A value Apple takes as CFString, CFData or CFNumber (an account, a label…), as text, its
/// type kept in `attributes` so that it comes back as given; nil for bytes that are not UTF-8
/// text, which `attributes.binaryValues` holds instead (Apple's keychain takes any bytes).
func text(
    _ value: Any, _ name: String, _ attribute: ItemValueAttribute, into attributes: inout ItemAttributes
)
    throws(KeychainError) -> String?
{
    if let data = value as? Data, String(validating: Array(data), as: UTF8.self) == nil {
        attributes.valueTypes[attribute] = .data
        attributes.binaryValues[attribute] = Array(data)
        return nil
    }
    attributes.binaryValues[attribute] = nil
    if let number = decimalText(value) {
        attributes.valueTypes[attribute] = .number
        return number
    }
    let string = try text(value, name)
    attributes.valueTypes[attribute] = value is Data ? .data : .string
    return string
}

/// A CFNumber's decimal text (what a number given for a text attribute is stored and matched
/// as); nil for anything else, a CFBoolean included.
private func decimalText(_ value: Any) -> String? {
    if value is Bool { return nil }
    if let integer = value as? Int { return String(integer) }
    if let real = value as? Double { return real.isFinite ? String(real) : nil }
    if let number = value as? NSNumber { return number.stringValue }
    return nil
}

/// A number's decimal text as the CFNumber it was given as.
private func number(_ text: String) -> Any {
    if let integer = Int64(text) { return NSNumber(value: integer) }
    if let real = Double(text) { return NSNumber(value: real) }
    return text
}

/// A value Apple takes as CFData or CFString (kSecAttrGeneric), as bytes, its type kept in
/// `attributes`.
func bytes(
    _ value: Any, _ name: String, _ attribute: ItemValueAttribute, into attributes: inout ItemAttributes
)
    throws(KeychainError) -> [UInt8]
{
    if let data = value as? Data {
        attributes.valueTypes[attribute] = .data
        return Array(data)
    }
    if let string = value as? String {
        attributes.valueTypes[attribute] = .string
        return Array(string.utf8)
    }
    throw KeychainError(.parameter, "\(name) must be CFData or a CFString, not \(typeName(value))")
}

/// A stored text as `kSecReturnAttributes` gives it: as the type it was given.
func returned(_ value: String, _ attribute: ItemValueAttribute, _ attributes: ItemAttributes) -> Any {
    if let bytes = attributes.binaryValues[attribute] { return Data(bytes) }
    switch attributes.valueType(of: attribute) {
    case .string: return value
    case .data: return Data(value.utf8)
    case .number: return number(value)
    }
}

/// Stored bytes as `kSecReturnAttributes` gives them: as the type they were given.
func returned(_ value: [UInt8], _ attribute: ItemValueAttribute, _ attributes: ItemAttributes) -> Any {
    switch attributes.valueType(of: attribute) {
    case .string: return String(decoding: value, as: UTF8.self)
    case .data: return Data(value)
    case .number: return number(String(decoding: value, as: UTF8.self))
    }
}
