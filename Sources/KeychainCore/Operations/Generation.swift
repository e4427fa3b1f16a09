internal import KeychainCrypto

/// Random bytes from the token's generator (OpenSSL's, in the library context of the crypto
/// layer): identifiers, IVs, keys a caller imports. Keys the token makes come from
/// `Token.generateSecretKey` and `Token.generateKeyPair`.
public enum RandomGeneration {
    /// `count` random bytes (0 to ``maximumCount``).
    public static func bytes(_ count: Int) throws(CoreError) -> [UInt8] {
        guard (0...maximumCount).contains(count) else {
            throw CoreError(.invalidArgument, "ask for 0 to \(maximumCount) random bytes, not \(count)")
        }
        do throws(CryptoError) {
            return try SecureRandom.bytes(count)
        } catch {
            throw CoreError(.operationFailed, error.message)
        }
    }

    /// The most bytes one call gives: a bound on the memory a caller's number can make it
    /// allocate (far more than any IV, key or nonce needs).
    public static let maximumCount = 1 << 30
}
