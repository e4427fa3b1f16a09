internal import KeychainCrypto

/// The OpenSSL contexts of a caller's last signature, verification, MAC and key agreement, kept
/// for its next operation with
/// the same opened key and mechanism: setting a signing context up costs about 1 µs (5 % of an
/// ECDSA P-256 signature), and an HMAC key's setup hashes the padded key twice, more than the
/// MAC of a short message. A key is the same when the token handed out the same opened key
/// (`===`: it opens a new one when the object changes). The last finished MAC, signature and
/// verification are kept whole, for the next one of the same key object to restart.
///
/// A PKCS#11 session owns one and drops its contents at logout (`removeAll`), as they hold
/// keys. One owner serialises its use: not thread-safe.
public final class KeptContexts {
    var signer: SigningContext?
    var verifier: SigningContext?
    var agreement: KeyAgreementContext?
    /// The last finished MAC, which the next one restarts (`Token.macOperation`).
    @exclusivity(unchecked) var mac: MACOperation?
    /// The last finished signature and verification with a stored key, which the next ones
    /// restart (`Token.signatureOperation`).
    @exclusivity(unchecked) var signature: SignatureOperation?
    @exclusivity(unchecked) var verification: SignatureOperation?

    public init() {}

    /// Forgets every kept context and the keys they hold.
    public func removeAll() {
        signer = nil
        verifier = nil
        agreement = nil
        mac = nil
        signature = nil
        verification = nil
    }

    /// The kept signer when it signs with `key` and `scheme`.
    func signer(for key: AsymmetricKey, _ scheme: SignatureScheme) -> SigningContext? {
        guard let signer, signer.key === key, signer.scheme == scheme else { return nil }
        return signer
    }

    /// The kept verifier when it verifies with `key` and `scheme`.
    func verifier(for key: AsymmetricKey, _ scheme: SignatureScheme) -> SigningContext? {
        guard let verifier, verifier.key === key, verifier.scheme == scheme else { return nil }
        return verifier
    }

    /// The kept key agreement of `key` with the peer's value `peer`, taken out of the cache.
    func takeAgreement(for key: AsymmetricKey, peer: [UInt8], cofactor: Bool) -> KeyAgreementContext? {
        guard let kept = agreement else { return nil }
        agreement = nil
        guard kept.key === key, kept.cofactor == cofactor, kept.peerPublicValue == peer else { return nil }
        return kept
    }

    /// The kept signature (`.sign`) or verification (`.verify`), left in the cache.
    func signature(for usage: KeyUse) -> SignatureOperation? {
        usage == .sign ? signature : verification
    }

    /// The kept signature (`.sign`) or verification (`.verify`), taken out of the cache: an
    /// operation in progress is never kept.
    func takeSignature(for usage: KeyUse) -> SignatureOperation? {
        usage == .sign ? signature.take() : verification.take()
    }

    /// The kept MAC, taken out of the cache: a MAC in progress is never kept. Moved out, not
    /// copied and cleared, which was a retain and a release on every restart.
    func takeMAC() -> MACOperation? { mac.take() }
}
