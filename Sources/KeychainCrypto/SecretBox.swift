internal import COpenSSL

/// AES-256-GCM sealing of private attribute values (DESIGN §7). A sealed box is
/// nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes); the associated data binds it to its place
/// (object and attribute), so a box copied elsewhere does not open.
public enum SecretBox {
    public static let keyLength = 32
    static let nonceLength = 12
    static let tagLength = 16

    public static func seal(_ plaintext: [UInt8], key: [UInt8], associatedData: [UInt8]) throws(CryptoError)
        -> [UInt8]
    {
        guard key.count == keyLength else { throw CryptoError(.invalidInput, "AES-256 keys are 32 bytes") }
        let nonce = try SecureRandom.bytes(nonceLength)
        let context = try CipherContext()
        guard EVP_EncryptInit_ex(context.pointer, EVP_aes_256_gcm(), nil, key, nonce) == 1 else {
            throw CryptoError.openSSL(.failed, "cannot start encryption")
        }
        var length: Int32 = 0
        if !associatedData.isEmpty {
            guard
                EVP_EncryptUpdate(context.pointer, nil, &length, associatedData, Int32(associatedData.count))
                    == 1
            else { throw CryptoError.openSSL(.failed, "cannot authenticate data") }
        }
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        var total: Int32 = 0
        if !plaintext.isEmpty {
            guard
                EVP_EncryptUpdate(context.pointer, &ciphertext, &length, plaintext, Int32(plaintext.count))
                    == 1
            else { throw CryptoError.openSSL(.failed, "cannot encrypt") }
            total = length
        }
        let finished = ciphertext.withUnsafeMutableBufferPointer { buffer in
            EVP_EncryptFinal_ex(context.pointer, buffer.baseAddress.map { $0 + Int(total) }, &length)
        }
        guard finished == 1 else { throw CryptoError.openSSL(.failed, "cannot encrypt") }
        total += length
        var tag = [UInt8](repeating: 0, count: tagLength)
        guard EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), &tag) == 1 else {
            throw CryptoError.openSSL(.failed, "cannot finish encryption")
        }
        return nonce + ciphertext.prefix(Int(total)) + tag
    }

    /// Opens a sealed box; throws `.invalidInput` when the key, the associated data or the
    /// box is wrong (the tag does not verify).
    public static func open(_ box: [UInt8], key: [UInt8], associatedData: [UInt8]) throws(CryptoError)
        -> [UInt8]
    {
        guard key.count == keyLength, box.count >= nonceLength + tagLength else {
            throw CryptoError(.invalidInput, "sealed value is malformed")
        }
        let nonce = Array(box.prefix(nonceLength))
        var tag = Array(box.suffix(tagLength))
        let ciphertext = Array(box[nonceLength..<(box.count - tagLength)])
        let context = try CipherContext()
        guard EVP_DecryptInit_ex(context.pointer, EVP_aes_256_gcm(), nil, key, nonce) == 1 else {
            throw CryptoError.openSSL(.failed, "cannot start decryption")
        }
        var length: Int32 = 0
        if !associatedData.isEmpty {
            guard
                EVP_DecryptUpdate(context.pointer, nil, &length, associatedData, Int32(associatedData.count))
                    == 1
            else { throw CryptoError.openSSL(.failed, "cannot authenticate data") }
        }
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        var total: Int32 = 0
        if !ciphertext.isEmpty {
            guard
                EVP_DecryptUpdate(context.pointer, &plaintext, &length, ciphertext, Int32(ciphertext.count))
                    == 1
            else { throw CryptoError.openSSL(.failed, "cannot decrypt") }
            total = length
        }
        guard EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tag) == 1 else {
            throw CryptoError.openSSL(.failed, "cannot decrypt")
        }
        let verified = plaintext.withUnsafeMutableBufferPointer { buffer in
            EVP_DecryptFinal_ex(context.pointer, buffer.baseAddress.map { $0 + Int(total) }, &length)
        }
        ERR_clear_error()
        guard verified == 1 else { throw CryptoError(.invalidInput, "sealed value does not authenticate") }
        return Array(plaintext.prefix(Int(total + length)))
    }
}

/// The owner of an `EVP_CIPHER_CTX`.
private final class CipherContext {
    let pointer: OpaquePointer

    init() throws(CryptoError) {
        guard let pointer = EVP_CIPHER_CTX_new() else {
            throw CryptoError.openSSL(.failed, "cannot allocate")
        }
        self.pointer = pointer
    }

    deinit { EVP_CIPHER_CTX_free(pointer) }
}

/// PBKDF2-HMAC-SHA256, the slow key derivation of PINs (DESIGN §7).
public enum PasswordKeyDerivation {
    /// DESIGN §7's floor, OWASP's 2023 figure for PBKDF2-HMAC-SHA256.
    public static let defaultIterations = 600_000

    public static func derive(password: [UInt8], salt: [UInt8], iterations: Int, length: Int)
        throws(CryptoError)
        -> [UInt8]
    {
        var output = [UInt8](repeating: 0, count: length)
        let ok = password.withUnsafeBufferPointer { passwordBytes in
            passwordBytes.withMemoryRebound(to: CChar.self) { characters in
                PKCS5_PBKDF2_HMAC(
                    characters.baseAddress, Int32(characters.count), salt, Int32(salt.count),
                    Int32(iterations),
                    EVP_sha256(), Int32(length), &output)
            }
        }
        guard ok == 1 else { throw CryptoError.openSSL(.failed, "key derivation failed") }
        return output
    }
}
