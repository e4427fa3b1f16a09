internal import KeychainCrypto

// What a key held in memory (``KeyMaterial``: generated, read from its encoding, exported; in
// no store) does for the Swift faces: sign and verify, RSA encryption, key agreement. The same
// algorithms and registry mechanisms as a stored key's operations; no key-use check, as the
// key belongs to the caller, not to a token.

extension KeyMaterial {
    /// Signs `data` (``SignatureAlgorithm/sign(_:with:)-(_,KeyMaterial)``).
    package func signature(for data: [UInt8], algorithm: SignatureAlgorithm) throws(CoreError) -> [UInt8] {
        try algorithm.sign(data, with: self)
    }

    /// Whether `signature` is this key's signature of `data`: false for a wrong or malformed
    /// one; throws only when the algorithm does not fit the key or the data.
    package func isValidSignature(_ signature: [UInt8], for data: [UInt8], algorithm: SignatureAlgorithm)
        throws(CoreError) -> Bool
    {
        try algorithm.verify(signature, for: data, with: self)
    }

    /// Encrypts `plaintext` with this RSA key's public half, with the registry mechanism's
    /// padding.
    package func encrypt(_ plaintext: [UInt8], algorithm: RSAEncryptionAlgorithm) throws(CoreError) -> [UInt8]
    {
        try rsa(plaintext, algorithm, encrypting: true)
    }

    /// Decrypts `ciphertext` with this RSA private key.
    package func decrypt(_ ciphertext: [UInt8], algorithm: RSAEncryptionAlgorithm) throws(CoreError)
        -> [UInt8]
    {
        try rsa(ciphertext, algorithm, encrypting: false)
    }

    private func rsa(_ input: [UInt8], _ algorithm: RSAEncryptionAlgorithm, encrypting: Bool)
        throws(CoreError) -> [UInt8]
    {
        try algorithm.check(try supportedAlgorithm().type)
        let (type, parameters) = algorithm.mechanism
        let mechanism = try MechanismRegistry.require(type, for: encrypting ? .encrypt : .decrypt)
        let padding = try parameters.padding(for: mechanism)
        do throws(CryptoError) {
            return encrypting
                ? try key.encrypt(input, padding: padding) : try key.decrypt(input, padding: padding)
        } catch {
            throw CoreError(memoryKey: error)
        }
    }

    /// The ECDH shared secret of this EC private key and `peer` (SEC 1 §3.3.1; with
    /// `cofactor`, §3.3.2), raw (the x-coordinate, as wide as the field) or through `derivation`.
    package func sharedSecret(
        with peer: KeyMaterial, cofactor: Bool, derivation: SharedSecretDerivation?
    ) throws(CoreError) -> [UInt8] {
        try supportedAlgorithm().checkAgreement(for: "a key agreement")
        let point = try peer.agreementPoint()
        let secret: SecretBytes
        do throws(CryptoError) {
            secret = try key.sharedSecret(withPeerPublicValue: point, cofactor: cofactor)
        } catch {
            throw CoreError(memoryKey: error)
        }
        return try SharedSecretDerivation.apply(derivation, to: secret)
    }

    /// The EC point of a key agreement's peer: ``CoreError/Code/invalidArgument`` unless this
    /// is an EC key.
    package func agreementPoint() throws(CoreError) -> [UInt8] {
        guard let point = key.publicPoint, case .ec = key.algorithm else {
            throw CoreError(.invalidArgument, "the peer of a key agreement must be an EC public key")
        }
        return point
    }
}

extension CoreError {
    /// A failure of an operation with a key in memory: bad or unsupported input is the
    /// caller's (``Code/invalidArgument``), a wrong password ``Code/pinIncorrect``, anything
    /// else the library's (``Code/operationFailed``).
    init(memoryKey error: CryptoError) {
        switch error.code {
        case .invalidInput, .unsupported, .authenticationFailed, .invalidPadding:
            self.init(.invalidArgument, error.message)
        case .wrongPassword: self.init(.pinIncorrect, error.message)
        case .failed: self.init(.operationFailed, error.message)
        }
    }
}
