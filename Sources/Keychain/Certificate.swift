public import Foundation
internal import KeychainCore

/// An X.509 certificate, parsed once, with the values people look up and show.
///
/// A value type: two certificates are equal when their DER is. Creating one checks that the
/// bytes are exactly one DER certificate; nothing else (trust, dates) is checked.
///
///     let certificate = try Certificate(derEncoded: bytes)
///     print(certificate.subjectSummary ?? "?", certificate.notValidAfter)
public struct Certificate: Hashable, Sendable, CustomStringConvertible {
    let parsed: ParsedCertificate
    /// The X.509 version, read once at parse time.
    public let version: Int

    /// Parses one DER-encoded certificate.
    ///
    /// - Throws: ``KeychainError/Code/decode`` unless the bytes are exactly one DER X.509
    ///   certificate (trailing bytes are refused too).
    public init(derEncoded bytes: some Sequence<UInt8>) throws(KeychainError) {
        do {
            parsed = try ParsedCertificate(der: Array(bytes))
        } catch {
            throw KeychainError(.decode, "not a DER X.509 certificate: \(error.message)")
        }
        version = parsed.version
    }

    /// Parses the first certificate of PEM text (`-----BEGIN CERTIFICATE-----`).
    ///
    /// - Throws: ``KeychainError/Code/decode`` when the text holds no certificate block or
    ///   the block does not decode.
    public init(pemEncoded text: String) throws(KeychainError) {
        let all = try Certificate.certificates(pemEncoded: text)
        guard let first = all.first else {
            throw KeychainError(.decode, "the text has no PEM CERTIFICATE block")
        }
        self = first
    }

    /// Every certificate of PEM text, in order (a CA bundle, a chain).
    ///
    /// Blocks other than certificates (keys, CRLs) are skipped.
    /// - Throws: ``KeychainError/Code/decode`` when the text holds no certificate, or a block
    ///   does not decode; the message says which block.
    public static func certificates(pemEncoded text: String) throws(KeychainError) -> [Certificate] {
        try certificates(decoding: Array(text.utf8))
    }

    /// The certificates in the contents of a certificate file: PEM text with one or many
    /// certificates, or one DER certificate.
    ///
    /// - Throws: ``KeychainError/Code/decode`` when the bytes are neither.
    public static func certificates(decoding bytes: [UInt8]) throws(KeychainError) -> [Certificate] {
        guard ParsedCertificate.looksLikePEM(bytes) else { return [try Certificate(derEncoded: bytes)] }
        let blocks: [[UInt8]]
        do {
            blocks = try ParsedCertificate.pemCertificates(in: bytes)
        } catch {
            throw KeychainError(.decode, error.message)
        }
        var certificates: [Certificate] = []
        for (index, block) in blocks.enumerated() {
            do {
                certificates.append(try Certificate(derEncoded: block))
            } catch {
                throw KeychainError(.decode, "PEM certificate \(index + 1): \(error.message)")
            }
        }
        return certificates
    }

    // MARK: Encodings

    /// The certificate's DER, exactly as given.
    public var derEncoded: [UInt8] { parsed.der }

    /// The certificate as one PEM block, ending in a newline.
    public var pemEncoded: String { ParsedCertificate.pemEncoded(parsed.der) }

    // MARK: Names

    /// Apple's one-line summary: the common name, else the first e-mail address, else the
    /// first value of the subject. The default label of a new keychain item.
    public var subjectSummary: String? { parsed.subjectSummary }

    /// The subject's common name; with several, the last (most specific), as Apple's
    /// `SecCertificateCopyCommonName` returns.
    public var commonName: String? { parsed.commonNames.last }

    /// Every common name of the subject, in order.
    public var commonNames: [String] { parsed.commonNames }

    /// E-mail addresses: the subject's emailAddress attributes, then the subject alternative
    /// name's rfc822Name entries.
    public var emailAddresses: [String] { parsed.emailAddresses }

    /// The subject as a one-line RFC 2253 string, e.g. `CN=Alice,O=Example`.
    public var subjectDescription: String { parsed.subjectDescription }

    /// The issuer as a one-line RFC 2253 string.
    public var issuerDescription: String { parsed.issuerDescription }

    /// The subject Name's DER (CKA_SUBJECT, kSecAttrSubject).
    public var subjectDER: [UInt8] { parsed.subject }

    /// The issuer Name's DER (CKA_ISSUER, kSecAttrIssuer).
    public var issuerDER: [UInt8] { parsed.issuer }

    /// Apple's normalized form of the subject (`SecCertificateCopyNormalizedSubjectSequence`):
    /// PrintableString values upper-cased with blanks collapsed, as a DER Name.
    public var normalizedSubjectSequence: [UInt8] { parsed.normalizedSubject }

    /// Apple's normalized form of the issuer (`SecCertificateCopyNormalizedIssuerSequence`).
    public var normalizedIssuerSequence: [UInt8] { parsed.normalizedIssuer }

    // MARK: Identity and validity

    /// The serial number's INTEGER content bytes, as Apple's kSecAttrSerialNumber and
    /// `SecCertificateCopySerialNumberData` give it (no tag or length; a leading 00 keeps a
    /// positive number positive).
    public var serialNumber: [UInt8] { parsed.serialNumberContent }

    /// The serial number as a full DER INTEGER (CKA_SERIAL_NUMBER).
    public var serialNumberDER: [UInt8] { parsed.serialNumber }

    /// The start of the validity period (notBefore).
    public var notValidBefore: Date {
        Date(timeIntervalSince1970: TimeInterval(parsed.notBefore))
    }

    /// The end of the validity period (notAfter).
    public var notValidAfter: Date {
        Date(timeIntervalSince1970: TimeInterval(parsed.notAfter))
    }

    /// Whether `date` lies in the validity period, both ends included.
    public func isValid(at date: Date = Date()) -> Bool {
        notValidBefore <= date && date <= notValidAfter
    }

    /// True when the basicConstraints extension marks a certificate authority.
    public var isCertificateAuthority: Bool { parsed.isCertificateAuthority }

    /// True when the certificate is signed by its own key (a root).
    public var isSelfSigned: Bool { parsed.isSelfSigned }

    // MARK: Public key

    /// The SubjectPublicKeyInfo DER (CKA_PUBLIC_KEY_INFO).
    public var publicKeyInfo: [UInt8] { parsed.subjectPublicKeyInfo }

    /// The public key algorithm's short name: `rsaEncryption`, `id-ecPublicKey`, `ED25519`…
    public var publicKeyAlgorithm: String { parsed.publicKeyAlgorithm }

    /// The public key's size in bits (RSA modulus, EC field).
    public var publicKeySize: Int { parsed.publicKeyBits }

    /// `publicKeyAlgorithm` and `publicKeySize` from one decode of the key.
    package var publicKeyDescription: (algorithm: String, bits: Int) { parsed.publicKeyDetails }

    /// SHA-1 of the subjectPublicKey bits: Apple's kSecAttrPublicKeyHash and the default
    /// CKA_ID, shared by the certificate and its key pair.
    public var publicKeyHash: [UInt8] { parsed.publicKeyHash }

    /// The subjectKeyIdentifier extension's value, if present (kSecAttrSubjectKeyID).
    public var subjectKeyIdentifier: [UInt8]? { parsed.subjectKeyIdentifier }

    // MARK: Fingerprints

    /// SHA-1 of the DER.
    public var sha1Fingerprint: [UInt8] { parsed.sha1Fingerprint }

    /// SHA-256 of the DER.
    public var sha256Fingerprint: [UInt8] { parsed.sha256Fingerprint }

    // MARK: Conformances

    /// Two certificates are equal when their DER is.
    public static func == (lhs: Certificate, rhs: Certificate) -> Bool { lhs.parsed.der == rhs.parsed.der }

    /// Hashes the DER.
    public func hash(into hasher: inout Hasher) { hasher.combine(parsed.der) }

    /// The subject summary and the SHA-1 fingerprint.
    public var description: String {
        let fingerprint = sha1Fingerprint.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        return "Certificate(\(subjectSummary ?? subjectDescription), SHA-1 \(fingerprint))"
    }
}
