public import Foundation
internal import Keychain

/// An X.509 certificate, as Apple's `SecCertificateRef`.
///
/// Immutable. Two references are equal when their DER is. Create one from DER with
/// `SecCertificateCreateWithData`; `SecItemCopyMatching` with `kSecReturnRef` returns them
/// for stored certificates.
public final class SecCertificate: Hashable, Sendable, CustomStringConvertible {
    let certificate: Certificate

    init(_ certificate: Certificate) {
        self.certificate = certificate
    }

    /// Two certificates are equal when their DER is (Apple's `CFEqual`).
    public static func == (lhs: SecCertificate, rhs: SecCertificate) -> Bool {
        lhs.certificate == rhs.certificate
    }

    /// Hashes the DER.
    public func hash(into hasher: inout Hasher) { hasher.combine(certificate) }

    /// Like Apple's description: the subject summary and the issuer's.
    public var description: String {
        "<cert(\(ObjectIdentifier(self).debugDescription.suffix(14).dropLast())) s: "
            + "\(certificate.subjectSummary ?? certificate.subjectDescription) i: \(certificate.issuerDescription)>"
    }
}

/// The type identifier of certificates, for comparison with `CFGetTypeID`.
public func SecCertificateGetTypeID() -> CFTypeID { TypeIdentifier.certificate }

/// Creates a certificate from its DER encoding.
///
/// - Parameters:
///   - allocator: Pass `nil` or `kCFAllocatorDefault`.
///   - data: The certificate's DER (not PEM).
/// - Returns: The certificate, or `nil` when the bytes are not exactly one DER X.509
///   certificate.
public func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate? {
    // try?: Apple's contract is nil for bytes that are not one DER certificate.
    guard let certificate = try? Certificate(derEncoded: Array(data as Data)) else { return nil }
    return SecCertificate(certificate)
}

/// The certificate's DER encoding.
public func SecCertificateCopyData(_ certificate: SecCertificate) -> CFData {
    Data(certificate.certificate.derEncoded) as NSData
}

/// A short human-readable summary of the subject: the common name, else the first e-mail
/// address, else the first value of the subject.
public func SecCertificateCopySubjectSummary(_ certificate: SecCertificate) -> CFString? {
    certificate.certificate.subjectSummary.map { $0 as NSString }
}

/// The subject's common name; with several, the last (most specific), as Apple's.
///
/// - Returns: `errSecSuccess`, or `errSecInternal` (as Apple returns) when the subject has no
///   common name; `commonName` is then `nil`.
@discardableResult
public func SecCertificateCopyCommonName(
    _ certificate: SecCertificate, _ commonName: UnsafeMutablePointer<CFString?>
)
    -> OSStatus
{
    guard let name = certificate.certificate.commonName else {
        commonName.pointee = nil
        return LastError.record(errSecInternal, "the certificate's subject has no common name")
    }
    commonName.pointee = name as NSString
    return errSecSuccess
}

/// The certificate's e-mail addresses: the subject's emailAddress attributes, then the
/// subject alternative name's; an empty array when there are none.
///
/// - Returns: `errSecSuccess`.
@discardableResult
public func SecCertificateCopyEmailAddresses(
    _ certificate: SecCertificate, _ emailAddresses: UnsafeMutablePointer<CFArray?>
) -> OSStatus {
    emailAddresses.pointee = certificate.certificate.emailAddresses as NSArray
    return errSecSuccess
}

/// The serial number's INTEGER content bytes (a leading 00 keeps a positive number
/// positive), as `kSecAttrSerialNumber` holds it.
///
/// - Parameter error: Pass `nil`; never set, since a parsed certificate always has one.
public func SecCertificateCopySerialNumberData(
    _ certificate: SecCertificate, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    Data(certificate.certificate.serialNumber) as NSData
}

/// The issuer Name in Apple's normalized form, as a DER SEQUENCE: PrintableString values
/// upper-cased with blanks collapsed. `kSecAttrIssuer` queries accept it.
public func SecCertificateCopyNormalizedIssuerSequence(_ certificate: SecCertificate) -> CFData? {
    Data(certificate.certificate.normalizedIssuerSequence) as NSData
}

/// The subject Name in Apple's normalized form, as a DER SEQUENCE. `kSecAttrSubject` queries
/// accept it.
public func SecCertificateCopyNormalizedSubjectSequence(_ certificate: SecCertificate) -> CFData? {
    Data(certificate.certificate.normalizedSubjectSequence) as NSData
}
