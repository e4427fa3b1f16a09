import Foundation
import Security

// Apple's common item attributes on keys, certificates and identities, written as app code
// writes them: accessibility, access group and iCloud sync on add, kSecAttrSynchronizableAny
// in queries, attributes back for every match, update, delete; and a key with
// `.userPresence` access control used with the PIN as its authentication context.

/// The access group every item of these snippets shares (an app group on Apple platforms).
let sharedAccessGroup = "TEAMID.com.example.shared"

/// Stores a key the app made in memory, readable after first unlock, in the shared group and
/// synchronized through iCloud.
func addSynchronizedKey(_ key: SecKey, tag: Data) -> OSStatus {
    let query: [String: Any] = [
        kSecClass as String: kSecClassKey,
        kSecValueRef as String: key,
        kSecAttrApplicationTag as String: tag,
        kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock,
        kSecAttrAccessGroup as String: sharedAccessGroup,
        kSecAttrSynchronizable as String: true,
    ]
    return SecItemAdd(query as CFDictionary, nil)
}

/// The attributes of every item of `itemClass` in the shared group, synchronized or not.
func sharedItemAttributes(_ itemClass: CFString, synchronizable: Any = kSecAttrSynchronizableAny)
    -> (OSStatus, [[String: Any]])
{
    let query: [String: Any] = [
        kSecClass as String: itemClass,
        kSecAttrAccessGroup as String: sharedAccessGroup,
        kSecAttrSynchronizable as String: synchronizable,
        kSecMatchLimit as String: kSecMatchLimitAll,
        kSecReturnAttributes as String: true,
    ]
    var result: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    return (status, result as? [[String: Any]] ?? [])
}

/// Whether an item of `itemClass` matches `attributes` (nothing returned, only the status).
func itemExists(_ itemClass: CFString, _ attributes: [String: Any]) -> OSStatus {
    var query = attributes
    query[kSecClass as String] = itemClass
    return SecItemCopyMatching(query as CFDictionary, nil)
}

/// Makes the shared items of `itemClass` local: no longer synchronized, readable only when
/// unlocked.
func stopSynchronizing(_ itemClass: CFString) -> OSStatus {
    let query: [String: Any] = [
        kSecClass as String: itemClass,
        kSecAttrAccessGroup as String: sharedAccessGroup,
        kSecAttrSynchronizable as String: kSecAttrSynchronizableAny,
    ]
    let changes: [String: Any] = [
        kSecAttrSynchronizable as String: false,
        kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked,
    ]
    return SecItemUpdate(query as CFDictionary, changes as CFDictionary)
}

/// Changes `changes` on the items of `itemClass` matching `query` (both plain dictionaries).
func update(_ itemClass: CFString, _ query: [String: Any], _ changes: [String: Any]) -> OSStatus {
    var fullQuery = query
    fullQuery[kSecClass as String] = itemClass
    return SecItemUpdate(fullQuery as CFDictionary, changes as CFDictionary)
}

/// Deletes every shared item of `itemClass`, synchronized or not.
func deleteSharedItems(_ itemClass: CFString) -> OSStatus {
    let query: [String: Any] = [
        kSecClass as String: itemClass,
        kSecAttrAccessGroup as String: sharedAccessGroup,
        kSecAttrSynchronizable as String: kSecAttrSynchronizableAny,
    ]
    return SecItemDelete(query as CFDictionary)
}

/// Stores a DER certificate in the shared group, synchronized.
func addSynchronizedCertificate(_ der: Data, label: String) -> OSStatus {
    guard let certificate = SecCertificateCreateWithData(nil, der as CFData) else { return errSecParam }
    let query: [String: Any] = [
        kSecClass as String: kSecClassCertificate,
        kSecValueRef as String: certificate,
        kSecAttrLabel as String: label,
        kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock,
        kSecAttrAccessGroup as String: sharedAccessGroup,
        kSecAttrSynchronizable as String: true,
    ]
    return SecItemAdd(query as CFDictionary, nil)
}

/// Imports a PKCS#12 identity into memory and stores it in the shared group, synchronized;
/// with `accessControl`, its key needs the user for each use.
func addSynchronizedIdentity(p12: Data, password: String, accessControl: SecAccessControl? = nil) -> OSStatus
{
    let options: [String: Any] = [
        kSecImportExportPassphrase as String: password, kSecImportToMemoryOnly as String: true,
    ]
    var items: CFArray?
    let imported = SecPKCS12Import(p12 as CFData, options as CFDictionary, &items)
    guard imported == errSecSuccess, let first = (items as? [[String: Any]])?.first,
        let identity = first[kSecImportItemIdentity as String]
    else { return imported }
    var query: [String: Any] = [
        kSecClass as String: kSecClassIdentity,
        kSecValueRef as String: identity,
        kSecAttrAccessGroup as String: sharedAccessGroup,
        kSecAttrSynchronizable as String: true,
    ]
    if let accessControl {
        query[kSecAttrAccessControl as String] = accessControl
    } else {
        query[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlock
    }
    return SecItemAdd(query as CFDictionary, nil)
}

/// A signing key that needs the user each time: added through SecItemAdd with
/// `.userPresence` access control.
func addUserPresenceKey(_ key: SecKey, tag: Data) -> OSStatus {
    guard
        let access = SecAccessControlCreateWithFlags(
            nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .userPresence, nil)
    else { return errSecParam }
    let query: [String: Any] = [
        kSecClass as String: kSecClassKey,
        kSecValueRef as String: key,
        kSecAttrApplicationTag as String: tag,
        kSecAttrAccessControl as String: access,
    ]
    return SecItemAdd(query as CFDictionary, nil)
}

/// The private key tagged `tag`, found with `context` as its authentication context (an
/// LAContext on Apple platforms; the user PIN here).
func protectedKey(tag: Data, context: String?) -> SecKey? {
    var query: [String: Any] = [
        kSecClass as String: kSecClassKey,
        kSecAttrApplicationTag as String: tag,
        kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
        kSecReturnRef as String: true,
    ]
    if let context { query[kSecUseAuthenticationContext as String] = context }
    var item: CFTypeRef?
    guard SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess else { return nil }
    return (item as! SecKey)
}

/// The private key of the shared identity, found with `context` as its authentication context.
func sharedIdentityKey(context: String?) -> SecKey? {
    var query: [String: Any] = [
        kSecClass as String: kSecClassIdentity,
        kSecAttrAccessGroup as String: sharedAccessGroup,
        kSecAttrSynchronizable as String: kSecAttrSynchronizableAny,
        kSecReturnRef as String: true,
    ]
    if let context { query[kSecUseAuthenticationContext as String] = context }
    var item: CFTypeRef?
    guard SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess else { return nil }
    var key: SecKey?
    guard SecIdentityCopyPrivateKey(item as! SecIdentity, &key) == errSecSuccess else { return nil }
    return key
}

/// Signs `message`: the signature, or the error's code.
func signOrCode(_ key: SecKey, _ message: Data) -> (Data?, Int?) {
    var error: Unmanaged<CFError>?
    guard
        let signature = SecKeyCreateSignature(
            key, .ecdsaSignatureMessageX962SHA256, message as CFData, &error)
    else {
        return (nil, error.map { CFErrorGetCode($0.takeRetainedValue()) })
    }
    return (signature as Data, nil)
}
