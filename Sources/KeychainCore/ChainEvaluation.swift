public import KeychainCrypto

/// Where the anchor that ended an evaluated chain came from.
public enum TrustAnchorSource: Hashable, Sendable {
    /// A certificate the keychain trusts by an explicit setting.
    case keychain
    /// A certificate given to the evaluation as an anchor.
    case given
    /// The system's CA bundle.
    case system
}

/// Why a chain is not trusted.
public struct TrustFailure: Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure: the chain verifier's closed set, which a face maps to its own codes.
    public typealias Reason = ChainFailure.Reason

    /// The kind of failure.
    public var reason: Reason
    /// Where in the chain: 0 is the leaf.
    public var depth: Int
    /// What OpenSSL (or the check) says, for a person.
    public var message: String

    /// `message (depth n)`.
    public var description: String { "\(message) (depth \(depth))" }
}

/// The outcome of ``ChainEvaluation/evaluate(leaf:helpers:policy:anchors:anchorsOnly:stored:)``.
package struct ChainOutcome: Sendable {
    /// The chain OpenSSL built, leaf first, as DER.
    package var chain: [[UInt8]]
    /// Every problem found; empty when trusted.
    package var problems: [TrustFailure]
    /// Where the chain's anchor came from; nil when no anchor was reached.
    package var anchorSource: TrustAnchorSource?
}

/// RFC 5280 path validation with OpenSSL, with the keychain's trust settings applied: the
/// one evaluation every face's chain check runs.
package enum ChainEvaluation {
    /// Builds and checks a chain from `leaf` for `purpose` (and `hostName`) at `verifyTime`
    /// (seconds since 1970; now when nil).
    ///
    /// Anchors are `anchors`, plus, unless `anchorsOnly`, the certificates `stored` sets as
    /// trusted anchors for the purpose and the system's CA bundle. A certificate `stored`
    /// distrusts for the purpose fails any chain it is in; one it marks a trusted peer anchors
    /// itself as a leaf.
    ///
    /// - Throws: ``CoreError/Code/invalidArgument`` for input OpenSSL refuses (a host name it
    ///   cannot use, too many certificates); ``CoreError/Code/operationFailed`` when the
    ///   library fails.
    package static func evaluate(
        leaf: [UInt8], helpers given: [[UInt8]], purpose: TrustPurpose, hostName: String?, verifyTime: Int64?,
        anchors: [[UInt8]], anchorsOnly: Bool, stored: [(der: [UInt8], settings: TrustSettings)]
    ) throws(CoreError) -> ChainOutcome {
        var keychainAnchors: [[UInt8]] = []
        var distrusted = Set<[UInt8]>()
        var distrustedDER: [[UInt8]] = []
        var peers = Set<[UInt8]>()
        for entry in stored {
            switch entry.settings.disposition(for: purpose) {
            case .trustedAnchor: keychainAnchors.append(entry.der)
            case .distrusted:
                distrusted.insert(fingerprint(entry.der))
                distrustedDER.append(entry.der)
            case .trustedPeer: peers.insert(entry.der)
            case .unspecified: break
            }
        }
        var givenAnchors = anchors
        if !anchorsOnly, peers.contains(leaf) {
            // Trusted as itself: the leaf is its own anchor, for this evaluation only.
            givenAnchors.append(leaf)
        }
        do throws(CryptoError) {
            let anchorSet = try AnchorCache.shared.anchors(
                given: givenAnchors, keychain: anchorsOnly ? [] : keychainAnchors, system: !anchorsOnly)
            // The distrusted certificates join the helpers, so that a chain through one is built
            // to it and fails as distrusted, not as merely incomplete (within the input bound).
            var helpers = given
            for der in distrustedDER where helpers.count < ChainVerifier.maximumInputCertificates - 1 {
                if !helpers.contains(der) { helpers.append(der) }
            }
            let result = try ChainVerifier.verify(
                try VerifiableCache.shared.certificate(leaf),
                intermediates: try helpers.map { (der) throws(CryptoError) in
                    try VerifiableCache.shared.certificate(der)
                },
                anchors: anchorSet.store, distrusted: distrusted,
                policy: ChainPolicy(
                    purpose: ChainPolicy.Purpose(rawValue: purpose.rawValue) ?? .any, hostName: hostName,
                    verifyTime: verifyTime))
            var source: TrustAnchorSource?
            if result.reachedAnchor, let last = result.chain.last {
                let anchor = fingerprint(last)
                source =
                    anchorSet.given.contains(anchor)
                    ? .given : anchorSet.keychain.contains(anchor) ? .keychain : .system
            }
            return ChainOutcome(
                chain: result.chain,
                problems: result.failures.map {
                    TrustFailure(
                        reason: $0.reason, depth: $0.depth,
                        message: $0.message)
                },
                anchorSource: source)
        } catch {
            throw CoreError(error.code == .invalidInput ? .invalidArgument : .operationFailed, error.message)
        }
    }
}
