internal import Foundation
internal import Keychain

// Symmetric key items (kSecAttrKeyClassSymmetric; PKCS#11 CKO_SECRET_KEY) as SecItem sees
// them: their attribute dictionary and their kSecAttrKeyType values. The `Keychain` API's
// SecretKeyItem is the item; SecKeyItems.swift finds and deletes them beside key pairs.

/// The `kSecAttrKeyType` constant of a secret key type.
func secretKeyTypeConstant(_ type: SecretKeyType) -> String {
    switch type {
    case .aes: kSecAttrKeyTypeAES as String
    case .generic: kSecAttrKeyTypeGenericSecret as String
    case .hmac(.sha1): kSecAttrKeyTypeHMACSHA1 as String
    case .hmac(.sha224): kSecAttrKeyTypeHMACSHA224 as String
    case .hmac(.sha256): kSecAttrKeyTypeHMACSHA256 as String
    case .hmac(.sha384): kSecAttrKeyTypeHMACSHA384 as String
    case .hmac(.sha512): kSecAttrKeyTypeHMACSHA512 as String
    }
}

/// The secret key type a `kSecAttrKeyType` value names; nil for any other value (an
/// asymmetric type, or one that is no type at all).
func secretKeyType(_ value: Any) -> SecretKeyType? {
    let name = (value as? String) ?? (value as? Int).map(String.init)
    let types: [SecretKeyType] = [.aes, .generic] + DigestAlgorithm.allCases.map { .hmac($0) }
    return types.first { secretKeyTypeConstant($0) == name }
}

/// True for `kSecAttrKeyClassSymmetric` (the CFString, or its number).
func isSymmetricKeyClass(_ value: Any) -> Bool {
    ((value as? String) ?? (value as? Int).map(String.init)) == kSecAttrKeyClassSymmetric
}

/// Why a symmetric key's value is not returned (`kSecReturnData`,
/// `SecKeyCopyExternalRepresentation`): it leaves the keychain only wrapped under another key
/// (the `Keychain` API's key wrapping), as a sensitive PKCS#11 key does.
let symmetricKeyValueWithheld = KeychainError(
    .interactionNotAllowed,
    "a symmetric key's value never leaves the keychain in clear: wrap it with the Keychain API")

/// A symmetric key item's attributes, keyed as Apple's, with the common ones.
func secretKeyAttributes(of item: SecretKeyItem) -> [String: Any] {
    storedKeyAttributes(
        of: item, keyClass: kSecAttrKeyClassSymmetric, keyType: secretKeyTypeConstant(item.type))
}

/// A key item `SecItem…` found: half of a key pair, or a symmetric key.
enum FoundKey {
    case pair(KeyItem)
    case secret(SecretKeyItem)
}
