internal import KeychainCrypto

/// A key wrap or unwrap with one wrapping key (v2.40 §5.13), created by
/// ``Token/startKeyWrap(_:mechanism:parameters:unwrapping:context:)``: AES key wrap (RFC
/// 3394, CKM_AES_KEY_WRAP; RFC 5649, CKM_AES_KEY_WRAP_KWP and _PAD) or RSA-OAEP. Who may
/// wrap what is the core's (`Token.keyToWrap`); an unwrapped key is stored in the same call
/// (`Token.storeUnwrappedKey`), so its bytes never leave the core.
public final class KeyWrapOperation {
    fileprivate enum Method {
        case aes(key: SecretBytes, padded: Bool, iv: [UInt8]?)
        case rsaOAEP(AsymmetricKey, EncryptionPadding)
    }

    private let token: Token
    private let method: Method
    /// The wrapping or unwrapping key's attributes (its CKA_WRAP_WITH_TRUSTED, templates).
    private let keyAttributes: AttributeSet
    /// The key's per-use PIN (an access control that needs presence, for unwrapping).
    public let authentication: UseAuthentication

    fileprivate init(
        token: Token, method: Method, keyAttributes: AttributeSet, authentication: UseAuthentication
    ) {
        self.token = token
        self.method = method
        self.keyAttributes = keyAttributes
        self.authentication = authentication
    }

    /// The key `reference` names, wrapped: a secret key, or (AES key wrap) a private key's
    /// PKCS#8, if it may leave under this key.
    public func wrap(_ reference: ObjectReference, context: AccessContext) throws(CoreError) -> [UInt8] {
        let key = try token.keyToWrap(reference, under: keyAttributes, context: context)
        switch method {
        case .aes(let wrapping, let padded, let iv):
            do throws(CryptoError) {
                return try AESKeyWrap.wrap(key.bytes, key: wrapping, padded: padded, iv: iv)
            } catch {
                throw CoreError(
                    .keySizeRange, "the key cannot be wrapped by this mechanism: \(error.message)")
            }
        case .rsaOAEP(let wrapping, let padding):
            guard key.attributes.ulong(.class) == ObjectClass.secretKey.rawValue else {
                throw CoreError(
                    .keyNotWrappable, "RSA-OAEP wraps secret keys only; wrap a private key with AES-KWP")
            }
            var plain = key.bytes.copyBytes()
            defer { SecretBytes.wipe(&plain) }
            do throws(CryptoError) {
                return try wrapping.encrypt(plain, padding: padding)
            } catch {
                throw CoreError(.keySizeRange, "the key is too long for this RSA key: \(error.message)")
            }
        }
    }

    /// Unwraps `wrapped` and stores the key the template describes (merged with this key's
    /// CKA_UNWRAP_TEMPLATE), sealed: its reference.
    public func unwrap(_ wrapped: [UInt8], template: AttributeSet, context: AccessContext) throws(CoreError)
        -> ObjectReference
    {
        try authentication.spend("unwrapping")
        let bytes: SecretBytes
        var zeroPadded = false
        do throws(CryptoError) {
            switch method {
            case .aes(let unwrapping, let padded, let iv):
                bytes = try AESKeyWrap.unwrap(wrapped, key: unwrapping, padded: padded, iv: iv)
                zeroPadded = !padded
            case .rsaOAEP(let unwrapping, let padding):
                var plain = try unwrapping.decrypt(wrapped, padding: padding)
                bytes = SecretBytes(wiping: &plain)
            }
        } catch {
            // Not of a length the mechanism produces (for RSA: one modulus): out of range;
            // otherwise not a key wrapped under this key.
            throw error.code == .invalidInput
                ? CoreError(.wrappedKeyLengthRange, error.message)
                : CoreError(.wrappedKeyInvalid, "the wrapped key does not unwrap under this key")
        }
        return try token.storeUnwrappedKey(
            bytes, template: template, unwrappingKey: keyAttributes, zeroPadded: zeroPadded, context: context)
    }
}

extension Token {
    /// Starts a key wrap (`unwrapping` false) or unwrap with the key `reference` names, through
    /// the one key-use entry point for `.wrap` / `.unwrap`. Parameter errors come first.
    public func startKeyWrap(
        _ reference: ObjectReference, mechanism type: UInt64, parameters: CipherParameters, unwrapping: Bool,
        context: AccessContext
    ) throws(CoreError) -> KeyWrapOperation {
        let use: KeyUse = unwrapping ? .unwrap : .wrap
        guard let registered = MechanismRegistry.mechanism(type),
            registered.functions.contains(MechanismFunctions(use))
        else {
            throw CoreError(
                .mechanismInvalid, "mechanism \(PKCS11Names.mechanism(type)) cannot wrap or unwrap keys")
        }
        switch registered.family {
        case .aesKeyWrap(let padded):
            // RFC 5649's alternative initial value is 4 bytes, RFC 3394's 8.
            let iv = try parameters.initialValue(length: padded ? 4 : 8)
            let key = try useSecretKey(
                reference, for: use, keyTypes: registered.keyTypes, mechanism: type, context: context)
            return KeyWrapOperation(
                token: self, method: .aes(key: key.value, padded: padded, iv: iv),
                keyAttributes: key.attributes,
                authentication: UseAuthentication(token: self, isRequired: false))
        default:
            let padding = try parameters.padding(for: registered)
            let key = try useKey(
                reference, for: use, keyTypes: registered.keyTypes, mechanism: type, context: context)
            return KeyWrapOperation(
                token: self, method: .rsaOAEP(key.key, padding), keyAttributes: key.attributes,
                authentication: UseAuthentication(token: self, isRequired: key.needsPINForEachUse))
        }
    }
}
