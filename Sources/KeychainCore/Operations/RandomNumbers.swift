internal import KeychainCrypto

/// The token's random numbers (v2.40 §5.15): OpenSSL's generator, seeded by the operating
/// system, for every face.
public enum RandomNumbers {
    /// Fills `buffer` with random bytes.
    public static func fill(_ buffer: UnsafeMutableRawBufferPointer) throws(CoreError) {
        do throws(CryptoError) {
            try SecureRandom.fill(buffer)
        } catch {
            throw CoreError(.operationFailed, error.message)
        }
    }

    /// Mixes a caller's `seed` into the generator as additional input, never in place of the
    /// operating system's entropy.
    public static func mix(_ seed: UnsafeRawBufferPointer) throws(CoreError) {
        do throws(CryptoError) {
            try SecureRandom.mix(seed)
        } catch {
            throw CoreError(.operationFailed, error.message)
        }
    }
}
