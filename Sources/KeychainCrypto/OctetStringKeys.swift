internal import COpenSSL

// The keys whose public and private halves are plain octet strings: Ed25519 and Ed448
// (RFC 8032, PKCS#11 v3.0 §2.3.5 CKK_EC_EDWARDS) and X25519 and X448 (RFC 7748, v3.0 §2.3.7
// CKK_EC_MONTGOMERY). OpenSSL holds them as raw keys (EVP_PKEY_new_raw_*_key_ex); PKCS#11 names
// their curve in CKA_EC_PARAMS either by the RFC 8410 OBJECT IDENTIFIER or, as v3.0 §2.3.5 and
// §2.3.7 allow, by a PrintableString curve name.

extension KeyAlgorithm {
    /// The four octet-string key algorithms, in a fixed order.
    public static let octetStringAlgorithms: [KeyAlgorithm] = [.ed25519, .ed448, .x25519, .x448]

    /// True for Ed25519, Ed448, X25519 and X448.
    public var isOctetString: Bool { rawKeyLengths != nil }

    /// True for the Montgomery (key agreement only) algorithms X25519 and X448.
    public var isMontgomery: Bool { self == .x25519 || self == .x448 }

    /// True for the Edwards (signature) algorithms Ed25519 and Ed448.
    public var isEdwards: Bool { self == .ed25519 || self == .ed448 }

    /// The lengths of the raw public and private keys (RFC 8032 §5.1.5/§5.2.5, RFC 7748 §5).
    var rawKeyLengths: (public: Int, private: Int)? {
        switch self {
        case .ed25519, .x25519: (32, 32)
        case .ed448: (57, 57)
        case .x448: (56, 56)
        case .rsa, .ec: nil
        }
    }

    /// OpenSSL's name of the key type.
    var openSSLName: String? {
        switch self {
        case .ed25519: "ED25519"
        case .ed448: "ED448"
        case .x25519: "X25519"
        case .x448: "X448"
        case .rsa, .ec: nil
        }
    }

    private var nid: Int32? {
        switch self {
        case .ed25519: NID_ED25519
        case .ed448: NID_ED448
        case .x25519: NID_X25519
        case .x448: NID_X448
        case .rsa, .ec: nil
        }
    }

    /// The curve name v3.0 §2.3.5 and §2.3.7 allow as a PrintableString in CKA_EC_PARAMS.
    private var curveName: String? {
        switch self {
        case .ed25519: "edwards25519"
        case .ed448: "edwards448"
        case .x25519: "curve25519"
        case .x448: "curve448"
        case .rsa, .ec: nil
        }
    }

    /// CKA_EC_PARAMS of an octet-string key: the RFC 8410 OBJECT IDENTIFIER in DER (id-Ed25519,
    /// id-Ed448, id-X25519, id-X448). Nil for RSA and EC (``EllipticCurve/parameters``).
    public var curveParameters: [UInt8]? {
        guard let nid, let object = OBJ_nid2obj(nid) else { return nil }
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_ASN1_OBJECT(object, &output)
        guard length > 0, let output else { return nil }
        defer { CRYPTO_free(output, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }

    /// The same curve as a DER PrintableString ("curve25519"…), the other form the spec allows.
    var printableCurveParameters: [UInt8]? {
        guard let curveName, curveName.utf8.count < 128 else { return nil }
        return [0x13, UInt8(curveName.utf8.count)] + Array(curveName.utf8)
    }

    /// The octet-string algorithm CKA_EC_PARAMS names, by OID or PrintableString, or nil.
    public init?(octetStringParameters parameters: [UInt8]) {
        guard
            let algorithm = KeyAlgorithm.octetStringAlgorithms.first(where: {
                $0.curveParameters == parameters || $0.printableCurveParameters == parameters
            })
        else { return nil }
        self = algorithm
    }
}

extension AsymmetricKey {
    /// An Ed25519, Ed448, X25519 or X448 key from its raw public value (RFC 8032, RFC 7748).
    /// Throws `.invalidInput` for a value of the wrong length.
    public convenience init(rawPublicKey bytes: [UInt8], algorithm: KeyAlgorithm) throws(CryptoError) {
        self.init(
            owning: try AsymmetricKey.rawKey(bytes, algorithm: algorithm, isPrivate: false),
            hasPrivateKey: false)
    }

    /// An Ed25519, Ed448, X25519 or X448 key from its raw private value; the public half is
    /// computed by OpenSSL. Throws `.invalidInput` for a value of the wrong length.
    public convenience init(rawPrivateKey bytes: [UInt8], algorithm: KeyAlgorithm) throws(CryptoError) {
        self.init(
            owning: try AsymmetricKey.rawKey(bytes, algorithm: algorithm, isPrivate: true),
            hasPrivateKey: true)
    }

    /// A new EVP_PKEY from raw octets, owned by the caller.
    static func rawKey(_ bytes: [UInt8], algorithm: KeyAlgorithm, isPrivate: Bool) throws(CryptoError)
        -> OpaquePointer
    {
        guard let lengths = algorithm.rawKeyLengths, let name = algorithm.openSSLName else {
            throw CryptoError(.unsupported, "only Ed25519, Ed448, X25519 and X448 keys are raw octets")
        }
        let expected = isPrivate ? lengths.private : lengths.public
        let make = isPrivate ? EVP_PKEY_new_raw_private_key_ex : EVP_PKEY_new_raw_public_key_ex
        guard bytes.count == expected, let key = make(LibraryContext.pointer, name, nil, bytes, bytes.count)
        else {
            ERR_clear_error()
            throw CryptoError(
                .invalidInput, "a \(name) \(isPrivate ? "private" : "public") key has \(expected) bytes")
        }
        return key
    }

    /// The raw public value of an Ed25519, Ed448, X25519 or X448 key, else nil.
    var rawPublicKey: [UInt8]? {
        guard let lengths = algorithm?.rawKeyLengths else { return nil }
        var bytes = [UInt8](repeating: 0, count: lengths.public)
        var length = bytes.count
        guard EVP_PKEY_get_raw_public_key(pkey, &bytes, &length) == 1 else {
            ERR_clear_error()
            return nil
        }
        return Array(bytes.prefix(length))
    }

    /// The raw private value of an Ed25519, Ed448, X25519 or X448 key in a self-wiping
    /// buffer, else nil.
    public var secretRawPrivateKey: SecretBytes? {
        guard hasPrivateKey, let lengths = algorithm?.rawKeyLengths else { return nil }
        var ok = false
        let bytes = SecretBytes(capacity: lengths.private) { buffer -> Int in
            var length = buffer.count
            ok =
                EVP_PKEY_get_raw_private_key(pkey, buffer.bindMemory(to: UInt8.self).baseAddress, &length)
                == 1
            return ok ? length : 0
        }
        if !ok { ERR_clear_error() }
        return ok ? bytes : nil
    }

    /// The raw private value of an Ed25519, Ed448, X25519 or X448 key, else nil.
    public var rawPrivateKey: [UInt8]? { secretRawPrivateKey?.copyBytes() }
}
