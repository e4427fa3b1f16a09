internal import COpenSSL

/// A MAC the token computes: HMAC over a SHA digest (RFC 2104; PKCS#11 v2.40 §2.27
/// CKM_SHA*_HMAC) or AES-CMAC (NIST SP 800-38B; v2.40 §2.10.6 CKM_AES_CMAC).
public enum MACAlgorithm: Sendable, Equatable {
    case hmac(DigestAlgorithm)
    /// AES-CMAC; the key is 16, 24 or 32 bytes.
    case cmac
}

/// A multi-part MAC computation (C_SignInit/Update/Final, and C_Verify* by comparing with
/// ``isEqual(_:_:)``). OpenSSL's EVP_MAC does the work; its context holds the key schedule
/// and is freed (and wiped) with this object.
///
/// Not thread-safe: one operation belongs to one session.
public final class MessageAuthentication {
    private let context: OpaquePointer
    @exclusivity(unchecked) private var finished = false

    /// Starts a MAC under `key`. HMAC keys may have any length (RFC 2104 §3, also empty);
    /// CMAC keys are AES keys.
    ///
    /// - Throws: ``CryptoError/Code/invalidInput`` for a CMAC key that is not 16, 24 or 32
    ///   bytes; ``CryptoError/Code/failed`` when OpenSSL fails.
    public init(_ algorithm: MACAlgorithm, key: SecretBytes) throws(CryptoError) {
        let context: OpaquePointer
        switch algorithm {
        case .hmac(let digest):
            // A copy of a context that already holds the digest: naming the digest on every
            // init would fetch it again (a lock and a lookup), which dominates short messages.
            guard let template = HMACTemplates.context(digest), let copy = EVP_MAC_CTX_dup(template) else {
                throw CryptoError.openSSL(.failed, "cannot start an HMAC")
            }
            context = copy
        case .cmac:
            guard let cipher = SymmetricParameter.cmacCipherName(keyLength: key.count) else {
                throw CryptoError(.invalidInput, "AES-CMAC keys are 16, 24 or 32 bytes, not \(key.count)")
            }
            // CMAC contexts cannot be copied before they hold a key (CMAC_CTX_copy), so the
            // cipher is named here.
            guard let mac = SymmetricAlgorithms.cmac, let fresh = EVP_MAC_CTX_new(mac) else {
                throw CryptoError.openSSL(.failed, "cannot start an AES-CMAC")
            }
            var parameters = [
                OSSL_PARAM_construct_utf8_string(
                    SymmetricParameter.cipher, UnsafeMutablePointer(mutating: cipher), 0),
                OSSL_PARAM_construct_end(),
            ]
            guard EVP_MAC_CTX_set_params(fresh, &parameters) == 1 else {
                EVP_MAC_CTX_free(fresh)
                throw CryptoError.openSSL(.failed, "cannot start an AES-CMAC")
            }
            context = fresh
        }
        // SecretBytes always has storage, so an empty HMAC key is a non-null pointer of
        // length 0: OpenSSL takes that as the empty key rather than as "no key".
        let started = key.withUnsafeBytes { keyBytes in
            EVP_MAC_init(context, keyBytes.bindMemory(to: UInt8.self).baseAddress, keyBytes.count, nil)
        }
        guard started == 1 else {
            EVP_MAC_CTX_free(context)
            throw CryptoError.openSSL(.failed, "cannot start a MAC")
        }
        self.context = context
        // Asked once: the size is a parameter query, and every C_SignInit and C_Sign needs it.
        macLength = EVP_MAC_CTX_get_mac_size(context)
    }

    deinit { EVP_MAC_CTX_free(context) }

    /// The full MAC length: the digest's for HMAC, 16 for AES-CMAC. The *_GENERAL mechanisms
    /// truncate `finish`'s result to the length their parameter gives.
    public let macLength: Int

    /// Adds the next part of the message.
    public func update(_ input: UnsafeRawBufferPointer) throws(CryptoError) {
        guard !finished else { throw CryptoError(.failed, "the MAC has already finished or failed") }
        guard let base = input.baseAddress, !input.isEmpty else { return }
        guard EVP_MAC_update(context, base.assumingMemoryBound(to: UInt8.self), input.count) == 1 else {
            finished = true
            throw CryptoError.openSSL(.failed, "MAC update failed")
        }
    }

    /// The full MAC of everything given to `update`. The object cannot be used afterwards.
    public func finish() throws(CryptoError) -> [UInt8] {
        var failure: CryptoError?
        let output = [UInt8](unsafeUninitializedCapacity: max(macLength, 0)) { buffer, count in
            do throws(CryptoError) {
                try finish(into: UnsafeMutableRawBufferPointer(buffer))
                count = macLength
            } catch {
                failure = error
                count = 0
            }
        }
        if let failure { throw failure }
        return output
    }

    /// The full MAC of everything given to `update`, written into the first ``macLength``
    /// bytes of `output`. The object cannot be used afterwards.
    public func finish(into output: UnsafeMutableRawBufferPointer) throws(CryptoError) {
        guard !finished else { throw CryptoError(.failed, "the MAC has already finished or failed") }
        finished = true
        let length = macLength
        guard length > 0, length <= Int(EVP_MAX_MD_SIZE), output.count >= length,
            let base = output.baseAddress?.assumingMemoryBound(to: UInt8.self)
        else {
            throw CryptoError.openSSL(.failed, "MAC failed")
        }
        var written = 0
        guard EVP_MAC_final(context, base, &written, length) == 1, written == length else {
            throw CryptoError.openSSL(.failed, "MAC failed")
        }
    }

    /// Starts a new MAC under the same key, keeping the key schedule (HMAC's inner and outer
    /// pads, CMAC's subkeys): a caller that keeps one object per key pays for setting the key
    /// once, which for short messages costs more than the MAC itself.
    public func reset() throws(CryptoError) {
        finished = true
        guard EVP_MAC_init(context, nil, 0, nil) == 1 else {
            throw CryptoError.openSSL(.failed, "cannot restart the MAC")
        }
        finished = false
    }

    /// Whether two MACs are equal, in time that does not depend on where they differ
    /// (CRYPTO_memcmp), so that a verifier leaks no prefix of the right MAC.
    public static func isEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.isEmpty || CRYPTO_memcmp(a, b, a.count) == 0
    }
}

/// One keyless HMAC context per digest, with the digest already set, copied by every HMAC.
private enum HMACTemplates {
    static func context(_ digest: DigestAlgorithm) -> OpaquePointer? { shared.contexts[digest] }

    // nonisolated(unsafe): written once by the lazy initialiser, then only read: a context
    // is only ever copied (EVP_MAC_CTX_dup reads it), never initialised or updated.
    nonisolated(unsafe) private static let shared = Shared()

    private final class Shared {
        let contexts: [DigestAlgorithm: OpaquePointer]

        init() {
            var contexts: [DigestAlgorithm: OpaquePointer] = [:]
            for digest in DigestAlgorithm.allCases {
                guard let mac = LibraryContext.hmac, let context = EVP_MAC_CTX_new(mac) else { continue }
                var parameters = [
                    OSSL_PARAM_construct_utf8_string(
                        CString.digest, UnsafeMutablePointer(mutating: SymmetricParameter.digestName(digest)),
                        0),
                    OSSL_PARAM_construct_end(),
                ]
                if EVP_MAC_CTX_set_params(context, &parameters) == 1 {
                    contexts[digest] = context
                } else {
                    EVP_MAC_CTX_free(context)
                }
            }
            self.contexts = contexts
            ERR_clear_error()
        }
        // No deinit: the one instance lives as long as the process (or the loaded module).
    }
}
