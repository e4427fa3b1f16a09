internal import COpenSSL

/// A named elliptic curve the token supports (PKCS#11 CKA_EC_PARAMS as a named-curve OID).
public enum EllipticCurve: String, Sendable, CaseIterable {
    case p256 = "P-256"
    case p384 = "P-384"
    case p521 = "P-521"

    var nid: Int32 {
        switch self {
        case .p256: NID_X9_62_prime256v1
        case .p384: NID_secp384r1
        case .p521: NID_secp521r1
        }
    }

    /// OpenSSL's group name, for key generation.
    var groupName: String {
        switch self {
        case .p256: "prime256v1"
        case .p384: "secp384r1"
        case .p521: "secp521r1"
        }
    }

    /// Field size in bits: the size of r and s in a signature.
    public var bits: Int {
        switch self {
        case .p256: 256
        case .p384: 384
        case .p521: 521
        }
    }

    /// The curve's OBJECT IDENTIFIER in DER: CKA_EC_PARAMS.
    public var parameters: [UInt8] {
        guard let object = OBJ_nid2obj(nid) else { return [] }
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_ASN1_OBJECT(object, &output)
        guard length > 0, let output else { return [] }
        defer { CRYPTO_free(output, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }

    /// The curve named by CKA_EC_PARAMS (a DER OID), or nil.
    public init?(parameters: [UInt8]) {
        guard let curve = EllipticCurve.allCases.first(where: { $0.parameters == parameters }) else {
            return nil
        }
        self = curve
    }

    init?(nid: Int32) {
        guard let curve = EllipticCurve.allCases.first(where: { $0.nid == nid }) else { return nil }
        self = curve
    }
}

/// Ed25519's CKA_EC_PARAMS: the OBJECT IDENTIFIER id-Ed25519 (RFC 8410) in DER.
public enum Edwards25519 {
    public static var parameters: [UInt8] {
        guard let object = OBJ_nid2obj(NID_ED25519) else { return [] }
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_ASN1_OBJECT(object, &output)
        guard length > 0, let output else { return [] }
        defer { CRYPTO_free(output, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }
}

/// What kind of key, with its size or curve.
public enum KeyAlgorithm: Sendable, Equatable {
    case rsa(bits: Int)
    case ec(EllipticCurve)
    case ed25519
    /// Ed448 (RFC 8032 §5.2): signatures only.
    case ed448
    /// X25519 (RFC 7748 §5): key agreement only.
    case x25519
    /// X448 (RFC 7748 §5): key agreement only.
    case x448
}

/// How a signature is computed (PKCS#11 v2.40 §2.1, §2.3, v3.0 §2.3.14 mechanisms).
public enum SignatureScheme: Sendable, Equatable {
    /// RSASSA-PKCS1-v1_5. With a digest, the input is hashed and wrapped in a DigestInfo;
    /// without, the input is the DigestInfo (CKM_RSA_PKCS).
    case rsaPKCS1(DigestAlgorithm?)
    /// RSASSA-PSS. With `digest` nil the input is already the hash of `hash`'s length.
    case rsaPSS(digest: DigestAlgorithm?, hash: DigestAlgorithm, mgf1: DigestAlgorithm, saltLength: Int)
    /// ECDSA with the signature as r ‖ s (PKCS#11's format). Without a digest the input is
    /// the hash (CKM_ECDSA).
    case ecdsa(DigestAlgorithm?)
    /// Raw RSA (CKM_RSA_X_509, v2.40 §2.1.8): the private operation on the input, left-padded
    /// with zeros to the modulus length; verification compares the public operation's result.
    case rsaRaw
    /// Pure Ed25519 (CKM_EDDSA): the whole message, never a hash.
    case ed25519
    /// Pure Ed448 (CKM_EDDSA, RFC 8032 §5.2 with an empty context): the whole message.
    case ed448

    /// The digest applied to the message before signing, if any.
    public var messageDigest: DigestAlgorithm? {
        switch self {
        case .rsaPKCS1(let digest), .ecdsa(let digest): digest
        case .rsaPSS(let digest, _, _, _): digest
        case .rsaRaw, .ed25519, .ed448: nil
        }
    }

    /// True for EdDSA, which signs the whole message in one call and never a hash.
    public var signsWholeMessage: Bool { self == .ed25519 || self == .ed448 }
}

/// How RSA encryption pads (CKM_RSA_PKCS, CKM_RSA_PKCS_OAEP, CKM_RSA_X_509).
public enum EncryptionPadding: Sendable, Equatable {
    case pkcs1
    case oaep(hash: DigestAlgorithm, mgf1: DigestAlgorithm, label: [UInt8])
    /// No padding (CKM_RSA_X_509, v2.40 §2.1.8): the bare RSA operation on an input of at most
    /// the modulus length, left-padded with zeros to it. The output is always one modulus long.
    case raw
}

/// An RSA, EC, Ed25519, Ed448, X25519 or X448 key held by OpenSSL. The single owner of its `EVP_PKEY`.
public final class AsymmetricKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is never mutated after init; OpenSSL allows concurrent
    // operations on one key, each with its own EVP_PKEY_CTX.
    let pkey: OpaquePointer
    /// True when the private half is present.
    public let hasPrivateKey: Bool

    private init(_ pkey: OpaquePointer, hasPrivateKey: Bool) {
        self.pkey = pkey
        self.hasPrivateKey = hasPrivateKey
        algorithm = AsymmetricKey.algorithm(of: pkey)
    }

    /// Takes ownership of an EVP_PKEY made elsewhere in this module.
    convenience init(owning pkey: OpaquePointer, hasPrivateKey: Bool) {
        self.init(pkey, hasPrivateKey: hasPrivateKey)
    }

    deinit { EVP_PKEY_free(pkey) }

    // MARK: Creating keys

    /// The RSA modulus sizes the token accepts, in bits: what its mechanism information
    /// advertises (CK_MECHANISM_INFO ulMinKeySize/ulMaxKeySize of every RSA mechanism, v2.40
    /// §5.5). Keys outside it are refused when they are generated, imported or parsed, before
    /// any check that costs time: OpenSSL's check of a 16,384-bit key took 3–10 s of CPU.
    /// 1024 to 8192; a token's configuration may raise the minimum.
    public static let rsaKeySizes: ClosedRange<Int> = 1024...8192
    /// The smallest RSA modulus accepted, in bits (``rsaKeySizes``).
    public static var minimumRSABits: Int { rsaKeySizes.lowerBound }
    /// The largest RSA modulus accepted, in bits (``rsaKeySizes``).
    public static var maximumRSABits: Int { rsaKeySizes.upperBound }

    /// Throws unless `bits` is an accepted RSA size.
    static func checkRSASize(_ bits: Int) throws(CryptoError) {
        guard rsaKeySizes.contains(bits) else {
            throw CryptoError(
                .unsupported,
                "RSA keys must have \(rsaKeySizes.lowerBound) to \(rsaKeySizes.upperBound) bits, not \(bits)")
        }
    }

    /// Generates a new key pair. RSA sizes are those of ``rsaKeySizes``.
    public static func generate(_ algorithm: KeyAlgorithm) throws(CryptoError) -> AsymmetricKey {
        let name: String
        switch algorithm {
        case .rsa(let bits):
            try checkRSASize(bits)
            name = "RSA"
        case .ec: name = "EC"
        case .ed25519, .ed448, .x25519, .x448: name = algorithm.openSSLName ?? ""
        }
        guard let context = EVP_PKEY_CTX_new_from_name(LibraryContext.pointer, name, nil) else {
            throw CryptoError.openSSL(.failed, "cannot create a key generator")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_keygen_init(context) == 1 else {
            throw CryptoError.openSSL(.failed, "cannot start key generation")
        }
        switch algorithm {
        case .rsa(let bits):
            guard let bits = Int32(exactly: bits), EVP_PKEY_CTX_set_rsa_keygen_bits(context, bits) == 1 else {
                throw CryptoError.openSSL(.failed, "cannot set the RSA key size")
            }
        case .ec(let curve):
            guard EVP_PKEY_CTX_set_group_name(context, curve.groupName) == 1 else {
                throw CryptoError.openSSL(.failed, "cannot set the curve")
            }
        case .ed25519, .ed448, .x25519, .x448: break
        }
        var key: OpaquePointer?
        guard EVP_PKEY_generate(context, &key) == 1, let key else {
            throw CryptoError.openSSL(.failed, "key generation failed")
        }
        return AsymmetricKey(key, hasPrivateKey: true)
    }

    /// A private key from DER: PKCS#8 PrivateKeyInfo, or a traditional RSA/EC key.
    public convenience init(privateKeyDER der: [UInt8]) throws(CryptoError) {
        try self.init(privateKeyDER: SecretBytes(der))
    }

    /// A private key from DER held in a self-wiping buffer: PKCS#8 PrivateKeyInfo, or a
    /// traditional RSA/EC key. RSA keys outside ``rsaKeySizes`` are refused.
    public convenience init(privateKeyDER der: SecretBytes) throws(CryptoError) {
        let key: OpaquePointer? = der.withUnsafeBytes { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.bindMemory(to: UInt8.self).baseAddress
            return d2i_AutoPrivateKey_ex(nil, &cursor, buffer.count, LibraryContext.pointer, nil)
        }
        guard let key else { throw CryptoError.openSSL(.invalidInput, "private key DER does not parse") }
        try self.init(checking: key, hasPrivateKey: true)
    }

    /// A public key from its SubjectPublicKeyInfo DER. RSA keys outside ``rsaKeySizes`` are
    /// refused.
    public convenience init(subjectPublicKeyInfo der: [UInt8]) throws(CryptoError) {
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY_ex(nil, &cursor, buffer.count, LibraryContext.pointer, nil)
        }
        guard let key else { throw CryptoError.openSSL(.invalidInput, "public key DER does not parse") }
        try self.init(checking: key, hasPrivateKey: false)
    }

    /// Takes ownership of a freshly decoded key, refusing kinds the token does not hold and
    /// RSA sizes outside ``rsaKeySizes`` (decoding checks nothing, so this is cheap).
    convenience init(checking pkey: OpaquePointer, hasPrivateKey: Bool) throws(CryptoError) {
        self.init(pkey, hasPrivateKey: hasPrivateKey)
        switch algorithm {
        case nil:
            throw CryptoError(
                .unsupported, "only RSA, EC P-256/384/521, Ed25519, Ed448, X25519 and X448 keys are supported"
            )
        case .rsa(let bits): try AsymmetricKey.checkRSASize(bits)
        case .ec, .ed25519, .ed448, .x25519, .x448: break
        }
    }

    /// The public half alone.
    public func publicKey() throws(CryptoError) -> AsymmetricKey {
        try AsymmetricKey(subjectPublicKeyInfo: subjectPublicKeyInfo)
    }

    // MARK: Describing keys

    /// The key's algorithm, or nil for a kind the token does not support. Asked of OpenSSL
    /// once: every signature needs it, and the EC curve's lookup costs microseconds.
    public let algorithm: KeyAlgorithm?

    private static func algorithm(of pkey: OpaquePointer) -> KeyAlgorithm? {
        switch EVP_PKEY_get_base_id(pkey) {
        case EVP_PKEY_RSA: return .rsa(bits: Int(EVP_PKEY_get_bits(pkey)))
        case EVP_PKEY_ED25519: return .ed25519
        case EVP_PKEY_ED448: return .ed448
        case EVP_PKEY_X25519: return .x25519
        case EVP_PKEY_X448: return .x448
        case EVP_PKEY_EC:
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_utf8_string_param(pkey, "group", &name, name.count, &length) == 1 else {
                return nil
            }
            let nid = OBJ_sn2nid(name)
            return EllipticCurve(nid: nid != NID_undef ? nid : EC_curve_nist2nid(name)).map { .ec($0) }
        default: return nil
        }
    }

    /// Key size in bits (RSA modulus, curve field).
    public var bits: Int { Int(EVP_PKEY_get_bits(pkey)) }

    /// The SubjectPublicKeyInfo DER: CKA_PUBLIC_KEY_INFO.
    public var subjectPublicKeyInfo: [UInt8] {
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_PUBKEY(pkey, &output)
        guard length > 0, let output else { return [] }
        defer { CRYPTO_free(output, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }

    /// The private key as PKCS#8 PrivateKeyInfo DER, or nil for a public key.
    public var pkcs8: [UInt8]? { secretPKCS8?.copyBytes() }

    /// The private key as PKCS#8 PrivateKeyInfo DER in a self-wiping buffer, or nil for a
    /// public key. Encoded by the key's own provider (in the module's library context); the
    /// encoder's buffer is wiped as it is freed.
    public var secretPKCS8: SecretBytes? {
        guard hasPrivateKey else { return nil }
        return encoded(structure: CString.privateKeyInfo, selection: p11k_select_keypair)
    }

    /// The key encoded as DER `structure` by OpenSSL's encoder; the encoder's output is
    /// copied into a self-wiping buffer and cleared as it is freed.
    func encoded(structure: UnsafePointer<CChar>, selection: Int32) -> SecretBytes? {
        guard
            let encoder = OSSL_ENCODER_CTX_new_for_pkey(pkey, selection, CString.der, structure, nil)
        else {
            ERR_clear_error()
            return nil
        }
        defer { OSSL_ENCODER_CTX_free(encoder) }
        var output: UnsafeMutablePointer<UInt8>?
        var length = 0
        guard OSSL_ENCODER_to_data(encoder, &output, &length) == 1, let output, length > 0 else {
            ERR_clear_error()
            return nil
        }
        defer { CRYPTO_clear_free(output, length, #fileID, #line) }
        return SecretBytes(copying: UnsafeRawBufferPointer(start: output, count: length))
    }

    /// SHA-1 of the subjectPublicKey BIT STRING contents: the CKA_ID shared by a key pair
    /// and the certificates issued for it (ARCHITECTURE.md §3.4).
    public var publicKeyHash: [UInt8] {
        DigestAlgorithm.sha1.hash(AsymmetricKey.subjectPublicKeyBits(subjectPublicKeyInfo) ?? [])
    }

    /// A big-number component ("n", "e", "d", "rsa-factor1"…) as unsigned big-endian bytes.
    /// For the private parts prefer ``secretComponent(_:)``, whose buffer wipes itself.
    public func component(_ name: String) -> [UInt8]? {
        secretComponent(name)?.copyBytes()
    }

    /// A big-number component as unsigned big-endian bytes in a self-wiping buffer: the form
    /// for "d", "priv", "rsa-factor1"… OpenSSL's copy of the number is cleared as it is freed.
    public func secretComponent(_ name: String) -> SecretBytes? {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pkey, name, &number) == 1, let number else {
            ERR_clear_error()
            return nil
        }
        defer { BN_clear_free(number) }
        let length = Int((BN_num_bits(number) + 7) / 8)
        return SecretBytes(count: length) { buffer in
            if let base = buffer.baseAddress {
                _ = BN_bn2bin(number, base.assumingMemoryBound(to: UInt8.self))
            }
        }
    }

    /// The encoded public point: uncompressed EC point, or the raw public value of Ed25519,
    /// Ed448, X25519 and X448.
    public var publicPoint: [UInt8]? {
        if algorithm?.isOctetString == true { return rawPublicKey }
        var bytes = [UInt8](repeating: 0, count: 160)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(pkey, "encoded-pub-key", &bytes, bytes.count, &length) == 1
        else {
            ERR_clear_error()
            return nil
        }
        return Array(bytes.prefix(length))
    }

    // MARK: Signing

    /// Signs `message` (hashing it first when the scheme has a digest).
    public func sign(_ message: [UInt8], scheme: SignatureScheme) throws(CryptoError) -> [UInt8] {
        if scheme.signsWholeMessage { return try signEdDSA(message, scheme: scheme) }
        let input = scheme.messageDigest.map { $0.hash(message) } ?? message
        return try signHash(input, scheme: scheme)
    }

    /// Signs input already hashed by the caller (the multi-part path and CKM_ECDSA /
    /// CKM_RSA_PKCS / CKM_RSA_PKCS_PSS).
    public func signHash(_ input: [UInt8], scheme: SignatureScheme) throws(CryptoError) -> [UInt8] {
        try SigningContext(key: self, scheme: scheme).sign(hash: input)
    }

    /// Verifies `signature` over `message`. False for a wrong signature; throws only when the
    /// inputs cannot be used at all.
    public func verify(_ signature: [UInt8], message: [UInt8], scheme: SignatureScheme) throws(CryptoError)
        -> Bool
    {
        if scheme.signsWholeMessage { return try verifyEdDSA(signature, message, scheme: scheme) }
        let input = scheme.messageDigest.map { $0.hash(message) } ?? message
        return try verifyHash(signature, input: input, scheme: scheme)
    }

    public func verifyHash(_ signature: [UInt8], input: [UInt8], scheme: SignatureScheme) throws(CryptoError)
        -> Bool
    {
        if scheme == .rsaRaw { return try verifyRaw(signature, input: input) }
        return try SigningContext(key: self, scheme: scheme, verifying: true).verify(signature, hash: input)
    }

    /// Whether `signature` is this RSA key's PKCS#1 v1.5 signature of the empty input
    /// (CKM_RSA_PKCS of zero bytes). `EVP_PKEY_verify` cannot say so: OpenSSL 3.0's RSA
    /// verification takes a recovered input of length zero for a failure. What the public
    /// operation recovers is compared instead, as `EVP_PKEY_verify` does for longer inputs.
    func isPKCS1SignatureOfNothing(_ signature: UnsafeRawBufferPointer) throws(CryptoError) -> Bool {
        guard let base = signature.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return false }
        let context = try operationContext(scheme: .rsaPKCS1(nil), initialize: EVP_PKEY_verify_recover_init)
        defer { EVP_PKEY_CTX_free(context) }
        var recovered = [UInt8](repeating: 0, count: max(Int(EVP_PKEY_get_size(pkey)), signature.count))
        var length = recovered.count
        let result = EVP_PKEY_verify_recover(context, &recovered, &length, base, signature.count)
        ERR_clear_error()
        return result == 1 && length == 0
    }

    func operationContext(
        scheme: SignatureScheme, initialize: (OpaquePointer?) -> Int32
    ) throws(CryptoError) -> OpaquePointer {
        guard let context = EVP_PKEY_CTX_new_from_pkey(LibraryContext.pointer, pkey, nil) else {
            throw CryptoError.openSSL(.failed, "cannot create a key operation")
        }
        var ok = initialize(context) == 1
        switch scheme {
        case .rsaPKCS1(let digest):
            ok = ok && EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PADDING) == 1
            if let digest { ok = ok && EVP_PKEY_CTX_set_signature_md(context, digest.evp) == 1 }
        case .rsaPSS(_, let hash, let mgf1, let saltLength):
            ok =
                ok && EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PSS_PADDING) == 1
                && EVP_PKEY_CTX_set_signature_md(context, hash.evp) == 1
                && EVP_PKEY_CTX_set_rsa_mgf1_md(context, mgf1.evp) == 1
                && EVP_PKEY_CTX_set_rsa_pss_saltlen(context, Int32(clamping: saltLength)) == 1
        case .rsaRaw:
            ok = ok && EVP_PKEY_CTX_set_rsa_padding(context, RSA_NO_PADDING) == 1
        case .ecdsa, .ed25519, .ed448: break
        }
        guard ok else {
            EVP_PKEY_CTX_free(context)
            throw CryptoError.openSSL(.unsupported, "this key cannot use these mechanism parameters")
        }
        return context
    }

    /// Throws unless the key is the one `scheme` signs with (an Ed448 key never makes an
    /// "Ed25519" signature, nor the reverse).
    private func checkEdDSAKey(_ scheme: SignatureScheme) throws(CryptoError) {
        guard (scheme == .ed25519 && algorithm == .ed25519) || (scheme == .ed448 && algorithm == .ed448)
        else {
            throw CryptoError(
                .unsupported, "this key cannot make \(scheme == .ed448 ? "Ed448" : "Ed25519") signatures")
        }
    }

    private func signEdDSA(_ message: [UInt8], scheme: SignatureScheme) throws(CryptoError) -> [UInt8] {
        guard hasPrivateKey else { throw CryptoError(.invalidInput, "a public key cannot sign") }
        try checkEdDSAKey(scheme)
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.openSSL(.failed, "cannot allocate") }
        defer { EVP_MD_CTX_free(context) }
        // 64 bytes for Ed25519, 114 for Ed448 (RFC 8032 §5.1.6, §5.2.6).
        var signature = [UInt8](repeating: 0, count: 114)
        var length = signature.count
        guard EVP_DigestSignInit_ex(context, nil, nil, LibraryContext.pointer, nil, pkey, nil) == 1,
            EVP_DigestSign(context, &signature, &length, message, message.count) == 1
        else { throw CryptoError.openSSL(.invalidInput, "cannot sign with this key") }
        return Array(signature.prefix(length))
    }

    private func verifyEdDSA(_ signature: [UInt8], _ message: [UInt8], scheme: SignatureScheme)
        throws(CryptoError) -> Bool
    {
        try checkEdDSAKey(scheme)
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.openSSL(.failed, "cannot allocate") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit_ex(context, nil, nil, LibraryContext.pointer, nil, pkey, nil) == 1 else {
            throw CryptoError.openSSL(.invalidInput, "cannot verify with this key")
        }
        let result = EVP_DigestVerify(context, signature, signature.count, message, message.count)
        ERR_clear_error()
        return result == 1
    }

    /// Raw RSA verification (v2.40 §2.1.8): the public operation on the signature must give
    /// the input, left-padded with zeros to the modulus length. Compared in constant time.
    private func verifyRaw(_ signature: [UInt8], input: [UInt8]) throws(CryptoError) -> Bool {
        guard case .rsa = algorithm else { throw CryptoError(.unsupported, "raw RSA needs an RSA key") }
        let size = modulusLength
        guard signature.count == size, input.count <= size else { return false }
        let recovered: [UInt8]
        do {
            recovered = try cipher(signature, padding: .raw, encrypting: true)
        } catch {
            // A signature not below the modulus is no signature of this key.
            return false
        }
        let expected = AsymmetricKey.leftPadded(input, to: size)
        return recovered.count == size && CRYPTO_memcmp(recovered, expected, size) == 0
    }

    /// The RSA modulus length in bytes (k of PKCS #1).
    var modulusLength: Int { Int(EVP_PKEY_get_size(pkey)) }

    /// `input` with zeros in front to make `length` bytes (the input if it is that long).
    static func leftPadded(_ input: [UInt8], to length: Int) -> [UInt8] {
        input.count >= length ? input : [UInt8](repeating: 0, count: length - input.count) + input
    }

    // MARK: Encryption

    public func encrypt(_ plaintext: [UInt8], padding: EncryptionPadding) throws(CryptoError) -> [UInt8] {
        try cipher(plaintext, padding: padding, encrypting: true)
    }

    /// Decrypts `ciphertext`. With `.pkcs1` (CKM_RSA_PKCS) a ciphertext whose padding does
    /// not check is not an error: it decrypts to a synthetic message derived from the key and
    /// the ciphertext (implicit rejection, see `decryptPKCS1WithImplicitRejection`), so the
    /// result never tells an attacker whether the padding was right.
    ///
    /// - Throws: ``CryptoError/Code/invalidInput`` for a ciphertext that is not exactly one
    ///   modulus long (`checkCiphertext`); ``CryptoError/Code/authenticationFailed`` for one
    ///   that does not decrypt (OAEP's check fails, or its value is not below the modulus).
    public func decrypt(_ ciphertext: [UInt8], padding: EncryptionPadding) throws(CryptoError) -> [UInt8] {
        guard hasPrivateKey else { throw CryptoError(.invalidInput, "a public key cannot decrypt") }
        try checkCiphertext(length: ciphertext.count)
        if padding == .pkcs1, !AsymmetricKey.openSSLRejectsImplicitly {
            return try decryptPKCS1WithImplicitRejection(ciphertext)
        }
        return try cipher(ciphertext, padding: padding, encrypting: false)
    }

    /// Every RSA ciphertext is exactly k bytes, the modulus length (RFC 8017 §7.1.2 step 1,
    /// §7.2.2 step 1; PKCS#11 v2.40 §2.1.6–2.1.8): a shorter or longer one is refused, never
    /// padded or cut, whatever the padding (PKCS#11's CKR_ENCRYPTED_DATA_LEN_RANGE,
    /// CKR_WRAPPED_KEY_LEN_RANGE).
    ///
    /// - Throws: ``CryptoError/Code/invalidInput`` for another length;
    ///   ``CryptoError/Code/unsupported`` for a key that is not RSA.
    public func checkCiphertext(length: Int) throws(CryptoError) {
        guard case .rsa = algorithm else { throw CryptoError(.unsupported, "only RSA keys encrypt") }
        guard length == modulusLength else {
            throw CryptoError(
                .invalidInput, "an RSA ciphertext has exactly \(modulusLength) bytes, not \(length)")
        }
    }

    private func cipher(_ input: [UInt8], padding: EncryptionPadding, encrypting: Bool) throws(CryptoError)
        -> [UInt8]
    {
        guard case .rsa = algorithm else { throw CryptoError(.unsupported, "only RSA keys encrypt") }
        guard let context = EVP_PKEY_CTX_new_from_pkey(LibraryContext.pointer, pkey, nil) else {
            throw CryptoError.openSSL(.failed, "cannot create a key operation")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var ok = (encrypting ? EVP_PKEY_encrypt_init(context) : EVP_PKEY_decrypt_init(context)) == 1
        switch padding {
        case .pkcs1:
            ok = ok && EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PADDING) == 1
        case .raw:
            ok = ok && EVP_PKEY_CTX_set_rsa_padding(context, RSA_NO_PADDING) == 1
        case .oaep(let hash, let mgf1, let label):
            ok =
                ok && EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_OAEP_PADDING) == 1
                && EVP_PKEY_CTX_set_rsa_oaep_md(context, hash.evp) == 1
                && EVP_PKEY_CTX_set_rsa_mgf1_md(context, mgf1.evp) == 1
            guard label.count <= Int(Int32.max) else {
                throw CryptoError(.invalidInput, "the OAEP label is too long")
            }
            if ok, !label.isEmpty {
                // OpenSSL takes ownership of the label buffer.
                guard let copy = CRYPTO_malloc(label.count, #fileID, #line) else {
                    throw CryptoError(.failed, "out of memory")
                }
                label.withUnsafeBytes { source in
                    if let base = source.baseAddress { copy.copyMemory(from: base, byteCount: source.count) }
                }
                ok = EVP_PKEY_CTX_set0_rsa_oaep_label(context, copy, Int32(label.count)) == 1
                if !ok { CRYPTO_free(copy, #fileID, #line) }
            }
        }
        guard ok else {
            throw CryptoError.openSSL(.unsupported, "this key cannot use these mechanism parameters")
        }
        let run = encrypting ? EVP_PKEY_encrypt : EVP_PKEY_decrypt
        // Without padding OpenSSL takes exactly one modulus of input.
        var input = input
        if padding == .raw {
            guard input.count <= modulusLength else {
                throw CryptoError(.invalidInput, "raw RSA takes at most \(modulusLength) bytes")
            }
            input = AsymmetricKey.leftPadded(input, to: modulusLength)
        }
        var length = 0
        // A decryption that fails had input of the right length (`decrypt` checked it) that
        // does not decrypt under this key.
        let failure: CryptoError.Code = encrypting ? .invalidInput : .authenticationFailed
        guard run(context, nil, &length, input, input.count) == 1 else {
            throw CryptoError.openSSL(
                failure, encrypting ? "cannot encrypt this input" : "cannot decrypt this input")
        }
        var output = [UInt8](repeating: 0, count: length)
        guard run(context, &output, &length, input, input.count) == 1 else {
            throw CryptoError.openSSL(
                failure, encrypting ? "cannot encrypt this input" : "cannot decrypt this input")
        }
        return Array(output.prefix(length))
    }
}
