internal import COpenSSL

/// A message digest algorithm offered by the token.
public enum DigestAlgorithm: Sendable, CaseIterable {
    case sha1, sha224, sha256, sha384, sha512

    /// The algorithm's EVP_MD, fetched from the default provider once: OpenSSL 3 otherwise
    /// looks it up again on every digest and signature.
    var evp: OpaquePointer? { DigestAlgorithm.fetched[self] ?? legacy }

    private var legacy: OpaquePointer? {
        switch self {
        case .sha1: EVP_sha1()
        case .sha224: EVP_sha224()
        case .sha256: EVP_sha256()
        case .sha384: EVP_sha384()
        case .sha512: EVP_sha512()
        }
    }

    private var name: String {
        switch self {
        case .sha1: "SHA1"
        case .sha224: "SHA224"
        case .sha256: "SHA256"
        case .sha384: "SHA384"
        case .sha512: "SHA512"
        }
    }

    // nonisolated(unsafe): written once by the lazy initialiser (thread-safe), then only read;
    // an EVP_MD is immutable and OpenSSL allows sharing it between threads.
    nonisolated(unsafe) private static let fetched: [DigestAlgorithm: OpaquePointer] = {
        var table: [DigestAlgorithm: OpaquePointer] = [:]
        for algorithm in DigestAlgorithm.allCases {
            if let md = EVP_MD_fetch(nil, algorithm.name, nil) { table[algorithm] = md }
        }
        ERR_clear_error()
        return table
    }()

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
        let data = Array(bytes)
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = data.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &output, &length, evp, nil)
        }
        // EVP_Digest of a built-in algorithm fails only when memory runs out; an empty
        // result then surfaces as a mismatch rather than a crash.
        return ok == 1 ? Array(output.prefix(Int(length))) : []
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

/// Cryptographically secure random bytes from OpenSSL's DRBG.
public enum SecureRandom {
    public static func fill(_ buffer: UnsafeMutableRawBufferPointer) throws(CryptoError) {
        // RAND_bytes takes an int: feed large requests in slices.
        var offset = 0
        while offset < buffer.count {
            let count = min(buffer.count - offset, 1 << 20)
            guard let base = buffer.baseAddress?.advanced(by: offset),
                RAND_bytes(base.assumingMemoryBound(to: UInt8.self), Int32(count)) == 1
            else { throw CryptoError.openSSL(.failed, "random generator failed") }
            offset += count
        }
    }

    public static func bytes(_ count: Int) throws(CryptoError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let ok = bytes.withUnsafeMutableBytes { buffer in (try? fill(buffer)) != nil }
        guard ok else { throw CryptoError.openSSL(.failed, "random generator failed") }
        return bytes
    }
}
