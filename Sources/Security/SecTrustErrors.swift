internal import Keychain

// The one table from trust evaluation's failures to Apple's result codes (SecBase.h; the
// codes themselves are declared with the others in SecBase*.swift).

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
