internal import CPKCS11
internal import KeychainCore

// Secret key generation (v2.40 §5.14 C_GenerateKey) and key wrapping (§5.13 C_WrapKey,
// C_UnwrapKey). Who may wrap what, and the wrapping itself, are the core's
// (`Token.startKeyWrap`, `KeyWrapOperation`): here the mechanism's parameter is read, the
// handles turned into references and the buffer convention run.

@c @implementation
func C_GenerateKey(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?,
    _ pTemplate: UnsafeMutablePointer<CK_ATTRIBUTE>?, _ ulCount: CK_ULONG,
    _ phKey: UnsafeMutablePointer<CK_OBJECT_HANDLE>?
) -> CK_RV {
    sessionEntry("C_GenerateKey", hSession) { (session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee, let phKey else { throw P11Error.argumentsBad }
        let template = try readTemplate(pTemplate, ulCount)
        let kind = try core { () throws(CoreError) in
            try SecretKeyKind(generating: UInt64(mechanism.mechanism), template: template)
        }
        guard mechanism.ulParameterLen == 0 else {
            throw P11Error(CKR_MECHANISM_PARAM_INVALID, "key generation mechanisms take no parameter")
        }
        let reference = try core { () throws(CoreError) in
            try session.token.generateSecretKey(
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
    sessionEntry("C_WrapKey", hSession) { (session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee, let pulWrappedKeyLen else { throw P11Error.argumentsBad }
        let parameters = try cipherParameters(mechanism, for: .wrap)
        let operation = try onKey(session, hWrappingKey, .wrapping) { (reference) throws(CoreError) in
            try session.token.startKeyWrap(
                reference, mechanism: UInt64(mechanism.mechanism), parameters: parameters, unwrapping: false,
                context: session.context)
        }
        let wrapped = try onKey(session, hKey, .operation) { (reference) throws(CoreError) in
            try operation.wrap(reference, context: session.context)
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
    sessionEntry("C_UnwrapKey", hSession) { (session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee, let phKey else { throw P11Error.argumentsBad }
        let parameters = try cipherParameters(mechanism, for: .unwrap)
        let wrapped = Array(
            try input(pWrappedKey, ulWrappedKeyLen, limit: maximumWrappedKeyLength, CKR_WRAPPED_KEY_LEN_RANGE)
        )
        let template = try readTemplate(pTemplate, ulAttributeCount)
        let operation = try onKey(session, hUnwrappingKey, .unwrapping) { (reference) throws(CoreError) in
            try session.token.startKeyWrap(
                reference, mechanism: UInt64(mechanism.mechanism), parameters: parameters, unwrapping: true,
                context: session.context)
        }
        try refuseSinglePIN(operation.authentication)
        let reference = try core { () throws(CoreError) in
            try operation.unwrap(wrapped, template: template, context: session.context)
        }
        adopt(reference, by: session)
        phKey.pointee = ObjectHandle.make(reference, slot: session.slot)
    }
}

/// The longest wrapped key taken: a PKCS#8 RSA-8192 private key wrapped is under 5 KiB.
let maximumWrappedKeyLength = 64 << 10
