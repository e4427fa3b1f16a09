import Foundation
import Security

// How keychain wrappers file values: some give the account as Data, some as String, and
// expect each back as they gave it (Apple's keychain returns the type it was given).

/// A wrapper's `set(_:forKey:)`: the key is the account, given as Data.
func setValue(_ value: Data, forKey key: String, service: String) -> OSStatus {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecAttrAccount as String: key.data(using: .utf8)!,
        kSecValueData as String: value,
    ]
    return SecItemAdd(query as CFDictionary, nil)
}

/// A wrapper's `allKeys()`: every account of the service, read back as the Data it stored.
func allKeys(service: String) -> [String] {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecReturnAttributes as String: true,
        kSecMatchLimit as String: kSecMatchLimitAll,
    ]
    var result: CFTypeRef?
    guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess,
        let items = result as? [[String: Any]]
    else { return [] }
    return items.compactMap { item in
        guard let account = item[kSecAttrAccount as String] as? Data else { return nil }
        return String(data: account, encoding: .utf8)
    }
}

/// The attributes of the one generic password of `service` whose account is `account`,
/// however the query gives the account.
func attributes(service: String, account: Any) -> [String: Any]? {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecAttrAccount as String: account,
        kSecReturnAttributes as String: true,
        kSecMatchLimit as String: kSecMatchLimitOne,
    ]
    var result: CFTypeRef?
    guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess else { return nil }
    return result as? [String: Any]
}

/// A change of some attributes of the generic passwords of a service.
func update(service: String, _ changes: [String: Any]) -> OSStatus {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
    ]
    return SecItemUpdate(query as CFDictionary, changes as CFDictionary)
}

/// A key filed under a tag given as String and a label given as Data, as some wrappers do.
func storeKey(_ key: SecKey, tag: String, label: Data) -> OSStatus {
    let query: [String: Any] = [
        kSecClass as String: kSecClassKey,
        kSecValueRef as String: key,
        kSecAttrApplicationTag as String: tag,
        kSecAttrLabel as String: label,
    ]
    return SecItemAdd(query as CFDictionary, nil)
}

/// The attributes of the private key with `tag`, the tag given as Data.
func privateKeyAttributes(tag: Data) -> [String: Any]? {
    let query: [String: Any] = [
        kSecClass as String: kSecClassKey,
        kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
        kSecAttrApplicationTag as String: tag,
        kSecReturnAttributes as String: true,
    ]
    var result: CFTypeRef?
    guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess else { return nil }
    return result as? [String: Any]
}
