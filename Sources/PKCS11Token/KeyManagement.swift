internal import CPKCS11
internal import KeychainCore

// Key pair generation (v2.40 §5.14) and the key lookup every cryptographic operation starts with
// (`onKey`: a handle to the object the core's one key-use check then reads).

/// C_DeriveKey and C_UnwrapKey are single calls: PKCS#11 has no context-specific login for
/// them (v2.40 §5.6 allows one only after an …Init), so a key whose access control needs the
/// PIN for each use cannot be used through them.
func refuseSinglePIN(_ authentication: UseAuthentication) throws(P11Error) {
    guard authentication.isRequired else { return }
    throw P11Error(
        CKR_KEY_FUNCTION_NOT_PERMITTED,
        "the key's access control needs the PIN for each use, which C_DeriveKey and C_UnwrapKey "
            + "cannot take: use the key through the Swift API with its PIN")
}

/// The part a key plays in a call, which picks the CK_RV of a handle that names no such key
/// and of a key of the wrong type (v2.40 §5.13: the wrapping functions have their own).
enum KeyRole {
    case operation, wrapping, unwrapping

    var invalidHandle: CK_RV {
        switch self {
        case .operation: CK_RV(CKR_KEY_HANDLE_INVALID)
        case .wrapping: CK_RV(CKR_WRAPPING_KEY_HANDLE_INVALID)
        case .unwrapping: CK_RV(CKR_UNWRAPPING_KEY_HANDLE_INVALID)
        }
    }

    var typeInconsistent: CK_RV {
        switch self {
        case .operation: CK_RV(CKR_KEY_TYPE_INCONSISTENT)
        case .wrapping: CK_RV(CKR_WRAPPING_KEY_TYPE_INCONSISTENT)
        case .unwrapping: CK_RV(CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT)
        }
    }
}

/// Runs a core call on the key `handle` names, with the codes of `role` for a handle that
/// names no key of the kind the call needs and for a key of the wrong type.
func onKey<T>(
    _ session: Session, _ handle: CK_OBJECT_HANDLE, _ role: KeyRole,
    _ body: (ObjectReference) throws(CoreError) -> T
) throws(P11Error) -> T {
    let reference: ObjectReference
    do {
        reference = try ObjectHandle.reference(handle, slot: session.slot)
    } catch {
        throw P11Error(role.invalidHandle, "handle \(handle) names no key")
    }
    return try mappingKeyErrors(role) { () throws(CoreError) in try body(reference) }
}

/// `body`'s core error as the PKCS#11 answer for a key in `role`: a key that is not found or
/// not of a type the mechanism takes is named as the role's handle error (`onKey`).
func mappingKeyErrors<T>(_ role: KeyRole, _ body: () throws(CoreError) -> T) throws(P11Error) -> T {
    do throws(CoreError) {
        return try body()
    } catch  where error.code == .objectNotFound {
        throw P11Error(role.invalidHandle, error.message)
    } catch  where error.code == .keyTypeInconsistent {
        throw P11Error(role.typeInconsistent, error.message)
    } catch {
        throw P11Error(error)
    }
}

@c @implementation
func C_GenerateKeyPair(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?,
    _ pPublicKeyTemplate: UnsafeMutablePointer<CK_ATTRIBUTE>?, _ ulPublicKeyAttributeCount: CK_ULONG,
    _ pPrivateKeyTemplate: UnsafeMutablePointer<CK_ATTRIBUTE>?, _ ulPrivateKeyAttributeCount: CK_ULONG,
    _ phPublicKey: UnsafeMutablePointer<CK_OBJECT_HANDLE>?,
    _ phPrivateKey: UnsafeMutablePointer<CK_OBJECT_HANDLE>?
) -> CK_RV {
    sessionEntry("C_GenerateKeyPair", hSession) { (session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee, let phPublicKey, let phPrivateKey else {
            throw P11Error.argumentsBad
        }
        let publicTemplate = try readTemplate(pPublicKeyTemplate, ulPublicKeyAttributeCount)
        let privateTemplate = try readTemplate(pPrivateKeyTemplate, ulPrivateKeyAttributeCount)
        let kind = try core { () throws(CoreError) in
            try KeyPairKind(
                mechanism: UInt64(mechanism.mechanism), publicTemplate: publicTemplate,
                privateTemplate: privateTemplate)
        }
        // The key-pair generators of this token take no parameter (v2.40 §2.1.4, §2.3.5;
        // v3.0 §2.3.6–2.3.7): any parameter length is one that fits none of them.
        guard mechanism.ulParameterLen == 0 else {
            throw P11Error(CKR_MECHANISM_PARAM_INVALID, "key-pair generation mechanisms take no parameter")
        }
        let references = try core { () throws(CoreError) in
            try session.token.generateKeyPair(
                kind, publicTemplate: publicTemplate, privateTemplate: privateTemplate,
                context: session.context)
        }
        session.lock.withLock {
            for reference in [references.publicKey, references.privateKey] where reference.isSessionObject {
                session.objects.insert(reference)
            }
        }
        phPublicKey.pointee = ObjectHandle.make(references.publicKey, slot: session.slot)
        phPrivateKey.pointee = ObjectHandle.make(references.privateKey, slot: session.slot)
    }
}
