public import Foundation
public import KeychainCore

/// What a chain is evaluated for.
///
///     let result = try keychain.evaluate(chain: [leaf, intermediate], policy: .ssl(hostName: "example.com"))
public struct TrustPolicy: Hashable, Sendable {
    /// The purpose the leaf must serve; ``TrustPurpose/any`` checks no extended key usage.
    public var purpose: TrustPurpose
    /// The DNS name or IP address the leaf must carry, or nil for none.
    public var hostName: String?

    /// Creates a policy for `purpose` (and `hostName`, when given).
    public init(purpose: TrustPurpose, hostName: String? = nil) {
        self.purpose = purpose
        self.hostName = hostName
    }

    /// Apple's basic X.509 policy: a valid chain to an anchor, for no particular use.
    public static let basic = TrustPolicy(purpose: .any)

    /// Apple's SSL policy: the server (or client) purpose and, when given, the host name.
    /// An IP address is matched against the certificate's IP addresses only, a DNS name
    /// against its DNS names, with a wildcard only as a whole left-most label.
    public static func ssl(server: Bool = true, hostName: String? = nil) -> TrustPolicy {
        TrustPolicy(purpose: server ? .serverAuth : .clientAuth, hostName: server ? hostName : nil)
    }
}

/// Why a chain is not trusted: the core's type, one vocabulary for every face.
public typealias TrustFailure = KeychainCore.TrustFailure

/// The outcome of ``Keychain/evaluate(chain:policy:at:anchors:anchorsOnly:)``.
public struct TrustEvaluation: Sendable {
    /// Where the anchor that ended the chain came from.
    public typealias AnchorSource = TrustAnchorSource

    /// The chain built, leaf first, ending at the anchor when one was reached.
    public let chain: [Certificate]
    /// Every reason found; empty when trusted.
    public let failures: [TrustFailure]
    /// Where the chain's anchor came from; nil when no anchor was reached.
    public let anchorSource: AnchorSource?

    /// True when the chain is trusted for the policy.
    public var isTrusted: Bool { failures.isEmpty }
    /// True when a failure is one a person could override (an expired or wrongly named
    /// certificate, an unknown anchor) rather than a distrusted or broken chain: Apple's
    /// recoverable trust failure.
    public var isRecoverable: Bool {
        !failures.isEmpty && !failures.contains { Self.fatal.contains($0.reason) }
    }

    /// The outcome of evaluating the same chain for this policy and another: a chain is
    /// trusted only when it passes both; the failures of both, this chain.
    public func merging(_ other: TrustEvaluation) -> TrustEvaluation {
        var failures = self.failures
        for failure in other.failures where !failures.contains(failure) { failures.append(failure) }
        return TrustEvaluation(
            chain: chain, failures: failures, anchorSource: anchorSource ?? other.anchorSource)
    }

    private static let fatal: Set<TrustFailure.Reason> = [
        .distrusted, .invalidSignature, .malformed, .unknownCriticalExtension, .chainTooLong,
    ]
}

extension Keychain {
    /// Builds and checks a chain for `policy` with OpenSSL (RFC 5280 path validation: signatures,
    /// validity at `date`, basic and name constraints, unknown critical extensions, the
    /// policy's extended key usage and host name).
    ///
    /// Anchors are `anchors`, plus, unless `anchorsOnly`, this keychain's certificates set as
    /// trusted anchors for the policy's purpose and the system's CA bundle
    /// (`/etc/ssl/certs/ca-certificates.crt`, or `$P11KEYCHAIN_SYSTEM_ANCHORS`; read once and
    /// read again when the file changes). A certificate this keychain distrusts for the
    /// purpose fails any chain it is in, even one it anchors. Revocation is not checked.
    ///
    /// - Parameters:
    ///   - chain: The leaf first, then any certificates that may help build the chain, in any order.
    ///   - date: The time the chain must be valid at; now when nil.
    /// - Throws: ``KeychainError/Code/parameter`` for an empty chain or an unusable host name;
    ///   errors reading this keychain's trust settings. An untrusted chain is not an error:
    ///   it is a result with failures.
    public func evaluate(
        chain: [Certificate], policy: TrustPolicy = .basic, at date: Date? = nil, anchors: [Certificate] = [],
        anchorsOnly: Bool = false
    ) throws(KeychainError) -> TrustEvaluation {
        let stored = try TrustSettingsCache.shared.settings(of: token)
        return try Keychain.evaluate(
            chain: chain, policy: policy, at: date, anchors: anchors, anchorsOnly: anchorsOnly, stored: stored
        )
    }

    /// Evaluates `chain` as ``evaluate(chain:policy:at:anchors:anchorsOnly:)`` does, with no
    /// keychain: the anchors are `anchors` and, unless `anchorsOnly`, the system's; nothing is
    /// distrusted. For programs that verify without a keychain of their own.
    public static func evaluate(
        chain: [Certificate], policy: TrustPolicy = .basic, at date: Date? = nil, anchors: [Certificate] = [],
        anchorsOnly: Bool = false
    ) throws(KeychainError) -> TrustEvaluation {
        try evaluate(
            chain: chain, policy: policy, at: date, anchors: anchors, anchorsOnly: anchorsOnly, stored: [])
    }

    private static func evaluate(
        chain: [Certificate], policy: TrustPolicy, at date: Date?, anchors: [Certificate], anchorsOnly: Bool,
        stored: [(der: [UInt8], settings: TrustSettings)]
    ) throws(KeychainError) -> TrustEvaluation {
        guard let leaf = chain.first else {
            throw KeychainError(.parameter, "the chain to evaluate is empty")
        }
        let verifyTime = try date.map { (date) throws(KeychainError) in try seconds(date) }
        let outcome = try KeychainError.mapping { () throws(CoreError) in
            try ChainEvaluation.evaluate(
                leaf: leaf.derEncoded, helpers: chain.dropFirst().map(\.derEncoded),
                purpose: policy.purpose,
                hostName: policy.hostName, verifyTime: verifyTime, anchors: anchors.map(\.derEncoded),
                anchorsOnly: anchorsOnly, stored: stored)
        }
        // The chain's certificates are mostly the ones given: reuse them, parse only the others.
        let known = chain + anchors
        // try?: every other certificate of the chain OpenSSL built is one it parsed; a
        // re-parse that fails would leave it out of the shown chain, never decide trust.
        let built = outcome.chain.compactMap { der in
            known.first { $0.derEncoded == der } ?? (try? Certificate(derEncoded: der))
        }
        return TrustEvaluation(
            chain: built.isEmpty ? [leaf] : built, failures: outcome.problems,
            anchorSource: outcome.anchorSource)
    }
}

/// A verify date as whole seconds since 1970; a date no certificate can name (beyond year
/// 9999, or not a number) is a parameter error, not a trap.
private func seconds(_ date: Date) throws(KeychainError) -> Int64 {
    let value = date.timeIntervalSince1970.rounded(.down)
    guard value.isFinite, abs(value) <= 253_402_300_799, let whole = Int64(exactly: value) else {
        throw KeychainError(.parameter, "the verify date is out of range (years 1 to 9999)")
    }
    return whole
}
