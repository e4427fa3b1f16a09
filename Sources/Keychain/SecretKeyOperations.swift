public import KeychainCore
internal import KeychainCrypto

// What a stored secret key does: encrypt and decrypt (AES), compute and check MACs (HMAC,
// CMAC), wrap and unwrap other keys (AES key wrap). Every use goes through the core's one
// key-use check (`Token.useSecretKey`) with the PKCS#11 mechanism the operation is, so a key
// a PKCS#11 application made with CKA_ALLOWED_MECHANISMS or a usage flag off is refused here
// exactly as the module refuses it; wrapping goes through `Token.keyToWrap` (extractable,
// wrap-with-trusted) and unwrapping through `Token.storeUnwrappedKey`.

/// How an AES key encrypts: the PKCS#11 mechanisms CKM_AES_ECB, _CBC, _CBC_PAD, _CTR, _GCM.
///
///     let iv = try Keychain.randomBytes(12)
///     let sealed = try keychain.encrypt(message, with: key, using: .aesGCM(iv: iv))
///     let opened = try keychain.decrypt(sealed, with: key, using: .aesGCM(iv: iv))
public enum CipherAlgorithm: Hashable, Sendable {
    /// ECB (NIST SP 800-38A §6.1): whole 16-byte blocks, no IV. Only for single blocks
    /// (key check values, key wrapping of one block); equal blocks encrypt equally.
    case aesECB
    /// CBC with a 16-byte IV and no padding: whole 16-byte blocks (SP 800-38A §6.2).
    case aesCBC(iv: [UInt8])
    /// CBC with a 16-byte IV and PKCS#7 padding (CKM_AES_CBC_PAD): any length.
    case aesCBCPad(iv: [UInt8])
    /// CTR (SP 800-38A §6.5): the 16-byte initial counter block, whose last `counterBits`
    /// bits count; a message that would wrap the counter is refused.
    case aesCTR(counterBlock: [UInt8], counterBits: Int = 128)
    /// GCM (SP 800-38D): an IV (12 bytes is the usual and fastest; never reuse one with the
    /// same key), authenticated additional data, and a tag of 12 to 16 bytes. Encryption gives
    /// ciphertext ‖ tag, as PKCS#11 does; decryption takes the same and releases no plaintext
    /// unless the tag verifies.
    case aesGCM(iv: [UInt8], additionalData: [UInt8] = [], tagLength: Int = 16)

    /// The crypto layer's mode.
    var mode: BlockCipherMode {
        switch self {
        case .aesECB: .ecb
        case .aesCBC(let iv): .cbc(iv: iv)
        case .aesCBCPad(let iv): .cbcPad(iv: iv)
        case .aesCTR(let block, let bits): .ctr(counterBlock: block, counterBits: bits)
        case .aesGCM(let iv, let additionalData, let tagLength):
            .gcm(iv: iv, additionalData: additionalData, tagLength: tagLength)
        }
    }

    /// The PKCS#11 mechanism (v2.40 §2.10; v3.0 §2.15), for the key's allowed mechanisms.
    var mechanism: UInt64 {
        switch self {
        case .aesECB: 0x1081
        case .aesCBC: 0x1082
        case .aesCBCPad: 0x1085
        case .aesCTR: 0x1086
        case .aesGCM: 0x1087
        }
    }
}

/// How a message authentication code is computed: HMAC (RFC 2104) with a hash, or AES-CMAC
/// (NIST SP 800-38B).
public enum AuthenticationCodeAlgorithm: Hashable, Sendable {
    /// HMAC with `digest` (CKM_SHA256_HMAC…): with an HMAC key of that hash, or a generic secret.
    case hmac(DigestAlgorithm)
    /// AES-CMAC (CKM_AES_CMAC): with an AES key. The full 16-byte code.
    case cmac

    /// The algorithm a key's type implies: its hash for an HMAC key, CMAC for AES; nil for a
    /// generic secret, which works with any hash.
    init?(_ type: SecretKeyType) {
        switch type {
        case .hmac(let digest): self = .hmac(digest)
        case .aes: self = .cmac
        case .generic: return nil
        }
    }

    var crypto: MACAlgorithm {
        switch self {
        case .hmac(let digest): .hmac(digest.crypto)
        case .cmac: .cmac
        }
    }
}

/// How one key is wrapped under another AES key.
public enum KeyWrapAlgorithm: Hashable, Sendable {
    /// AES key wrap (RFC 3394, CKM_AES_KEY_WRAP): keys of a multiple of 8 bytes, at least 16.
    case aesKeyWrap
    /// AES key wrap with padding (RFC 5649, CKM_AES_KEY_WRAP_KWP): a key of any length,
    /// e.g. a private key's PKCS#8.
    case aesKeyWrapPadded

    /// The PKCS#11 mechanism (v3.0 §2.14.3–2.14.4).
    var mechanism: UInt64 { self == .aesKeyWrap ? 0x2109 : 0x210B }
    var isPadded: Bool { self == .aesKeyWrapPadded }
}

extension Keychain {
    /// Encrypts `plaintext` with a stored AES key (CKA_ENCRYPT). Needs the keychain unlocked.
    ///
    /// - Returns: The ciphertext; for GCM, ciphertext ‖ tag.
    /// - Throws: ``KeychainError/Code/parameter`` when the key is not an AES key that may
    ///   encrypt with this mechanism (usage, CKA_ALLOWED_MECHANISMS), the IV or tag length is
    ///   wrong, or the data's length does not suit the mode (ECB and CBC: whole blocks);
    ///   ``KeychainError/Code/interactionNotAllowed`` when the keychain is locked.
    public func encrypt(_ plaintext: [UInt8], with key: SecretKeyItem, using algorithm: CipherAlgorithm)
        throws(KeychainError) -> [UInt8]
    {
        try cipher(plaintext, with: key, using: algorithm, encrypting: true)
    }

    /// Decrypts `ciphertext` (for GCM, ciphertext ‖ tag) with a stored AES key (CKA_DECRYPT).
    ///
    /// - Throws: ``KeychainError/Code/decode`` when the ciphertext does not decrypt: a GCM
    ///   tag that does not verify (wrong key, IV or additional data, or altered bytes; no
    ///   plaintext is released) or CBC-PAD padding that is not valid; otherwise as
    ///   ``encrypt(_:with:using:)``.
    public func decrypt(_ ciphertext: [UInt8], with key: SecretKeyItem, using algorithm: CipherAlgorithm)
        throws(KeychainError) -> [UInt8]
    {
        try cipher(ciphertext, with: key, using: algorithm, encrypting: false)
    }

    private func cipher(
        _ input: [UInt8], with key: SecretKeyItem, using algorithm: CipherAlgorithm, encrypting: Bool
    ) throws(KeychainError) -> [UInt8] {
        let usable = try use(
            key, for: encrypting ? .encrypt : .decrypt, keyTypes: [.aes], mechanism: algorithm.mechanism)
        do throws(CryptoError) {
            let cipher = try SymmetricCipher(key: usable.value, mode: algorithm.mode, encrypting: encrypting)
            let output = try feed(input) { (part) throws(CryptoError) in try cipher.update(part) }
            return output + (try cipher.finish())
        } catch {
            switch error.code {
            case .authenticationFailed:
                throw KeychainError(
                    .decode,
                    "the AES-GCM tag does not verify: wrong key, IV or additional data, or altered ciphertext"
                )
            case .invalidPadding:
                throw KeychainError(
                    .decode, "the ciphertext does not decrypt: its CBC-PAD padding is not valid")
            default:
                let failure: () throws(CryptoError) -> [UInt8] = { () throws(CryptoError) in throw error }
                return try KeychainError.crypto(failure)
            }
        }
    }

    /// The message authentication code of `data` under a stored key (CKA_SIGN): HMAC or
    /// AES-CMAC. Needs the keychain unlocked.
    ///
    /// - Parameter algorithm: The algorithm; by default the key's own (HMAC with an HMAC
    ///   key's hash, CMAC for AES). A generic secret needs one named.
    /// - Throws: ``KeychainError/Code/parameter`` when the key may not compute it (type,
    ///   usage, CKA_ALLOWED_MECHANISMS).
    public func authenticationCode(
        for data: [UInt8], with key: SecretKeyItem, using algorithm: AuthenticationCodeAlgorithm? = nil
    ) throws(KeychainError) -> [UInt8] {
        let operation = try macOperation(with: key, using: algorithm, for: .sign)
        return try KeychainError.mapping { () throws(CoreError) in try operation.code(of: data) }
    }

    /// Whether `code` is the message authentication code of `data` under a stored key
    /// (CKA_VERIFY), compared in constant time. A code of the wrong length is not valid.
    ///
    /// - Throws: as ``authenticationCode(for:with:using:)``.
    public func isValidAuthenticationCode(
        _ code: [UInt8], for data: [UInt8], with key: SecretKeyItem,
        using algorithm: AuthenticationCodeAlgorithm? = nil
    ) throws(KeychainError) -> Bool {
        let operation = try macOperation(with: key, using: algorithm, for: .verify)
        return try KeychainError.mapping { () throws(CoreError) in try operation.isValid(code, of: data) }
    }

    /// A MAC through the core's MACOperation, with the registry mechanism the algorithm
    /// amounts to (CKA_ALLOWED_MECHANISMS reads as it does for C_SignInit).
    private func macOperation(
        with key: SecretKeyItem, using algorithm: AuthenticationCodeAlgorithm?, for usage: KeychainCore.KeyUse
    ) throws(KeychainError) -> MACOperation {
        guard let algorithm = algorithm ?? AuthenticationCodeAlgorithm(key.type) else {
            throw KeychainError(
                .parameter, "a generic secret computes HMAC with any hash: name one (using: .hmac(.sha256))")
        }
        let reference = try reference(of: key)
        return try KeychainError.mapping { () throws(CoreError) in
            guard let mechanism = MACOperation.mechanism(of: algorithm.crypto) else {
                throw CoreError(.mechanismInvalid, "no MAC mechanism computes this algorithm")
            }
            return try token.macOperation(reference, mechanism, .none, for: usage, context: context)
        }
    }

    /// A stored secret key wrapped under a stored AES key (PKCS#11 C_WrapKey): the bytes to
    /// keep as a backup or carry to another token, which only the wrapping key unwraps.
    ///
    /// - Parameters:
    ///   - key: The key to wrap: it must be extractable (``SecretKeyItem/isExtractable``).
    ///   - wrappingKey: An AES key that may wrap (`.wrap`).
    ///   - algorithm: RFC 5649 key wrap with padding by default.
    /// - Throws: ``KeychainError/Code/interactionNotAllowed`` when `key` is not extractable (or
    ///   may be wrapped only under a trusted key) or the keychain is locked;
    ///   ``KeychainError/Code/parameter`` when `wrappingKey` may not wrap with this mechanism.
    public func wrap(
        _ key: SecretKeyItem, with wrappingKey: SecretKeyItem,
        using algorithm: KeyWrapAlgorithm = .aesKeyWrapPadded
    ) throws(KeychainError) -> [UInt8] {
        try wrap(try reference(of: key), with: wrappingKey, using: algorithm)
    }

    /// A stored private key's PKCS#8 wrapped under a stored AES key (PKCS#11 C_WrapKey with
    /// CKM_AES_KEY_WRAP_KWP): what ``unwrapPrivateKey(_:with:using:label:applicationTag:extractable:)``
    /// stores back. The private key must be extractable (CKA_EXTRACTABLE; e.g. stored with
    /// `exportable: true`).
    ///
    /// - Throws: as ``wrap(_:with:using:)-(SecretKeyItem,_,_)``;
    ///   ``KeychainError/Code/parameter`` for a public key.
    public func wrap(
        _ key: KeyItem, with wrappingKey: SecretKeyItem, using algorithm: KeyWrapAlgorithm = .aesKeyWrapPadded
    ) throws(KeychainError) -> [UInt8] {
        guard key.keyClass == .private else {
            throw KeychainError(.parameter, "only a private key is wrapped: a public key needs no protection")
        }
        try requireUnlocked(to: "wrap a private key")
        let template: AttributeSet = [
            .class: AttributeValue.encode(ObjectClass.privateKey.rawValue),
            .uniqueID: key.persistentReference,
        ]
        let found = try KeychainError.mapping { () throws(CoreError) in
            try token.findObjects(template, context: context)
        }
        guard let reference = found.first else {
            throw KeychainError(.itemNotFound, "the private key \"\(key.label)\" no longer exists")
        }
        return try wrap(reference, with: wrappingKey, using: algorithm)
    }

    private func wrap(
        _ reference: ObjectReference, with wrappingKey: SecretKeyItem, using algorithm: KeyWrapAlgorithm
    )
        throws(KeychainError) -> [UInt8]
    {
        let wrapping = try use(wrappingKey, for: .wrap, keyTypes: [.aes], mechanism: algorithm.mechanism)
        let key = try KeychainError.mapping { () throws(CoreError) in
            try token.keyToWrap(reference, under: wrapping.attributes, context: context)
        }
        return try KeychainError.crypto { () throws(CryptoError) in
            try AESKeyWrap.wrap(key.bytes, key: wrapping.value, padded: algorithm.isPadded)
        }
    }

    /// Unwraps a key wrapped by ``wrap(_:with:using:)-(SecretKeyItem,_,_)`` (here or by any
    /// PKCS#11 token) and stores it as a secret key (PKCS#11 C_UnwrapKey). It is sealed
    /// before it is written, and, having been outside a token, is never "always sensitive".
    ///
    /// - Parameters:
    ///   - wrapped: The wrapped bytes.
    ///   - unwrappingKey: The AES key it was wrapped under, which must allow `.unwrap`.
    ///   - type: The unwrapped key's type (the wrapped bytes do not say).
    ///   - algorithm: The wrap algorithm it was wrapped with.
    ///   - label, applicationLabel, applicationTag, usage, extractable: as for
    ///     ``generateSecretKey(_:label:applicationLabel:applicationTag:usage:extractable:attributes:)``.
    /// - Throws: ``KeychainError/Code/decode`` when the bytes do not unwrap under this key
    ///   (another key, altered bytes); ``KeychainError/Code/parameter`` when the unwrapped
    ///   value has a length `type` does not have or the key may not unwrap.
    @discardableResult
    public func unwrapSecretKey(
        _ wrapped: [UInt8], with unwrappingKey: SecretKeyItem, type: SecretKeyType,
        using algorithm: KeyWrapAlgorithm = .aesKeyWrapPadded, label: String? = nil,
        applicationLabel: [UInt8]? = nil, applicationTag: [UInt8]? = nil, usage: KeyUsage? = nil,
        extractable: Bool = false
    ) throws(KeychainError) -> SecretKeyItem {
        let value = try unwrapped(wrapped, with: unwrappingKey, using: algorithm)
        var template = try NewSecretKeyAttributes(
            label: label, applicationLabel: applicationLabel, applicationTag: applicationTag, usage: usage,
            isExtractable: extractable
        ).template(type)
        template[.class] = AttributeValue.encode(ObjectClass.secretKey.rawValue)
        let reference = try KeychainError.mapping { () throws(CoreError) in
            try token.storeUnwrappedKey(
                value.value, template: template, unwrappingKey: value.unwrappingKey, context: context)
        }
        return try storedSecretKey(reference)
    }

    /// Unwraps a private key's PKCS#8 wrapped under a stored AES key (by
    /// ``wrap(_:with:using:)-(KeyItem,_,_)`` or any PKCS#11 token) and stores it (PKCS#11
    /// C_UnwrapKey with CKO_PRIVATE_KEY), sealed before it is written. Only the private half
    /// is stored: the returned item's ``KeyItem/publicKey`` is the public key, which
    /// ``add(_:label:applicationTag:)`` stores when a public key item is wanted too.
    ///
    /// - Parameters:
    ///   - extractable: Whether the key may be wrapped again (CKA_EXTRACTABLE); by default
    ///     not. It is sensitive either way: ``exportPrivateKey(_:)`` never reveals it.
    ///   - Others: as for ``unwrapSecretKey(_:with:type:using:label:applicationLabel:applicationTag:usage:extractable:)``.
    /// - Throws: ``KeychainError/Code/decode`` when the bytes do not unwrap under this key;
    ///   ``KeychainError/Code/parameter`` when they are not a private key the keychain holds.
    @discardableResult
    public func unwrapPrivateKey(
        _ wrapped: [UInt8], with unwrappingKey: SecretKeyItem,
        using algorithm: KeyWrapAlgorithm = .aesKeyWrapPadded,
        label: String? = nil, applicationTag: [UInt8]? = nil, extractable: Bool = false
    ) throws(KeychainError) -> KeyItem {
        let value = try unwrapped(wrapped, with: unwrappingKey, using: algorithm)
        var template = NewKeyAttributes(
            label: label, applicationTag: applicationTag, isSensitive: true, isExtractable: extractable
        ).template(.private)
        template[.class] = AttributeValue.encode(ObjectClass.privateKey.rawValue)
        template[.private] = [1]
        let reference = try KeychainError.mapping { () throws(CoreError) in
            try token.storeUnwrappedKey(
                value.value, template: template, unwrappingKey: value.unwrappingKey, context: context)
        }
        let attributes = try KeychainError.mapping { () throws(CoreError) in
            try token.attributes(of: reference, context: context, revealing: [])
        }
        guard let item = KeyItem(attributes) else {
            throw KeychainError(.internal, "the unwrapped private key cannot be read back")
        }
        return item
    }

    /// The bytes `wrapped` holds, unwrapped under a stored AES key that may unwrap.
    /// The unwrapped bytes, and the unwrapping key's attributes (its CKA_UNWRAP_TEMPLATE is
    /// the core's to apply).
    private func unwrapped(
        _ wrapped: [UInt8], with unwrappingKey: SecretKeyItem, using algorithm: KeyWrapAlgorithm
    )
        throws(KeychainError) -> (value: SecretBytes, unwrappingKey: AttributeSet)
    {
        let unwrapping = try use(
            unwrappingKey, for: .unwrap, keyTypes: [.aes], mechanism: algorithm.mechanism)
        do throws(CryptoError) {
            let value = try AESKeyWrap.unwrap(wrapped, key: unwrapping.value, padded: algorithm.isPadded)
            return (value, unwrapping.attributes)
        } catch {
            throw KeychainError(
                .decode, "the wrapped key does not unwrap under this key (another key, or altered bytes)")
        }
    }

    /// Random bytes from the keychain's generator (OpenSSL's), e.g. for a GCM IV or a key
    /// to import: 0 to ``maximumRandomBytes`` bytes.
    public static func randomBytes(_ count: Int) throws(KeychainError) -> [UInt8] {
        guard (0...maximumRandomBytes).contains(count) else {
            throw KeychainError(.parameter, "ask for 0 to \(maximumRandomBytes) random bytes, not \(count)")
        }
        return try KeychainError.crypto { () throws(CryptoError) in try SecureRandom.bytes(count) }
    }

    /// The most bytes one ``randomBytes(_:)`` call gives: a bound on the memory a caller's
    /// number can make it allocate (far more than any IV, key or nonce needs).
    public static let maximumRandomBytes = 1 << 20

    // MARK: Using a secret key

    /// A stored secret key's value for one use, through the core's one key-use check: a key of
    /// `keyTypes`, with the usage attribute TRUE and `mechanism` among its allowed mechanisms.
    private func use(
        _ key: SecretKeyItem, for usage: KeychainCore.KeyUse, keyTypes: [KeychainCore.KeyType],
        mechanism: UInt64
    ) throws(KeychainError) -> UsableSecretKey {
        let reference = try reference(of: key)
        return try KeychainError.mapping { () throws(CoreError) in
            try token.useSecretKey(
                reference, for: usage, keyTypes: keyTypes, mechanism: mechanism, context: context)
        }
    }
}

/// Runs `body` on the bytes of `input` (one part: the crypto layer takes any length) and
/// returns what it gives.
private func feed(_ input: [UInt8], _ body: (UnsafeRawBufferPointer) throws(CryptoError) -> [UInt8])
    throws(CryptoError) -> [UInt8]
{
    var result: Result<[UInt8], CryptoError> = .success([])
    input.withUnsafeBytes { buffer in
        do throws(CryptoError) {
            result = .success(try body(buffer))
        } catch {
            result = .failure(error)
        }
    }
    return try result.get()
}
