internal import COpenSSL

/// A message digest algorithm offered by the token.
public enum DigestAlgorithm: Sendable, CaseIterable {
    case sha1, sha224, sha256, sha384, sha512

    /// The algorithm's EVP_MD, fetched once from the module's own library context
    /// (`LibraryContext`): OpenSSL 3 otherwise looks it up again on every digest and signature,
    /// and EVP_sha256() and its kin would answer from the host's default context. Nil only
    /// when OpenSSL could not make the context; every operation given it then fails.
    var evp: OpaquePointer? { LibraryContext.digest(self) }

    /// OpenSSL's name of the algorithm, for EVP_MD_fetch and OSSL_PARAM digest names; PKCS#11
    /// mechanism names spell it so too (CKM_SHA256_HMAC).
    package var name: String {
        switch self {
        case .sha1: "SHA1"
        case .sha224: "SHA224"
        case .sha256: "SHA256"
        case .sha384: "SHA384"
        case .sha512: "SHA512"
        }
    }

    /// Output length in bytes.
    public var length: Int {
        switch self {
        case .sha1: 20
        case .sha224: 28
        case .sha256: 32
        case .sha384: 48
        case .sha512: 64
        }
    }

    /// One-shot digest of `bytes`.
    public func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        // Contiguous input (an array, a buffer) is hashed where it lies, without a copy.
        if let digest = bytes.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0)) }) {
            return digest
        }
        return Array(bytes).withUnsafeBytes { hash($0) }
    }

    /// One-shot digest of the bytes `input` points to.
    public func hash(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        let capacity = Int(EVP_MAX_MD_SIZE)
        // EVP_Digest of a built-in algorithm fails only when memory runs out; an empty
        // result then surfaces as a mismatch rather than a crash.
        return [UInt8](unsafeUninitializedCapacity: capacity) { output, count in
            var length: UInt32 = 0
            let ok = EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, evp, nil)
            count = ok == 1 ? min(Int(length), capacity) : 0
        }
    }
}

/// A multi-part digest in progress. Owns its `EVP_MD_CTX`.
public final class Digest {
    private let context: OpaquePointer
    public let algorithm: DigestAlgorithm

    public init(_ algorithm: DigestAlgorithm) throws(CryptoError) {
        guard let context = EVP_MD_CTX_new() else {
            throw CryptoError.openSSL(.failed, "cannot allocate a digest context")
        }
        guard EVP_DigestInit_ex(context, algorithm.evp, nil) == 1 else {
            EVP_MD_CTX_free(context)
            throw CryptoError.openSSL(.failed, "cannot start a digest")
        }
        self.context = context
        self.algorithm = algorithm
    }

    deinit { EVP_MD_CTX_free(context) }

    public func update(_ bytes: UnsafeRawBufferPointer) throws(CryptoError) {
        guard EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) == 1 else {
            throw CryptoError.openSSL(.failed, "digest update failed")
        }
    }

    public func update(_ bytes: [UInt8]) throws(CryptoError) {
        let ok = bytes.withUnsafeBytes { EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
        guard ok == 1 else { throw CryptoError.openSSL(.failed, "digest update failed") }
    }

    /// The digest of `input` alone, written into `output` (at least `algorithm.length` bytes):
    /// the context starts over, so a kept `Digest` hashes message after message without
    /// making a context each time as `DigestAlgorithm.hash` does. Returns the bytes written.
    public func hash(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer)
        throws(CryptoError) -> Int
    {
        guard output.count >= algorithm.length, let target = output.baseAddress else {
            throw CryptoError(.failed, "a \(algorithm.name) digest needs \(algorithm.length) bytes")
        }
        var length: UInt32 = 0
        guard EVP_DigestInit_ex2(context, nil, nil) == 1,
            EVP_DigestUpdate(context, input.baseAddress, input.count) == 1,
            EVP_DigestFinal_ex(context, target.assumingMemoryBound(to: UInt8.self), &length) == 1,
            Int(length) == algorithm.length
        else { throw CryptoError.openSSL(.failed, "cannot hash the message") }
        return algorithm.length
    }

    /// Finishes the digest. The object cannot be updated afterwards.
    public func finish() throws(CryptoError) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &output, &length) == 1 else {
            throw CryptoError.openSSL(.failed, "digest final failed")
        }
        return Array(output.prefix(Int(length)))
    }
}

/// Cryptographically secure random bytes from OpenSSL's DRBG in the module's own library
/// context (a host's configuration cannot swap the generator).
public enum SecureRandom {
    public static func fill(_ buffer: UnsafeMutableRawBufferPointer) throws(CryptoError) {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        guard let context = LibraryContext.pointer,
            RAND_bytes_ex(context, base.assumingMemoryBound(to: UInt8.self), buffer.count, 0) == 1
        else { throw CryptoError.openSSL(.failed, "random generator failed") }
    }

    public static func bytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        guard count >= 0 else { throw CryptoError(.invalidInput, "a negative number of random bytes") }
        var bytes = [UInt8](repeating: 0, count: count)
        let result = bytes.withUnsafeMutableBytes { buffer in
            Result { () throws(CryptoError) in try fill(buffer) }
        }
        try result.get()
        return bytes
    }

    /// `count` random bytes in a self-wiping buffer, for keys.
    public static func secret(_ count: Int) throws(CryptoError) -> SecretBytes {
        guard count >= 0 else { throw CryptoError(.invalidInput, "a negative number of random bytes") }
        return try SecretBytes(count: count) { (buffer) throws(CryptoError) in try fill(buffer) }
    }
}

/// HMAC with OpenSSL's EVP_MAC, fetched once in the module's library context.
enum HMAC {
    /// HMAC of the concatenated `parts` under `key`, with the digest OpenSSL names
    /// `digestName` (a C string with static storage or one that outlives the call).
    static func compute(key: SecretBytes, digestName: UnsafePointer<CChar>, parts: [[UInt8]])
        throws(CryptoError)
        -> SecretBytes
    {
        guard let mac = LibraryContext.hmac, let context = EVP_MAC_CTX_new(mac) else {
            throw CryptoError.openSSL(.failed, "cannot start an HMAC")
        }
        defer { EVP_MAC_CTX_free(context) }  // clears the key schedule
        var parameters = [
            OSSL_PARAM_construct_utf8_string(CString.digest, UnsafeMutablePointer(mutating: digestName), 0),
            OSSL_PARAM_construct_end(),
        ]
        let started = key.withUnsafeBytes { keyBytes in
            EVP_MAC_init(
                context, keyBytes.bindMemory(to: UInt8.self).baseAddress, keyBytes.count, &parameters)
        }
        guard started == 1 else { throw CryptoError.openSSL(.failed, "cannot start an HMAC") }
        for part in parts where !part.isEmpty {
            guard EVP_MAC_update(context, part, part.count) == 1 else {
                throw CryptoError.openSSL(.failed, "HMAC failed")
            }
        }
        let length = EVP_MAC_CTX_get_mac_size(context)
        guard length > 0, length <= Int(EVP_MAX_MD_SIZE) else {
            throw CryptoError.openSSL(.failed, "HMAC failed")
        }
        return try SecretBytes(count: length) { (output) throws(CryptoError) in
            var written = 0
            guard
                EVP_MAC_final(context, output.bindMemory(to: UInt8.self).baseAddress, &written, output.count)
                    == 1,
                written == length
            else { throw CryptoError.openSSL(.failed, "HMAC failed") }
        }
    }
}

extension SecureRandom {
    /// Longer seeds are mixed in as their SHA-512 digest: the generator's additional input
    /// is for mixing, and a digest keeps all their influence.
    static let longestDirectSeed = 1 << 16

    /// Mixes the caller's bytes into the private context's generator (PKCS#11 C_SeedRandom,
    /// v2.40 §5.15): a reseed of its primary DRBG (SP 800-90A §9.2) that draws fresh entropy
    /// from the operating system and takes the bytes as additional input, so that they add
    /// to its entropy and never replace it. The DRBGs that serve draws reseed from the
    /// primary before their next output.
    public static func mix(_ seed: UnsafeRawBufferPointer) throws(CryptoError) {
        guard let base = seed.baseAddress, !seed.isEmpty else { return }
        guard let context = LibraryContext.pointer, let primary = RAND_get0_primary(context) else {
            throw CryptoError.openSSL(.failed, "random generator failed")
        }
        let mixed: Int32
        if seed.count <= longestDirectSeed {
            mixed = EVP_RAND_reseed(primary, 0, nil, 0, base.assumingMemoryBound(to: UInt8.self), seed.count)
        } else {
            var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
            var length: UInt32 = 0
            guard EVP_Digest(base, seed.count, &digest, &length, DigestAlgorithm.sha512.evp, nil) == 1 else {
                throw CryptoError.openSSL(.failed, "random generator failed")
            }
            mixed = EVP_RAND_reseed(primary, 0, nil, 0, digest, Int(length))
            SecretBytes.wipe(&digest)
        }
        guard mixed == 1 else { throw CryptoError.openSSL(.failed, "random generator reseed failed") }
    }
}
