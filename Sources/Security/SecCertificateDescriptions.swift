public import Foundation
internal import Keychain

// SecCertificate.h functions of Apple's current macOS SDK beyond the core set: the validity
// dates (macOS 15), the descriptions (macOS 10.12) and the older serial-number call.

/// The start of the certificate's validity period (notBefore).
public func SecCertificateCopyNotValidBeforeDate(_ certificate: SecCertificate) -> CFDate? {
    certificate.certificate.notValidBefore as NSDate
}

/// The end of the certificate's validity period (notAfter).
public func SecCertificateCopyNotValidAfterDate(_ certificate: SecCertificate) -> CFDate? {
    certificate.certificate.notValidAfter as NSDate
}

/// A short human-readable description: the subject summary, as Apple's.
///
/// - Parameter error: Pass `nil`; never set.
public func SecCertificateCopyShortDescription(
    _ alloc: CFAllocator?, _ certificate: SecCertificate, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFString? {
    certificate.certificate.subjectSummary.map { $0 as NSString }
}

/// A longer human-readable description: the subject's full Name.
///
/// - Parameter error: Pass `nil`; never set.
public func SecCertificateCopyLongDescription(
    _ alloc: CFAllocator?, _ certificate: SecCertificate, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFString? {
    certificate.certificate.subjectDescription as NSString
}

/// Apple's older name of `SecCertificateCopySerialNumberData`.
@available(*, deprecated, renamed: "SecCertificateCopySerialNumberData")
public func SecCertificateCopySerialNumber(
    _ certificate: SecCertificate, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    SecCertificateCopySerialNumberData(certificate, error)
}
