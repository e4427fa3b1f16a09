internal import COpenSSL

/// Which steps of HKDF run (RFC 5869 §2; PKCS#11 v3.0 §2.43 CK_HKDF_PARAMS bExtract/bExpand).
public enum HKDFMode: Sendable {
    /// PRK = HMAC(salt, key), then T(1) ‖ T(2) ‖ … from the PRK and `info`.
    case extractAndExpand
    /// The PRK alone (digest length; a shorter `length` takes its first bytes).
    case extractOnly
    /// `key` is already a PRK: only the expansion runs, `salt` is unused.
    case expandOnly
}

/// The key derivation functions of the secret-key mechanisms, by OpenSSL's EVP_KDF.
public enum KeyDerivationFunction {
    /// The longest X9.63 output: far above any key, low enough that a caller's length
    /// cannot make the token allocate without bound.
    public static let maximumX963Length = 1 << 20
    /// OpenSSL 3.0 keeps at most 1024 bytes of HKDF info (HKDF_MAXBUF).
    public static let maximumHKDFInfoLength = 1024
    /// Salt, key and shared info beyond this are refused (OpenSSL takes them whole).
    static let maximumInputLength = 1 << 24

    /// HKDF (RFC 5869) with `digest`: `length` bytes, at most 255 × the digest length when
    /// expanding (RFC 5869 §2.3), 1...digest length for extract only.
    ///
    /// - Throws: ``CryptoError/Code/invalidInput`` for a length out of range or info longer
    ///   than ``maximumHKDFInfoLength``; ``CryptoError/Code/failed`` when OpenSSL fails.
    public static func hkdf(
        _ mode: HKDFMode, digest: DigestAlgorithm, key: SecretBytes, salt: [UInt8], info: [UInt8], length: Int
    ) throws(CryptoError) -> SecretBytes {
        let longest = mode == .extractOnly ? digest.length : 255 * digest.length
        guard (1...longest).contains(length) else {
            throw CryptoError(
                .invalidInput, "HKDF-\(digest.name) gives 1 to \(longest) bytes here, not \(length)")
        }
        guard info.count <= maximumHKDFInfoLength else {
            throw CryptoError(.invalidInput, "HKDF info is at most \(maximumHKDFInfoLength) bytes")
        }
        guard salt.count <= maximumInputLength, key.count <= maximumInputLength else {
            throw CryptoError(.invalidInput, "the HKDF input is too long")
        }
        var modeValue: Int32
        switch mode {
        case .extractAndExpand: modeValue = Int32(EVP_KDF_HKDF_MODE_EXTRACT_AND_EXPAND)
        case .extractOnly: modeValue = Int32(EVP_KDF_HKDF_MODE_EXTRACT_ONLY)
        case .expandOnly: modeValue = Int32(EVP_KDF_HKDF_MODE_EXPAND_ONLY)
        }
        // OpenSSL's extract-only mode writes exactly the PRK: derive that, then keep `length`.
        let outputLength = mode == .extractOnly ? digest.length : length
        // Held in SecretBytes for its typed-throws scoped access (Array's closures rethrow
        // untyped errors); the salt and info are not secret.
        let saltBuffer = SecretBytes(salt)
        let infoBuffer = SecretBytes(info)
        let name = SymmetricParameter.digestName(digest)
        let full = try saltBuffer.withUnsafeBytes { (saltBytes) throws(CryptoError) -> SecretBytes in
            try infoBuffer.withUnsafeBytes { (infoBytes) throws(CryptoError) -> SecretBytes in
                try key.withUnsafeBytes { (keyBytes) throws(CryptoError) -> SecretBytes in
                    var parameters = [
                        OSSL_PARAM_construct_int(SymmetricParameter.mode, &modeValue),
                        OSSL_PARAM_construct_utf8_string(
                            CString.digest, UnsafeMutablePointer(mutating: name), 0),
                        OSSL_PARAM_construct_octet_string(
                            SymmetricParameter.key, UnsafeMutableRawPointer(mutating: keyBytes.baseAddress),
                            keyBytes.count),
                    ]
                    // Empty salt and info are left out: RFC 5869 §2.2 takes an absent salt as
                    // zeros, which HMAC treats as the empty key.
                    if !saltBytes.isEmpty {
                        parameters.append(
                            OSSL_PARAM_construct_octet_string(
                                SymmetricParameter.salt,
                                UnsafeMutableRawPointer(mutating: saltBytes.baseAddress), saltBytes.count))
                    }
                    if !infoBytes.isEmpty {
                        parameters.append(
                            OSSL_PARAM_construct_octet_string(
                                SymmetricParameter.info,
                                UnsafeMutableRawPointer(mutating: infoBytes.baseAddress),
                                infoBytes.count))
                    }
                    parameters.append(OSSL_PARAM_construct_end())
                    return try derive(
                        SymmetricAlgorithms.hkdf, "HKDF", length: outputLength, parameters: &parameters)
                }
            }
        }
        guard full.count != length else { return full }
        return full.withUnsafeBytes {
            SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0.prefix(length)))
        }
    }

    /// ANSI X9.63 KDF (SEC 1 §3.6.1): SHA(secret ‖ counter ‖ sharedInfo) blocks, for PKCS#11's
    /// CKD_SHA*_KDF of ECDH (v2.40 §2.3.16) and Apple's X963 key exchange and ECIES.
    ///
    /// - Throws: ``CryptoError/Code/invalidInput`` for an empty secret or a length outside
    ///   1...``maximumX963Length``.
    public static func x963(_ secret: SecretBytes, sharedInfo: [UInt8], digest: DigestAlgorithm, length: Int)
        throws(CryptoError) -> SecretBytes
    {
        guard (1...maximumX963Length).contains(length) else {
            throw CryptoError(
                .invalidInput, "X9.63 KDF gives 1 to \(maximumX963Length) bytes here, not \(length)")
        }
        guard !secret.isEmpty, secret.count <= maximumInputLength, sharedInfo.count <= maximumInputLength
        else {
            throw CryptoError(.invalidInput, "the X9.63 KDF needs a secret of 1 byte or more")
        }
        let infoBuffer = SecretBytes(sharedInfo)  // for its typed-throws scoped access
        return try secret.withUnsafeBytes { (secretBytes) throws(CryptoError) -> SecretBytes in
            try infoBuffer.withUnsafeBytes { (infoBytes) throws(CryptoError) -> SecretBytes in
                var parameters = [
                    OSSL_PARAM_construct_utf8_string(
                        CString.digest, UnsafeMutablePointer(mutating: SymmetricParameter.digestName(digest)),
                        0),
                    OSSL_PARAM_construct_octet_string(
                        SymmetricParameter.secret, UnsafeMutableRawPointer(mutating: secretBytes.baseAddress),
                        secretBytes.count),
                ]
                if !infoBytes.isEmpty {
                    parameters.append(
                        OSSL_PARAM_construct_octet_string(
                            SymmetricParameter.info, UnsafeMutableRawPointer(mutating: infoBytes.baseAddress),
                            infoBytes.count))
                }
                parameters.append(OSSL_PARAM_construct_end())
                return try derive(
                    SymmetricAlgorithms.x963, "X9.63 KDF", length: length, parameters: &parameters)
            }
        }
    }

    /// Runs `kdf` with `parameters` into a self-wiping buffer of `length` bytes. The
    /// EVP_KDF_CTX's copies of the inputs are wiped when it is freed.
    private static func derive(
        _ kdf: OpaquePointer?, _ name: String, length: Int, parameters: inout [OSSL_PARAM]
    ) throws(CryptoError) -> SecretBytes {
        guard let kdf, let context = EVP_KDF_CTX_new(kdf) else {
            throw CryptoError.openSSL(.failed, "cannot start the \(name)")
        }
        defer { EVP_KDF_CTX_free(context) }
        return try parameters.withUnsafeMutableBufferPointer { (list) throws(CryptoError) -> SecretBytes in
            try SecretBytes(count: length) { (output) throws(CryptoError) in
                guard
                    EVP_KDF_derive(
                        context, output.bindMemory(to: UInt8.self).baseAddress, output.count, list.baseAddress
                    ) == 1
                else { throw CryptoError.openSSL(.failed, "the \(name) failed") }
            }
        }
    }
}
