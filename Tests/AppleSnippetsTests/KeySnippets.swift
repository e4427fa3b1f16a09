// Apple's documented code for keys, identities and passwords ("Generating New Cryptographic
// Keys", "Storing Keys in the Keychain", "Signing and Verifying", "Using Keys for Encryption",
// "Storing Keys as Data", "Importing an Identity", "Adding a Password to the Keychain" and its
// siblings, for a generic password), written as on macOS and iOS with only Foundation and
// Security imported. KeySnippetsTests runs it.

import Foundation
import Security

/// Unlocks the default keychain with its password, macOS style.
func unlockKeychain(password: String) throws {
    let status = SecKeychainUnlock(nil, UInt32(password.utf8.count), password, true)
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
}

/// "Generating New Cryptographic Keys": a permanent RSA key pair with an application tag.
func makeKey(tag: Data) throws -> SecKey {
    let attributes: [String: Any] =
        [
            kSecAttrKeyType as String: kSecAttrKeyTypeRSA,
            kSecAttrKeySizeInBits as String: 2048,
            kSecPrivateKeyAttrs as String:
                [
                    kSecAttrIsPermanent as String: true,
                    kSecAttrApplicationTag as String: tag,
                ],
        ]
    var error: Unmanaged<CFError>?
    guard let privateKey = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else {
        throw error!.takeRetainedValue() as Error
    }
    return privateKey
}

/// "Generating New Cryptographic Keys": an elliptic-curve key kept in memory.
func makeEphemeralKey() throws -> SecKey {
    let attributes: [String: Any] = [
        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
        kSecAttrKeySizeInBits as String: 256,
    ]
    var error: Unmanaged<CFError>?
    guard let privateKey = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else {
        throw error!.takeRetainedValue() as Error
    }
    return privateKey
}

/// "Storing Keys in the Keychain": add a key with a tag.
func storeKey(_ key: SecKey, tag: Data) throws {
    let addquery: [String: Any] = [
        kSecClass as String: kSecClassKey,
        kSecAttrApplicationTag as String: tag,
        kSecValueRef as String: key,
    ]
    let status = SecItemAdd(addquery as CFDictionary, nil)
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
}

/// "Storing Keys in the Keychain": retrieve it by tag and type.
func retrieveKey(tag: Data, type: CFString) throws -> SecKey {
    let getquery: [String: Any] = [
        kSecClass as String: kSecClassKey,
        kSecAttrApplicationTag as String: tag,
        kSecAttrKeyType as String: type,
        kSecReturnRef as String: true,
    ]
    var item: CFTypeRef?
    let status = SecItemCopyMatching(getquery as CFDictionary, &item)
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
    let key = item as! SecKey
    return key
}

/// "Signing and Verifying": sign.
func sign(_ data: Data, with privateKey: SecKey, algorithm: SecKeyAlgorithm) throws -> Data {
    guard SecKeyIsAlgorithmSupported(privateKey, .sign, algorithm) else {
        throw KeychainError.unhandledError(status: errSecParam)
    }
    var error: Unmanaged<CFError>?
    guard let signature = SecKeyCreateSignature(privateKey, algorithm, data as CFData, &error) as Data? else {
        throw error!.takeRetainedValue() as Error
    }
    return signature
}

/// "Signing and Verifying": verify with the public key.
func verify(_ signature: Data, of data: Data, with privateKey: SecKey, algorithm: SecKeyAlgorithm) throws
    -> Bool
{
    let publicKey = SecKeyCopyPublicKey(privateKey)!
    guard SecKeyIsAlgorithmSupported(publicKey, .verify, algorithm) else { return false }
    var error: Unmanaged<CFError>?
    guard SecKeyVerifySignature(publicKey, algorithm, data as CFData, signature as CFData, &error) else {
        throw error!.takeRetainedValue() as Error
    }
    return true
}

/// "Using Keys for Encryption": encrypt with the public key, decrypt with the private key.
func roundTrip(_ plainText: Data, privateKey: SecKey) throws -> Data {
    let publicKey = SecKeyCopyPublicKey(privateKey)!
    let algorithm: SecKeyAlgorithm = .rsaEncryptionOAEPSHA512
    guard SecKeyIsAlgorithmSupported(publicKey, .encrypt, algorithm) else {
        throw KeychainError.unhandledError(status: errSecParam)
    }
    guard plainText.count < (SecKeyGetBlockSize(publicKey) - 130) else {
        throw KeychainError.unhandledError(status: errSecParam)
    }
    var error: Unmanaged<CFError>?
    guard
        let cipherText = SecKeyCreateEncryptedData(publicKey, algorithm, plainText as CFData, &error) as Data?
    else {
        throw error!.takeRetainedValue() as Error
    }
    guard SecKeyIsAlgorithmSupported(privateKey, .decrypt, algorithm) else {
        throw KeychainError.unhandledError(status: errSecParam)
    }
    guard
        let clearText = SecKeyCreateDecryptedData(privateKey, algorithm, cipherText as CFData, &error)
            as Data?
    else {
        throw error!.takeRetainedValue() as Error
    }
    return clearText
}

/// "Storing Keys as Data": export a key and import it again.
func copyThroughData(_ key: SecKey) throws -> SecKey {
    var error: Unmanaged<CFError>?
    guard let data = SecKeyCopyExternalRepresentation(key, &error) as Data? else {
        throw error!.takeRetainedValue() as Error
    }
    let options: [String: Any] = [
        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
        kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
        kSecAttrKeySizeInBits as String: 256,
    ]
    guard let copy = SecKeyCreateWithData(data as CFData, options as CFDictionary, &error) else {
        throw error!.takeRetainedValue() as Error
    }
    return copy
}

/// "Importing an Identity": the identity of a PKCS#12 file, and its certificate's summary.
func importIdentity(p12Data: Data, password: String) throws -> (identity: SecIdentity, summary: String?) {
    let options = [kSecImportExportPassphrase as String: password]
    var rawItems: CFArray?
    let status = SecPKCS12Import(p12Data as CFData, options as CFDictionary, &rawItems)
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
    let items = rawItems! as! [[String: Any]]
    let firstItem = items[0]
    let identity = firstItem[kSecImportItemIdentity as String] as! SecIdentity
    var certificate: SecCertificate?
    SecIdentityCopyCertificate(identity, &certificate)
    return (identity, SecCertificateCopySubjectSummary(certificate!) as String?)
}

/// Finding an identity by its certificate's label, and its private key.
func identityKey(label: String) throws -> SecKey {
    let query: [String: Any] = [
        kSecClass as String: kSecClassIdentity,
        kSecAttrLabel as String: label,
        kSecReturnRef as String: kCFBooleanTrue!,
    ]
    var item: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &item)
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
    let identity = item as! SecIdentity
    var privateKey: SecKey?
    let copied = SecIdentityCopyPrivateKey(identity, &privateKey)
    guard copied == errSecSuccess else { throw KeychainError.unhandledError(status: copied) }
    return privateKey!
}

/// Credentials, as Apple's password samples keep them.
struct Credentials {
    var username: String
    var password: String
}

/// "Adding a Password to the Keychain", for a generic password.
func addPassword(_ credentials: Credentials, service: String) throws {
    let account = credentials.username
    let password = credentials.password.data(using: String.Encoding.utf8)!
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrAccount as String: account,
        kSecAttrService as String: service,
        kSecValueData as String: password,
    ]
    let status = SecItemAdd(query as CFDictionary, nil)
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
}

/// "Searching for Keychain Items", for a generic password.
func findPassword(service: String) throws -> Credentials {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
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
    return Credentials(username: account, password: password)
}

/// "Updating and Deleting Keychain Items", for a generic password.
func updatePassword(_ credentials: Credentials, service: String) throws {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
    ]
    let account = credentials.username
    let password = credentials.password.data(using: String.Encoding.utf8)!
    let attributes: [String: Any] = [kSecAttrAccount as String: account, kSecValueData as String: password]
    let status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
    guard status != errSecItemNotFound else { throw KeychainError.noPassword }
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
}

func deletePassword(service: String) throws {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
    ]
    let status = SecItemDelete(query as CFDictionary)
    guard status == errSecSuccess || status == errSecItemNotFound else {
        throw KeychainError.unhandledError(status: status)
    }
}
