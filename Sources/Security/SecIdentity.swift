internal import Foundation
internal import Keychain

/// A certificate with its private key, as Apple's `SecIdentityRef`. From
/// `SecItemCopyMatching` with `kSecClassIdentity` (a stored certificate and the stored
/// private key with the same application label) or from `SecPKCS12Import`.
public final class SecIdentity: Hashable, Sendable, CustomStringConvertible {
    let certificate: SecCertificate
    let privateKey: SecKey
    /// The stored items, when the identity is the keychain's.
    let item: IdentityItem?

    init(certificate: SecCertificate, privateKey: SecKey, item: IdentityItem?) {
        self.certificate = certificate
        self.privateKey = privateKey
        self.item = item
    }

    /// The identity of stored items; its key keeps `authentication` (the PIN of
    /// `kSecUseAuthenticationContext`) for its uses.
    convenience init(
        _ item: IdentityItem, in keychain: Keychain, authentication: AuthenticationContext? = nil
    ) {
        self.init(
            certificate: SecCertificate(item.certificate.certificate),
            privateKey: SecKey(.item(keychain, item.privateKey), authentication: authentication), item: item)
    }

    /// Identities are equal when their certificates and keys are.
    public static func == (lhs: SecIdentity, rhs: SecIdentity) -> Bool {
        lhs.certificate == rhs.certificate && lhs.privateKey == rhs.privateKey
    }

    /// Hashes the certificate.
    public func hash(into hasher: inout Hasher) { hasher.combine(certificate) }

    /// The certificate's description, and the key's.
    public var description: String { "<SecIdentityRef \(certificate) \(privateKey)>" }
}

/// The type identifier of identities, for comparison with `CFGetTypeID`.
public func SecIdentityGetTypeID() -> CFTypeID { TypeIdentifier.identity }

/// The identity's certificate.
///
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecIdentityCopyCertificate(
    _ identityRef: SecIdentity, _ certificateRef: UnsafeMutablePointer<SecCertificate?>
) -> OSStatus {
    certificateRef.pointee = identityRef.certificate
    return errSecSuccess
}

/// The identity's private key. A stored key signs and decrypts only while the keychain is
/// unlocked; the key of an identity found with `kSecUseAuthenticationContext` keeps that PIN
/// for the uses its access control asks it for.
///
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecIdentityCopyPrivateKey(
    _ identityRef: SecIdentity, _ privateKeyRef: UnsafeMutablePointer<SecKey?>
)
    -> OSStatus
{
    privateKeyRef.pointee = identityRef.privateKey
    return errSecSuccess
}

/// The certificate's public key, in memory; nil for a kind of key this keychain does not
/// hold (e.g. DSA).
public func SecCertificateCopyKey(_ certificate: SecCertificate) -> SecKey? {
    certificate.certificate.publicKey.map { SecKey(.publicKey($0)) }
}
