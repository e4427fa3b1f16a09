internal import COpenSSL

/// A private key made ready for one signature scheme: OpenSSL's operation context is set up
/// once and then signs any number of inputs, one at a time.
///
/// Setting the context up (a provider lookup, a key reference, the padding and digest
/// parameters) costs about 1 µs, 5 % of an ECDSA P-256 signature; a PKCS#11 session that
/// signs again with the same key and mechanism reuses its context, as `openssl speed` does.
/// Not thread-safe: its owner (one session) serialises its use.
public final class SigningContext {
    public let key: AsymmetricKey
    public let scheme: SignatureScheme
    private let context: OpaquePointer
    /// The longest signature OpenSSL can produce with this key (DER for ECDSA).
    private let maximumLength: Int

    /// Throws when the key has no private half, or cannot use the scheme's parameters.
    /// EdDSA signs whole messages: use `AsymmetricKey.sign` for it.
    public init(key: AsymmetricKey, scheme: SignatureScheme) throws(CryptoError) {
        guard key.hasPrivateKey else { throw CryptoError(.invalidInput, "a public key cannot sign") }
        guard !scheme.signsWholeMessage else {
            throw CryptoError(.unsupported, "EdDSA signs the whole message, never a hash")
        }
        self.key = key
        self.scheme = scheme
        context = try key.operationContext(scheme: scheme, initialize: EVP_PKEY_sign_init)
        maximumLength = Int(EVP_PKEY_get_size(key.pkey))
    }

    deinit { EVP_PKEY_CTX_free(context) }

    /// Signs `input`, already hashed where the scheme hashes. ECDSA signatures come back as
    /// r ‖ s, PKCS#11's format.
    public func sign(hash input: [UInt8]) throws(CryptoError) -> [UInt8] {
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
}
