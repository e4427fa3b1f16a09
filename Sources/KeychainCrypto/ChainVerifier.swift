internal import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// Builds and checks a certificate chain with OpenSSL's `X509_verify_cert` (RFC 5280 §6 path
/// validation: signatures, validity at the verify time, basic constraints, path length, name
/// constraints, unknown critical extensions), plus the policy's purpose and host name, in the
/// private library context.
///
/// OpenSSL stops at the first error unless a verify callback says to go on. The callback here
/// records each error and goes on, so a caller sees every reason at once (as Apple's trust
/// result lists them), and the first one recorded is the one `openssl verify` prints.
public enum ChainVerifier {
    /// The most certificates a caller may hand in (leaf and intermediates): a bound on the
    /// work one evaluation can cost, well above any real chain.
    public static let maximumInputCertificates = 32

    /// Verifies `leaf` with `intermediates` as untrusted helpers, against `anchors`.
    ///
    /// Any certificate of the built chain whose SHA-256 fingerprint is in `distrusted` adds a
    /// `.distrusted` failure: distrust wins over being an anchor. Anchors need not be
    /// self-signed (Apple's anchors, and a "trust as root" setting, may be intermediates), so
    /// OpenSSL's partial-chain flag is set.
    public static func verify(
        _ leaf: VerifiableCertificate, intermediates: [VerifiableCertificate], anchors: TrustAnchorStore,
        distrusted: Set<[UInt8]> = [], policy: ChainPolicy
    ) throws(CryptoError) -> ChainVerification {
        if intermediates.count >= maximumInputCertificates {
            let failure = ChainFailure(
                .chainTooLong, depth: 0,
                message: "more than \(maximumInputCertificates) certificates given")
            return ChainVerification(chain: [leaf.der], failures: [failure], reachedAnchor: false)
        }
        guard let context = X509_STORE_CTX_new_ex(LibraryContext.pointer, nil) else {
            throw CryptoError.openSSL(.failed, "cannot allocate a verification context")
        }
        defer { X509_STORE_CTX_free(context) }
        guard let untrusted = OPENSSL_sk_new_null() else {
            throw CryptoError.openSSL(.failed, "cannot allocate a certificate stack")
        }
        defer { OPENSSL_sk_free(untrusted) }
        for certificate in intermediates {
            guard OPENSSL_sk_push(untrusted, UnsafeRawPointer(certificate.pointer)) > 0 else {
                throw CryptoError.openSSL(.failed, "cannot allocate a certificate stack")
            }
        }
        guard X509_STORE_CTX_init(context, anchors.store, leaf.pointer, untrusted) == 1 else {
            throw CryptoError.openSSL(.failed, "cannot start a verification")
        }
        let recorder = FailureRecorder()
        try configure(context, policy: policy, recorder: recorder)
        let verified = withExtendedLifetime(recorder) { X509_verify_cert(context) }
        ERR_clear_error()
        var failures = recorder.failures
        if verified < 0, failures.isEmpty {
            failures.append(ChainFailure(.other, depth: 0, message: "verification could not run"))
        }
        let chain = builtChain(context, given: [leaf] + intermediates, anchors: anchors)
        for (depth, certificate) in chain.enumerated() where distrusted.contains(certificate.fingerprint) {
            failures.append(ChainFailure(.distrusted, depth: depth, message: "certificate is distrusted"))
        }
        failures.append(contentsOf: extraChecks(leaf, policy: policy))
        let unanchored = failures.contains { $0.reason == .missingIssuer || $0.reason == .untrustedRoot }
        return ChainVerification(chain: chain.map(\.der), failures: failures, reachedAnchor: !unanchored)
    }

    private static func configure(
        _ context: OpaquePointer, policy: ChainPolicy, recorder: FailureRecorder
    ) throws(CryptoError) {
        switch policy.purpose {
        case .serverAuth: _ = X509_STORE_CTX_set_purpose(context, X509_PURPOSE_SSL_SERVER)
        case .clientAuth: _ = X509_STORE_CTX_set_purpose(context, X509_PURPOSE_SSL_CLIENT)
        case .emailProtection: _ = X509_STORE_CTX_set_purpose(context, X509_PURPOSE_SMIME_SIGN)
        case .any, .codeSigning: break
        }
        guard let parameters = X509_STORE_CTX_get0_param(context) else {
            throw CryptoError.openSSL(.failed, "cannot set verification parameters")
        }
        X509_VERIFY_PARAM_set_depth(parameters, Int32(clamping: max(0, policy.maximumDepth)))
        _ = X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_PARTIAL_CHAIN))
        if let time = policy.verifyTime {
            X509_VERIFY_PARAM_set_time(parameters, time_t(clamping: time))
        }
        if let host = policy.hostName {
            try setHost(host, parameters)
        }
        X509_STORE_CTX_set_ex_data(context, 0, Unmanaged.passUnretained(recorder).toOpaque())
        X509_STORE_CTX_set_verify_cb(context, recordAndContinue)
    }

    /// An IP address is matched against the iPAddress names only, a DNS name against the
    /// dNSName names (and the CN when there is no SAN, as OpenSSL does); wildcards only as a
    /// whole left-most label (`*.example.com`, never `w*.example.com`, RFC 6125 §6.4.3).
    private static func setHost(_ host: String, _ parameters: OpaquePointer) throws(CryptoError) {
        var name = host
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        guard !name.isEmpty, !name.utf8.contains(0) else {
            throw CryptoError(.invalidInput, "host name is empty or holds a NUL byte")
        }
        if X509_VERIFY_PARAM_set1_ip_asc(parameters, name) == 1 { return }
        ERR_clear_error()
        X509_VERIFY_PARAM_set_hostflags(parameters, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
        guard X509_VERIFY_PARAM_set1_host(parameters, name, 0) == 1 else {
            throw CryptoError.openSSL(.invalidInput, "host name is not usable")
        }
    }

    /// The chain OpenSSL built, as the certificates it was given (found by pointer: OpenSSL
    /// chains the very X509 objects it got), encoding only what it found elsewhere.
    private static func builtChain(
        _ context: OpaquePointer, given: [VerifiableCertificate], anchors: TrustAnchorStore
    ) -> [VerifiableCertificate] {
        guard let stack = X509_STORE_CTX_get0_chain(context) else { return Array(given.prefix(1)) }
        var chain: [VerifiableCertificate] = []
        for index in 0..<OPENSSL_sk_num(stack) {
            guard let raw = OPENSSL_sk_value(stack, index) else { continue }
            let pointer = OpaquePointer(raw)
            if let known = given.first(where: { $0.pointer == pointer }) ?? anchors.byPointer[pointer] {
                chain.append(known)
                continue
            }
            guard X509_up_ref(pointer) == 1, let certificate = VerifiableCertificate(encoding: pointer) else {
                continue
            }
            chain.append(certificate)
        }
        return chain.isEmpty ? Array(given.prefix(1)) : chain
    }

    /// Checks OpenSSL 3.0 has no purpose for: the code-signing extended key usage.
    private static func extraChecks(_ leaf: VerifiableCertificate, policy: ChainPolicy) -> [ChainFailure] {
        guard policy.purpose == .codeSigning else { return [] }
        let usage = X509_get_extended_key_usage(leaf.pointer)
        // UINT32_MAX: no extended key usage extension, which allows every use.
        if usage == UInt32.max || usage & UInt32(XKU_CODE_SIGN | XKU_ANYEKU) != 0 { return [] }
        return [
            ChainFailure(.wrongPurpose, depth: 0, message: "extended key usage does not allow code signing")
        ]
    }

    /// OpenSSL's X509_V_ERR_* as the closed set of reasons.
    static func reason(_ code: Int32) -> ChainFailure.Reason {
        switch code {
        case X509_V_ERR_CERT_HAS_EXPIRED: .expired
        case X509_V_ERR_CERT_NOT_YET_VALID: .notYetValid
        case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH: .hostNameMismatch
        case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
            X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
            .missingIssuer
        case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
            X509_V_ERR_CERT_UNTRUSTED:
            .untrustedRoot
        case X509_V_ERR_CERT_REJECTED: .distrusted
        case X509_V_ERR_INVALID_PURPOSE: .wrongPurpose
        case X509_V_ERR_UNHANDLED_CRITICAL_EXTENSION: .unknownCriticalExtension
        case X509_V_ERR_INVALID_CA, X509_V_ERR_KEYUSAGE_NO_CERTSIGN: .notCertificateAuthority
        case X509_V_ERR_PATH_LENGTH_EXCEEDED: .pathLengthExceeded
        case X509_V_ERR_CERT_CHAIN_TOO_LONG: .chainTooLong
        case X509_V_ERR_PERMITTED_VIOLATION, X509_V_ERR_EXCLUDED_VIOLATION,
            X509_V_ERR_SUBTREE_MINMAX, X509_V_ERR_UNSUPPORTED_CONSTRAINT_TYPE,
            X509_V_ERR_UNSUPPORTED_CONSTRAINT_SYNTAX, X509_V_ERR_UNSUPPORTED_NAME_SYNTAX:
            .nameConstraintViolation
        case X509_V_ERR_CERT_SIGNATURE_FAILURE, X509_V_ERR_UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY,
            X509_V_ERR_UNABLE_TO_DECRYPT_CERT_SIGNATURE:
            .invalidSignature
        case X509_V_ERR_ERROR_IN_CERT_NOT_BEFORE_FIELD, X509_V_ERR_ERROR_IN_CERT_NOT_AFTER_FIELD:
            .malformed
        default: .other
        }
    }
}

/// Collects the errors of one verification; reached from OpenSSL's callback through the
/// context's application data, and alive for the whole `X509_verify_cert` call.
private final class FailureRecorder {
    var failures: [ChainFailure] = []

    func record(code: Int32, depth: Int32) {
        let depth = Int(depth)
        guard !failures.contains(where: { $0.code == code && $0.depth == depth }) else { return }
        let message = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "error \(code)"
        failures.append(ChainFailure(ChainVerifier.reason(code), depth: depth, code: code, message: message))
    }
}

/// OpenSSL's verify callback: records the error and lets verification go on, so every
/// reason is found. Returning 1 on an error is what `openssl s_client` does without
/// `-verify_return_error`; the result is decided from the recorded list, never from
/// `X509_verify_cert`'s return value alone.
private func recordAndContinue(_ ok: Int32, _ context: OpaquePointer?) -> Int32 {
    guard ok == 0, let context else { return ok }
    guard let raw = X509_STORE_CTX_get_ex_data(context, 0) else { return 0 }
    let recorder = Unmanaged<FailureRecorder>.fromOpaque(raw).takeUnretainedValue()
    recorder.record(code: X509_STORE_CTX_get_error(context), depth: X509_STORE_CTX_get_error_depth(context))
    return 1
}
