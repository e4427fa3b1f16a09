internal import COpenSSL

/// A key made ready for one signature scheme, to sign (a private key) or to verify: OpenSSL's
/// operation context is set up once and then signs or verifies any number of inputs, one at a
/// time.
///
/// Setting the context up (a provider lookup, a key reference, the padding and digest
/// parameters) costs about 1 µs, 5 % of an ECDSA P-256 signature; a PKCS#11 session that
/// signs again with the same key and mechanism reuses its context, as `openssl speed` does. A
/// verification's context costs more (about 3 µs, 14 % of an RSA-2048 verification).
/// Not thread-safe: its owner (one session) serialises its use.
public final class SigningContext {
    public let key: AsymmetricKey
    public let scheme: SignatureScheme
    /// True for a context that verifies; false for one that signs.
    public let verifies: Bool
    private let context: OpaquePointer
    /// The longest signature OpenSSL can produce with this key (DER for ECDSA).
    private let maximumLength: Int

    /// Throws when a signing context's key has no private half, or the key cannot use the
    /// scheme's parameters. EdDSA signs whole messages (use `AsymmetricKey.sign` and `verify`),
    /// and raw RSA verifies by a public-key operation of its own (`AsymmetricKey.verifyHash`).
    public init(key: AsymmetricKey, scheme: SignatureScheme, verifying: Bool = false) throws(CryptoError) {
        guard verifying || key.hasPrivateKey else {
            throw CryptoError(.invalidInput, "a public key cannot sign")
        }
        guard !scheme.signsWholeMessage else {
            throw CryptoError(.unsupported, "EdDSA signs the whole message, never a hash")
        }
        guard !(verifying && scheme == .rsaRaw) else {
            throw CryptoError(.unsupported, "raw RSA verifies through AsymmetricKey.verifyHash")
        }
        self.key = key
        self.scheme = scheme
        verifies = verifying
        context = try key.operationContext(
            scheme: scheme, initialize: verifying ? EVP_PKEY_verify_init : EVP_PKEY_sign_init)
        maximumLength = Int(EVP_PKEY_get_size(key.pkey))
    }

    deinit { EVP_PKEY_CTX_free(context) }

    /// Signs `input`, already hashed where the scheme hashes. ECDSA signatures come back as
    /// r ‖ s, PKCS#11's format.
    public func sign(hash input: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard !verifies else { throw CryptoError(.failed, "this context verifies; it does not sign") }
        var input = input
        if scheme == .rsaRaw {
            // v2.40 §2.1.8: the input, at most one modulus long, is left-padded with zeros.
            guard input.count <= maximumLength else {
                throw CryptoError(.invalidInput, "raw RSA signs at most \(maximumLength) bytes")
            }
            input = AsymmetricKey.leftPadded(input, to: maximumLength)
        }
        var signature = [UInt8](repeating: 0, count: max(maximumLength, 1))
        var length = signature.count
        guard EVP_PKEY_sign(context, &signature, &length, input, input.count) == 1 else {
            throw CryptoError.openSSL(.invalidInput, "cannot sign this input with this key")
        }
        signature.removeLast(signature.count - min(length, signature.count))
        if case .ecdsa = scheme { return try key.rawECDSA(fromDER: signature) }
        return signature
    }

    /// Whether `signature` (PKCS#11's form: ECDSA r ‖ s) is the key's signature of `input`,
    /// already hashed where the scheme hashes: the check `AsymmetricKey.verifyHash` makes.
    public func verify(_ signature: [UInt8], hash input: [UInt8]) throws(CryptoError) -> Bool {
        guard verifies else { throw CryptoError(.failed, "this context signs; it does not verify") }
        var encoded = signature
        if case .ecdsa = scheme {
            guard let der = key.derECDSA(fromRaw: signature) else { return false }
            encoded = der
        }
        let result = EVP_PKEY_verify(context, encoded, encoded.count, input, input.count)
        ERR_clear_error()
        return result == 1
    }
}
