// Keychain code written as Apple's documentation writes it for macOS and iOS, with only
// Foundation and Security imported. That this file compiles (and SnippetsTests runs it) is
// the test: `as CFDictionary`, `&item`, `item as! SecCertificate`, `data as CFData`,
// `kCFBooleanTrue!`, `CFGetTypeID`, `as String?` on a CFString.

import Foundation
import Security

/// An error type like the one Apple's keychain samples declare; its name does not collide
/// with anything `import Security` brings in.
enum KeychainError: Error {
    case noCertificate
    case noPassword
    case unexpectedPasswordData
    case unhandledError(status: OSStatus)
}

/// "Storing a Certificate in the Keychain": create the certificate, then add it.
func storeCertificate(_ certData: Data, label: String) throws {
    guard let certificate = SecCertificateCreateWithData(kCFAllocatorDefault, certData as CFData) else {
        throw KeychainError.noCertificate
    }
    let addquery: [String: Any] = [
        kSecClass as String: kSecClassCertificate,
        kSecValueRef as String: certificate,
        kSecAttrLabel as String: label,
    ]
    let status = SecItemAdd(addquery as CFDictionary, nil)
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
}

/// The same article: retrieve it by label as a reference.
func retrieveCertificate(label: String) throws -> SecCertificate {
    let getquery: [String: Any] = [
        kSecClass as String: kSecClassCertificate,
        kSecAttrLabel as String: label,
        kSecReturnRef as String: kCFBooleanTrue!,
    ]
    var item: CFTypeRef?
    let status = SecItemCopyMatching(getquery as CFDictionary, &item)
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
    let certificate = item as! SecCertificate
    return certificate
}

/// "Searching for Keychain Items": every certificate's attributes and data.
func certificateSummaries() throws -> [String] {
    let query =
        [
            kSecClass: kSecClassCertificate,
            kSecMatchLimit: kSecMatchLimitAll,
            kSecReturnAttributes: true,
            kSecReturnData: true,
        ] as CFDictionary
    var items: CFTypeRef?
    let status = SecItemCopyMatching(query, &items)
    guard status != errSecItemNotFound else { throw KeychainError.noCertificate }
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
    guard let existingItems = items as? [[String: Any]] else { throw KeychainError.noCertificate }
    return existingItems.compactMap { existingItem in
        guard let data = existingItem[kSecValueData as String] as? Data,
            let certificate = SecCertificateCreateWithData(nil, data as CFData)
        else { return nil }
        return SecCertificateCopySubjectSummary(certificate) as String?
    }
}

/// Every certificate as references, cast the way Apple's samples cast arrays.
func allCertificates() -> [SecCertificate] {
    let query: [String: Any] = [
        kSecClass as String: kSecClassCertificate,
        kSecMatchLimit as String: kSecMatchLimitAll,
        kSecReturnRef as String: true,
    ]
    var result: AnyObject?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    guard status == errSecSuccess else { return [] }
    return result as! [SecCertificate]
}

/// A persistent reference, and the item found again through it.
func persistentReference(label: String) -> Data? {
    let query: [String: Any] = [
        kSecClass as String: kSecClassCertificate,
        kSecAttrLabel as String: label,
        kSecReturnPersistentRef as String: true,
    ]
    var item: CFTypeRef?
    guard SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess else { return nil }
    return item as? Data
}

func certificate(persistentReference: Data) -> SecCertificate? {
    let query: [String: Any] = [
        kSecClass as String: kSecClassCertificate,
        kSecValuePersistentRef as String: persistentReference,
        kSecReturnRef as String: true,
    ]
    var item: CFTypeRef?
    guard SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess,
        let item, CFGetTypeID(item) == SecCertificateGetTypeID()
    else { return nil }
    return (item as! SecCertificate)
}

/// The certificate accessors, as Apple's samples call them.
func describeCertificate(_ certificate: SecCertificate) -> (
    commonName: String?, emails: [String], serial: Data?, der: Data
) {
    var commonName: CFString?
    let status = SecCertificateCopyCommonName(certificate, &commonName)
    var emailAddresses: CFArray?
    _ = SecCertificateCopyEmailAddresses(certificate, &emailAddresses)
    var error: Unmanaged<CFError>?
    let serial = SecCertificateCopySerialNumberData(certificate, &error) as Data?
    let data = SecCertificateCopyData(certificate) as Data
    return (
        status == errSecSuccess ? commonName as String? : nil, emailAddresses as? [String] ?? [], serial, data
    )
}

/// "Updating and Deleting Keychain Items".
func renameCertificate(from oldLabel: String, to newLabel: String) throws {
    let query: [String: Any] = [kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: oldLabel]
    let attributes: [String: Any] = [kSecAttrLabel as String: newLabel]
    let status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
    guard status != errSecItemNotFound else { throw KeychainError.noCertificate }
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
}

func deleteCertificate(_ certificate: SecCertificate) throws {
    let query: [String: Any] = [
        kSecClass as String: kSecClassCertificate, kSecValueRef as String: certificate,
    ]
    let status = SecItemDelete(query as CFDictionary)
    guard status == errSecSuccess || status == errSecItemNotFound else {
        throw KeychainError.unhandledError(status: status)
    }
}

/// An OSStatus as text, the usual way.
func message(for status: OSStatus) -> String {
    SecCopyErrorMessageString(status, nil) as String? ?? "OSStatus \(status)"
}
