internal import KeychainCrypto

/// The kind of an asymmetric key the Swift faces hold (Apple's kSecAttrKeyType; PKCS#11's
/// CKA_KEY_TYPE): `Keychain.KeyType` is this type.
public enum AsymmetricKeyType: Hashable, Sendable, CustomStringConvertible {
    /// RSA (CKK_RSA), 2048 to 4096 bits.
    case rsa
    /// ECDSA on a NIST prime curve: P-256, P-384 or P-521 (CKK_EC; Apple's
    /// kSecAttrKeyTypeECSECPrimeRandom).
    case ellipticCurve
    /// Ed25519 (CKK_EC_EDWARDS).
    case ed25519

    /// `RSA`, `EC` or `Ed25519`.
    public var description: String {
        switch self {
        case .rsa: "RSA"
        case .ellipticCurve: "EC"
        case .ed25519: "Ed25519"
        }
    }

    /// The PKCS#11 key type (CKA_KEY_TYPE) of keys of this kind.
    package var pkcs11: KeyType {
        switch self {
        case .rsa: .rsa
        case .ellipticCurve: .ec
        case .ed25519: .ecEdwards
        }
    }
}

/// A key type with its size: what a key pair is generated as (`Keychain.KeyAlgorithm` is this
/// type).
///
///     try keychain.generateKeyPair(.p256, label: "signing key")
///     try keychain.generateKeyPair(.rsa(bits: 3072))
public struct AsymmetricKeyAlgorithm: Hashable, Sendable, CustomStringConvertible {
    /// The key type.
    public let type: AsymmetricKeyType
    /// The size in bits: the RSA modulus, the EC curve's field (256, 384, 521); 256 for Ed25519.
    public let sizeInBits: Int

    /// A type and size; whether the pair is supported is checked when a key is made.
    public init(type: AsymmetricKeyType, sizeInBits: Int) {
        self.type = type
        self.sizeInBits = sizeInBits
    }

    /// RSA with a modulus of `bits` bits (2048 to 4096).
    public static func rsa(bits: Int) -> AsymmetricKeyAlgorithm {
        AsymmetricKeyAlgorithm(type: .rsa, sizeInBits: bits)
    }
    /// ECDSA on P-256 (secp256r1, prime256v1).
    public static let p256 = AsymmetricKeyAlgorithm(type: .ellipticCurve, sizeInBits: 256)
    /// ECDSA on P-384 (secp384r1).
    public static let p384 = AsymmetricKeyAlgorithm(type: .ellipticCurve, sizeInBits: 384)
    /// ECDSA on P-521 (secp521r1).
    public static let p521 = AsymmetricKeyAlgorithm(type: .ellipticCurve, sizeInBits: 521)
    /// Ed25519.
    public static let ed25519 = AsymmetricKeyAlgorithm(type: .ed25519, sizeInBits: 256)

    /// E.g. `RSA-2048`, `EC-256`, `Ed25519`.
    public var description: String { type == .ed25519 ? "Ed25519" : "\(type)-\(sizeInBits)" }

    /// The crypto layer's algorithm, or ``CoreError/Code/keySizeRange`` naming the sizes the
    /// Swift faces offer.
    func checked() throws(CoreError) -> KeychainCrypto.KeyAlgorithm {
        switch type {
        case .rsa:
            guard (2048...4096).contains(sizeInBits) else {
                throw CoreError(.keySizeRange, "RSA keys have 2048 to 4096 bits, not \(sizeInBits)")
            }
            return .rsa(bits: sizeInBits)
        case .ellipticCurve:
            return .ec(try curve())
        case .ed25519:
            guard sizeInBits == 256 else {
                throw CoreError(.keySizeRange, "Ed25519 keys have 256 bits, not \(sizeInBits)")
            }
            return .ed25519
        }
    }

    /// The NIST curve of an EC size, or ``CoreError/Code/keySizeRange``.
    func curve() throws(CoreError) -> EllipticCurve {
        guard let curve = EllipticCurve.allCases.first(where: { $0.bits == sizeInBits }) else {
            throw CoreError(
                .keySizeRange, "EC keys have 256, 384 or 521 bits (P-256, P-384, P-521), not \(sizeInBits)")
        }
        return curve
    }

    /// The curve of a key that agrees on secrets (ECDH, ECIES), or
    /// ``CoreError/Code/keyTypeInconsistent`` saying that `action` needs an EC key.
    func agreementCurve(for action: String) throws(CoreError) -> EllipticCurve {
        guard type == .ellipticCurve, let curve = try? curve() else {
            throw CoreError(.keyTypeInconsistent, "\(action) needs an EC key on P-256, P-384 or P-521")
        }
        return curve
    }

    /// Checks that a key of this algorithm can agree on a secret (ECDH, ECIES): `action` names
    /// the use in the error.
    package func checkAgreement(for action: String) throws(CoreError) {
        _ = try agreementCurve(for: action)
    }

    /// What ``Token/generateKeyPair(_:publicTemplate:privateTemplate:context:)`` makes for this
    /// algorithm, or ``CoreError/Code/keySizeRange`` as ``checked()``.
    package func keyPairKind() throws(CoreError) -> KeyPairKind {
        switch try checked() {
        case .rsa(let bits): return .rsa(bits: bits)
        case .ec(let curve): return .ec(curveParameters: curve.parameters)
        case .ed25519: return .ed25519(curveParameters: Edwards25519.parameters)
        case .ed448, .x25519, .x448:
            throw CoreError(.keySizeRange, "only RSA, EC and Ed25519 key pairs are generated here")
        }
    }
}
