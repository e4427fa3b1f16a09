internal import CPKCS11
internal import KeychainCore
internal import KeychainCrypto

// Key derivation (v2.40 §5.14 C_DeriveKey): ECDH (v2.40 §2.3.16, with the X9.63 KDFs of
// CK_ULONG; X25519 and X448 keys, v3.0 §2.3.7) and HKDF (v3.0 §2.43). The base key is
// used through the core's one key-use check for `.derive`; the derived key is stored by the
// core (`Token.storeDerivedKey`), sealed, with the history of its base key.

/// The most shared data (ECDH's KDF input, HKDF's salt and info) one derivation takes.
private let maximumDerivationInput = 64 << 10

/// The digest a CK_ULONG names; nil for CKD_NULL.
private func ecdhKDF(_ kdf: CK_ULONG) throws(P11Error) -> DigestAlgorithm? {
    switch kdf {
    case CK_ULONG(CKD_NULL): return nil
    case CK_ULONG(CKD_SHA1_KDF): return .sha1
    case CK_ULONG(CKD_SHA224_KDF): return .sha224
    case CK_ULONG(CKD_SHA256_KDF): return .sha256
    case CK_ULONG(CKD_SHA384_KDF): return .sha384
    case CK_ULONG(CKD_SHA512_KDF): return .sha512
    default: throw P11Error(CKR_MECHANISM_PARAM_INVALID, "unsupported ECDH key derivation function \(kdf)")
    }
}

/// Reads a byte string a mechanism parameter points to, bounded.
private func parameterBytes(_ pointer: UnsafeMutablePointer<CK_BYTE>?, _ length: CK_ULONG, what: String)
    throws(P11Error) -> [UInt8]
{
    guard length > 0 else { return [] }
    guard let pointer else {
        throw P11Error(CKR_MECHANISM_PARAM_INVALID, "\(what) is NULL with length \(length)")
    }
    let count = try hostCount(length, limit: maximumDerivationInput, CKR_MECHANISM_PARAM_INVALID, what: what)
    return Array(UnsafeRawBufferPointer(start: pointer, count: count))
}

/// The first `count` bytes of `secret`, still self-wiping.
private func prefix(_ secret: SecretBytes, _ count: Int) -> SecretBytes {
    secret.withUnsafeBytes { bytes in
        SecretBytes(copying: UnsafeRawBufferPointer(rebasing: bytes.prefix(count)))
    }
}

/// CKM_ECDH1_DERIVE and CKM_ECDH1_COFACTOR_DERIVE: the shared secret of the base key and the
/// peer's public value, through the KDF the parameters name, cut to the template's length.
/// With CKD_NULL the key is the leading bytes of the shared secret (its x-coordinate).
private func deriveECDH(
    _ session: Session, _ mechanism: CK_MECHANISM, base: CK_OBJECT_HANDLE, template given: AttributeSet
) throws(P11Error) -> ObjectReference {
    guard let pointer = mechanism.pParameter,
        mechanism.ulParameterLen == CK_ULONG(MemoryLayout<CK_ECDH1_DERIVE_PARAMS>.size)
    else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "ECDH needs CK_ECDH1_DERIVE_PARAMS") }
    let parameters = pointer.loadUnaligned(as: CK_ECDH1_DERIVE_PARAMS.self)
    let digest = try ecdhKDF(parameters.kdf)
    let sharedData = try parameterBytes(
        parameters.pSharedData, parameters.ulSharedDataLen, what: "the ECDH shared data")
    if digest == nil, !sharedData.isEmpty {
        throw P11Error(CKR_MECHANISM_PARAM_INVALID, "CKD_NULL takes no shared data")
    }
    let publicData = try parameterBytes(
        parameters.pPublicData, parameters.ulPublicDataLen, what: "the peer's public value")
    guard !publicData.isEmpty else {
        throw P11Error(CKR_MECHANISM_PARAM_INVALID, "ECDH needs the peer's public value")
    }
    let cofactor = mechanism.mechanism == CK_MECHANISM_TYPE(CKM_ECDH1_COFACTOR_DERIVE)
    // EC keys (P-256/384/521) and X25519/X448 keys (v3.0 §2.3.7) agree on secrets.
    let key = try operationKey(
        session, base, for: .derive, types: [.ec, .ecMontgomery], mechanism: mechanism.mechanism)
    let template = try core { () throws(CoreError) in
        try Token.derivationTemplate(given, base: key.attributes)
    }
    let secret: SecretBytes
    do throws(CryptoError) {
        secret = try key.key.sharedSecret(
            withPeerPublicValue: AsymmetricKey.unwrapECPoint(publicData), cofactor: cofactor)
    } catch {
        throw P11Error(
            error.code == .invalidInput ? CKR_DOMAIN_PARAMS_INVALID : CKR_KEY_TYPE_INCONSISTENT,
            error.message)
    }
    let value: SecretBytes
    if let digest {
        let length = try core { () throws(CoreError) in
            try Token.derivedKeyLength(
                template, natural: digest.length, maximum: SecretKeyKind.maximumGenericLength)
        }
        do throws(CryptoError) {
            value = try KeyDerivationFunction.x963(
                secret, sharedInfo: sharedData, digest: digest, length: length)
        } catch {
            throw P11Error(CKR_TEMPLATE_INCONSISTENT, error.message)
        }
    } else {
        let length = try core { () throws(CoreError) in
            try Token.derivedKeyLength(template, natural: secret.count, maximum: secret.count)
        }
        value = prefix(secret, length)
    }
    return try core { () throws(CoreError) in
        try session.slot.token.storeDerivedKey(
            value, template: template, base: key.attributes, context: session.context)
    }
}

/// CKM_HKDF_DERIVE and CKM_HKDF_DATA (v3.0 §2.43): HKDF (RFC 5869) of a generic secret base
/// key; HKDF_DATA makes a data object instead of a key.
private func deriveHKDF(
    _ session: Session, _ mechanism: CK_MECHANISM, base: CK_OBJECT_HANDLE, template given: AttributeSet
) throws(P11Error) -> ObjectReference {
    guard let pointer = mechanism.pParameter,
        mechanism.ulParameterLen == CK_ULONG(MemoryLayout<CK_HKDF_PARAMS>.size)
    else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "HKDF needs CK_HKDF_PARAMS") }
    let parameters = pointer.loadUnaligned(as: CK_HKDF_PARAMS.self)
    let extract = parameters.bExtract != 0
    let expand = parameters.bExpand != 0
    guard extract || expand else {
        throw P11Error(CKR_MECHANISM_PARAM_INVALID, "HKDF must extract, expand or both")
    }
    guard let digest = MechanismRegistry.hash(named: UInt64(parameters.prfHashMechanism))
    else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "unsupported HKDF hash") }
    let info = try parameterBytes(parameters.pInfo, parameters.ulInfoLen, what: "the HKDF info")
    if !expand, !info.isEmpty {
        throw P11Error(CKR_MECHANISM_PARAM_INVALID, "HKDF info is only for the expand step")
    }
    var salt: [UInt8] = []
    var saltKeyAttributes: AttributeSet?
    if extract {
        switch parameters.ulSaltType {
        case CK_ULONG(CKF_HKDF_SALT_NULL):
            break
        case CK_ULONG(CKF_HKDF_SALT_DATA):
            salt = try parameterBytes(parameters.pSalt, parameters.ulSaltLen, what: "the HKDF salt")
        case CK_ULONG(CKF_HKDF_SALT_KEY):
            let saltKey = try secretOperationKey(
                session, parameters.hSaltKey, for: .derive, types: [.genericSecret],
                mechanism: mechanism.mechanism)
            salt = saltKey.value.copyBytes()
            saltKeyAttributes = saltKey.attributes
        default:
            throw P11Error(CKR_MECHANISM_PARAM_INVALID, "unsupported HKDF salt type")
        }
    } else if parameters.ulSaltType != CK_ULONG(CKF_HKDF_SALT_NULL) && parameters.ulSaltType != 0 {
        throw P11Error(CKR_MECHANISM_PARAM_INVALID, "an HKDF salt is only for the extract step")
    }
    defer { SecretBytes.wipe(&salt) }
    let key = try secretOperationKey(
        session, base, for: .derive, types: [.genericSecret], mechanism: mechanism.mechanism)
    let template = try core { () throws(CoreError) in
        try Token.derivationTemplate(given, base: key.attributes)
    }
    let isData = mechanism.mechanism == CK_MECHANISM_TYPE(CKM_HKDF_DATA)
    // RFC 5869 §2.3: expansion gives up to 255 blocks; extraction one block.
    let maximum = expand ? 255 * digest.length : digest.length
    let length = try core { () throws(CoreError) in
        isData
            ? try Token.derivedDataLength(template, natural: digest.length, maximum: maximum)
            : try Token.derivedKeyLength(template, natural: digest.length, maximum: maximum)
    }
    let mode: HKDFMode = extract ? (expand ? .extractAndExpand : .extractOnly) : .expandOnly
    let value: SecretBytes
    do throws(CryptoError) {
        let output = try KeyDerivationFunction.hkdf(
            mode, digest: digest, key: key.value, salt: salt, info: info,
            length: expand ? length : digest.length)
        value = expand ? output : prefix(output, length)
    } catch {
        throw P11Error(CKR_MECHANISM_PARAM_INVALID, error.message)
    }
    return try core { () throws(CoreError) in
        isData
            ? try session.slot.token.storeDerivedData(
                value, template: template,
                derivedFrom: [key.attributes] + (saltKeyAttributes.map { [$0] } ?? []),
                context: session.context)
            : try session.slot.token.storeDerivedKey(
                value, template: template, base: key.attributes, context: session.context)
    }
}

@c @implementation
func C_DeriveKey(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?,
    _ hBaseKey: CK_OBJECT_HANDLE, _ pTemplate: UnsafeMutablePointer<CK_ATTRIBUTE>?,
    _ ulAttributeCount: CK_ULONG, _ phKey: UnsafeMutablePointer<CK_OBJECT_HANDLE>?
) -> CK_RV {
    sessionEntry("C_DeriveKey", hSession) { (_, session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee, let phKey else { throw P11Error.argumentsBad }
        let template = try readTemplate(pTemplate, ulAttributeCount)
        let reference: ObjectReference
        switch mechanism.mechanism {
        case CK_MECHANISM_TYPE(CKM_ECDH1_DERIVE), CK_MECHANISM_TYPE(CKM_ECDH1_COFACTOR_DERIVE):
            reference = try deriveECDH(session, mechanism, base: hBaseKey, template: template)
        case CK_MECHANISM_TYPE(CKM_HKDF_DERIVE), CK_MECHANISM_TYPE(CKM_HKDF_DATA):
            reference = try deriveHKDF(session, mechanism, base: hBaseKey, template: template)
        default:
            throw P11Error(
                CKR_MECHANISM_INVALID,
                "mechanism \(mechanismName(mechanism.mechanism)) derives no key on this token")
        }
        adopt(reference, by: session)
        phKey.pointee = ObjectHandle.make(reference, slot: session.slot)
    }
}
