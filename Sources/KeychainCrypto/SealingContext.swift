internal import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// One ``SecretBox`` key kept keyed, for a key that seals many values in one process (the
/// session key of session objects, ARCHITECTURE.md §6.3): the AES key schedule is made once,
/// and each nonce is the next value of a counter instead of a draw from the random generator
/// (which asks the kernel for the process ID on every call). GCM needs only that no nonce
/// repeats under one key (NIST SP 800-38D §8.2.1, the deterministic construction): the nonce
/// starts at a random value, its last 8 bytes count up, and the context refuses to seal again
/// before they would come back to where they started. Boxes are `SecretBox.seal`'s (nonce ‖
/// ciphertext ‖ tag) and open with `SecretBox.open`.
///
/// A forked child has a copy of the context, key and counter alike: were both processes to
/// count on from the same value, each nonce would come twice under one key. So a seal in
/// another process than the last one's draws a new random start first (one `getpid` a seal,
/// about 0.1 µs; OpenSSL's generator reseeds in the child the same way).
///
/// The key schedule lives in the OpenSSL context, which wipes it when freed. Not thread-safe:
/// the owner serialises calls.
public final class SealingContext {
    private let context: SymmetricCipherContext
    private var nonce: [UInt8]
    /// Seals left before the counter would repeat a nonce.
    private var remaining = UInt64.max
    /// The last value `uniqueValue` gave: 16 bytes, a random start counting up in the last 8.
    private var identifier: [UInt8]
    private var identifiersLeft = UInt64.max
    /// The process the counters were last drawn or used in.
    private var owner = getpid()

    /// A context sealing under `key` (32 bytes).
    public init(key: SecretBytes) throws(CryptoError) {
        guard key.count == SecretBox.keyLength else {
            throw CryptoError(.invalidInput, "AES-256 keys are 32 bytes")
        }
        nonce = try SecureRandom.bytes(SecretBox.nonceLength)
        identifier = try SecureRandom.bytes(16)
        context = try SymmetricCipherContext()
        let keyed = key.withUnsafeBytes { keyBytes in
            EVP_EncryptInit_ex2(
                context.pointer, LibraryContext.aes256GCM, keyBytes.bindMemory(to: UInt8.self).baseAddress,
                nil, nil)
        }
        guard keyed == 1 else { throw CryptoError.openSSL(.failed, "cannot set the sealing key") }
    }

    /// Seals `plaintext`, binding `associatedData`, under the next nonce.
    public func seal(_ plaintext: SecretBytes, associatedData: [UInt8]) throws(CryptoError) -> [UInt8] {
        try startAgainIfForked()
        guard remaining > 0 else { throw CryptoError(.failed, "the sealing key has no nonce left") }
        remaining -= 1
        Self.increment(&nonce)
        // A new nonce on the keyed context: the key schedule stays, GCM's state starts over.
        guard EVP_EncryptInit_ex2(context.pointer, nil, nil, nonce, nil) == 1 else {
            throw CryptoError.openSSL(.failed, "cannot start encryption")
        }
        return try SecretBox.sealStarted(context, nonce: nonce, plaintext, associatedData: associatedData)
    }

    /// 16 bytes no earlier call on this context gave, for the seal ID that a box's associated
    /// data binds it to (one per object): a random start whose last 8 bytes count up.
    public func uniqueValue() throws(CryptoError) -> [UInt8] {
        try startAgainIfForked()
        guard identifiersLeft > 0 else {
            throw CryptoError(.failed, "the sealing key has no identifier left")
        }
        identifiersLeft -= 1
        Self.increment(&identifier)
        return identifier
    }

    /// Draws new random starts for both counters in a process other than the one that last
    /// used them: a forked child (its parent counts on from where it was).
    private func startAgainIfForked() throws(CryptoError) {
        let process = getpid()
        guard process != owner else { return }
        nonce = try SecureRandom.bytes(SecretBox.nonceLength)
        identifier = try SecureRandom.bytes(16)
        remaining = UInt64.max
        identifiersLeft = UInt64.max
        owner = process
    }

    /// Adds one to the big-endian counter in the last 8 bytes of `nonce`, modulo 2^64.
    static func increment(_ nonce: inout [UInt8]) {
        var index = nonce.count - 1
        let end = nonce.count - 8
        while index >= end, index >= 0 {
            nonce[index] &+= 1
            if nonce[index] != 0 { return }
            index -= 1
        }
    }
}
