public import KeychainCore

// Key agreement (ECDH) and Apple's ECIES, for keys in memory and stored EC private keys: the
// core's operations. A stored key agrees on a secret only through the core's one key-use
// check, as PKCS#11's C_DeriveKey with CKM_ECDH1_DERIVE does: it must be an EC private key with
// CKA_DERIVE TRUE and, when it has a CKA_ALLOWED_MECHANISMS list, CKM_ECDH1_DERIVE (or
// COFACTOR) on it.

/// What becomes of an ECDH shared secret before it is returned: `.x963(digest, sharedInfo:,
/// length:)`, the ANSI X9.63 KDF of Apple's `ecdhKeyExchange…X963SHA256` (at most
/// `maximumLength` bytes). The core's type.
public typealias SharedSecretDerivation = KeychainCore.SharedSecretDerivation

/// One of Apple's ECIES algorithms (`eciesEncryptionCofactorVariableIVX963SHA256AESGCM`…):
/// an ephemeral ECDH, the X9.63 KDF with `digest`, AES-GCM. Messages are the ephemeral public
/// key ‖ ciphertext ‖ 16-byte tag, exactly as on Apple platforms. The core's type.
public typealias ECIESAlgorithm = KeychainCore.ECIESAlgorithm

extension PrivateKey {
    /// The ECDH shared secret of this key and `peer` (SEC 1 §3.3.1; with `cofactor`, §3.3.2),
    /// raw (the x-coordinate, as wide as the field) or through `derivation`.
    ///
    /// - Throws: ``KeychainError/Code/parameter`` for a key that is not EC, a peer on another
    ///   curve, or a derivation length out of range.
    public func sharedSecret(
        with peer: PublicKey, cofactor: Bool = false, derivation: SharedSecretDerivation? = nil
    ) throws(KeychainError) -> [UInt8] {
        try KeychainError.mapping { () throws(CoreError) in
            try material.sharedSecret(with: peer.material, cofactor: cofactor, derivation: derivation)
        }
    }

    /// Decrypts an ECIES message made for this key's public key.
    ///
    /// - Throws: ``KeychainError/Code/parameter`` for a key that is not EC, a message too
    ///   short or malformed, or one whose tag does not verify (as Apple's, which releases no
    ///   plaintext then).
    public func decrypt(_ message: [UInt8], algorithm: ECIESAlgorithm) throws(KeychainError) -> [UInt8] {
        try KeychainError.mapping { () throws(CoreError) in try algorithm.decrypt(message, with: material) }
    }
}

extension PublicKey {
    /// Encrypts `plaintext` for the holder of this EC key's private half, with Apple's ECIES.
    /// Each call makes a new ephemeral key, so two encryptions of one plaintext differ.
    ///
    /// - Throws: ``KeychainError/Code/parameter`` for a key that is not EC.
    public func encrypt(_ plaintext: [UInt8], algorithm: ECIESAlgorithm) throws(KeychainError) -> [UInt8] {
        try KeychainError.mapping { () throws(CoreError) in try algorithm.encrypt(plaintext, to: material) }
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
        let agreement = try storedAgreement(privateKey, with: peer.material, cofactor: cofactor, pin: pin)
        return try KeychainError.mapping { () throws(CoreError) in
            try agreement.sharedSecret(derivation: derivation)
        }
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
        let ephemeral = try KeychainError.mapping { () throws(CoreError) in
            try algorithm.ephemeralKey(of: message, recipient: key.algorithm)
        }
        let agreement = try storedAgreement(key, with: ephemeral, cofactor: algorithm.cofactor, pin: pin)
        return try KeychainError.mapping { () throws(CoreError) in
            try algorithm.open(message, with: agreement, recipient: key.algorithm)
        }
    }

    /// A stored private key's key agreement with `peer`, through the one key-use check, with
    /// the PIN given when the key needs it for each use.
    private func storedAgreement(_ key: KeyItem, with peer: KeyMaterial, cofactor: Bool, pin: [UInt8]?)
        throws(KeychainError) -> DerivationOperation
    {
        let point = try KeychainError.mapping { () throws(CoreError) in
            try key.algorithm.checkAgreement(for: "a key agreement")
            return try peer.agreementPoint()
        }
        let reference = try privateKeyReference(key, to: "derive")
        let operation = try KeychainError.mapping { () throws(CoreError) in
            try token.startDerivation(
                reference, mechanism: DerivationParameters.ecdhMechanism(cofactor: cofactor),
                parameters: .agreement(with: point), context: context)
        }
        try giveUsePIN(pin, to: operation.authentication)
        return operation
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
