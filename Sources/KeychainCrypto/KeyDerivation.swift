internal import COpenSSL

/// PBKDF2-HMAC-SHA256, the slow key derivation of PINs (ARCHITECTURE.md §6.2), run by OpenSSL's PBKDF2
/// KDF in the module's own library context.
public enum PasswordKeyDerivation {
    /// ARCHITECTURE.md §11.4's floor, OWASP's 2023 figure for PBKDF2-HMAC-SHA256.
    public static let defaultIterations = 600_000
    /// The iteration counts `derive` accepts. The count comes from a stored PIN record, a
    /// file anyone who can write the store can edit: below SP 800-132's 1,000 the PIN would
    /// be cheap to guess; above ten million one login would take minutes (0x7FFFFFFF took
    /// more than 60 s), holding the module's locks all along.
    public static let iterationRange = 1_000...10_000_000
    /// The longest derived key: more than a few hash outputs is never a key.
    public static let maximumLength = 1024

    /// Derives `length` bytes from `password` and `salt`.
    ///
    /// - Throws: ``CryptoError/Code/invalidInput`` for an iteration count outside
    ///   ``iterationRange`` or a length outside 1…``maximumLength`` (never a trap, whatever a
    ///   stored record says); ``CryptoError/Code/failed`` when OpenSSL fails.
    public static func derive(password: SecretBytes, salt: [UInt8], iterations: Int, length: Int)
        throws(CryptoError) -> SecretBytes
    {
        guard iterationRange.contains(iterations) else {
            throw CryptoError(
                .invalidInput,
                "PBKDF2 iteration count \(iterations) is outside \(iterationRange.lowerBound)…\(iterationRange.upperBound)"
            )
        }
        guard (1...maximumLength).contains(length) else {
            throw CryptoError(.invalidInput, "PBKDF2 output length \(length) is outside 1…\(maximumLength)")
        }
        guard let kdf = LibraryContext.pbkdf2, let context = EVP_KDF_CTX_new(kdf) else {
            throw CryptoError.openSSL(.failed, "cannot start key derivation")
        }
        defer { EVP_KDF_CTX_free(context) }  // also wipes the password copy OpenSSL keeps
        var count = UInt64(iterations)
        // 1 = PKCS #5 mode: no SP 800-132 lower-bound checks beyond ours (iterationRange).
        var pkcs5: Int32 = 1
        return try SecretBytes(count: length) { (output) throws(CryptoError) in
            let ok = password.withUnsafeBytes { passwordBytes in
                salt.withUnsafeBytes { saltBytes in
                    var parameters = [
                        OSSL_PARAM_construct_octet_string(
                            Parameter.password, UnsafeMutableRawPointer(mutating: passwordBytes.baseAddress),
                            passwordBytes.count),
                        OSSL_PARAM_construct_octet_string(
                            Parameter.salt, UnsafeMutableRawPointer(mutating: saltBytes.baseAddress),
                            saltBytes.count),
                        OSSL_PARAM_construct_uint64(Parameter.iterations, &count),
                        OSSL_PARAM_construct_utf8_string(
                            Parameter.digest, UnsafeMutablePointer(mutating: Parameter.sha256), 0),
                        OSSL_PARAM_construct_int(Parameter.pkcs5, &pkcs5),
                        OSSL_PARAM_construct_end(),
                    ]
                    return EVP_KDF_derive(
                        context, output.bindMemory(to: UInt8.self).baseAddress, output.count, &parameters)
                }
            }
            guard ok == 1 else { throw CryptoError.openSSL(.failed, "key derivation failed") }
        }
    }

    /// `derive` for callers still holding plain arrays: the password is copied into a
    /// self-wiping buffer and the result copied out (the returned array is the caller's to
    /// wipe). Throws as the `SecretBytes` form does.
    public static func derive(password: [UInt8], salt: [UInt8], iterations: Int, length: Int)
        throws(CryptoError) -> [UInt8]
    {
        try derive(password: SecretBytes(password), salt: salt, iterations: iterations, length: length)
            .copyBytes()
    }

    /// OSSL_PARAM keys and values: C strings with static storage, since an OSSL_PARAM keeps
    /// the pointers it is given.
    private enum Parameter {
        static var password: UnsafePointer<CChar> { CString.make("pass") }
        static var salt: UnsafePointer<CChar> { CString.make("salt") }
        static var iterations: UnsafePointer<CChar> { CString.make("iter") }
        static var digest: UnsafePointer<CChar> { CString.digest }
        static var pkcs5: UnsafePointer<CChar> { CString.make("pkcs5") }
        static var sha256: UnsafePointer<CChar> { CString.sha256 }
    }
}
