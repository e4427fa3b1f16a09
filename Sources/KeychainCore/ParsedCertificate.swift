internal import KeychainCrypto

/// An X.509 certificate parsed once, with the values the faces look up and show (names,
/// serial number, validity, public key, fingerprints): what the typed API's `Certificate`
/// holds, so that no face parses DER itself.
package struct ParsedCertificate: Sendable {
    private let certificate: X509Certificate
    /// Apple's normalized subject and issuer, computed once at parse time.
    package let normalizedSubject: [UInt8]
    package let normalizedIssuer: [UInt8]

    /// Parses exactly one DER certificate (trailing bytes are refused).
    ///
    /// - Throws: ``CoreError/Code/attributeValueInvalid`` for anything else.
    package init(der: [UInt8]) throws(CoreError) {
        do {
            certificate = try X509Certificate(der: der)
        } catch {
            throw CoreError(.attributeValueInvalid, error.message)
        }
        normalizedSubject = DistinguishedName.normalized(certificate.subject) ?? certificate.subject
        normalizedIssuer = DistinguishedName.normalized(certificate.issuer) ?? certificate.issuer
    }

    package var der: [UInt8] { certificate.der }
    package var version: Int { certificate.version }
    package var subject: [UInt8] { certificate.subject }
    package var issuer: [UInt8] { certificate.issuer }
    package var subjectSummary: String? { certificate.subjectSummary }
    package var commonNames: [String] { certificate.commonNames }
    package var emailAddresses: [String] { certificate.emailAddresses }
    package var subjectValues: [String] { certificate.subjectValues }
    package var subjectDescription: String { certificate.subjectDescription }
    package var issuerDescription: String { certificate.issuerDescription }
    /// The serial number as a full DER INTEGER, and its content bytes.
    package var serialNumber: [UInt8] { certificate.serialNumber }
    package var serialNumberContent: [UInt8] { certificate.serialNumberContent }
    /// The validity period's ends, in seconds since 1970.
    package var notBefore: Int64 { certificate.notBefore.secondsSince1970 }
    package var notAfter: Int64 { certificate.notAfter.secondsSince1970 }
    package var isCertificateAuthority: Bool { certificate.isCertificateAuthority }
    package var isSelfSigned: Bool { certificate.isSelfSigned }
    package var subjectPublicKeyInfo: [UInt8] { certificate.subjectPublicKeyInfo }
    package var publicKeyAlgorithm: String { certificate.publicKeyAlgorithm }
    package var publicKeyBits: Int { certificate.publicKeyBits }
    package var publicKeyDetails: (algorithm: String, bits: Int) { certificate.publicKeyDetails }
    package var publicKeyHash: [UInt8] { certificate.publicKeyHash }
    package var subjectKeyIdentifier: [UInt8]? { certificate.subjectKeyIdentifier }
    package var sha1Fingerprint: [UInt8] { certificate.sha1Fingerprint }
    package var sha256Fingerprint: [UInt8] { certificate.sha256Fingerprint }

    /// The full DER INTEGER (CKA_SERIAL_NUMBER) of a serial number's content bytes (Apple's
    /// kSecAttrSerialNumber); nil when they are not an INTEGER's content.
    package static func serialNumberDER(content: [UInt8]) -> [UInt8]? { DERInteger.encode(content: content) }

    /// A DER Name in Apple's normalized form; nil when `der` is not a Name.
    package static func normalizedName(_ der: [UInt8]) -> [UInt8]? { DistinguishedName.normalized(der) }

    /// True when `bytes` look like PEM text (a BEGIN line) rather than DER.
    package static func looksLikePEM(_ bytes: [UInt8]) -> Bool { PEM.looksLikePEM(bytes) }

    /// The DER of every CERTIFICATE block of PEM text, in order; other blocks are skipped.
    ///
    /// - Throws: ``CoreError/Code/attributeValueInvalid`` when there is none, or a block
    ///   does not decode (the message says which).
    package static func pemCertificates(in text: [UInt8]) throws(CoreError) -> [[UInt8]] {
        do {
            return try PEM.certificates(in: text)
        } catch {
            throw CoreError(.attributeValueInvalid, error.message)
        }
    }

    /// `der` as one PEM CERTIFICATE block, ending in a newline.
    package static func pemEncoded(_ der: [UInt8]) -> String { PEM.encodeCertificate(der) }
}
