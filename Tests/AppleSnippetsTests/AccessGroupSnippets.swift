import Foundation
import Security

// How Apple code meets access groups: it adds items without naming one and reads back the
// group the keychain filled in (from the entitlements on Apple), or names a shared group.

/// Adds a generic password, in `accessGroup` when given, and returns the status and the group
/// the added item is in (kSecReturnAttributes).
func addSharedPassword(service: String, account: String, accessGroup: String? = nil) -> (OSStatus, String?) {
    var query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecAttrAccount as String: account,
        kSecValueData as String: Data("secret".utf8),
        kSecReturnAttributes as String: true,
    ]
    if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
    var result: CFTypeRef?
    let status = SecItemAdd(query as CFDictionary, &result)
    let attributes = result as? [String: Any]
    return (status, attributes?[kSecAttrAccessGroup as String] as? String)
}

/// The access groups of every generic password of `service` (in `accessGroup` only, when given).
func accessGroups(service: String, accessGroup: String? = nil) -> [String] {
    var query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecReturnAttributes as String: true,
        kSecMatchLimit as String: kSecMatchLimitAll,
    ]
    if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
    var result: CFTypeRef?
    guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess,
        let items = result as? [[String: Any]]
    else { return [] }
    return items.compactMap { $0[kSecAttrAccessGroup as String] as? String }
}

/// The access group of a permanent key made without one, read back by its tag.
func keyAccessGroup(tag: Data) -> String? {
    let attributes: [String: Any] = [
        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
        kSecAttrKeySizeInBits as String: 256,
        kSecPrivateKeyAttrs as String: [
            kSecAttrIsPermanent as String: true,
            kSecAttrApplicationTag as String: tag,
        ],
    ]
    var error: Unmanaged<CFError>?
    guard SecKeyCreateRandomKey(attributes as CFDictionary, &error) != nil else { return nil }
    let query: [String: Any] = [
        kSecClass as String: kSecClassKey,
        kSecAttrApplicationTag as String: tag,
        kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
        kSecReturnAttributes as String: true,
    ]
    var result: CFTypeRef?
    guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess else { return nil }
    return (result as? [String: Any])?[kSecAttrAccessGroup as String] as? String
}
