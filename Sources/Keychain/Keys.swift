public import KeychainCore
internal import KeychainCrypto

/// The kind of an asymmetric key (Apple's kSecAttrKeyType, PKCS#11's CKA_KEY_TYPE).
public enum KeyType: Hashable, Sendable, CustomStringConvertible {
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
}

/// A key type with its size: what ``Keychain/generateKeyPair(_:label:applicationTag:exportable:attributes:)``
/// and ``PrivateKey/generate(_:)`` make.
///
///     try keychain.generateKeyPair(.p256, label: "signing key")
///     try keychain.generateKeyPair(.rsa(bits: 3072))
public struct KeyAlgorithm: Hashable, Sendable, CustomStringConvertible {
    /// The key type.
    public let type: KeyType
    /// The size in bits: the RSA modulus, the EC curve's field (256, 384, 521); 256 for Ed25519.
    public let sizeInBits: Int

    /// A type and size; whether the pair is supported is checked when a key is made.
    public init(type: KeyType, sizeInBits: Int) {
        self.type = type
        self.sizeInBits = sizeInBits
    }

    /// RSA with a modulus of `bits` bits (2048 to 4096).
    public static func rsa(bits: Int) -> KeyAlgorithm { KeyAlgorithm(type: .rsa, sizeInBits: bits) }
    /// ECDSA on P-256 (secp256r1, prime256v1).
    public static let p256 = KeyAlgorithm(type: .ellipticCurve, sizeInBits: 256)
    /// ECDSA on P-384 (secp384r1).
    public static let p384 = KeyAlgorithm(type: .ellipticCurve, sizeInBits: 384)
    /// ECDSA on P-521 (secp521r1).
    public static let p521 = KeyAlgorithm(type: .ellipticCurve, sizeInBits: 521)
    /// Ed25519.
    public static let ed25519 = KeyAlgorithm(type: .ed25519, sizeInBits: 256)

    /// E.g. `RSA-2048`, `EC-256`, `Ed25519`.
    public var description: String { type == .ed25519 ? "Ed25519" : "\(type)-\(sizeInBits)" }

    /// The algorithm of a key the core holds in memory.
    init(_ kind: KeyMaterial.Kind) {
        switch kind {
        case .rsa(let bits): self.init(type: .rsa, sizeInBits: bits)
        case .ec(let bits): self.init(type: .ellipticCurve, sizeInBits: bits)
        case .ed25519: self = .ed25519
        }
    }

    /// The core's kind of key; the core checks the size where a key is made.
    var kind: KeyMaterial.Kind {
        get throws(KeychainError) {
            try KeychainError.mapping { () throws(CoreError) in
                try KeyMaterial.Kind(family: type.family, bits: sizeInBits)
            }
        }
    }
}

extension KeyType {
    /// The core's name of the kind of key.
    var family: KeyMaterial.Family {
        switch self {
        case .rsa: .rsa
        case .ellipticCurve: .ec
        case .ed25519: .ed25519
        }
    }
}

/// A hash function of a signature or encryption algorithm: SHA-1, SHA-224, SHA-256, SHA-384
/// or SHA-512, with its output length in bytes (`length`). The core's type.
public typealias DigestAlgorithm = KeychainCore.HashAlgorithm

/// How a signature is made, named as Apple's `SecKeyAlgorithm` constants name them.
///
/// "Message" algorithms hash the data they are given; "digest" algorithms take the hash the
/// caller computed. RSA-PSS uses MGF1 with the same hash and a salt as long as the hash, as
/// Apple's does. ECDSA signatures are DER (X9.62 ECDSA-Sig-Value), as Apple and OpenSSL write
/// them (`openssl dgst -verify` accepts them as they are).
public enum SignatureAlgorithm: Hashable, Sendable {
    /// RSASSA-PKCS1-v1_5 over the message (`rsaSignatureMessagePKCS1v15SHA256`…).
    case rsaPKCS1v15(DigestAlgorithm)
    /// RSASSA-PKCS1-v1_5 over a digest (`rsaSignatureDigestPKCS1v15SHA256`…).
    case rsaPKCS1v15Digest(DigestAlgorithm)
    /// PKCS#1 v1.5 padding of the data as given, typically a DigestInfo
    /// (`rsaSignatureDigestPKCS1v15Raw`, CKM_RSA_PKCS).
    case rsaPKCS1v15Raw
    /// RSASSA-PSS over the message (`rsaSignatureMessagePSSSHA256`…).
    case rsaPSS(DigestAlgorithm)
    /// RSASSA-PSS over a digest (`rsaSignatureDigestPSSSHA256`…).
    case rsaPSSDigest(DigestAlgorithm)
    /// ECDSA over the message, DER signature (`ecdsaSignatureMessageX962SHA256`…).
    case ecdsa(DigestAlgorithm)
    /// ECDSA over a digest, DER signature (`ecdsaSignatureDigestX962SHA256`…; with nil, any
    /// length of digest: `ecdsaSignatureDigestX962`).
    case ecdsaDigest(DigestAlgorithm?)
    /// Pure Ed25519 over the message (RFC 8032).
    case ed25519

    /// The type of key that makes and checks these signatures.
    public var keyType: KeyType {
        switch self {
        case .rsaPKCS1v15, .rsaPKCS1v15Digest, .rsaPKCS1v15Raw, .rsaPSS, .rsaPSSDigest: .rsa
        case .ecdsa, .ecdsaDigest: .ellipticCurve
        case .ed25519: .ed25519
        }
    }

    /// The core's algorithm, which names the registry mechanism this one amounts to.
    var core: KeychainCore.SignatureAlgorithm {
        switch self {
        case .rsaPKCS1v15(let digest): .rsaPKCS1v15(digest.crypto)
        case .rsaPKCS1v15Digest(let digest): .rsaPKCS1v15Digest(digest.crypto)
        case .rsaPKCS1v15Raw: .rsaPKCS1v15Raw
        case .rsaPSS(let digest): .rsaPSS(digest.crypto)
        case .rsaPSSDigest(let digest): .rsaPSSDigest(digest.crypto)
        case .ecdsa(let digest): .ecdsa(digest.crypto)
        case .ecdsaDigest(let digest): .ecdsaDigest(digest?.crypto)
        case .ed25519: .ed25519
        }
    }

    /// Signs `data` with `key`, which must hold a private key.
    func sign(_ data: [UInt8], with key: AsymmetricKey) throws(KeychainError) -> [UInt8] {
        try KeychainError.mapping { () throws(CoreError) in try core.sign(data, with: key) }
    }

    /// Whether `signature` is `key`'s signature of `data`. False for a wrong or malformed
    /// signature; throws only when the algorithm does not fit the key or the data.
    func verify(_ signature: [UInt8], for data: [UInt8], with key: AsymmetricKey) throws(KeychainError)
        -> Bool
    {
        try KeychainError.mapping { () throws(CoreError) in try core.verify(signature, for: data, with: key) }
    }
}

/// How RSA encrypts, named as Apple's `SecKeyAlgorithm` constants name them.
public enum EncryptionAlgorithm: Hashable, Sendable {
    /// RSAES-PKCS1-v1_5 (`rsaEncryptionPKCS1`, CKM_RSA_PKCS).
    case rsaPKCS1
    /// RSAES-OAEP with MGF1 of the same hash and no label (`rsaEncryptionOAEPSHA256`…,
    /// CKM_RSA_PKCS_OAEP).
    case rsaOAEP(DigestAlgorithm)

    var padding: EncryptionPadding {
        switch self {
        case .rsaPKCS1: .pkcs1
        case .rsaOAEP(let digest): .oaep(hash: digest.crypto, mgf1: digest.crypto, label: [])
        }
    }

    /// The PKCS#11 mechanism (CKM_RSA_PKCS, CKM_RSA_PKCS_OAEP) and its parameter, for the
    /// core's operation (whose key-use check also reads the key's allowed mechanisms).
    func mechanism() throws(KeychainError) -> (mechanism: UInt64, parameters: CipherParameters) {
        switch self {
        case .rsaPKCS1: return RSAEncryptionMechanism.pkcs1
        case .rsaOAEP(let digest):
            guard let oaep = RSAEncryptionMechanism.oaep(hashLength: digest.length) else {
                throw KeychainError(.parameter, "OAEP with this hash is not supported")
            }
            return oaep
        }
    }

    func check(_ key: AsymmetricKey) throws(KeychainError) {
        try check(try KeyAlgorithm.of(key).type)
    }

    func check(_ type: KeyType) throws(KeychainError) {
        guard type == .rsa else {
            throw KeychainError(.parameter, "only RSA keys encrypt and decrypt, not \(type) keys")
        }
    }
}

/// Which operations a stored key may be used for (CKA_SIGN, CKA_VERIFY…; Apple's
/// kSecAttrCanSign…).
public struct KeyUsage: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let sign = KeyUsage(rawValue: 1 << 0)
    public static let verify = KeyUsage(rawValue: 1 << 1)
    public static let encrypt = KeyUsage(rawValue: 1 << 2)
    public static let decrypt = KeyUsage(rawValue: 1 << 3)
    public static let derive = KeyUsage(rawValue: 1 << 4)
    public static let wrap = KeyUsage(rawValue: 1 << 5)
    public static let unwrap = KeyUsage(rawValue: 1 << 6)
}

extension KeyAlgorithm {
    /// The algorithm of an in-memory key; an error for a kind the keychain does not hold.
    static func of(_ key: KeyMaterial) throws(KeychainError) -> KeyAlgorithm {
        guard let kind = key.kind else {
            throw KeychainError(.parameter, "only RSA, EC P-256/384/521 and Ed25519 keys are supported")
        }
        return KeyAlgorithm(kind)
    }

    /// The algorithm of the crypto layer's key (the in-memory signature and encryption checks).
    static func of(_ key: AsymmetricKey) throws(KeychainError) -> KeyAlgorithm { try of(KeyMaterial(key)) }
}

/// The read errors of the core's key decoding, as the typed API reports them.
private func decoding<T>(_ prefix: String, _ body: () throws(CoreError) -> T) throws(KeychainError) -> T {
    do {
        return try body()
    } catch {
        throw KeychainError(.decode, prefix + error.message)
    }
}

/// A public key, in memory: from a certificate, a stored key, or its encoding. Verifies
/// signatures and encrypts. Two public keys are equal when their SubjectPublicKeyInfo is.
public struct PublicKey: Hashable, Sendable, CustomStringConvertible {
    /// The key, decoded by the core.
    let material: KeyMaterial
    /// The key's SubjectPublicKeyInfo DER (CKA_PUBLIC_KEY_INFO; `openssl pkey -pubin -inform DER`).
    public let subjectPublicKeyInfo: [UInt8]
    /// The key's type and size.
    public let algorithm: KeyAlgorithm

    /// Reads a SubjectPublicKeyInfo DER (the `PUBLIC KEY` of PEM files).
    ///
    /// - Throws: ``KeychainError/Code/decode`` when the bytes are not a public key of a
    ///   supported kind.
    public init(subjectPublicKeyInfo der: [UInt8]) throws(KeychainError) {
        try self.init(
            decoding("not a supported public key: ") { () throws(CoreError) in
                try KeyMaterial(subjectPublicKeyInfo: der)
            })
    }

    /// Reads Apple's external representation of a public key: a PKCS#1 RSAPublicKey for RSA.
    /// (EC points need their curve: use ``init(subjectPublicKeyInfo:)``.)
    ///
    /// - Throws: ``KeychainError/Code/decode`` when the bytes are not one.
    public init(rsaPublicKey der: [UInt8]) throws(KeychainError) {
        try self.init(
            decoding("not a PKCS#1 RSA public key: ") { () throws(CoreError) in
                try KeyMaterial(rsaPublicKey: der)
            })
    }

    init(_ material: KeyMaterial) throws(KeychainError) {
        self.material = material
        subjectPublicKeyInfo = material.subjectPublicKeyInfo
        algorithm = try KeyAlgorithm.of(material)
    }

    /// Reads Apple's external representation of a public key of `type` (what
    /// ``externalRepresentation`` gives and `SecKeyCreateWithData` takes): a PKCS#1
    /// RSAPublicKey, an X9.63 uncompressed point (its length names the curve), or 32 raw
    /// Ed25519 bytes.
    ///
    /// - Throws: ``KeychainError/Code/decode`` when the bytes are not such a key.
    public init(externalRepresentation bytes: [UInt8], type: KeyType) throws(KeychainError) {
        if type == .rsa {
            try self.init(rsaPublicKey: bytes)
            return
        }
        try self.init(
            decoding("") { () throws(CoreError) in
                try KeyMaterial(externalPublicKey: bytes, family: type.family)
            })
    }

    /// The key's type.
    public var type: KeyType { algorithm.type }
    /// The key's size in bits.
    public var sizeInBits: Int { algorithm.sizeInBits }

    /// Apple's external representation (`SecKeyCopyExternalRepresentation`): a PKCS#1
    /// RSAPublicKey DER for RSA, the X9.63 uncompressed point 04 ‖ X ‖ Y for EC, the 32 raw
    /// bytes for Ed25519.
    public var externalRepresentation: [UInt8] { material.publicKeyRepresentation }

    /// SHA-1 of ``externalRepresentation``: the application label (CKA_ID) the keychain gives
    /// this key's pair and the certificates issued for it, Apple's kSecAttrApplicationLabel
    /// and kSecAttrPublicKeyHash.
    public var publicKeyHash: [UInt8] { material.publicKeyHash }

    /// Whether `signature` is a valid signature of `data` by this key's private key.
    ///
    /// - Returns: False for a wrong or malformed signature.
    /// - Throws: ``KeychainError/Code/parameter`` when the algorithm does not fit the key
    ///   (e.g. ECDSA with an RSA key) or a digest has the wrong length.
    public func isValidSignature(_ signature: [UInt8], for data: [UInt8], algorithm: SignatureAlgorithm)
        throws(KeychainError) -> Bool
    {
        try algorithm.verify(signature, for: data, with: key)
    }

    /// Encrypts `plaintext` for the private key's holder (RSA only).
    ///
    /// - Throws: ``KeychainError/Code/parameter`` for a key that is not RSA or plaintext too
    ///   long for the key and padding.
    public func encrypt(_ plaintext: [UInt8], algorithm: EncryptionAlgorithm) throws(KeychainError) -> [UInt8]
    {
        try algorithm.check(key)
        return try KeychainError.crypto { () throws(CryptoError) in
            try key.encrypt(plaintext, padding: algorithm.padding)
        }
    }

    /// Equal when the SubjectPublicKeyInfo is.
    public static func == (lhs: PublicKey, rhs: PublicKey) -> Bool {
        lhs.subjectPublicKeyInfo == rhs.subjectPublicKeyInfo
    }

    /// Hashes the SubjectPublicKeyInfo.
    public func hash(into hasher: inout Hasher) { hasher.combine(subjectPublicKeyInfo) }

    /// E.g. `PublicKey(EC-256, 6b9f…)` with the start of the public-key hash.
    public var description: String {
        let hash = publicKeyHash.prefix(4).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        return "PublicKey(\(algorithm), \(hash)…)"
    }
}

/// A private key held in this process's memory, not in a keychain (Apple's
/// `kSecAttrIsPermanent: false`): generated, read from PKCS#8, or exported from an exportable
/// keychain item. ``Keychain/add(_:label:applicationTag:exportable:attributes:)`` stores one.
public struct PrivateKey: Sendable, CustomStringConvertible {
    /// The key, decoded or generated by the core.
    let material: KeyMaterial
    /// The key's type and size.
    public let algorithm: KeyAlgorithm
    /// The matching public key.
    public let publicKey: PublicKey

    init(_ material: KeyMaterial) throws(KeychainError) {
        self.material = material
        algorithm = try KeyAlgorithm.of(material)
        publicKey = try PublicKey(KeychainError.mapping { () throws(CoreError) in try material.publicKey() })
    }

    /// Generates a new key.
    ///
    /// - Throws: ``KeychainError/Code/parameter`` for a size the type does not have.
    public static func generate(_ algorithm: KeyAlgorithm) throws(KeychainError) -> PrivateKey {
        let kind = try algorithm.kind
        return try PrivateKey(
            KeychainError.mapping { () throws(CoreError) in try KeyMaterial.generate(kind) })
    }

    /// Reads a private key's DER: PKCS#8 PrivateKeyInfo (unencrypted), or a traditional
    /// PKCS#1 RSAPrivateKey or SEC 1 ECPrivateKey (Apple's RSA external representation).
    ///
    /// - Throws: ``KeychainError/Code/decode`` when the bytes are not a supported key.
    public init(derEncoded der: [UInt8]) throws(KeychainError) {
        try self.init(
            decoding("not a supported private key: ") { () throws(CoreError) in
                try KeyMaterial(privateKeyDER: der)
            })
    }

    /// The key as PKCS#8 PrivateKeyInfo DER (`openssl pkey -inform DER`). Secret.
    public var pkcs8DER: [UInt8] { material.pkcs8 ?? [] }

    /// Apple's external representation (`SecKeyCopyExternalRepresentation`): a PKCS#1
    /// RSAPrivateKey for RSA, 04 ‖ X ‖ Y ‖ K for EC, the 32 raw bytes for Ed25519. Secret.
    public var externalRepresentation: [UInt8] { material.privateKeyRepresentation ?? [] }

    /// Reads Apple's external representation of a private key of `type` (what
    /// ``externalRepresentation`` gives and `SecKeyCreateWithData` takes): a PKCS#1
    /// RSAPrivateKey, 04 ‖ X ‖ Y ‖ K (its length names the curve; the point must be K's), or
    /// 32 raw Ed25519 bytes.
    ///
    /// - Throws: ``KeychainError/Code/decode`` when the bytes are not such a key.
    public init(externalRepresentation bytes: [UInt8], type: KeyType) throws(KeychainError) {
        if type == .rsa {
            try self.init(derEncoded: bytes)
            return
        }
        try self.init(
            decoding("") { () throws(CoreError) in
                try KeyMaterial(externalPrivateKey: bytes, family: type.family)
            })
    }

    /// Signs `data`.
    ///
    /// - Throws: ``KeychainError/Code/parameter`` when the algorithm does not fit the key
    ///   or a digest has the wrong length.
    public func signature(for data: [UInt8], algorithm: SignatureAlgorithm) throws(KeychainError) -> [UInt8] {
        try algorithm.sign(data, with: key)
    }

    /// Decrypts `ciphertext` (RSA only).
    ///
    /// - Throws: ``KeychainError/Code/parameter`` for a key that is not RSA, or ciphertext
    ///   that does not decrypt with this key and padding.
    public func decrypt(_ ciphertext: [UInt8], algorithm: EncryptionAlgorithm) throws(KeychainError)
        -> [UInt8]
    {
        try algorithm.check(key)
        return try KeychainError.crypto { () throws(CryptoError) in
            try key.decrypt(ciphertext, padding: algorithm.padding)
        }
    }

    /// The algorithm only: never key material.
    public var description: String { "PrivateKey(\(algorithm))" }
}

extension KeychainError {
    /// Runs a crypto-layer call, turning its errors into keychain errors: bad input and
    /// unsupported parameters are the caller's (`errSecParam`), anything else internal.
    static func crypto<T>(_ body: () throws(CryptoError) -> T) throws(KeychainError) -> T {
        do {
            return try body()
        } catch {
            switch error.code {
            case .invalidInput, .unsupported, .authenticationFailed, .invalidPadding:
                throw KeychainError(.parameter, error.message)
            case .wrongPassword: throw KeychainError(.authFailed, error.message)
            case .failed: throw KeychainError(.internal, error.message)
            }
        }
    }
}

extension Certificate {
    /// The certificate's public key; nil for a kind the keychain does not hold (e.g. DSA).
    public var publicKey: PublicKey? { try? PublicKey(subjectPublicKeyInfo: publicKeyInfo) }
}

// The crypto layer's key, for the in-memory signature, encryption and key agreement code
// that has not moved into the core yet.
extension PublicKey {
    var key: AsymmetricKey { material.key }
}

extension PrivateKey {
    var key: AsymmetricKey { material.key }
}
