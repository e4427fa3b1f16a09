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
    private var finished = false

    /// Starts a MAC under `key`. HMAC keys may have any length (RFC 2104 §3, also empty);
    /// CMAC keys are AES keys.
    ///
    /// - Throws: ``CryptoError/Code/invalidInput`` for a CMAC key that is not 16, 24 or 32
    ///   bytes; ``CryptoError/Code/failed`` when OpenSSL fails.
    public init(_ algorithm: MACAlgorithm, key: SecretBytes) throws(CryptoError) {
        let mac: OpaquePointer?
        let parameter: UnsafePointer<CChar>
        let value: UnsafePointer<CChar>
        switch algorithm {
        case .hmac(let digest):
            mac = LibraryContext.hmac
            parameter = CString.digest
            value = SymmetricParameter.digestName(digest)
        case .cmac:
            guard let cipher = SymmetricParameter.cmacCipherName(keyLength: key.count) else {
                throw CryptoError(.invalidInput, "AES-CMAC keys are 16, 24 or 32 bytes, not \(key.count)")
            }
            mac = SymmetricAlgorithms.cmac
            parameter = SymmetricParameter.cipher
            value = cipher
        }
        guard let mac, let context = EVP_MAC_CTX_new(mac) else {
            throw CryptoError.openSSL(.failed, "cannot start a MAC")
        }
        var parameters = [
            OSSL_PARAM_construct_utf8_string(parameter, UnsafeMutablePointer(mutating: value), 0),
            OSSL_PARAM_construct_end(),
        ]
        // SecretBytes always has storage, so an empty HMAC key is a non-null pointer of
        // length 0: OpenSSL takes that as the empty key rather than as "no key".
        let started = key.withUnsafeBytes { keyBytes in
            EVP_MAC_init(
                context, keyBytes.bindMemory(to: UInt8.self).baseAddress, keyBytes.count, &parameters)
        }
        guard started == 1 else {
            EVP_MAC_CTX_free(context)
            throw CryptoError.openSSL(.failed, "cannot start a MAC")
        }
        self.context = context
    }

    deinit { EVP_MAC_CTX_free(context) }

    /// The full MAC length: the digest's for HMAC, 16 for AES-CMAC. The *_GENERAL mechanisms
    /// truncate `finish`'s result to the length their parameter gives.
    public var macLength: Int { EVP_MAC_CTX_get_mac_size(context) }

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
        guard !finished else { throw CryptoError(.failed, "the MAC has already finished or failed") }
        finished = true
        let length = macLength
        guard length > 0, length <= Int(EVP_MAX_MD_SIZE) else {
            throw CryptoError.openSSL(.failed, "MAC failed")
        }
        var output = [UInt8](repeating: 0, count: length)
        var written = 0
        guard EVP_MAC_final(context, &output, &written, output.count) == 1, written == length else {
            throw CryptoError.openSSL(.failed, "MAC failed")
        }
        return output
    }

    /// Whether two MACs are equal, in time that does not depend on where they differ
    /// (CRYPTO_memcmp), so that a verifier leaks no prefix of the right MAC.
    public static func isEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.isEmpty || CRYPTO_memcmp(a, b, a.count) == 0
    }
}
