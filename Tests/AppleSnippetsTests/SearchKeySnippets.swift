// Apple-style code that searches certificates and identities with the search keys of
// "Item search matching keys" (SecItem.h): a URLSession client-certificate selection, subject
// and e-mail searches, trusted-only searches, item lists. Written as on macOS, with only
// Foundation and Security imported. SearchKeySnippetsTests runs it.

import Foundation
import Security

/// A URLSession delegate's client-certificate selection: the identities whose chain has one
/// of the issuers the server named (`URLProtectionSpace.distinguishedNames`).
func clientIdentities(acceptedIssuers distinguishedNames: [Data]) -> [SecIdentity] {
    let query: [String: Any] = [
        kSecClass as String: kSecClassIdentity,
        kSecMatchIssuers as String: distinguishedNames,
        kSecMatchLimit as String: kSecMatchLimitAll,
        kSecReturnRef as String: true,
    ]
    var result: CFTypeRef?
    guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess,
        let identities = result as? [SecIdentity]
    else { return [] }
    return identities
}

/// The labels of the certificates an extra set of search keys finds, every match; the
/// status when it is not errSecSuccess.
func certificateLabels(_ keys: [String: Any], limit: Any = kSecMatchLimitAll) -> (OSStatus, [String]) {
    var query: [String: Any] = [
        kSecClass as String: kSecClassCertificate,
        kSecMatchLimit as String: limit,
        kSecReturnAttributes as String: true,
    ]
    query.merge(keys) { $1 }
    var result: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    guard status == errSecSuccess else { return (status, []) }
    let items = result as? [[String: Any]] ?? (result as? [String: Any]).map { [$0] } ?? []
    return (status, items.compactMap { $0[kSecAttrLabel as String] as? String }.sorted())
}

/// Stores a certificate with a label; an existing copy is fine.
func storeCertificateRef(_ certificate: SecCertificate, label: String) throws {
    let query: [String: Any] = [
        kSecClass as String: kSecClassCertificate,
        kSecValueRef as String: certificate,
        kSecAttrLabel as String: label,
    ]
    let status = SecItemAdd(query as CFDictionary, nil)
    guard status == errSecSuccess || status == errSecDuplicateItem else {
        throw KeychainError.unhandledError(status: status)
    }
}

/// The DER subject of a stored certificate, as Apple's code reads it back.
func storedSubject(of certificate: SecCertificate) throws -> Data {
    let query: [String: Any] = [
        kSecClass as String: kSecClassCertificate,
        kSecValueRef as String: certificate,
        kSecReturnAttributes as String: true,
    ]
    var result: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    guard status == errSecSuccess, let attributes = result as? [String: Any],
        let subject = attributes[kSecAttrSubject as String] as? Data
    else { throw KeychainError.unhandledError(status: status) }
    return subject
}
