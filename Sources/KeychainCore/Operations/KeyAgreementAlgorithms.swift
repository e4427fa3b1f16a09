internal import KeychainCrypto

// What follows an ECDH key agreement for the Swift faces: the X9.63 KDF of Apple's
// `ecdhKeyExchange…X963SHA256`, and Apple's ECIES. A stored key's agreement is a
// ``DerivationOperation`` (the one key-use check, the per-use PIN); a key in memory agrees in
// ``KeyMaterial/sharedSecret(with:cofactor:derivation:)``. Both end here.

/// What becomes of an ECDH shared secret before it is returned (`Keychain.SharedSecretDerivation`
/// is this type).
public enum SharedSecretDerivation: Hashable, Sendable {
    /// The ANSI X9.63 KDF (SEC 1 §3.6.1) with `digest` and `sharedInfo`, giving `length`
    /// bytes: Apple's `ecdhKeyExchange…X963SHA256` and PKCS#11's CKD_SHA256_KDF.
    case x963(HashAlgorithm, sharedInfo: [UInt8], length: Int)

    /// The most bytes one derivation gives: the output is keys, not a stream.
    public static let maximumLength = 1 << 16

    /// The derivation of a raw shared secret (the caller's copy is left as it is).
    package func derive(_ secret: [UInt8]) throws(CoreError) -> [UInt8] {
        try Self.apply(self, to: SecretBytes(secret))
    }

    /// `secret` raw (`derivation` nil) or through `derivation`.
    static func apply(_ derivation: SharedSecretDerivation?, to secret: SecretBytes) throws(CoreError)
        -> [UInt8]
    {
        guard let derivation else { return secret.copyBytes() }
        switch derivation {
        case .x963(let digest, let sharedInfo, let length):
            guard (1...maximumLength).contains(length) else {
                throw CoreError(
                    .invalidArgument, "the X9.63 KDF gives 1 to \(maximumLength) bytes, not \(length)")
            }
            do throws(CryptoError) {
                return try KeyDerivationFunction.x963(
                    secret, sharedInfo: sharedInfo, digest: digest.crypto, length: length
                )
                .copyBytes()
            } catch {
                throw CoreError(memoryKey: error)
            }
        }
    }
}

/// One of Apple's ECIES algorithms (`eciesEncryptionCofactorVariableIVX963SHA256AESGCM`…):
/// an ephemeral ECDH, the X9.63 KDF with `digest`, AES-GCM. Messages are the ephemeral public
/// key ‖ ciphertext ‖ 16-byte tag, exactly as on Apple platforms (`Keychain.ECIESAlgorithm` is
/// this type).
public struct ECIESAlgorithm: Hashable, Sendable {
    /// The X9.63 KDF's hash.
    public var digest: HashAlgorithm
    /// Cofactor ECDH (the same result on P-256/384/521, whose cofactor is 1).
    public var cofactor: Bool
    /// The GCM IV comes from the KDF (Apple's recommended VariableIV forms), rather than
    /// being all zeros (the legacy forms).
    public var variableIV: Bool

    /// An algorithm; by default Apple's recommended form for `digest` (VariableIV, standard ECDH).
    public init(digest: HashAlgorithm, cofactor: Bool = false, variableIV: Bool = true) {
        self.digest = digest
        self.cofactor = cofactor
        self.variableIV = variableIV
    }

    private var scheme: ECIES { ECIES(digest: digest.crypto, variableIV: variableIV, cofactor: cofactor) }

    /// Encrypts `plaintext` for the holder of `key`'s private half (an EC key). Each call makes
    /// a new ephemeral key.
    package func encrypt(_ plaintext: [UInt8], to key: KeyMaterial) throws(CoreError) -> [UInt8] {
        try key.supportedAlgorithm().checkAgreement(for: "ECIES encryption")
        do throws(CryptoError) {
            return try scheme.encrypt(plaintext, to: key.key)
        } catch {
            throw CoreError(memoryKey: error)
        }
    }

    /// Decrypts a message with an EC private key held in memory; no plaintext is released
    /// unless the tag verifies.
    package func decrypt(_ message: [UInt8], with key: KeyMaterial) throws(CoreError) -> [UInt8] {
        try key.supportedAlgorithm().checkAgreement(for: "ECIES decryption")
        do throws(CryptoError) {
            return try scheme.decrypt(message, with: key.key)
        } catch {
            throw CoreError(memoryKey: error)
        }
    }

    /// The ephemeral public key a message for a stored key of `recipient` starts with: the
    /// peer of the key agreement that ``open(_:with:recipient:)`` finishes.
    package func ephemeralKey(of message: [UInt8], recipient: AsymmetricKeyAlgorithm) throws(CoreError)
        -> KeyMaterial
    {
        let curve = try recipient.agreementCurve(for: "ECIES decryption")
        let point: [UInt8]
        do throws(CryptoError) {
            point = try ECIES.ephemeralPublicKey(of: message, curve: curve)
        } catch {
            throw CoreError(memoryKey: error)
        }
        do {
            return try KeyMaterial(externalPublicKey: point, type: .ellipticCurve)
        } catch {
            throw CoreError(.invalidArgument, "the ECIES message's ephemeral key is not a point of the curve")
        }
    }

    /// Decrypts a message for a stored key of `recipient` with the key agreement `agreement`
    /// started with its ``ephemeralKey(of:recipient:)``.
    package func open(
        _ message: [UInt8], with agreement: DerivationOperation, recipient: AsymmetricKeyAlgorithm
    )
        throws(CoreError) -> [UInt8]
    {
        let curve = try recipient.agreementCurve(for: "ECIES decryption")
        let secret = try agreement.agreedSecret()
        do throws(CryptoError) {
            return try scheme.open(message, sharedSecret: secret, curve: curve)
        } catch {
            throw CoreError(memoryKey: error)
        }
    }
}

extension DerivationOperation {
    /// The shared secret of an ECDH operation raw or through `derivation`, for a face that
    /// returns it (Apple's key exchange): nothing stored.
    package func sharedSecret(derivation: SharedSecretDerivation?) throws(CoreError) -> [UInt8] {
        try SharedSecretDerivation.apply(derivation, to: try agreedSecret())
    }
}
