public import KeychainCore

// What a stored secret key does: encrypt and decrypt (AES), compute and check MACs (HMAC,
// CMAC), wrap and unwrap other keys (AES key wrap). Every use is the core's operation
// (`Token.startCipher`, `Token.startKeyWrap`), which runs the one key-use check with the
// PKCS#11 mechanism the operation is, so a key a PKCS#11 application made with
// CKA_ALLOWED_MECHANISMS or a usage flag off is refused here exactly as the module refuses it;
// the core also decides what may be wrapped and stores what is unwrapped.

/// How an AES key encrypts: the PKCS#11 mechanisms CKM_AES_ECB, _CBC, _CBC_PAD, _CTR, _GCM
/// with their parameters. The core's type.
public typealias CipherAlgorithm = KeychainCore.AESCipherMode

/// How a message authentication code is computed: `.hmac(digest)` (RFC 2104), or `.cmac`
/// (AES-CMAC, NIST SP 800-38B). The core's type.
public typealias AuthenticationCodeAlgorithm = KeychainCore.AuthenticationCodeAlgorithm

extension AuthenticationCodeAlgorithm {
    /// The algorithm a key's type implies: its hash for an HMAC key, CMAC for AES; nil for a
    /// generic secret, which works with any hash.
    init?(_ type: SecretKeyType) {
        switch type {
        case .hmac(let digest): self = .hmac(digest)
        case .aes: self = .cmac
        case .generic: return nil
        }
    }
}

/// How one key is wrapped under another AES key: RFC 3394, or RFC 5649 with padding. The
/// core's type.
public typealias KeyWrapAlgorithm = KeychainCore.AESKeyWrapMode

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
        let reference = try reference(of: key)
        do throws(CoreError) {
            let operation = try token.startCipher(
                reference, mechanism: algorithm.mechanism, parameters: algorithm.parameters,
                encrypting: encrypting, context: context)
            return try operation.run(input)
        } catch  where error.code == .encryptedDataInvalid {
            // A GCM tag that does not verify, or CBC-PAD padding that is not valid: no
            // plaintext is released.
            if case .aesGCM = algorithm {
                throw KeychainError(
                    .decode,
                    "the AES-GCM tag does not verify: wrong key, IV or additional data, or altered ciphertext"
                )
            }
            throw KeychainError(.decode, "the ciphertext does not decrypt: its CBC-PAD padding is not valid")
        } catch  where error.code == .encryptedDataLengthRange {
            // The typed API reports input of the wrong length as a parameter error either way.
            throw KeychainError(.parameter, error.message)
        } catch {
            throw KeychainError(error)
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
            guard let mechanism = algorithm.mechanism else {
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
        let wrapping = try self.reference(of: wrappingKey)
        return try KeychainError.mapping { () throws(CoreError) in
            let operation = try token.startKeyWrap(
                wrapping, mechanism: algorithm.mechanism, parameters: .none, unwrapping: false,
                context: context)
            return try operation.wrap(reference, context: context)
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
        var template = try NewSecretKeyAttributes(
            label: label, applicationLabel: applicationLabel, applicationTag: applicationTag, usage: usage,
            isExtractable: extractable
        ).template(type)
        template[.class] = AttributeValue.encode(ObjectClass.secretKey.rawValue)
        let reference = try unwrap(wrapped, with: unwrappingKey, using: algorithm, template: template)
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
        var template = NewKeyAttributes(
            label: label, applicationTag: applicationTag, isSensitive: true, isExtractable: extractable
        ).template(.private)
        template[.class] = AttributeValue.encode(ObjectClass.privateKey.rawValue)
        template[.private] = [1]
        let reference = try unwrap(wrapped, with: unwrappingKey, using: algorithm, template: template)
        let attributes = try KeychainError.mapping { () throws(CoreError) in
            try token.attributes(of: reference, context: context, revealing: [])
        }
        guard let item = KeyItem(attributes) else {
            throw KeychainError(.internal, "the unwrapped private key cannot be read back")
        }
        return item
    }

    /// Unwraps `wrapped` under a stored AES key that may unwrap and stores the key `template`
    /// describes, in one core call (the unwrapping key's CKA_UNWRAP_TEMPLATE is the core's to
    /// apply).
    private func unwrap(
        _ wrapped: [UInt8], with unwrappingKey: SecretKeyItem, using algorithm: KeyWrapAlgorithm,
        template: AttributeSet
    ) throws(KeychainError) -> ObjectReference {
        let unwrapping = try reference(of: unwrappingKey)
        do throws(CoreError) {
            let operation = try token.startKeyWrap(
                unwrapping, mechanism: algorithm.mechanism, parameters: .none, unwrapping: true,
                context: context)
            return try operation.unwrap(wrapped, template: template, context: context)
        } catch  where error.code == .wrappedKeyInvalid || error.code == .wrappedKeyLengthRange {
            throw KeychainError(
                .decode, "the wrapped key does not unwrap under this key (another key, or altered bytes)")
        } catch {
            throw KeychainError(error)
        }
    }

    /// Random bytes from the keychain's generator (OpenSSL's), e.g. for a GCM IV or a key
    /// to import: 0 to ``maximumRandomBytes`` bytes.
    public static func randomBytes(_ count: Int) throws(KeychainError) -> [UInt8] {
        guard (0...maximumRandomBytes).contains(count) else {
            throw KeychainError(.parameter, "ask for 0 to \(maximumRandomBytes) random bytes, not \(count)")
        }
        return try KeychainError.mapping { () throws(CoreError) in try RandomGeneration.bytes(count) }
    }

    /// The most bytes one ``randomBytes(_:)`` call gives: a bound on the memory a caller's
    /// number can make it allocate (far more than any IV, key or nonce needs).
    public static let maximumRandomBytes = 1 << 20
}
