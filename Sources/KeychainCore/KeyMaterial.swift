package import KeychainCrypto

/// An asymmetric key held in memory rather than in a token: read from its encodings,
/// generated, decrypted from PKCS#12, or exported from an exportable stored key. What the
/// typed API's `PublicKey` and `PrivateKey` hold, so that no face decodes or encodes keys
/// itself. Errors are `CoreError`s whose message says what the bytes are not.
package struct KeyMaterial: Sendable {
    /// The crypto layer's key: for the core's operations on it.
    package let key: AsymmetricKey

    package init(_ key: AsymmetricKey) { self.key = key }

    /// The key's type and size; nil for a kind the Swift faces do not offer (Ed448, X25519,
    /// X448, DSA…).
    package var algorithm: AsymmetricKeyAlgorithm? {
        switch key.algorithm {
        case .rsa(let bits): AsymmetricKeyAlgorithm(type: .rsa, sizeInBits: bits)
        case .ec(let curve): AsymmetricKeyAlgorithm(type: .ellipticCurve, sizeInBits: curve.bits)
        case .ed25519: .ed25519
        case .ed448, .x25519, .x448, nil: nil
        }
    }

    /// ``algorithm``, or ``CoreError/Code/invalidArgument`` for a kind the faces do not hold.
    package func supportedAlgorithm() throws(CoreError) -> AsymmetricKeyAlgorithm {
        guard let algorithm else {
            throw CoreError(.invalidArgument, "only RSA, EC P-256/384/521 and Ed25519 keys are supported")
        }
        return algorithm
    }

    // MARK: Reading

    /// A SubjectPublicKeyInfo DER.
    package init(subjectPublicKeyInfo der: [UInt8]) throws(CoreError) {
        self.init(try Self.reading { () throws(CryptoError) in try AsymmetricKey(subjectPublicKeyInfo: der) })
    }

    /// A PKCS#1 RSAPublicKey DER.
    package init(rsaPublicKey der: [UInt8]) throws(CoreError) {
        self.init(try Self.reading { () throws(CryptoError) in try AsymmetricKey(rsaPublicKey: der) })
    }

    /// A private key's DER: PKCS#8 PrivateKeyInfo (unencrypted), PKCS#1 RSAPrivateKey or SEC 1
    /// ECPrivateKey.
    package init(privateKeyDER der: [UInt8]) throws(CoreError) {
        self.init(try Self.reading { () throws(CryptoError) in try AsymmetricKey(privateKeyDER: der) })
    }

    /// Apple's external representation of a public key of `type`: a PKCS#1 RSAPublicKey,
    /// an X9.63 uncompressed point (its length names the curve), or 32 raw Ed25519 bytes.
    package init(externalPublicKey bytes: [UInt8], type: AsymmetricKeyType) throws(CoreError) {
        let components: KeyComponents
        switch type {
        case .rsa:
            try self.init(rsaPublicKey: bytes)
            return
        case .ellipticCurve:
            guard let curve = EllipticCurve.allCases.first(where: { 1 + 2 * $0.fieldLength == bytes.count }),
                bytes.first == 0x04
            else {
                throw CoreError(.attributeValueInvalid, "not an uncompressed P-256, P-384 or P-521 point")
            }
            components = .ecPublic(curve, point: bytes)
        case .ed25519:
            components = .ed25519Public(bytes)
        }
        do {
            self.init(try AsymmetricKey(components: components))
        } catch {
            throw CoreError(.attributeValueInvalid, "not a valid public key: \(error.message)")
        }
    }

    /// Apple's external representation of a private key of `type`: a PKCS#1
    /// RSAPrivateKey, 04 ‖ X ‖ Y ‖ K (its length names the curve; the point must be K's), or
    /// 32 raw Ed25519 bytes.
    package init(externalPrivateKey bytes: [UInt8], type: AsymmetricKeyType) throws(CoreError) {
        let components: KeyComponents
        switch type {
        case .rsa:
            try self.init(privateKeyDER: bytes)
            return
        case .ellipticCurve:
            guard let curve = EllipticCurve.allCases.first(where: { 1 + 3 * $0.fieldLength == bytes.count }),
                bytes.first == 0x04
            else { throw CoreError(.attributeValueInvalid, "not an X9.63 P-256, P-384 or P-521 private key") }
            components = .ecPrivate(curve, scalar: Array(bytes.suffix(curve.fieldLength)))
        case .ed25519:
            components = .ed25519Private(bytes)
        }
        let key: AsymmetricKey
        do {
            key = try AsymmetricKey(components: components)
        } catch {
            throw CoreError(.attributeValueInvalid, "not a valid private key: \(error.message)")
        }
        if type == .ellipticCurve, key.publicPoint != Array(bytes.dropLast((bytes.count - 1) / 3)) {
            throw CoreError(.attributeValueInvalid, "the X9.63 private key's point is not its scalar's")
        }
        self.init(key)
    }

    /// Generates a key of `algorithm` (checked with ``AsymmetricKeyAlgorithm/checked()``).
    package static func generate(_ algorithm: AsymmetricKeyAlgorithm) throws(CoreError) -> KeyMaterial {
        let algorithm = try algorithm.checked()
        return KeyMaterial(try operation { () throws(CryptoError) in try AsymmetricKey.generate(algorithm) })
    }

    /// The public half alone.
    package func publicKey() throws(CoreError) -> KeyMaterial {
        KeyMaterial(try Self.operation { () throws(CryptoError) in try key.publicKey() })
    }

    // MARK: Encodings

    /// The SubjectPublicKeyInfo DER.
    package var subjectPublicKeyInfo: [UInt8] { key.subjectPublicKeyInfo }
    /// Apple's external representation of the public key.
    package var publicKeyRepresentation: [UInt8] { key.publicKeyRepresentation }
    /// SHA-1 of the public key's representation: the default CKA_ID of its pair.
    package var publicKeyHash: [UInt8] { key.publicKeyHash }
    /// The private key as PKCS#8 DER; nil for a public key. Secret.
    package var pkcs8: [UInt8]? { key.pkcs8 }
    /// Apple's external representation of the private key; nil for a public key. Secret.
    package var privateKeyRepresentation: [UInt8]? { key.privateKeyRepresentation }

    /// The PKCS#11 attributes of the key as a public key object (CKA_KEY_TYPE and its
    /// parts: modulus and exponent, or curve and point).
    ///
    /// - Throws: ``CoreError/Code/invalidArgument`` for a kind the typed API does not store.
    package func publicKeyAttributes() throws(CoreError) -> AttributeSet {
        var template = AttributeSet()
        switch key.algorithm {
        case .rsa:
            template[.keyType] = AttributeValue.encode(KeyType.rsa.rawValue)
            template[.modulus] = key.component("n") ?? []
            template[.publicExponent] = key.component("e") ?? []
        case .ec(let curve):
            template[.keyType] = AttributeValue.encode(KeyType.ec.rawValue)
            template[.ecParams] = curve.parameters
            template[.ecPoint] = DEROctetString.encode(key.publicPoint ?? [])
        case .ed25519:
            template[.keyType] = AttributeValue.encode(KeyType.ecEdwards.rawValue)
            template[.ecParams] = Edwards25519.parameters
            template[.ecPoint] = DEROctetString.encode(key.publicPoint ?? [])
        case .ed448, .x25519, .x448, nil:
            throw CoreError(.invalidArgument, "only RSA, EC and Ed25519 public keys can be stored")
        }
        return template
    }

    /// Runs a key operation: the library's failure is ``CoreError/Code/operationFailed``,
    /// anything else the caller's input.
    private static func operation(_ body: () throws(CryptoError) -> AsymmetricKey) throws(CoreError)
        -> AsymmetricKey
    {
        do {
            return try body()
        } catch {
            throw CoreError(error.code == .failed ? .operationFailed : .invalidArgument, error.message)
        }
    }

    private static func reading(_ body: () throws(CryptoError) -> AsymmetricKey) throws(CoreError)
        -> AsymmetricKey
    {
        do {
            return try body()
        } catch {
            throw CoreError(.attributeValueInvalid, error.message)
        }
    }
}

extension EllipticCurve {
    /// The bytes of a field element (a coordinate, the private scalar).
    fileprivate var fieldLength: Int { (bits + 7) / 8 }
}

extension Token {
    /// Stores a key pair held in memory (``storeKeyPair(_:publicTemplate:privateTemplate:generatedBy:context:)``).
    package func storeKeyPair(
        _ key: KeyMaterial, publicTemplate: AttributeSet, privateTemplate: AttributeSet,
        context: AccessContext
    ) throws(CoreError) -> KeyPairReferences {
        try storeKeyPair(
            key.key, publicTemplate: publicTemplate, privateTemplate: privateTemplate, generatedBy: nil,
            context: context)
    }

    /// A stored private key's secret, in memory, for a key that is not sensitive
    /// (``exportablePrivateKey(_:context:)``).
    package func exportPrivateKey(_ reference: ObjectReference, context: AccessContext) throws(CoreError)
        -> KeyMaterial
    {
        KeyMaterial(try exportablePrivateKey(reference, context: context))
    }
}
