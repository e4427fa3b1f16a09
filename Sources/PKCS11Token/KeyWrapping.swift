internal import CPKCS11
internal import KeychainCore
internal import KeychainCrypto

// Secret key generation (v2.40 §5.14 C_GenerateKey) and key wrapping (§5.13 C_WrapKey,
// C_UnwrapKey). Who may wrap what is the core's (`Token.keyToWrap`, `useSecretKey`/`useKey`
// for `.wrap`/`.unwrap`); here the mechanisms are read and the bytes wrapped.

/// A wrapping mechanism with its parameters.
enum WrapMechanism {
    /// CKM_AES_KEY_WRAP (RFC 3394), with an optional 8-byte initial value. A key of a length
    /// other than a multiple of 8 is padded with zeros (v2.40 §2.14.3; `AESKeyWrap.wrap`).
    case aesKeyWrap(iv: [UInt8]?)
    /// CKM_AES_KEY_WRAP_KWP and CKM_AES_KEY_WRAP_PAD (RFC 5649), with an optional 4-byte
    /// alternative initial value. PAD is taken as RFC 5649, as SoftHSM2 and OpenSC do.
    case aesKeyWrapPadded(iv: [UInt8]?)
    /// CKM_RSA_PKCS_OAEP: a secret key's value encrypted to an RSA public key.
    case rsaOAEP(EncryptionPadding)

    init(_ mechanism: CK_MECHANISM) throws(P11Error) {
        func initialValue(length: Int) throws(P11Error) -> [UInt8]? {
            // None (NULL/0), or exactly the initial value: a length with no bytes behind it, or
            // another length, is no initial value.
            guard mechanism.ulParameterLen != 0 else { return nil }
            guard let pointer = mechanism.pParameter, mechanism.ulParameterLen == CK_ULONG(length) else {
                throw P11Error(
                    CKR_MECHANISM_PARAM_INVALID, "the key wrap initial value has \(length) bytes")
            }
            return Array(UnsafeRawBufferPointer(start: pointer, count: length))
        }
        switch mechanism.mechanism {
        case CK_MECHANISM_TYPE(CKM_AES_KEY_WRAP):
            self = .aesKeyWrap(iv: try initialValue(length: 8))
        case CK_MECHANISM_TYPE(CKM_AES_KEY_WRAP_PAD), CK_MECHANISM_TYPE(CKM_AES_KEY_WRAP_KWP):
            self = .aesKeyWrapPadded(iv: try initialValue(length: 4))
        case CK_MECHANISM_TYPE(CKM_RSA_PKCS_OAEP):
            self = .rsaOAEP(try encryptionPadding(mechanism))
        default:
            throw P11Error(
                CKR_MECHANISM_INVALID,
                "mechanism \(mechanismName(mechanism.mechanism)) cannot wrap or unwrap keys")
        }
    }
}

/// The CK_RV of a failed unwrap: bytes that are not a key wrapped under this key (or of a
/// length the mechanism never produces).
private func unwrapFailure(_ error: CryptoError) -> P11Error {
    error.code == .invalidInput
        ? P11Error(CKR_WRAPPED_KEY_LEN_RANGE, error.message)
        : P11Error(CKR_WRAPPED_KEY_INVALID, "the wrapped key does not unwrap under this key")
}

@c @implementation
func C_GenerateKey(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?,
    _ pTemplate: UnsafeMutablePointer<CK_ATTRIBUTE>?, _ ulCount: CK_ULONG,
    _ phKey: UnsafeMutablePointer<CK_OBJECT_HANDLE>?
) -> CK_RV {
    sessionEntry("C_GenerateKey", hSession) { (_, session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee, let phKey else { throw P11Error.argumentsBad }
        let template = try readTemplate(pTemplate, ulCount)
        let kind = try core { () throws(CoreError) in
            try SecretKeyKind(generating: UInt64(mechanism.mechanism), template: template)
        }
        guard mechanism.ulParameterLen == 0 else {
            throw P11Error(CKR_MECHANISM_PARAM_INVALID, "key generation mechanisms take no parameter")
        }
        let reference = try core { () throws(CoreError) in
            try session.slot.token.generateSecretKey(
                kind, mechanism: UInt64(mechanism.mechanism), template: template, context: session.context)
        }
        adopt(reference, by: session)
        phKey.pointee = ObjectHandle.make(reference, slot: session.slot)
    }
}

@c @implementation
func C_WrapKey(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?,
    _ hWrappingKey: CK_OBJECT_HANDLE, _ hKey: CK_OBJECT_HANDLE, _ pWrappedKey: UnsafeMutablePointer<CK_BYTE>?,
    _ pulWrappedKeyLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_WrapKey", hSession) { (_, session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee, let pulWrappedKeyLen else { throw P11Error.argumentsBad }
        let method = try WrapMechanism(mechanism)
        let token = session.slot.token
        let wrapped: [UInt8]
        switch method {
        case .aesKeyWrap(let iv), .aesKeyWrapPadded(let iv):
            let wrapping = try secretOperationKey(
                session, hWrappingKey, for: .wrap, types: [.aes], mechanism: mechanism.mechanism,
                role: .wrapping)
            let key = try onKey(session, hKey, .operation) { (reference) throws(CoreError) in
                try token.keyToWrap(reference, under: wrapping.attributes, context: session.context)
            }
            let padded: Bool
            if case .aesKeyWrapPadded = method { padded = true } else { padded = false }
            do throws(CryptoError) {
                wrapped = try AESKeyWrap.wrap(key.bytes, key: wrapping.value, padded: padded, iv: iv)
            } catch {
                throw P11Error(
                    CKR_KEY_SIZE_RANGE, "the key cannot be wrapped by this mechanism: \(error.message)")
            }
        case .rsaOAEP(let padding):
            let wrapping = try operationKey(
                session, hWrappingKey, for: .wrap, type: .rsa, mechanism: mechanism.mechanism, role: .wrapping
            )
            let key = try onKey(session, hKey, .operation) { (reference) throws(CoreError) in
                try token.keyToWrap(reference, under: wrapping.attributes, context: session.context)
            }
            guard key.attributes.ulong(.class) == ObjectClass.secretKey.rawValue else {
                throw P11Error(
                    CKR_KEY_NOT_WRAPPABLE, "RSA-OAEP wraps secret keys only; wrap a private key with AES-KWP")
            }
            var plain = key.bytes.copyBytes()
            defer { SecretBytes.wipe(&plain) }
            do throws(CryptoError) {
                wrapped = try wrapping.key.encrypt(plain, padding: padding)
            } catch {
                throw P11Error(CKR_KEY_SIZE_RANGE, "the key is too long for this RSA key: \(error.message)")
            }
        }
        try writeOutput(into: pWrappedKey, length: pulWrappedKeyLen, size: wrapped.count) { wrapped }
    }
}

@c @implementation
func C_UnwrapKey(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?,
    _ hUnwrappingKey: CK_OBJECT_HANDLE, _ pWrappedKey: UnsafeMutablePointer<CK_BYTE>?,
    _ ulWrappedKeyLen: CK_ULONG, _ pTemplate: UnsafeMutablePointer<CK_ATTRIBUTE>?,
    _ ulAttributeCount: CK_ULONG, _ phKey: UnsafeMutablePointer<CK_OBJECT_HANDLE>?
) -> CK_RV {
    sessionEntry("C_UnwrapKey", hSession) { (_, session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee, let phKey else { throw P11Error.argumentsBad }
        let method = try WrapMechanism(mechanism)
        let wrapped = Array(
            try input(pWrappedKey, ulWrappedKeyLen, limit: maximumWrappedKeyLength, CKR_WRAPPED_KEY_LEN_RANGE)
        )
        let template = try readTemplate(pTemplate, ulAttributeCount)
        let bytes: SecretBytes
        let unwrappingKey: AttributeSet
        switch method {
        case .aesKeyWrap(let iv), .aesKeyWrapPadded(let iv):
            let unwrapping = try secretOperationKey(
                session, hUnwrappingKey, for: .unwrap, types: [.aes], mechanism: mechanism.mechanism,
                role: .unwrapping)
            unwrappingKey = unwrapping.attributes
            let padded: Bool
            if case .aesKeyWrapPadded = method { padded = true } else { padded = false }
            do throws(CryptoError) {
                bytes = try AESKeyWrap.unwrap(wrapped, key: unwrapping.value, padded: padded, iv: iv)
            } catch {
                throw unwrapFailure(error)
            }
        case .rsaOAEP(let padding):
            let unwrapping = try operationKey(
                session, hUnwrappingKey, for: .unwrap, type: .rsa, mechanism: mechanism.mechanism,
                role: .unwrapping)
            unwrappingKey = unwrapping.attributes
            do throws(CryptoError) {
                var plain = try unwrapping.key.decrypt(wrapped, padding: padding)
                bytes = SecretBytes(wiping: &plain)
            } catch {
                // Not one modulus long: CKR_WRAPPED_KEY_LEN_RANGE; otherwise not a key wrapped
                // under this key.
                throw unwrapFailure(error)
            }
        }
        var zeroPadded = false
        if case .aesKeyWrap = method { zeroPadded = true }
        let reference = try core { () throws(CoreError) in
            try session.slot.token.storeUnwrappedKey(
                bytes, template: template, unwrappingKey: unwrappingKey, zeroPadded: zeroPadded,
                context: session.context)
        }
        adopt(reference, by: session)
        phKey.pointee = ObjectHandle.make(reference, slot: session.slot)
    }
}

/// The longest wrapped key taken: a PKCS#8 RSA-8192 private key wrapped is under 5 KiB.
let maximumWrappedKeyLength = 64 << 10
