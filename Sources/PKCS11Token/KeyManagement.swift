internal import CPKCS11
internal import KeychainCore
internal import KeychainCrypto

// Key pair generation (v2.40 §5.14) and the key lookup every cryptographic operation starts with.

/// Loads a key for an operation through the core's one key-use check (DESIGN §7: class, type,
/// usage attribute, login, CKA_ALWAYS_AUTHENTICATE), which the Swift faces use too. Also says
/// whether the key is a private object, whose operations end at C_Logout.
func operationKey(_ session: Session, _ handle: CK_OBJECT_HANDLE, for use: KeyUse, type: KeyType)
    throws(P11Error) -> (key: AsymmetricKey, alwaysAuthenticate: Bool, isPrivateObject: Bool)
{
    let reference: ObjectReference
    do {
        reference = try ObjectHandle.reference(handle, slot: session.slot)
    } catch {
        throw P11Error(CKR_KEY_HANDLE_INVALID, "handle \(handle) names no key")
    }
    let usable: UsableKey
    do throws(CoreError) {
        usable = try session.slot.token.useKey(reference, for: use, keyType: type, context: session.context)
    } catch  where error.code == .objectNotFound {
        throw P11Error(CKR_KEY_HANDLE_INVALID, error.message)
    } catch {
        throw P11Error(error)
    }
    return (usable.key, usable.needsPINForEachUse, usable.attributes.bool(.private) == true)
}

@c @implementation
func C_GenerateKeyPair(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?,
    _ pPublicKeyTemplate: UnsafeMutablePointer<CK_ATTRIBUTE>?, _ ulPublicKeyAttributeCount: CK_ULONG,
    _ pPrivateKeyTemplate: UnsafeMutablePointer<CK_ATTRIBUTE>?, _ ulPrivateKeyAttributeCount: CK_ULONG,
    _ phPublicKey: UnsafeMutablePointer<CK_OBJECT_HANDLE>?,
    _ phPrivateKey: UnsafeMutablePointer<CK_OBJECT_HANDLE>?
) -> CK_RV {
    sessionEntry("C_GenerateKeyPair", hSession) { (_, session) throws(P11Error) in
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
        let references = try core { () throws(CoreError) in
            try session.slot.token.generateKeyPair(
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
