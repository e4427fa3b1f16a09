internal import Foundation
internal import Keychain

// How a dictionary a caller hands to a Security function becomes Swift values (ARCHITECTURE.md §7.4).
//
// Apple code passes NSDictionary, NSMutableDictionary or any Swift dictionary cast
// `as CFDictionary`; the keys arrive as NSString or String, the values as NSString or String,
// NSData or Data, NSNumber (Booleans included) or Bool and Int, NSArray, NSDictionary. The
// façade reads every such dictionary through `swiftDictionary(_:)` once, at its entry point,
// so the code behind it sees one form only: `[String: Any]` with String keys, String, Data,
// Bool, Int or Double, Date, `[Any]` and `[String: Any]` values, and the Security objects and
// NSNull as given.

/// A dictionary given to a Security function, keyed by the `kSec…` strings.
typealias ItemDictionary = [String: Any]

/// A caller's dictionary as Swift values; errSecParam when a key is not a string.
func swiftDictionary(_ dictionary: CFDictionary) throws(KeychainError) -> ItemDictionary {
    var result = ItemDictionary(minimumCapacity: dictionary.count)
    for (key, value) in dictionary {
        guard let key = stringKey(key) else {
            throw KeychainError(.parameter, "a dictionary key must be a CFString, not \(typeName(key))")
        }
        result[key] = try swiftValue(value)
    }
    return result
}

/// The same, for a dictionary nested in another one (`kSecPrivateKeyAttrs`), which can arrive
/// as a Swift dictionary of any key type.
func swiftDictionary(nested value: Any) throws(KeychainError) -> ItemDictionary? {
    if let dictionary = value as? NSDictionary { return try swiftDictionary(dictionary) }
    guard let dictionary = value as? [AnyHashable: Any] else { return nil }
    var result = ItemDictionary(minimumCapacity: dictionary.count)
    for (key, value) in dictionary {
        guard let key = stringKey(key.base) else {
            throw KeychainError(.parameter, "a dictionary key must be a CFString, not \(typeName(key.base))")
        }
        result[key] = try swiftValue(value)
    }
    return result
}

private func stringKey(_ key: Any) -> String? {
    if let key = key as? String { return key }
    if let key = key as? NSString { return key as String }
    return nil
}

/// One value as a Swift value: Foundation objects become the Swift types they bridge to, a
/// Boolean NSNumber becomes a Bool, another NSNumber an Int (or a Double when it has a
/// fraction); nested arrays and dictionaries likewise.
func swiftValue(_ value: Any) throws(KeychainError) -> Any {
    // A real NSNumber object (not a Swift Int or Bool, which `as? NSNumber` would also match).
    if type(of: value) is NSNumber.Type, let number = value as? NSNumber {
        if isBoolean(number) { return number.boolValue }
        let type = String(cString: number.objCType)
        guard type == "d" || type == "f" else { return number.intValue }
        return Int(exactly: number.doubleValue) ?? number.doubleValue
    }
    switch value {
    case let string as String: return string
    case let data as Data: return data
    case let date as Date: return date
    case is NSNull: return value
    case let array as NSArray:
        var values: [Any] = []
        values.reserveCapacity(array.count)
        for element in array { values.append(try swiftValue(element)) }
        return values
    case let dictionary as NSDictionary: return try swiftDictionary(dictionary)
    case let array as [Any]:
        var values: [Any] = []
        values.reserveCapacity(array.count)
        for element in array { values.append(try swiftValue(element)) }
        return values
    case let dictionary as [AnyHashable: Any]:
        return try swiftDictionary(nested: dictionary) ?? dictionary
    default: return value
    }
}

// MARK: - Reading `kSec…` keys in Swift dictionaries

// The `kSec…` constants are NSStrings (CoreFoundation.swift); the façade's dictionaries are
// keyed by String. These let its code write `dictionary[kSecClass]`, `case kSecClassKey:` and
// `key == kSecClass` as Apple code does.

extension Dictionary where Key == String {
    subscript(key: NSString) -> Value? {
        get { self[key as String] }
        set { self[key as String] = newValue }
    }

    @discardableResult
    mutating func removeValue(forKey key: NSString) -> Value? {
        removeValue(forKey: key as String)
    }
}

/// A `case kSecClassKey:` pattern matching a String.
func ~= (pattern: NSString, value: String) -> Bool { value == pattern as String }
/// A `case kSecClassKey:` pattern matching an optional String.
func ~= (pattern: NSString, value: String?) -> Bool { value == pattern as String }
/// A String compared with a `kSec…` constant.
func == (lhs: String, rhs: NSString) -> Bool { lhs == rhs as String }
/// An optional String compared with a `kSec…` constant.
func == (lhs: String?, rhs: NSString) -> Bool { lhs == rhs as String }
/// A String compared with a `kSec…` constant.
func != (lhs: String, rhs: NSString) -> Bool { lhs != rhs as String }
