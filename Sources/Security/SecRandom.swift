internal import Keychain

// SecRandomCopyBytes (SecRandom.h): random bytes from OpenSSL's generator, through the Keychain
// API's `Keychain.randomBytes` (KeychainCrypto's own library context, ARCHITECTURE.md §6.9).

/// A random number generator. Only `kSecRandomDefault` (nil) exists.
public final class SecRandom: Sendable {
    private init() {}
}

/// Apple's name for a random number generator reference.
public typealias SecRandomRef = SecRandom

/// The default generator: `nil`, as on Apple platforms.
public let kSecRandomDefault: SecRandomRef? = nil

/// Fills `bytes` with `count` cryptographically secure random bytes.
///
///     var key = [UInt8](repeating: 0, count: 32)
///     let status = SecRandomCopyBytes(kSecRandomDefault, key.count, &key)
///
/// - Returns: `errSecSuccess`; `errSecParam` for a negative count; `errSecInternal` when the
///   generator fails (`bytes` is then left as it was).
public func SecRandomCopyBytes(_ rnd: SecRandomRef?, _ count: Int, _ bytes: UnsafeMutableRawPointer)
    -> Int32
{
    guard count >= 0 else { return LastError.record(errSecParam, "SecRandomCopyBytes: count \(count) < 0") }
    var offset = 0
    do throws(KeychainError) {
        // One buffer for the whole request first, so that a failure part-way leaves `bytes` alone.
        var random: [UInt8] = []
        random.reserveCapacity(count)
        while offset < count {
            let chunk = min(count - offset, Keychain.maximumRandomBytes)
            random += try Keychain.randomBytes(chunk)
            offset += chunk
        }
        random.withUnsafeBytes { source in
            if let base = source.baseAddress { bytes.copyMemory(from: base, byteCount: source.count) }
        }
        return errSecSuccess
    } catch {
        return LastError.record(errSecInternal, "the random number generator failed: \(error.message)")
    }
}
