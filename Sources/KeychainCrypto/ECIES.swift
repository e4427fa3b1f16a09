// ECIES as Apple's Security framework does it (SecKeyAlgorithm
// `eciesEncryption{Standard,Cofactor}{,VariableIV}X963SHA…AESGCM`): pure crypto over the key
// agreement, X9.63 KDF and AES-GCM primitives, no keychain.

/// Apple's elliptic-curve integrated encryption scheme, byte for byte.
///
/// The construction (Apple's SecKey.h documentation of the algorithms, and its open-source
/// `SecKeyAdaptors.m`, checked against the known ciphertexts of `si-44-seckey-ies.m`):
///
/// 1. The sender makes a fresh key pair on the recipient's curve and computes the ECDH shared
///    secret of its private half and the recipient's public key (standard or cofactor ECDH;
///    the same bytes on the NIST prime curves, whose cofactor is 1).
/// 2. The ANSI X9.63 KDF with the algorithm's hash turns the secret into key material, with
///    SharedInfo = the ephemeral public key as X9.63 uncompressed bytes (04 ‖ X ‖ Y).
/// 3. The AES key is AES-128 when the recipient's field has at most 256 bits (P-256), AES-256
///    for larger fields (P-384, P-521): Apple takes the size from the public key's length.
///    The legacy forms ask the KDF for the key alone and use an all-zero 16-byte GCM IV; the
///    VariableIV forms ask for key ‖ IV in one output and use its last 16 bytes as the IV.
/// 4. AES-GCM, no additional data, a 16-byte tag. The message is
///    ephemeral public key ‖ ciphertext ‖ tag, the ciphertext as long as the plaintext.
///
/// The recipient splits the message at the point's length (fixed by its own curve), computes
/// the same secret with its private key and the ephemeral public key, and opens the GCM box:
/// a tag that does not verify releases nothing.
public struct ECIES: Sendable, Equatable {
    /// The X9.63 KDF's hash.
    public let digest: DigestAlgorithm
    /// True for the VariableIV forms: the IV comes from the KDF instead of being all zeros.
    public let variableIV: Bool
    /// True for the Cofactor forms: cofactor ECDH (SEC 1 §3.3.2).
    public let cofactor: Bool

    /// GCM's tag length in Apple's format.
    public static let tagLength = 16
    /// GCM's IV length in Apple's format: 16 bytes, not the usual 12 (GCM hashes it).
    static let ivLength = 16

    /// One of Apple's ECIES algorithms.
    public init(digest: DigestAlgorithm, variableIV: Bool, cofactor: Bool) {
        self.digest = digest
        self.variableIV = variableIV
        self.cofactor = cofactor
    }

    /// The AES key length for a recipient on `curve`: 16 bytes up to 256-bit fields, else 32.
    public static func keyLength(for curve: EllipticCurve) -> Int { curve.bits > 256 ? 32 : 16 }

    /// The length of an X9.63 uncompressed point of `curve`: what starts every message.
    public static func pointLength(of curve: EllipticCurve) -> Int { 1 + 2 * ((curve.bits + 7) / 8) }

    /// The shortest message for `curve`: the ephemeral key and the tag of an empty plaintext.
    public static func minimumLength(for curve: EllipticCurve) -> Int { pointLength(of: curve) + tagLength }

    /// Encrypts `plaintext` for the holder of `recipient`'s private key. Needs only the
    /// public key.
    ///
    /// - Throws: ``CryptoError/Code/unsupported`` for a key that is not on a NIST prime
    ///   curve; ``CryptoError/Code/failed`` when OpenSSL fails.
    public func encrypt(_ plaintext: [UInt8], to recipient: AsymmetricKey) throws(CryptoError) -> [UInt8] {
        guard case .ec(let curve) = recipient.algorithm, let recipientPoint = recipient.publicPoint else {
            throw CryptoError(.unsupported, "ECIES needs an EC key on P-256, P-384 or P-521")
        }
        let ephemeral = try AsymmetricKey.generate(.ec(curve))
        guard let ephemeralPoint = ephemeral.publicPoint, ephemeralPoint.count == ECIES.pointLength(of: curve)
        else { throw CryptoError(.failed, "the ephemeral key has no uncompressed point") }
        let secret = try ephemeral.sharedSecret(withPeerPublicValue: recipientPoint, cofactor: cofactor)
        let (key, iv) = try keyAndIV(secret, ephemeralPublicKey: ephemeralPoint, curve: curve)
        let cipher = try SymmetricCipher(
            key: key, mode: .gcm(iv: iv, additionalData: [], tagLength: ECIES.tagLength), encrypting: true)
        return ephemeralPoint + (try ECIES.run(cipher, plaintext))
    }

    /// Decrypts a message with a private key held in memory.
    ///
    /// - Throws: as ``open(_:sharedSecret:curve:)``, and ``CryptoError/Code/unsupported``
    ///   for a key that is not a private key on a NIST prime curve.
    public func decrypt(_ message: [UInt8], with privateKey: AsymmetricKey) throws(CryptoError) -> [UInt8] {
        guard case .ec(let curve) = privateKey.algorithm, privateKey.hasPrivateKey else {
            throw CryptoError(
                .unsupported, "ECIES decryption needs an EC private key on P-256, P-384 or P-521")
        }
        let ephemeral = try ECIES.ephemeralPublicKey(of: message, curve: curve)
        let secret = try privateKey.sharedSecret(withPeerPublicValue: ephemeral, cofactor: cofactor)
        return try open(message, sharedSecret: secret, curve: curve)
    }

    /// The ephemeral public key a message for a recipient on `curve` starts with: the peer
    /// value of the recipient's key agreement.
    ///
    /// - Throws: ``CryptoError/Code/invalidInput`` for a message too short to hold the key
    ///   and a tag, or one that does not start with an uncompressed point (04).
    public static func ephemeralPublicKey(of message: [UInt8], curve: EllipticCurve) throws(CryptoError)
        -> [UInt8]
    {
        guard message.count >= minimumLength(for: curve) else {
            throw CryptoError(
                .invalidInput,
                "an ECIES message for this key has at least \(minimumLength(for: curve)) bytes, not \(message.count)"
            )
        }
        guard message.first == 0x04 else {
            throw CryptoError(.invalidInput, "an ECIES message starts with an uncompressed point (04)")
        }
        return Array(message.prefix(pointLength(of: curve)))
    }

    /// Opens a message once the recipient has computed `sharedSecret` with its private key
    /// and the message's ephemeral public key (``ephemeralPublicKey(of:curve:)``): the
    /// decryption of a stored key, whose key agreement runs in the keychain.
    ///
    /// - Throws: ``CryptoError/Code/invalidInput`` for a malformed message;
    ///   ``CryptoError/Code/authenticationFailed`` when the tag does not verify (a changed
    ///   message, another recipient, another algorithm), with no plaintext released.
    public func open(_ message: [UInt8], sharedSecret: SecretBytes, curve: EllipticCurve) throws(CryptoError)
        -> [UInt8]
    {
        let ephemeral = try ECIES.ephemeralPublicKey(of: message, curve: curve)
        let (key, iv) = try keyAndIV(sharedSecret, ephemeralPublicKey: ephemeral, curve: curve)
        let cipher = try SymmetricCipher(
            key: key, mode: .gcm(iv: iv, additionalData: [], tagLength: ECIES.tagLength), encrypting: false)
        return try ECIES.run(cipher, Array(message.dropFirst(ephemeral.count)))
    }

    /// Step 2 and 3: the AES key and the GCM IV from the shared secret.
    private func keyAndIV(_ secret: SecretBytes, ephemeralPublicKey: [UInt8], curve: EllipticCurve)
        throws(CryptoError) -> (SecretBytes, [UInt8])
    {
        let keyLength = ECIES.keyLength(for: curve)
        let material = try KeyDerivationFunction.x963(
            secret, sharedInfo: ephemeralPublicKey, digest: digest,
            length: keyLength + (variableIV ? ECIES.ivLength : 0))
        guard material.count == keyLength + (variableIV ? ECIES.ivLength : 0) else {
            throw CryptoError(.failed, "the X9.63 KDF gave the wrong length")
        }
        return material.withUnsafeBytes { bytes in
            let key = SecretBytes(copying: UnsafeRawBufferPointer(rebasing: bytes.prefix(keyLength)))
            let iv =
                variableIV
                ? Array(bytes.suffix(ECIES.ivLength)) : [UInt8](repeating: 0, count: ECIES.ivLength)
            return (key, iv)
        }
    }

    /// A one-shot GCM operation: ciphertext ‖ tag from plaintext, or plaintext from both.
    private static func run(_ cipher: SymmetricCipher, _ input: [UInt8]) throws(CryptoError) -> [UInt8] {
        var head: Result<[UInt8], CryptoError> = .success([])
        input.withUnsafeBytes { bytes in
            do throws(CryptoError) {
                head = .success(try cipher.update(bytes))
            } catch {
                head = .failure(error)
            }
        }
        return try head.get() + cipher.finish()
    }
}
