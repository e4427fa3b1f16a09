internal import COpenSSL

/// CKA_CHECK_VALUE of secret keys (PKCS#11 v3.0 §4.10): three bytes that identify a key
/// without revealing it, so that a key moved between tokens can be checked.
public enum SecretKeyCheckValue {
    /// AES keys (v3.0 §2.10.2): the first 3 bytes of the ECB encryption of one zero block.
    public static func aes(_ key: SecretBytes) throws(CryptoError) -> [UInt8] {
        let cipher = try SymmetricCipher(key: key, mode: .ecb, encrypting: true)
        let zero = SecretBytes(count: 16) { _ in }
        let block = try zero.withUnsafeBytes { (input) throws(CryptoError) in try cipher.update(input) }
        _ = try cipher.finish()
        return Array(block.prefix(3))
    }

    /// Generic secret and HMAC keys (v3.0 §2.8.2, §4.10): the first 3 bytes of SHA-1 of the
    /// key. Empty only if OpenSSL cannot digest (out of memory).
    public static func sha1(_ key: SecretBytes) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        // Digested in place: no array copy of the key is made.
        let ok = key.withUnsafeBytes { bytes in
            EVP_Digest(bytes.baseAddress, bytes.count, &digest, &length, DigestAlgorithm.sha1.evp, nil)
        }
        guard ok == 1, length >= 3 else { return [] }
        return Array(digest.prefix(3))
    }
}
