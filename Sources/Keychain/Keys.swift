public import KeychainCore

/// The kind of an asymmetric key (Apple's kSecAttrKeyType, PKCS#11's CKA_KEY_TYPE): `.rsa`,
/// `.ellipticCurve` (P-256/384/521) or `.ed25519`. The core's type.
public typealias KeyType = KeychainCore.AsymmetricKeyType

/// A key type with its size: what ``Keychain/generateKeyPair(_:label:applicationTag:exportable:attributes:)``
/// and ``PrivateKey/generate(_:)`` make (`.p256`, `.rsa(bits: 3072)`, `.ed25519`…). The core's
/// type.
public typealias KeyAlgorithm = KeychainCore.AsymmetricKeyAlgorithm

/// A hash function of a signature or encryption algorithm: SHA-1, SHA-224, SHA-256, SHA-384
/// or SHA-512, with its output length in bytes (`length`). The core's type.
public typealias DigestAlgorithm = KeychainCore.HashAlgorithm

/// How a signature is made, named as Apple's `SecKeyAlgorithm` constants name them
/// (`.ecdsa(.sha256)`, `.rsaPSS(.sha384)`, `.ed25519`…), with the ``KeyType`` that makes it.
/// The core's type, which names the registry mechanism each amounts to.
///
/// "Message" algorithms hash the data they are given; "digest" algorithms take the hash the
/// caller computed. RSA-PSS uses MGF1 with the same hash and a salt as long as the hash, as
/// Apple's does. ECDSA signatures are DER (X9.62 ECDSA-Sig-Value), as Apple and OpenSSL write
/// them (`openssl dgst -verify` accepts them as they are).
public typealias SignatureAlgorithm = KeychainCore.SignatureAlgorithm

/// How RSA encrypts, named as Apple's `SecKeyAlgorithm` constants name them: `.rsaPKCS1`, or
/// `.rsaOAEP(digest)` with MGF1 of the same hash and no label. The core's type.
public typealias EncryptionAlgorithm = KeychainCore.RSAEncryptionAlgorithm

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
        algorithm = try KeychainError.mapping { () throws(CoreError) in try material.supportedAlgorithm() }
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
                try KeyMaterial(externalPublicKey: bytes, type: type)
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
        try KeychainError.mapping { () throws(CoreError) in
            try material.isValidSignature(signature, for: data, algorithm: algorithm)
        }
    }

    /// Encrypts `plaintext` for the private key's holder (RSA only).
    ///
    /// - Throws: ``KeychainError/Code/parameter`` for a key that is not RSA or plaintext too
    ///   long for the key and padding.
    public func encrypt(_ plaintext: [UInt8], algorithm: EncryptionAlgorithm) throws(KeychainError) -> [UInt8]
    {
        try KeychainError.mapping { () throws(CoreError) in
            try material.encrypt(plaintext, algorithm: algorithm)
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
        algorithm = try KeychainError.mapping { () throws(CoreError) in try material.supportedAlgorithm() }
        publicKey = try PublicKey(KeychainError.mapping { () throws(CoreError) in try material.publicKey() })
    }

    /// Generates a new key.
    ///
    /// - Throws: ``KeychainError/Code/parameter`` for a size the type does not have.
    public static func generate(_ algorithm: KeyAlgorithm) throws(KeychainError) -> PrivateKey {
        try PrivateKey(KeychainError.mapping { () throws(CoreError) in try KeyMaterial.generate(algorithm) })
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
                try KeyMaterial(externalPrivateKey: bytes, type: type)
            })
    }

    /// Signs `data`.
    ///
    /// - Throws: ``KeychainError/Code/parameter`` when the algorithm does not fit the key
    ///   or a digest has the wrong length.
    public func signature(for data: [UInt8], algorithm: SignatureAlgorithm) throws(KeychainError) -> [UInt8] {
        try KeychainError.mapping { () throws(CoreError) in
            try material.signature(for: data, algorithm: algorithm)
        }
    }

    /// Decrypts `ciphertext` (RSA only).
    ///
    /// - Throws: ``KeychainError/Code/parameter`` for a key that is not RSA, or ciphertext
    ///   that does not decrypt with this key and padding.
    public func decrypt(_ ciphertext: [UInt8], algorithm: EncryptionAlgorithm) throws(KeychainError)
        -> [UInt8]
    {
        try KeychainError.mapping { () throws(CoreError) in
            try material.decrypt(ciphertext, algorithm: algorithm)
        }
    }

    /// The algorithm only: never key material.
    public var description: String { "PrivateKey(\(algorithm))" }
}

extension Certificate {
    /// The certificate's public key; nil for a kind the keychain does not hold (e.g. DSA).
    public var publicKey: PublicKey? { try? PublicKey(subjectPublicKeyInfo: publicKeyInfo) }
}
