internal import Foundation
internal import Keychain

// The value checks every SecItem dictionary shares: a key's value of the expected CF type, or
// errSecParam naming the key and what it should be; kSecReturn… and kSecMatchLimit.

func typeName(_ value: Any) -> String { String(describing: type(of: value)) }

/// `value` as a `T`, or errSecParam naming the key and what it should be.
func typed<T>(_ value: Any, _ name: String, _ expected: String) throws(KeychainError) -> T {
    guard let typed = value as? T else {
        throw KeychainError(.parameter, "\(name) must be \(expected), not \(typeName(value))")
    }
    return typed
}

func integer(_ value: Any, _ name: String) throws(KeychainError) -> Int {
    guard !(value is Bool), let number = value as? Int else {
        throw KeychainError(.parameter, "\(name) must be a CFNumber, not \(typeName(value))")
    }
    return number
}

/// A CFBoolean value (a Bool, or a number 0 or 1), or errSecParam naming the key.
func boolean(_ value: Any, _ name: String) throws(KeychainError) -> Bool {
    if let bool = value as? Bool { return bool }
    if let number = value as? Int, number == 0 || number == 1 { return number == 1 }
    throw KeychainError(.parameter, "\(name) must be a CFBoolean, not \(typeName(value))")
}

/// Reads a `kSecReturn…` key into `returnTypes`; false when `key` is not one.
func readReturnType(_ key: String, _ name: String, _ value: Any, into returnTypes: inout ReturnTypes)
    throws(KeychainError) -> Bool
{
    let type: ReturnTypes
    switch key {
    case kSecReturnData: type = .data
    case kSecReturnAttributes: type = .attributes
    case kSecReturnRef: type = .reference
    case kSecReturnPersistentRef: type = .persistentReference
    default: return false
    }
    if try boolean(value, name) { returnTypes.insert(type) }
    return true
}

/// What `result` receives for one item: the one requested form, or a dictionary of all of
/// them (the attributes, with `kSecValueRef`, `kSecValueData`, `kSecValuePersistentRef`)
/// when several `kSecReturn…` keys are set. `data` and `reference` are asked for only when
/// requested.
func returnValue(
    _ returnTypes: ReturnTypes, attributes: () -> [String: Any],
    reference: () throws(KeychainError) -> AnyObject,
    data: () throws(KeychainError) -> Data, persistentReference: [UInt8]
) throws(KeychainError) -> CFTypeRef {
    switch returnTypes {
    case .reference: return try reference()
    case .data: return try data() as AnyObject
    case .persistentReference: return Data(persistentReference) as AnyObject
    case .attributes: return attributes() as AnyObject
    default:
        var dictionary = returnTypes.contains(.attributes) ? attributes() : [:]
        if returnTypes.contains(.reference) { dictionary[kSecValueRef] = try reference() }
        if returnTypes.contains(.data) { dictionary[kSecValueData] = try data() }
        if returnTypes.contains(.persistentReference) {
            dictionary[kSecValuePersistentRef] = Data(persistentReference)
        }
        return dictionary as AnyObject
    }
}

func matchLimit(_ value: Any) throws(KeychainError) -> MatchLimit {
    if let name = value as? String {
        switch name {
        case kSecMatchLimitOne: return .one
        case kSecMatchLimitAll: return .all
        default:
            throw KeychainError(
                .parameter,
                "kSecMatchLimit must be kSecMatchLimitOne, kSecMatchLimitAll or a number, not '\(name)'")
        }
    }
    guard !(value is Bool), let count = value as? Int else {
        throw KeychainError(
            .parameter,
            "kSecMatchLimit must be kSecMatchLimitOne, kSecMatchLimitAll or a number, not \(typeName(value))")
    }
    guard count > 0 else { throw KeychainError(.parameter, "kSecMatchLimit must be 1 or more, not \(count)") }
    return count == 1 ? .one : .maximum(count)
}
