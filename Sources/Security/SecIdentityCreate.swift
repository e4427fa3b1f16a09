internal import Foundation
internal import Keychain

// SecIdentityCreateWithCertificate (SecIdentity.h, macOS 10.5+): the identity of a
// certificate whose private key a keychain holds.

/// The identity of `certificateRef` and the private key a keychain holds for it: the private
/// key whose application label is the certificate's public-key hash (Apple's pairing rule,
/// ARCHITECTURE.md §3.2). The certificate need not be stored.
///
/// - Parameters:
///   - keychainOrArray: A `SecKeychain`, an array of them searched in order, or nil for the
///     default keychain (Apple's search list: one keychain here).
///   - certificateRef: The certificate.
///   - identityRef: Receives the identity.
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when no keychain holds a private key for
///   the certificate (a locked keychain holds none); `errSecParam` for a `keychainOrArray`
///   that is neither.
public func SecIdentityCreateWithCertificate(
    _ keychainOrArray: CFTypeRef?, _ certificateRef: SecCertificate,
    _ identityRef: UnsafeMutablePointer<SecIdentity?>
) -> OSStatus {
    do throws(KeychainError) {
        let keychains: [Keychain]
        switch keychainOrArray {
        case nil: keychains = [try Keychain()]
        case let keychain as SecKeychain: keychains = [keychain.keychain]
        case let array as [Any]:
            keychains = try array.map { (element) throws(KeychainError) in
                guard let keychain = element as? SecKeychain else {
                    throw KeychainError(.parameter, "keychainOrArray must hold only SecKeychain references")
                }
                return keychain.keychain
            }
        default:
            throw KeychainError(
                .parameter, "keychainOrArray must be a SecKeychain, an array of them, or nil")
        }
        let certificate = certificateRef.certificate
        for keychain in keychains {
            let query = KeyQuery(keyClass: .private, applicationLabel: certificate.publicKeyHash, limit: .one)
            guard let key = try keychain.keys(matching: query).first else { continue }
            // The stored identity when the certificate is stored too, so that its attributes
            // and persistent reference come with it.
            let stored = try keychain.identities(matching: CertificateQuery(certificate: certificate)).first
            identityRef.pointee =
                stored.map { SecIdentity($0, in: keychain) }
                ?? SecIdentity(
                    certificate: certificateRef, privateKey: SecKey(.item(keychain, key)), item: nil)
            return errSecSuccess
        }
        throw KeychainError(.itemNotFound, "no keychain holds a private key for the certificate")
    } catch {
        return LastError.record(error)
    }
}

/// An identity of a certificate and a private key given together, in no keychain (Apple's
/// SecIdentityCreate, SecIdentity.h, macOS 10.12+).
///
/// - Returns: The identity; nil when the key is not the private key of the certificate's
///   public key (their public keys differ, or either cannot be read).
public func SecIdentityCreate(
    _ allocator: CFAllocator?, _ certificate: SecCertificate, _ privateKey: SecKey
) -> SecIdentity? {
    guard let certificateKey = SecCertificateCopyKey(certificate),
        let publicKey = SecKeyCopyPublicKey(privateKey),
        let expected = SecKeyCopyExternalRepresentation(certificateKey, nil),
        let given = SecKeyCopyExternalRepresentation(publicKey, nil), expected == given
    else { return nil }
    return SecIdentity(certificate: certificate, privateKey: privateKey, item: nil)
}
