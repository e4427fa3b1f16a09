// Keychain code as apps and wrapper libraries write it against CoreFoundation's types on Apple
// platforms: queries built as `[String: AnyObject]`, as `NSMutableDictionary`, as
// `[String?: AnyObject]` and as `[CFString: Any]`, each cast `as CFDictionary`; errors read with
// `CFErrorGetCode`; random bytes from `SecRandomCopyBytes`. Only Foundation and Security are
// imported. CoreFoundationSnippetsTests runs it.

import Foundation
import Security

/// Adds a generic password with a `[String: AnyObject]` query: every value an object, the
/// `kSec…` constants included.
func addPassword(account: String, service: String, password: Data) -> OSStatus {
    let query: [String: AnyObject] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service as AnyObject,
        kSecAttrAccount as String: account as AnyObject,
        kSecValueData as String: password as AnyObject,
    ]
    return SecItemAdd(query as CFDictionary, nil)
}

/// Finds a password's data with an `NSMutableDictionary` query, the Objective-C way.
func findPassword(account: String, service: String) -> (status: OSStatus, password: Data?) {
    let query = NSMutableDictionary()
    query[kSecClass] = kSecClassGenericPassword
    query[kSecAttrService] = service
    query[kSecAttrAccount] = account
    query[kSecReturnData] = kCFBooleanTrue
    query[kSecMatchLimit] = kSecMatchLimitOne
    var result: AnyObject?
    let status = SecItemCopyMatching(query, &result)
    return (status, result as? Data)
}

/// Reads a password's attributes with a `[CFString: Any]` query.
func passwordAttributes(service: String) -> (status: OSStatus, typeID: CFTypeID, account: String?) {
    let query =
        [
            kSecClass: kSecClassGenericPassword, kSecAttrService: service,
            kSecReturnAttributes: true, kSecMatchLimit: kSecMatchLimitOne,
        ] as CFDictionary
    var result: CFTypeRef?
    let status = SecItemCopyMatching(query, &result)
    let attributes = result as? [String: Any]
    return (status, CFGetTypeID(result), attributes?[kSecAttrAccount as String] as? String)
}

/// Deletes a password with a `[String?: AnyObject]` query, as some wrappers declare theirs.
func deletePassword(account: String, service: String) -> OSStatus {
    let query: [String?: AnyObject] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service as NSString,
        kSecAttrAccount as String: account as NSString,
    ]
    return SecItemDelete(query as CFDictionary)
}

/// Signs with an algorithm the key does not support and reports the error as CoreFoundation
/// code does: its code, its domain and its description.
func signingErrorCode(_ privateKey: SecKey) -> (code: CFIndex, domain: String?, description: String?) {
    var error: Unmanaged<CFError>?
    let signature = SecKeyCreateSignature(
        privateKey, .rsaSignatureMessagePKCS1v15SHA256, Data("message".utf8) as CFData, &error)
    guard signature == nil, let cfError = error?.takeRetainedValue() else { return (0, nil, nil) }
    let userInfo = CFErrorCopyUserInfo(cfError) as? [String: Any]
    return (
        CFErrorGetCode(cfError), CFErrorGetDomain(cfError) as String?,
        userInfo?[kCFErrorDescriptionKey as String] as? String
    )
}

/// An EC private key in memory.
func makeMemoryKey() -> SecKey? {
    let attributes: [String: Any] = [
        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: 256,
    ]
    var error: Unmanaged<CFError>?
    return SecKeyCreateRandomKey(attributes as CFDictionary, &error)
}

/// A fresh 256-bit key's bytes from the system's random number generator.
func randomKeyBytes() -> Data? {
    var bytes = [UInt8](repeating: 0, count: 32)
    let status = SecRandomCopyBytes(kSecRandomDefault, bytes.count, &bytes)
    guard status == errSecSuccess else { return nil }
    return Data(bytes)
}

/// A result code as text, as an app logs it.
func describe(_ status: OSStatus) -> String? {
    SecCopyErrorMessageString(status, nil) as String?
}
