// Apple's documented code for internet passwords ("Adding a Password to the Keychain",
// "Searching for Keychain Items", "Updating and Deleting Keychain Items"), and the way typical
// app code and open-source keychain wrappers store passwords: accessibility, access groups,
// iCloud synchronisation, access control, data-protection keychain. Only Foundation and
// Security imported. ItemAttributeSnippetsTests runs it.

import Foundation
import Security

// `Credentials` is the struct of KeySnippets.swift (Apple's article declares it once).

/// "Adding a Password to the Keychain", with the protocol, port, path and authentication
/// type a browser would store.
func addCredentials(_ credentials: Credentials, server: String) throws {
    let account = credentials.username
    let password = credentials.password.data(using: String.Encoding.utf8)!
    let query: [String: Any] = [
        kSecClass as String: kSecClassInternetPassword,
        kSecAttrAccount as String: account,
        kSecAttrServer as String: server,
        kSecAttrProtocol as String: kSecAttrProtocolHTTPS,
        kSecAttrPort as String: 443,
        kSecAttrPath as String: "/login",
        kSecAttrAuthenticationType as String: kSecAttrAuthenticationTypeHTMLForm,
        kSecValueData as String: password,
    ]
    let status = SecItemAdd(query as CFDictionary, nil)
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
}

/// "Searching for Keychain Items": the credentials for a server, attributes and data.
func findCredentials(server: String) throws -> (credentials: Credentials, attributes: [String: Any]) {
    let query: [String: Any] = [
        kSecClass as String: kSecClassInternetPassword,
        kSecAttrServer as String: server,
        kSecMatchLimit as String: kSecMatchLimitOne,
        kSecReturnAttributes as String: true,
        kSecReturnData as String: true,
    ]
    var item: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &item)
    guard status != errSecItemNotFound else { throw KeychainError.noPassword }
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
    guard let existingItem = item as? [String: Any],
        let passwordData = existingItem[kSecValueData as String] as? Data,
        let password = String(data: passwordData, encoding: String.Encoding.utf8),
        let account = existingItem[kSecAttrAccount as String] as? String
    else {
        throw KeychainError.unexpectedPasswordData
    }
    return (Credentials(username: account, password: password), existingItem)
}

/// "Updating and Deleting Keychain Items": new credentials for the server.
func updateCredentials(_ credentials: Credentials, server: String) throws {
    let query: [String: Any] = [
        kSecClass as String: kSecClassInternetPassword,
        kSecAttrServer as String: server,
    ]
    let account = credentials.username
    let password = credentials.password.data(using: String.Encoding.utf8)!
    let attributes: [String: Any] = [
        kSecAttrAccount as String: account,
        kSecValueData as String: password,
    ]
    let status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
    guard status != errSecItemNotFound else { throw KeychainError.noPassword }
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
}

/// The same article: remove the server's credentials.
func deleteCredentials(server: String) throws {
    let query: [String: Any] = [
        kSecClass as String: kSecClassInternetPassword,
        kSecAttrServer as String: server,
    ]
    let status = SecItemDelete(query as CFDictionary)
    guard status == errSecSuccess || status == errSecItemNotFound else {
        throw KeychainError.unhandledError(status: status)
    }
}

/// Typical app code: a token stored for a service and account, readable after the first
/// unlock, shared with an app group, synchronised through iCloud, in the data-protection
/// keychain; the account given as Data, as some wrappers do.
func saveToken(_ token: String, service: String, account: String, synchronizable: Bool) -> OSStatus {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecAttrAccount as String: account.data(using: .utf8)!,
        kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock,
        kSecAttrAccessGroup as String: "group.com.example.shared",
        kSecAttrSynchronizable as String: synchronizable ? kCFBooleanTrue! : kCFBooleanFalse!,
        kSecAttrLabel as String: "\(service) token",
        kSecAttrComment as String: "issued by the login server",
        kSecAttrDescription as String: "access token",
        kSecAttrGeneric as String: Data([1, 2, 3]),
        kSecUseDataProtectionKeychain as String: true,
        kSecValueData as String: token.data(using: .utf8)!,
    ]
    return SecItemAdd(query as CFDictionary, nil)
}

/// The wrappers' "all items": every generic password of a service, synchronizable or not,
/// with attributes and data.
func allTokens(service: String, anySynchronizable: Bool) -> (OSStatus, [[String: Any]]) {
    var query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecMatchLimit as String: kSecMatchLimitAll,
        kSecReturnAttributes as String: true,
        kSecReturnData as String: true,
    ]
    if anySynchronizable { query[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny }
    var result: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    return (status, result as? [[String: Any]] ?? [])
}

/// A wrapper's update of every token of a service, synchronizable or not.
func renameTokens(service: String, comment: String) -> OSStatus {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecAttrSynchronizable as String: kSecAttrSynchronizableAny,
    ]
    return SecItemUpdate(query as CFDictionary, [kSecAttrComment as String: comment] as CFDictionary)
}

/// A wrapper's delete of every token of a service, synchronizable or not.
func deleteTokens(service: String) -> OSStatus {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecAttrSynchronizable as String: kSecAttrSynchronizableAny,
    ]
    return SecItemDelete(query as CFDictionary)
}

/// A secret that needs the user each time it is read: SecAccessControl with `.userPresence`.
func saveProtectedSecret(_ secret: Data, account: String) throws {
    var error: Unmanaged<CFError>?
    guard
        let access = SecAccessControlCreateWithFlags(
            nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .userPresence, &error)
    else {
        throw error!.takeRetainedValue() as Error
    }
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: "com.example.protected",
        kSecAttrAccount as String: account,
        kSecAttrAccessControl as String: access,
        kSecValueData as String: secret,
    ]
    let status = SecItemAdd(query as CFDictionary, nil)
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
}

/// Reads the protected secret. `context` stands where Apple code passes an LAContext: on
/// Linux it is the user's PIN. `ui` is a `kSecUseAuthenticationUI…` value.
func readProtectedSecret(account: String, context: String?, ui: CFString?) -> (OSStatus, Data?) {
    var query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: "com.example.protected",
        kSecAttrAccount as String: account,
        kSecReturnData as String: true,
        kSecUseOperationPrompt as String: "Authenticate to read the secret",
    ]
    if let context { query[kSecUseAuthenticationContext as String] = context }
    if let ui { query[kSecUseAuthenticationUI as String] = ui }
    var item: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &item)
    return (status, item as? Data)
}

/// Biometry does not exist here: the error an app sees.
func biometryAccessControlError() -> CFError? {
    var error: Unmanaged<CFError>?
    let access = SecAccessControlCreateWithFlags(
        kCFAllocatorDefault, kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly, .biometryCurrentSet, &error)
    return access == nil ? error?.takeRetainedValue() : nil
}

/// A persistent reference, then a lookup by it alone (no kSecClass), as Apple allows.
func passwordByPersistentReference(service: String, account: String) -> (OSStatus, Data?) {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecAttrAccount as String: account,
        kSecReturnPersistentRef as String: true,
    ]
    var reference: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &reference)
    guard status == errSecSuccess, let persistentReference = reference as? Data else { return (status, nil) }
    let lookup: [String: Any] = [
        kSecValuePersistentRef as String: persistentReference,
        kSecReturnData as String: true,
    ]
    var item: CFTypeRef?
    return (SecItemCopyMatching(lookup as CFDictionary, &item), item as? Data)
}

/// Code written for iOS that asks a password for a reference: Apple returns the data.
func passwordAsReference(service: String) -> (OSStatus, Data?) {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecReturnRef as String: true,
    ]
    var item: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &item)
    return (status, item as? Data)
}

/// A signing key that needs the user for each use (Apple's Secure Enclave samples, without
/// the enclave): `.userPresence` in its access control.
func makeProtectedSigningKey(tag: Data) throws -> SecKey {
    var error: Unmanaged<CFError>?
    guard
        let access = SecAccessControlCreateWithFlags(
            kCFAllocatorDefault, kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
            [.privateKeyUsage, .userPresence],
            &error)
    else {
        throw error!.takeRetainedValue() as Error
    }
    let attributes: [String: Any] = [
        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
        kSecAttrKeySizeInBits as String: 256,
        kSecPrivateKeyAttrs as String: [
            kSecAttrIsPermanent as String: true,
            kSecAttrApplicationTag as String: tag,
            kSecAttrAccessControl as String: access,
        ],
    ]
    guard let privateKey = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else {
        throw error!.takeRetainedValue() as Error
    }
    return privateKey
}

/// Signs with a key; the error's code when it cannot.
func signatureErrorCode(_ key: SecKey) -> Int? {
    var error: Unmanaged<CFError>?
    let signature = SecKeyCreateSignature(
        key, .ecdsaSignatureMessageX962SHA256, Data("message".utf8) as CFData, &error)
    guard signature == nil else { return nil }
    return (error!.takeRetainedValue() as Error as NSError).code
}
