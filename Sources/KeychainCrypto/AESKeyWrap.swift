internal import COpenSSL

/// AES key wrap: RFC 3394 (PKCS#11 v2.40 §2.14 CKM_AES_KEY_WRAP) and, padded, RFC 5649
/// (CKM_AES_KEY_WRAP_PAD / CKM_AES_KEY_WRAP_KWP), by OpenSSL's AES-*-WRAP and AES-*-WRAP-PAD.
public enum AESKeyWrap {
    /// The most bytes wrapped at once (OpenSSL's lengths are C ints; keys are far shorter).
    static let maximumLength = 1 << 24

    /// Wraps `plaintext` under `key` (16, 24 or 32 bytes). RFC 5649 wraps 1 byte or more.
    /// RFC 3394 wraps whole 8-byte semiblocks, at least two: as PKCS#11 specifies for
    /// CKM_AES_KEY_WRAP (v2.40 §2.14.3, "a key whose length is not a multiple of the AES Key
    /// Wrap block size (8 bytes) will be zero padded to fit"), a key of another length is
    /// padded with zeros first, and the unwrapping side cuts the value back to its length
    /// (C_UnwrapKey's CKA_VALUE_LEN). `iv` replaces the default initial value (RFC 3394
    /// §2.2.3.1: 8 bytes; RFC 5649 §3: the 4-byte alternative IV's constant).
    ///
    /// - Throws: ``CryptoError/Code/invalidInput`` for lengths out of range (RFC 3394: fewer
    ///   than 16 bytes once padded).
    public static func wrap(_ plaintext: SecretBytes, key: SecretBytes, padded: Bool, iv: [UInt8]? = nil)
        throws(CryptoError) -> [UInt8]
    {
        guard (1...maximumLength).contains(plaintext.count) else {
            throw CryptoError(.invalidInput, "AES key wrap wraps 1 byte or more, not \(plaintext.count)")
        }
        if !padded, plaintext.count % 8 != 0 {
            let length = (plaintext.count + 7) / 8 * 8
            let zeroPadded = SecretBytes(count: length) { buffer in
                plaintext.withUnsafeBytes { source in
                    if let target = buffer.baseAddress, let base = source.baseAddress {
                        target.copyMemory(from: base, byteCount: source.count)
                    }
                }
            }
            return try wrap(zeroPadded, key: key, padded: false, iv: iv)
        }
        if !padded {
            guard plaintext.count >= 16 else {
                throw CryptoError(
                    .invalidInput,
                    "RFC 3394 wraps at least 16 bytes (padded with zeros), not \(plaintext.count)")
            }
        }
        let context = try start(key: key, padded: padded, iv: iv, encrypting: true)
        let expected = (plaintext.count + 7) / 8 * 8 + 8
        var failed = false
        let output = [UInt8](unsafeUninitializedCapacity: plaintext.count + 32) { buffer, count in
            count = 0
            guard let target = buffer.baseAddress else { return }
            var length: Int32 = 0
            var last: Int32 = 0
            let ok = plaintext.withUnsafeBytes { input in
                EVP_CipherUpdate(
                    context.pointer, target, &length, input.bindMemory(to: UInt8.self).baseAddress,
                    Int32(clamping: input.count)) == 1
                    && EVP_CipherFinal_ex(context.pointer, target + Int(max(length, 0)), &last) == 1
            }
            if ok, Int(length) + Int(last) == expected {
                count = expected
            } else {
                failed = true
            }
        }
        guard !failed else { throw CryptoError.openSSL(.failed, "AES key wrap failed") }
        return output
    }

    /// Unwraps `wrapped` under `key`, checking its integrity value (RFC 3394 §2.2.3,
    /// RFC 5649 §3) before any byte is returned.
    ///
    /// - Throws: ``CryptoError/Code/authenticationFailed`` when the integrity check fails
    ///   (garbage, another key, another IV); ``CryptoError/Code/invalidInput`` for a length
    ///   no wrapping produces.
    public static func unwrap(_ wrapped: [UInt8], key: SecretBytes, padded: Bool, iv: [UInt8]? = nil)
        throws(CryptoError) -> SecretBytes
    {
        let shortest = padded ? 16 : 24
        guard wrapped.count >= shortest, wrapped.count % 8 == 0, wrapped.count <= maximumLength + 16 else {
            throw CryptoError(
                .invalidInput, "a wrapped key of \(wrapped.count) bytes is not what AES key wrap makes")
        }
        let context = try start(key: key, padded: padded, iv: iv, encrypting: false)
        var authenticated = false
        let plaintext = try SecretBytes(capacity: wrapped.count + 16) { (output) throws(CryptoError) -> Int in
            guard let target = output.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return 0 }
            var length: Int32 = 0
            var last: Int32 = 0
            authenticated =
                EVP_CipherUpdate(context.pointer, target, &length, wrapped, Int32(clamping: wrapped.count))
                == 1
                && EVP_CipherFinal_ex(context.pointer, target + Int(max(length, 0)), &last) == 1
                && length > 0 && last == 0
            ERR_clear_error()
            return authenticated ? Int(length) : 0
        }
        guard authenticated else {
            throw CryptoError(.authenticationFailed, "the wrapped key does not unwrap under this key")
        }
        return plaintext
    }

    private static func start(key: SecretBytes, padded: Bool, iv: [UInt8]?, encrypting: Bool)
        throws(CryptoError) -> SymmetricCipherContext
    {
        guard SymmetricAlgorithms.AESKeySize(rawValue: key.count) != nil else {
            throw CryptoError(.invalidInput, "AES keys are 16, 24 or 32 bytes, not \(key.count)")
        }
        if let iv {
            let length = padded ? 4 : 8
            guard iv.count == length else {
                throw CryptoError(.invalidInput, "the key wrap IV is \(length) bytes, not \(iv.count)")
            }
        }
        guard let cipher = SymmetricAlgorithms.aes(keyLength: key.count, padded ? .wrapPad : .wrap) else {
            throw CryptoError(.failed, "OpenSSL offers no AES key wrap")
        }
        let context = try SymmetricCipherContext()
        // Wrap modes must be allowed explicitly (they take the whole input in one call).
        EVP_CIPHER_CTX_set_flags(context.pointer, Int32(EVP_CIPHER_CTX_FLAG_WRAP_ALLOW))
        let started = key.withUnsafeBytes { keyBytes in
            EVP_CipherInit_ex2(
                context.pointer, cipher, keyBytes.bindMemory(to: UInt8.self).baseAddress, iv,
                encrypting ? 1 : 0, nil)
        }
        guard started == 1 else { throw CryptoError.openSSL(.failed, "cannot start AES key wrap") }
        return context
    }
}
