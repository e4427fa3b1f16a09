internal import Keychain

// The result codes of trust evaluation, with Apple's values (SecBase.h). Declared here, beside
// the one table that maps evaluation failures to them, rather than in SecBase.swift, which
// lists the codes of the keychain calls.

/// The certificate is not trusted: its chain reaches no anchor.
public let errSecNotTrusted: OSStatus = -67843
/// A certificate of the chain has expired.
public let errSecCertificateExpired: OSStatus = -67818
/// A certificate of the chain is not valid yet.
public let errSecCertificateNotValidYet: OSStatus = -67819
/// The leaf does not carry the host name the SSL policy asks for.
public let errSecHostNameMismatch: OSStatus = -67602
/// A certificate has a critical extension that is not understood.
public let errSecUnknownCriticalExtensionFlag: OSStatus = -67603
/// An issuer of the chain is not a CA.
public let errSecNoBasicConstraintsCA: OSStatus = -67605
/// The extended key usage does not allow the policy's use.
public let errSecInvalidExtendedKeyUsage: OSStatus = -67609
/// A path length constraint was exceeded.
public let errSecPathLengthConstraintExceeded: OSStatus = -67611
/// A name is outside an issuer's name constraints.
public let errSecInvalidName: OSStatus = -67689
/// A signature of the chain does not verify.
public let errSecInvalidSignature: OSStatus = -67688
/// The trust settings deny a certificate of the chain.
public let errSecTrustSettingDeny: OSStatus = -67654
/// The chain could not be built: too many certificates.
public let errSecCreateChainFailed: OSStatus = -25318
/// No trust settings were found (`SecTrustSettingsCopyTrustSettings`).
public let errSecNoTrustSettings: OSStatus = -25263
/// A trust setting is not valid (`SecTrustSettingsSetTrustSettings`).
public let errSecInvalidTrustSetting: OSStatus = -25242
/// The item cannot be modified: the system trust domain is read-only.
public let errSecDataNotModifiable: OSStatus = -25317

/// The one table from evaluation failures to Apple's codes and error descriptions.
enum TrustErrors {
    static func status(_ reason: TrustFailure.Reason) -> OSStatus {
        switch reason {
        case .expired: errSecCertificateExpired
        case .notYetValid: errSecCertificateNotValidYet
        case .hostNameMismatch: errSecHostNameMismatch
        case .missingIssuer, .untrustedRoot, .other: errSecNotTrusted
        case .distrusted: errSecTrustSettingDeny
        case .wrongPurpose: errSecInvalidExtendedKeyUsage
        case .unknownCriticalExtension: errSecUnknownCriticalExtensionFlag
        case .notCertificateAuthority: errSecNoBasicConstraintsCA
        case .pathLengthExceeded: errSecPathLengthConstraintExceeded
        case .chainTooLong: errSecCreateChainFailed
        case .nameConstraintViolation: errSecInvalidName
        case .invalidSignature: errSecInvalidSignature
        case .malformed: errSecDecode
        }
    }

    /// The code and the description of a failed evaluation, as Apple words them
    /// ("“www.example.com” certificate is not trusted"). Distrust comes first (it is why the
    /// chain can never pass), then the first failure found.
    static func describe(_ evaluation: TrustEvaluation) -> (OSStatus, String) {
        guard
            let failure = evaluation.failures.first(where: { $0.reason == .distrusted })
                ?? evaluation.failures.first
        else { return (errSecSuccess, "") }
        let certificate =
            evaluation.chain.indices.contains(failure.depth)
            ? evaluation.chain[failure.depth] : evaluation.chain.first
        let name = "“" + (certificate.flatMap { $0.subjectSummary } ?? "certificate") + "”"
        let what: String
        switch failure.reason {
        case .expired: what = "certificate has expired"
        case .notYetValid: what = "certificate is not yet valid"
        case .hostNameMismatch: what = "certificate name does not match input"
        case .missingIssuer, .untrustedRoot: what = "certificate is not trusted"
        case .distrusted: what = "certificate is marked as not trusted in the keychain"
        case .wrongPurpose: what = "certificate is not permitted for this usage"
        case .unknownCriticalExtension: what = "certificate has an unknown critical extension"
        case .chainTooLong: what = "certificate chain is too long"
        case .nameConstraintViolation: what = "certificate violates its issuer's name constraints"
        case .invalidSignature: what = "certificate has an invalid signature"
        default: what = "certificate is not trusted"
        }
        return (status(failure.reason), "\(name) \(what) (\(failure.message))")
    }
}
