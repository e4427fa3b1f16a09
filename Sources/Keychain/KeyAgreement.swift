public import KeychainCore
internal import KeychainCrypto

// Key agreement (ECDH) and Apple's ECIES, for keys in memory and stored EC private keys. A
// stored key agrees on a secret only through the core's one key-use check, as PKCS#11's
// C_DeriveKey with CKM_ECDH1_DERIVE does: it must be an EC private key with CKA_DERIVE TRUE
// and, when it has a CKA_ALLOWED_MECHANISMS list, CKM_ECDH1_DERIVE (or COFACTOR) on it.

/// What becomes of an ECDH shared secret before it is returned.
public enum SharedSecretDerivation: Hashable, Sendable {
    /// The ANSI X9.63 KDF (SEC 1 §3.6.1) with `digest` and `sharedInfo`, giving `length`
    /// bytes: Apple's `ecdhKeyExchange…X963SHA256` and PKCS#11's CKD_SHA256_KDF.
    case x963(DigestAlgorithm, sharedInfo: [UInt8], length: Int)

    /// The most bytes one derivation gives: the output is keys, not a stream.
    public static let maximumLength = 1 << 16
}

/// One of Apple's ECIES algorithms (`eciesEncryptionCofactorVariableIVX963SHA256AESGCM`…):
/// an ephemeral ECDH, the X9.63 KDF with `digest`, AES-GCM. Messages are the ephemeral public
/// key ‖ ciphertext ‖ 16-byte tag, exactly as on Apple platforms.
public struct ECIESAlgorithm: Hashable, Sendable {
    /// The X9.63 KDF's hash.
    public var digest: DigestAlgorithm
    /// Cofactor ECDH (the same result on P-256/384/521, whose cofactor is 1).
    public var cofactor: Bool
    /// The GCM IV comes from the KDF (Apple's recommended VariableIV forms), rather than
    /// being all zeros (the legacy forms).
    public var variableIV: Bool

    /// An algorithm; by default Apple's recommended form for `digest` (VariableIV, standard ECDH).
    public init(digest: DigestAlgorithm, cofactor: Bool = false, variableIV: Bool = true) {
        self.digest = digest
        self.cofactor = cofactor
        self.variableIV = variableIV
    }

    var scheme: ECIES { ECIES(digest: digest.crypto, variableIV: variableIV, cofactor: cofactor) }
}

extension SharedSecretDerivation {
    /// Applies the KDF to a raw shared secret.
    func derive(_ secret: SecretBytes) throws(KeychainError) -> [UInt8] {
        switch self {
        case .x963(let digest, let sharedInfo, let length):
            guard (1...SharedSecretDerivation.maximumLength).contains(length) else {
                throw KeychainError(
                    .parameter,
                    "the X9.63 KDF gives 1 to \(SharedSecretDerivation.maximumLength) bytes, not \(length)")
            }
            return try KeychainError.crypto { () throws(CryptoError) in
                try KeyDerivationFunction.x963(
                    secret, sharedInfo: sharedInfo, digest: digest.crypto, length: length
                )
                .copyBytes()
            }
        }
    }
}

/// The curve of an EC key, or errSecParam naming what ECDH and ECIES need.
private func curve(of key: AsymmetricKey, for action: String) throws(KeychainError) -> EllipticCurve {
    guard case .ec(let curve) = key.algorithm else {
        throw KeychainError(.parameter, "\(action) needs an EC key on P-256, P-384 or P-521")
    }
    return curve
}

/// The raw ECDH secret of `key` and `peer`, errors as the Swift faces report them.
private func agree(_ key: AsymmetricKey, with peer: PublicKey, cofactor: Bool) throws(KeychainError)
    -> SecretBytes
{
    _ = try curve(of: key, for: "a key agreement")
    guard let point = peer.key.publicPoint, case .ec = peer.key.algorithm else {
        throw KeychainError(.parameter, "the peer of a key agreement must be an EC public key")
    }
    return try KeychainError.crypto { () throws(CryptoError) in
        try key.sharedSecret(withPeerPublicValue: point, cofactor: cofactor)
    }
}

extension PrivateKey {
    /// The ECDH shared secret of this key and `peer` (SEC 1 §3.3.1; with `cofactor`, §3.3.2),
    /// raw (the x-coordinate, as wide as the field) or through `derivation`.
    ///
    /// - Throws: ``KeychainError/Code/parameter`` for a key that is not EC, a peer on another
    ///   curve, or a derivation length out of range.
    public func sharedSecret(
        with peer: PublicKey, cofactor: Bool = false, derivation: SharedSecretDerivation? = nil
    ) throws(KeychainError) -> [UInt8] {
        let secret = try agree(key, with: peer, cofactor: cofactor)
        guard let derivation else { return secret.copyBytes() }
        return try derivation.derive(secret)
    }

    /// Decrypts an ECIES message made for this key's public key.
    ///
    /// - Throws: ``KeychainError/Code/parameter`` for a key that is not EC, a message too
    ///   short or malformed, or one whose tag does not verify (as Apple's, which releases no
    ///   plaintext then).
    public func decrypt(_ message: [UInt8], algorithm: ECIESAlgorithm) throws(KeychainError) -> [UInt8] {
        _ = try curve(of: key, for: "ECIES decryption")
        return try KeychainError.crypto { () throws(CryptoError) in
            try algorithm.scheme.decrypt(message, with: key)
        }
    }
}

extension PublicKey {
    /// Encrypts `plaintext` for the holder of this EC key's private half, with Apple's ECIES.
    /// Each call makes a new ephemeral key, so two encryptions of one plaintext differ.
    ///
    /// - Throws: ``KeychainError/Code/parameter`` for a key that is not EC.
    public func encrypt(_ plaintext: [UInt8], algorithm: ECIESAlgorithm) throws(KeychainError) -> [UInt8] {
        _ = try curve(of: key, for: "ECIES encryption")
        return try KeychainError.crypto { () throws(CryptoError) in
            try algorithm.scheme.encrypt(plaintext, to: key)
        }
    }
}

extension Keychain {
    /// The ECDH shared secret of a stored EC private key and `peer`, raw or through
    /// `derivation`. Needs the keychain unlocked and a key that may derive (CKA_DERIVE; keys
    /// made through these faces may, as Apple's do by default).
    ///
    /// - Parameter pin: the user PIN, for a key that needs it for each use.
    /// - Throws: ``KeychainError/Code/interactionNotAllowed`` when the keychain is locked;
    ///   ``KeychainError/Code/parameter`` when `privateKey` is not an EC private key that may
    ///   derive, `peer` is on another curve, or the derivation length is out of range;
    ///   ``KeychainError/Code/itemNotFound`` when the key no longer exists.
    public func sharedSecret(
        privateKey: KeyItem, with peer: PublicKey, cofactor: Bool = false,
        derivation: SharedSecretDerivation? = nil, pin: [UInt8]? = nil
    ) throws(KeychainError) -> [UInt8] {
        let secret = try storedSecret(privateKey, with: peer, cofactor: cofactor, pin: pin)
        guard let derivation else { return secret.copyBytes() }
        return try derivation.derive(secret)
    }

    /// Decrypts an ECIES message with a stored EC private key: the key agreement runs in the
    /// keychain, as ``sharedSecret(privateKey:with:cofactor:derivation:pin:)``'s does.
    ///
    /// - Throws: as ``sharedSecret(privateKey:with:cofactor:derivation:pin:)``;
    ///   ``KeychainError/Code/parameter`` also for a message that is malformed or whose tag
    ///   does not verify (no plaintext is released).
    public func decrypt(_ message: [UInt8], with key: KeyItem, algorithm: ECIESAlgorithm, pin: [UInt8]? = nil)
        throws(KeychainError) -> [UInt8]
    {
        guard key.algorithm.type == .ellipticCurve,
            let curve = EllipticCurve.allCases.first(where: { $0.bits == key.algorithm.sizeInBits })
        else { throw KeychainError(.parameter, "ECIES decryption needs an EC key on P-256, P-384 or P-521") }
        let scheme = algorithm.scheme
        let ephemeralPoint = try KeychainError.crypto { () throws(CryptoError) in
            try ECIES.ephemeralPublicKey(of: message, curve: curve)
        }
        let ephemeral: PublicKey
        do {
            ephemeral = try PublicKey(externalRepresentation: ephemeralPoint, type: .ellipticCurve)
        } catch {
            throw KeychainError(.parameter, "the ECIES message's ephemeral key is not a point of the curve")
        }
        let secret = try storedSecret(key, with: ephemeral, cofactor: algorithm.cofactor, pin: pin)
        return try KeychainError.crypto { () throws(CryptoError) in
            try scheme.open(message, sharedSecret: secret, curve: curve)
        }
    }

    /// The raw ECDH secret of a stored private key, through the one key-use check.
    private func storedSecret(_ key: KeyItem, with peer: PublicKey, cofactor: Bool, pin: [UInt8]?)
        throws(KeychainError) -> SecretBytes
    {
        guard key.algorithm.type == .ellipticCurve else {
            throw KeychainError(.parameter, "a key agreement needs an EC key on P-256, P-384 or P-521")
        }
        guard let point = peer.key.publicPoint, case .ec = peer.key.algorithm else {
            throw KeychainError(.parameter, "the peer of a key agreement must be an EC public key")
        }
        let reference = try privateKeyReference(key, to: "derive")
        let operation = try KeychainError.mapping { () throws(CoreError) in
            try token.startDerivation(
                reference, mechanism: DerivationParameters.ecdhMechanism(cofactor: cofactor),
                parameters: .agreement(with: point), context: context)
        }
        try giveUsePIN(pin, to: operation.authentication)
        var secret = try KeychainError.mapping { () throws(CoreError) in try operation.sharedSecret() }
        return SecretBytes(wiping: &secret)
    }
}

extension NewKeyAttributes {
    /// The template of a key object of `keyClass` and `type`, with Apple's default for key
    /// agreement: an EC private key made or stored through the Swift faces may derive
    /// (kSecAttrCanDerive is true by default on Apple platforms, and ECDH and ECIES
    /// decryption need CKA_DERIVE), unless the caller chose the key's usages.
    func template(_ keyClass: KeyClass, for type: KeyType) -> AttributeSet {
        var template = template(keyClass)
        if keyClass == .private, type == .ellipticCurve, usage == nil { template[.derive] = [1] }
        return template
    }
}
