internal import COpenSSL

/// AES-256-GCM sealing of private attribute values (ARCHITECTURE.md §3.6). A sealed box is
/// nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes); the associated data binds it to its place
/// (object and attribute), so a box copied elsewhere does not open.
///
/// The cipher is fetched once from the module's own library context (`LibraryContext`).
public enum SecretBox {
    public static let keyLength = 32
    static let nonceLength = 12
    static let tagLength = 16
    /// The longest plaintext or associated data sealed: OpenSSL's update calls take an int.
    static let maximumLength = Int(Int32.max) - 64

    /// Seals `plaintext` under `key` (32 bytes), binding `associatedData`, with a random nonce.
    public static func seal(_ plaintext: SecretBytes, key: SecretBytes, associatedData: [UInt8])
        throws(CryptoError) -> [UInt8]
    {
        guard key.count == keyLength else { throw CryptoError(.invalidInput, "AES-256 keys are 32 bytes") }
        let nonce = try SecureRandom.bytes(nonceLength)
        let context = try SymmetricCipherContext()
        let started = key.withUnsafeBytes { keyBytes in
            EVP_EncryptInit_ex2(
                context.pointer, LibraryContext.aes256GCM, keyBytes.bindMemory(to: UInt8.self).baseAddress,
                nonce,
                nil)
        }
        guard started == 1 else { throw CryptoError.openSSL(.failed, "cannot start encryption") }
        return try sealStarted(context, nonce: nonce, plaintext, associatedData: associatedData)
    }

    /// The box of `plaintext` bound to `associatedData`, from `context` keyed and started with
    /// `nonce` (`seal`, ``SealingContext``).
    static func sealStarted(
        _ context: SymmetricCipherContext, nonce: [UInt8], _ plaintext: SecretBytes, associatedData: [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        guard nonce.count == nonceLength else { throw CryptoError(.invalidInput, "GCM nonces are 12 bytes") }
        guard plaintext.count <= maximumLength, associatedData.count <= maximumLength else {
            throw CryptoError(.invalidInput, "the value is too long to seal")
        }
        var length: Int32 = 0
        if !associatedData.isEmpty {
            guard
                EVP_EncryptUpdate(context.pointer, nil, &length, associatedData, Int32(associatedData.count))
                    == 1
            else { throw CryptoError.openSSL(.failed, "cannot authenticate data") }
        }
        // GCM is a stream mode: the ciphertext is exactly as long as the plaintext.
        var box = [UInt8](repeating: 0, count: nonceLength + plaintext.count + tagLength)
        let encrypted = box.withUnsafeMutableBufferPointer { output -> Bool in
            guard let base = output.baseAddress else { return false }
            var total: Int32 = 0
            if !plaintext.isEmpty {
                let updated = plaintext.withUnsafeBytes { input in
                    EVP_EncryptUpdate(
                        context.pointer, base + nonceLength, &length,
                        input.bindMemory(to: UInt8.self).baseAddress,
                        Int32(input.count))
                }
                guard updated == 1 else { return false }
                total = length
            }
            guard EVP_EncryptFinal_ex(context.pointer, base + nonceLength + Int(total), &length) == 1,
                Int(total) + Int(length) == plaintext.count
            else { return false }
            return EVP_CIPHER_CTX_ctrl(
                context.pointer, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), base + nonceLength + plaintext.count)
                == 1
        }
        guard encrypted else { throw CryptoError.openSSL(.failed, "cannot encrypt") }
        box.replaceSubrange(0..<nonceLength, with: nonce)
        return box
    }

    /// Opens a sealed box into a self-wiping buffer.
    ///
    /// - Throws: ``CryptoError/Code/wrongPassword`` when the tag does not verify: the key or
    ///   the associated data is not the box's, or the box was altered. That is the only code
    ///   that means "wrong key": ``CryptoError/Code/invalidInput`` is a box too short or a key
    ///   of the wrong size, ``CryptoError/Code/failed`` OpenSSL failing for another reason
    ///   (memory, a missing cipher). A caller counting wrong PINs counts only the first.
    public static func open(_ box: [UInt8], key: SecretBytes, associatedData: [UInt8])
        throws(CryptoError) -> SecretBytes
    {
        guard key.count == keyLength, box.count >= nonceLength + tagLength, box.count <= maximumLength,
            associatedData.count <= maximumLength
        else { throw CryptoError(.invalidInput, "sealed value is malformed") }
        let context = try SymmetricCipherContext()
        let started = key.withUnsafeBytes { keyBytes in
            box.withUnsafeBufferPointer { boxBytes in
                EVP_DecryptInit_ex2(
                    context.pointer, LibraryContext.aes256GCM,
                    keyBytes.bindMemory(to: UInt8.self).baseAddress,
                    boxBytes.baseAddress, nil)
            }
        }
        guard started == 1 else { throw CryptoError.openSSL(.failed, "cannot start decryption") }
        var length: Int32 = 0
        if !associatedData.isEmpty {
            guard
                EVP_DecryptUpdate(context.pointer, nil, &length, associatedData, Int32(associatedData.count))
                    == 1
            else { throw CryptoError.openSSL(.failed, "cannot authenticate data") }
        }
        let ciphertextLength = box.count - nonceLength - tagLength
        var tag = Array(box.suffix(tagLength))
        guard EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tag) == 1 else {
            throw CryptoError.openSSL(.failed, "cannot decrypt")
        }
        // Decrypted into the self-wiping buffer directly: no plaintext copy is left behind,
        // whether the tag verifies or not.
        var authenticated = true
        let plaintext = try SecretBytes(capacity: ciphertextLength) { (output) throws(CryptoError) -> Int in
            guard let target = output.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return 0 }
            var total: Int32 = 0
            if ciphertextLength > 0 {
                let updated = box.withUnsafeBufferPointer { boxBytes in
                    EVP_DecryptUpdate(
                        context.pointer, target, &length, boxBytes.baseAddress.map { $0 + nonceLength },
                        Int32(ciphertextLength))
                }
                guard updated == 1 else { throw CryptoError.openSSL(.failed, "cannot decrypt") }
                total = length
            }
            // EVP_DecryptFinal_ex's only failure in GCM is a tag that does not verify.
            authenticated = EVP_DecryptFinal_ex(context.pointer, target + Int(total), &length) == 1
            ERR_clear_error()
            return authenticated ? Int(total) + Int(length) : 0
        }
        guard authenticated else {
            throw CryptoError(
                .wrongPassword, "sealed value does not authenticate (wrong key or altered data)")
        }
        return plaintext
    }

    /// `seal` for callers still holding plain arrays; the plaintext and key are copied into
    /// self-wiping buffers (the caller's arrays are the caller's to wipe).
    public static func seal(_ plaintext: [UInt8], key: [UInt8], associatedData: [UInt8]) throws(CryptoError)
        -> [UInt8]
    {
        try seal(SecretBytes(plaintext), key: SecretBytes(key), associatedData: associatedData)
    }

    /// `open` for callers still holding plain arrays. Throws as the `SecretBytes` form does
    /// (``CryptoError/Code/wrongPassword`` for a tag that does not verify).
    public static func open(_ box: [UInt8], key: [UInt8], associatedData: [UInt8]) throws(CryptoError)
        -> [UInt8]
    {
        try open(box, key: SecretBytes(key), associatedData: associatedData).copyBytes()
    }
}
