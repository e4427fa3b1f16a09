internal import CPKCS11
internal import KeychainCore
internal import KeychainCrypto

// Key pair generation (v2.40 §5.14) and the key lookup every cryptographic operation starts with.

/// Loads a key for an operation, checking its class, type and usage flag. Also says whether
/// the key is a private object, whose operations end at C_Logout.
func operationKey(
    _ session: Session, _ handle: CK_OBJECT_HANDLE, privateKey: Bool, type: KeyType, usage: AttributeType
) throws(P11Error) -> (key: AsymmetricKey, alwaysAuthenticate: Bool, isPrivateObject: Bool) {
    let reference: ObjectReference
    do {
        reference = try ObjectHandle.reference(handle, slot: session.slot)
    } catch {
        throw P11Error(CKR_KEY_HANDLE_INVALID, "handle \(handle) names no key")
    }
    let loaded: (key: AsymmetricKey, attributes: AttributeSet)
    do throws(KeychainError) {
        loaded =
            privateKey
            ? try session.slot.token.privateKey(reference, context: session.context)
            : try session.slot.token.publicKey(reference, context: session.context)
    } catch  where error.code == .objectNotFound {
        throw P11Error(CKR_KEY_HANDLE_INVALID, error.message)
    } catch {
        throw P11Error(error)
    }
    guard loaded.attributes.ulong(.keyType) == type.rawValue else {
        throw P11Error(CKR_KEY_TYPE_INCONSISTENT, "the key's type does not fit the mechanism")
    }
    guard loaded.attributes.bool(usage) == true else {
        throw P11Error(CKR_KEY_FUNCTION_NOT_PERMITTED, "the key's usage attribute \(usage) is false")
    }
    return (
        loaded.key, loaded.attributes.bool(.alwaysAuthenticate) == true,
        loaded.attributes.bool(.private) == true
    )
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
        let kind: KeyPairKind
        switch mechanism.mechanism {
        case CK_MECHANISM_TYPE(CKM_RSA_PKCS_KEY_PAIR_GEN):
            guard let bits = publicTemplate.ulong(.modulusBits) else {
                throw P11Error(CKR_TEMPLATE_INCOMPLETE, "RSA generation needs CKA_MODULUS_BITS")
            }
            // The sizes C_GetMechanismInfo advertises, from the same constant.
            let sizes = Mechanisms.rsaModulusBits
            guard let size = Int(exactly: bits), sizes.contains(size) else {
                throw P11Error(
                    CKR_KEY_SIZE_RANGE, "RSA keys have \(sizes.lowerBound) to \(sizes.upperBound) bits")
            }
            // Only F4: other exponents are refused rather than silently replaced.
            if let exponent = publicTemplate[.publicExponent],
                exponent.drop(while: { $0 == 0 }) != [0x01, 0x00, 0x01]
            {
                throw P11Error(CKR_ATTRIBUTE_VALUE_INVALID, "only the public exponent 65537 is supported")
            }
            kind = .rsa(bits: size)
        case CK_MECHANISM_TYPE(CKM_EC_KEY_PAIR_GEN):
            guard let parameters = publicTemplate[.ecParams] ?? privateTemplate[.ecParams] else {
                throw P11Error(CKR_TEMPLATE_INCOMPLETE, "EC generation needs CKA_EC_PARAMS")
            }
            guard EllipticCurve(parameters: parameters) != nil else {
                throw P11Error(CKR_CURVE_NOT_SUPPORTED, "only P-256, P-384 and P-521 are supported")
            }
            kind = .ec(curveParameters: parameters)
        case CK_MECHANISM_TYPE(CKM_EC_EDWARDS_KEY_PAIR_GEN):
            let parameters =
                publicTemplate[.ecParams] ?? privateTemplate[.ecParams] ?? Edwards25519.parameters
            // The OID id-Ed25519, or the PrintableString "edwards25519" of v3.0 §2.3.5.
            let printable: [UInt8] = [0x13, 0x0C] + Array("edwards25519".utf8)
            guard parameters == Edwards25519.parameters || parameters == printable else {
                throw P11Error(CKR_CURVE_NOT_SUPPORTED, "only Ed25519 is supported")
            }
            kind = .ed25519(curveParameters: parameters)
        default:
            throw P11Error(
                CKR_MECHANISM_INVALID,
                "mechanism 0x\(String(mechanism.mechanism, radix: 16)) generates no key pair")
        }
        let references = try core { () throws(KeychainError) in
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
