public import KeychainCrypto

// Keys leaving and entering the token wrapped (C_WrapKey, C_UnwrapKey; v2.40 §5.13) and keys
// derived from keys it holds (C_DeriveKey): the rules of who may wrap what, in one place, for
// every face. The wrapping itself (AES key wrap, RSA-OAEP) is the caller's, on the bytes
// these functions hand out or take.

/// A key about to leave the token wrapped: its bytes (a secret key's value, or a private
/// key's PKCS#8) and its attributes.
public struct KeyToWrap: Sendable {
    public let bytes: SecretBytes
    public let attributes: AttributeSet
}

extension Token {
    /// The key `reference` names, to be wrapped by a key with `wrappingKey`'s attributes
    /// (which the caller got from `useKey`/`useSecretKey` for `.wrap`). The key must be a
    /// secret or private key with CKA_EXTRACTABLE TRUE, and a key with CKA_WRAP_WITH_TRUSTED
    /// goes only under a wrapping key with CKA_TRUSTED (v2.40 §4.9–4.10). Sensitivity does
    /// not forbid wrapping: that is how a sensitive key is backed up.
    package func keyToWrap(
        _ reference: ObjectReference, under wrappingKey: AttributeSet, context: AccessContext
    ) throws(CoreError) -> KeyToWrap {
        try withState { (state) throws(CoreError) in
            let stored = try state.loadStored(reference, context: context)
            let secretType: AttributeType
            switch stored.ulong(.class) {
            case ObjectClass.secretKey.rawValue: secretType = .value
            case ObjectClass.privateKey.rawValue: secretType = .keyMaterial
            default: throw CoreError(.objectNotFound, "only secret and private keys can be wrapped")
            }
            guard stored.bool(.extractable) == true else {
                throw CoreError(.keyUnextractable, "the key is not extractable (CKA_EXTRACTABLE is false)")
            }
            try Token.checkWrapTemplate(of: wrappingKey, against: Token.concealed(stored))
            if stored.bool(.wrapWithTrusted) == true, wrappingKey.bool(.trusted) != true {
                throw CoreError(
                    .keyNotWrappable, "the key may be wrapped only by a trusted key (CKA_WRAP_WITH_TRUSTED)")
            }
            guard let bytes = try state.opened(secretType, of: stored) else {
                throw CoreError(.storageCorrupt, "the key has no key material")
            }
            return KeyToWrap(bytes: bytes, attributes: Token.concealed(stored))
        }
    }

    /// A secret key's value for C_DigestKey (v2.40 §5.10): only a key whose value could be
    /// read anyway (neither sensitive nor unextractable), since a digest of a low-entropy key
    /// would let a caller test guesses of a value the token keeps secret.
    package func keyToDigest(_ reference: ObjectReference, context: AccessContext) throws(CoreError)
        -> SecretBytes
    {
        try withState { (state) throws(CoreError) in
            let stored = try state.loadStored(reference, context: context)
            guard stored.ulong(.class) == ObjectClass.secretKey.rawValue else {
                throw CoreError(.keyIndigestible, "only secret keys can be digested")
            }
            guard Token.sensitiveTypes(of: stored).isEmpty else {
                throw CoreError(.keyIndigestible, "a sensitive or unextractable key is not digested")
            }
            guard let value = try state.opened(.value, of: stored) else {
                throw CoreError(.storageCorrupt, "a secret key has no value")
            }
            return value
        }
    }

    /// Stores a key that arrived wrapped and was unwrapped to `bytes` (C_UnwrapKey): a secret
    /// key of the template's CKA_KEY_TYPE, or a private key whose PKCS#8 `bytes` are. The
    /// template is checked as `.unwrap` (no value, nothing the token sets), the key is sealed
    /// before it is written, and it was outside the token: never "always sensitive" or "never
    /// extractable" (v2.40 §5.13). The unwrapping key's CKA_UNWRAP_TEMPLATE (its attributes
    /// from `useKey`/`useSecretKey`) is merged into the template first.
    ///
    /// `zeroPadded`: the mechanism padded the key with zeros to whole 8-byte blocks before
    /// wrapping (CKM_AES_KEY_WRAP, v2.40 §2.14.3), so `bytes` may end in up to 7 zeros that
    /// are not the key's; a secret key's CKA_VALUE_LEN in the template cuts them off ("the
    /// mechanism decrypts the wrapped key, and truncates the result according to ... the
    /// CKA_VALUE_LEN attribute of the template", v2.40 §2.8.4).
    package func storeUnwrappedKey(
        _ bytes: SecretBytes, template given: AttributeSet, unwrappingKey: AttributeSet,
        zeroPadded: Bool = false, context: AccessContext
    ) throws(CoreError) -> ObjectReference {
        let template = try Token.merged(given, with: .unwrapTemplate, of: unwrappingKey)
        guard let rawClass = template.ulong(.class) else {
            throw CoreError(.templateIncomplete, "an unwrapping template needs CKA_CLASS")
        }
        if rawClass == ObjectClass.privateKey.rawValue {
            return try storeUnwrappedPrivateKey(bytes, template: template, context: context)
        }
        guard rawClass == ObjectClass.secretKey.rawValue else {
            throw CoreError(.templateInconsistent, "only secret and private keys can be unwrapped")
        }
        guard let rawType = template.ulong(.keyType) else {
            throw CoreError(.templateIncomplete, "an unwrapping template needs CKA_KEY_TYPE")
        }
        guard let kind = SecretKeyKind(KeyType(rawValue: rawType)) else {
            throw CoreError(
                .templateInconsistent, "key type \(PKCS11Names.keyType(rawType)) is not a secret key type")
        }
        let value = zeroPadded ? Token.unpadded(bytes, to: template.ulong(.valueLength)) : bytes
        return try storeSecretKey(value, kind: kind, template: template, change: .unwrap, context: context)
    }

    /// `bytes` cut to `length` when that removes only the zero padding of CKM_AES_KEY_WRAP
    /// (fewer than 8 bytes); otherwise `bytes` as they are, for the template check to judge.
    static func unpadded(_ bytes: SecretBytes, to length: UInt64?) -> SecretBytes {
        guard let length, let wanted = Int(exactly: length), wanted >= 1, wanted < bytes.count,
            bytes.count - wanted < 8
        else { return bytes }
        return bytes.withUnsafeBytes {
            SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0.prefix(wanted)))
        }
    }

    /// A private key unwrapped from its PKCS#8 (v2.40 §5.13; private keys wrapped under
    /// AES-KWP): OpenSSL parses and checks the key; the template's CKA_KEY_TYPE, when given,
    /// must be the key's. Only the private key object is made, as C_UnwrapKey returns one.
    private func storeUnwrappedPrivateKey(
        _ pkcs8: SecretBytes, template: AttributeSet, context: AccessContext
    )
        throws(CoreError) -> ObjectReference
    {
        try ObjectPolicy.privateKey.check(template, .unwrap, asSecurityOfficer: context.securityOfficer)
        let key: AsymmetricKey
        do {
            key = try pkcs8.withUnsafeBytes { try AsymmetricKey(privateKeyDER: Array($0)) }
        } catch {
            throw CoreError(.wrappedKeyInvalid, "the unwrapped bytes are not a private key (PKCS#8)")
        }
        let objects = try keyPairObjects(
            key, publicTemplate: [:], privateTemplate: template, generatedBy: nil, context: context)
        if let named = template.ulong(.keyType), named != objects.privateKey.attributes.ulong(.keyType) {
            throw CoreError(.templateInconsistent, "CKA_KEY_TYPE contradicts the unwrapped key")
        }
        let references = try insertAll([objects.privateKey], context: context)
        guard let reference = references.first else {
            throw CoreError(.storageFailure, "the key was not stored")
        }
        return reference
    }

    /// Stores a key derived from a base key (C_DeriveKey): `secret` is what the mechanism
    /// computed (an ECDH shared secret, after its KDF, or HKDF's output), cut to the length
    /// the template asks (`derivedKeyLength`). The key's history follows the base key's.
    package func storeDerivedKey(
        _ secret: SecretBytes, template given: AttributeSet, base: AttributeSet, context: AccessContext
    ) throws(CoreError) -> ObjectReference {
        let template = try Token.merged(given, with: .deriveTemplate, of: base)
        let kind = try Token.derivedKeyKind(template)
        return try storeSecretKey(
            secret, kind: kind, template: template, change: .derive, base: base, context: context)
    }

    /// The kind of key a derivation template asks for: CKO_SECRET_KEY (the default) of its
    /// CKA_KEY_TYPE, generic secret by default.
    package static func derivedKeyKind(_ template: AttributeSet) throws(CoreError) -> SecretKeyKind {
        if let rawClass = template.ulong(.class), rawClass != ObjectClass.secretKey.rawValue {
            throw CoreError(.templateInconsistent, "a derived key is a secret key (CKO_SECRET_KEY)")
        }
        let type = template.ulong(.keyType).map(KeyType.init(rawValue:)) ?? .genericSecret
        guard let kind = SecretKeyKind(type) else {
            throw CoreError(
                .templateInconsistent,
                "key type \(PKCS11Names.keyType(type.rawValue)) is not a secret key type")
        }
        return kind
    }

    /// How many bytes of a mechanism's output make the derived key: CKA_VALUE_LEN when the
    /// template gives it (at most `maximum`), else `natural` (the mechanism's own output
    /// length) for a generic secret or HMAC key; AES needs CKA_VALUE_LEN unless `natural` is
    /// an AES key's length.
    package static func derivedKeyLength(_ template: AttributeSet, natural: Int, maximum: Int)
        throws(CoreError) -> Int
    {
        let kind = try derivedKeyKind(template)
        guard let requested = template.ulong(.valueLength) else {
            guard kind.allows(length: natural) else {
                throw CoreError(.templateIncomplete, "the derivation template needs CKA_VALUE_LEN")
            }
            return natural
        }
        guard let length = Int(exactly: requested), length <= maximum, kind.allows(length: length) else {
            throw CoreError(
                .templateInconsistent,
                "CKA_VALUE_LEN is more than the mechanism gives, or a length the key type does not have")
        }
        return length
    }

    /// The length of a derived data object (CKM_HKDF_DATA): CKA_VALUE_LEN, at most `maximum`,
    /// else `natural`.
    package static func derivedDataLength(_ template: AttributeSet, natural: Int, maximum: Int)
        throws(CoreError) -> Int
    {
        guard let requested = template.ulong(.valueLength) else { return natural }
        guard let length = Int(exactly: requested), length >= 1, length <= maximum else {
            throw CoreError(.templateInconsistent, "CKA_VALUE_LEN is more than the mechanism gives")
        }
        return length
    }

    /// Stores derived bytes as a data object (CKM_HKDF_DATA, v3.0 §2.43.4): the template
    /// gives the data object's attributes but not its value; CKA_VALUE_LEN only sizes it.
    /// The object is private unless the template says otherwise, so its value is sealed
    /// (`Token.sealedTypes`). Bytes derived from a key whose value never leaves (`keys`: the
    /// base key and any salt key; sensitive or unextractable) are that key's secret too: they
    /// are always a private object, and a template asking CKA_PRIVATE=FALSE is refused rather
    /// than quietly made private, which would hide the object from the public session that
    /// asked for it.
    package func storeDerivedData(
        _ value: SecretBytes, template: AttributeSet, derivedFrom keys: [AttributeSet], context: AccessContext
    )
        throws(CoreError) -> ObjectReference
    {
        if template.bool(.private) == false, keys.contains(where: { !Token.sensitiveTypes(of: $0).isEmpty }) {
            throw CoreError(
                .templateInconsistent,
                "data derived from a sensitive or unextractable key is a private object (CKA_PRIVATE=FALSE)")
        }
        if let rawClass = template.ulong(.class), rawClass != ObjectClass.data.rawValue {
            throw CoreError(.templateInconsistent, "CKM_HKDF_DATA makes a data object (CKO_DATA)")
        }
        guard template[.value] == nil else {
            throw CoreError(.attributeReadOnly, "the derived data object's value is made by the token")
        }
        var object = template
        object[.valueLength] = nil
        object[.class] = AttributeValue.encode(ObjectClass.data.rawValue)
        object[.private] = template[.private] ?? [1]
        object[.value] = value.copyBytes()
        defer { object[.value] = nil }
        return try createObject(object, context: context)
    }
}
