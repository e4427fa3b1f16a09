internal import COpenSSL

/// A key made ready for one signature scheme, to sign (a private key) or to verify: OpenSSL's
/// operation context is set up once and then signs or verifies any number of inputs, one at a
/// time.
///
/// Setting the context up (a provider lookup, a key reference, the padding and digest
/// parameters) costs about 1 µs, 5 % of an ECDSA P-256 signature; a PKCS#11 session that
/// signs again with the same key and mechanism reuses its context, as `openssl speed` does. A
/// verification's context costs more (about 3 µs, 14 % of an RSA-2048 verification).
///
/// What each signature needs besides OpenSSL's own work is kept with the context too, so that
/// a signature of a message allocates nothing: the scheme's digest context (a one-shot
/// `EVP_Digest` makes and frees one, with its provider state, every time) and a scratch buffer
/// for the digest. None of them holds key material.
///
/// An ECDSA signing context signs through the key's `EC_KEY` (`p11k_ecdsa_sign_raw`), which
/// writes PKCS#11's r ‖ s directly: `EVP_PKEY_sign` runs the same signing code and then
/// DER-encodes the integers, which would only be parsed back here (about 5 % of a P-256
/// signature). Where OpenSSL offers no `EC_KEY`, the DER signature goes to the scratch buffer
/// and its integers are copied from there into r ‖ s (`writeRawECDSA`).
/// Not thread-safe: its owner (one session) serialises its use.
public final class SigningContext {
    public let key: AsymmetricKey
    public let scheme: SignatureScheme
    /// True for a context that verifies; false for one that signs.
    public let verifies: Bool
    private let context: OpaquePointer
    /// The key's `EC_KEY`, for an ECDSA context that signs; nil for any other, or where
    /// OpenSSL has none (it then signs through `context`).
    private let ecKey: OpaquePointer?
    /// The longest signature OpenSSL can produce with this key (DER for ECDSA).
    private let maximumLength: Int
    /// The length of PKCS#11's form of every signature: r ‖ s for ECDSA, one modulus for RSA.
    public let signatureLength: Int
    /// The scheme's message digest, restarted for each message; nil for a scheme without one.
    private let hasher: Digest?
    /// A message's digest, then (ECDSA) OpenSSL's DER signature: `digestCapacity` bytes, then
    /// `maximumLength`.
    private let scratch: UnsafeMutableRawBufferPointer
    private static let digestCapacity = Int(EVP_MAX_MD_SIZE)

    /// Throws when a signing context's key has no private half, or the key cannot use the
    /// scheme's parameters. EdDSA signs whole messages (use `AsymmetricKey.sign` and `verify`),
    /// and raw RSA verifies by a public-key operation of its own (`AsymmetricKey.verifyHash`).
    public convenience init(key: AsymmetricKey, scheme: SignatureScheme, verifying: Bool = false)
        throws(CryptoError)
    {
        try self.init(key: key, scheme: scheme, verifying: verifying, throughECKey: true)
    }

    /// As the public initialiser; `throughECKey` false signs ECDSA through `EVP_PKEY_sign` and
    /// the DER copy, as where OpenSSL offers no `EC_KEY` (for tests of that path).
    init(key: AsymmetricKey, scheme: SignatureScheme, verifying: Bool, throughECKey: Bool) throws(CryptoError)
    {
        guard verifying || key.hasPrivateKey else {
            throw CryptoError(.invalidInput, "a public key cannot sign")
        }
        guard !scheme.signsWholeMessage else {
            throw CryptoError(.unsupported, "EdDSA signs the whole message, never a hash")
        }
        guard !(verifying && scheme == .rsaRaw) else {
            throw CryptoError(.unsupported, "raw RSA verifies through AsymmetricKey.verifyHash")
        }
        let hasher: Digest?
        if let algorithm = scheme.messageDigest {
            hasher = try Digest(algorithm)
        } else {
            hasher = nil
        }
        self.key = key
        self.scheme = scheme
        self.hasher = hasher
        verifies = verifying
        context = try key.operationContext(
            scheme: scheme, initialize: verifying ? EVP_PKEY_verify_init : EVP_PKEY_sign_init)
        maximumLength = max(Int(EVP_PKEY_get_size(key.pkey)), 1)
        if case .ecdsa = scheme {
            signatureLength = 2 * key.ecdsaComponentLength
            ecKey = verifying || !throughECKey ? nil : p11k_ec_key(key.pkey)
            if ecKey == nil { ERR_clear_error() }
        } else {
            signatureLength = maximumLength
            ecKey = nil
        }
        scratch = .allocate(byteCount: SigningContext.digestCapacity + maximumLength, alignment: 16)
        scratch.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit {
        EVP_PKEY_CTX_free(context)
        if let ecKey { p11k_ec_key_free(ecKey) }
        // The digest of the last message signed: no key, but not left behind either.
        if let base = scratch.baseAddress { OPENSSL_cleanse(base, scratch.count) }
        scratch.deallocate()
    }

    /// Signs `input`, already hashed where the scheme hashes. ECDSA signatures come back as
    /// r ‖ s, PKCS#11's format.
    public func sign(hash input: [UInt8]) throws(CryptoError) -> [UInt8] {
        try writtenBytes(capacity: signatureLength) { (output) throws(CryptoError) in
            try withBytes(input) { (input) throws(CryptoError) in
                try sign(input, hashing: false, into: output)
            }
        }
    }

    /// Signs `input` into `output` (at least `signatureLength` bytes) in PKCS#11's form,
    /// returning the bytes written. With `hashing`, `input` is the message and the scheme's
    /// digest hashes it first; without, it is the hash (or a raw mechanism's input).
    public func sign(
        _ input: UnsafeRawBufferPointer, hashing: Bool, into output: UnsafeMutableRawBufferPointer
    )
        throws(CryptoError) -> Int
    {
        guard !verifies else { throw CryptoError(.failed, "this context verifies; it does not sign") }
        guard output.count >= signatureLength, let target = output.baseAddress else {
            throw CryptoError(.failed, "the signature needs \(signatureLength) bytes")
        }
        let hash = try prepared(input, hashing: hashing)
        if scheme == .rsaRaw {
            // v2.40 §2.1.8: the input, at most one modulus long, is left-padded with zeros.
            guard hash.count <= maximumLength else {
                throw CryptoError(.invalidInput, "raw RSA signs at most \(maximumLength) bytes")
            }
            let padded = AsymmetricKey.leftPadded(Array(hash), to: maximumLength)
            return try withBytes(padded) { (padded) throws(CryptoError) in
                try run(padded, into: target.assumingMemoryBound(to: UInt8.self), capacity: output.count)
            }
        }
        guard case .ecdsa = scheme else {
            return try run(hash, into: target.assumingMemoryBound(to: UInt8.self), capacity: output.count)
        }
        if let ecKey, let length = Int32(exactly: hash.count), let width = Int32(exactly: signatureLength / 2)
        {
            guard
                p11k_ecdsa_sign_raw(
                    ecKey, nonNull(hash), length, target.assumingMemoryBound(to: UInt8.self), width) == 1
            else { throw CryptoError.openSSL(.invalidInput, "cannot sign this input with this key") }
            return signatureLength
        }
        let der = scratch.baseAddress.map { $0 + SigningContext.digestCapacity }
        guard let der else { throw CryptoError(.failed, "no room for the signature") }
        let length = try run(hash, into: der.assumingMemoryBound(to: UInt8.self), capacity: maximumLength)
        return try key.writeRawECDSA(fromDER: UnsafeRawBufferPointer(start: der, count: length), into: output)
    }

    /// Whether `signature` (PKCS#11's form: ECDSA r ‖ s) is the key's signature of `input`,
    /// already hashed where the scheme hashes: the check `AsymmetricKey.verifyHash` makes.
    public func verify(_ signature: [UInt8], hash input: [UInt8]) throws(CryptoError) -> Bool {
        try withBytes(signature) { (signature) throws(CryptoError) in
            try withBytes(input) { (input) throws(CryptoError) in try verify(signature, input, hashing: false)
            }
        }
    }

    /// Whether `signature` (PKCS#11's form) is the key's signature of `input`: the message,
    /// hashed here by the scheme's digest, with `hashing`; its hash without.
    public func verify(_ signature: UnsafeRawBufferPointer, _ input: UnsafeRawBufferPointer, hashing: Bool)
        throws(CryptoError) -> Bool
    {
        guard verifies else { throw CryptoError(.failed, "this context signs; it does not verify") }
        let hash = try prepared(input, hashing: hashing)
        if scheme == .rsaPKCS1(nil), hash.isEmpty {
            return try key.isPKCS1SignatureOfNothing(signature)
        }
        let result: Int32
        if case .ecdsa = scheme {
            guard let der = key.derECDSA(fromRaw: Array(signature)) else { return false }
            result = EVP_PKEY_verify(context, der, der.count, nonNull(hash), hash.count)
        } else {
            result = EVP_PKEY_verify(context, nonNull(signature), signature.count, nonNull(hash), hash.count)
        }
        // A signature that does not verify leaves OpenSSL's reason on the thread's error queue.
        if result != 1 { ERR_clear_error() }
        return result == 1
    }

    /// What the key signs: `input`, or with `hashing` its digest (in `scratch`).
    private func prepared(_ input: UnsafeRawBufferPointer, hashing: Bool) throws(CryptoError)
        -> UnsafeRawBufferPointer
    {
        guard hashing else { return input }
        guard let hasher else { throw CryptoError(.failed, "this scheme has no message digest") }
        let digest = UnsafeMutableRawBufferPointer(rebasing: scratch[..<SigningContext.digestCapacity])
        let length = try hasher.hash(input, into: digest)
        return UnsafeRawBufferPointer(rebasing: digest[..<length])
    }

    /// EVP_PKEY_sign of `input` into `target`, which holds `capacity` bytes: the length written.
    private func run(_ input: UnsafeRawBufferPointer, into target: UnsafeMutablePointer<UInt8>, capacity: Int)
        throws(CryptoError) -> Int
    {
        var length = capacity
        guard EVP_PKEY_sign(context, target, &length, nonNull(input), input.count) == 1, length <= capacity
        else {
            throw CryptoError.openSSL(.invalidInput, "cannot sign this input with this key")
        }
        return length
    }

    /// A pointer OpenSSL may read `buffer.count` bytes from, also for an empty buffer (whose
    /// base address may be nil; OpenSSL reads nothing through it then, and gets the scratch
    /// buffer's, never NULL).
    private func nonNull(_ buffer: UnsafeRawBufferPointer) -> UnsafePointer<UInt8>? {
        (buffer.baseAddress ?? UnsafeRawPointer(scratch.baseAddress))?.assumingMemoryBound(to: UInt8.self)
    }
}
