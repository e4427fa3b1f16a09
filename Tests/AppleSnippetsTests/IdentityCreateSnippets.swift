import Foundation
import Security

// Apple's SecIdentityCreateWithCertificate: a certificate from elsewhere (a file, a server)
// joined to the private key the keychain holds for it.

/// The certificate and private key of the first identity in a PKCS#12 file, in memory.
func certificateAndKey(p12: Data, password: String) -> (SecCertificate, SecKey)? {
    let options: [String: Any] = [
        kSecImportExportPassphrase as String: password, kSecImportToMemoryOnly as String: true,
    ]
    var items: CFArray?
    guard SecPKCS12Import(p12 as CFData, options as CFDictionary, &items) == errSecSuccess,
        let first = (items as? [[String: Any]])?.first,
        let identity = first[kSecImportItemIdentity as String]
    else { return nil }
    var certificate: SecCertificate?
    var key: SecKey?
    SecIdentityCopyCertificate(identity as! SecIdentity, &certificate)
    SecIdentityCopyPrivateKey(identity as! SecIdentity, &key)
    guard let certificate, let key else { return nil }
    return (certificate, key)
}

/// Stores a private key alone.
func storePrivateKey(_ key: SecKey) -> OSStatus {
    let query: [String: Any] = [kSecClass as String: kSecClassKey, kSecValueRef as String: key]
    return SecItemAdd(query as CFDictionary, nil)
}

/// The identity of `certificate` in `keychainOrArray`, or the status.
func identity(for certificate: SecCertificate, in keychainOrArray: CFTypeRef?) -> (OSStatus, SecIdentity?) {
    var identity: SecIdentity?
    let status = SecIdentityCreateWithCertificate(keychainOrArray, certificate, &identity)
    return (status, identity)
}
