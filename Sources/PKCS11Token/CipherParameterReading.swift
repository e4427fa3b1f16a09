internal import CPKCS11
internal import KeychainCore

// The readers of the encryption, key-wrap and derivation mechanisms' parameters: one per
// ParameterLayout, each turning the caller's C structure into the core's plain values
// (CipherParameters, DerivationParameters). Pointers and host lengths are checked here, each
// copy bounded; the values are the core's to judge.

/// The parameter of a mechanism used for `function` (encrypt, decrypt, wrap, unwrap), read
/// by the layout the registry gives it. A mechanism that is unknown or cannot perform the
/// function is refused first (CKR_MECHANISM_INVALID: an `*Init` consults the registry's flags).
func cipherParameters(_ mechanism: CK_MECHANISM, for function: MechanismFunctions) throws(P11Error)
    -> CipherParameters
{
    let registered = try core { () throws(CoreError) in
        try MechanismRegistry.require(UInt64(mechanism.mechanism), for: function)
    }
    switch registered.parameter {
    case .none:
        guard mechanism.ulParameterLen == 0 else {
            throw P11Error(CKR_MECHANISM_PARAM_INVALID, "\(registered.name) takes no parameter")
        }
        return .none
    case .bytes(let length):
        guard let pointer = mechanism.pParameter, mechanism.ulParameterLen == CK_ULONG(length) else {
            throw P11Error(
                CKR_MECHANISM_PARAM_INVALID, "mechanism \(registered.name) needs a \(length)-byte IV")
        }
        return .bytes(Array(UnsafeRawBufferPointer(start: pointer, count: length)))
    case .optionalBytes(let length):
        // None (NULL/0), or exactly the initial value: a length with no bytes behind it, or
        // another length, is no initial value.
        guard mechanism.ulParameterLen != 0 else { return .none }
        guard let pointer = mechanism.pParameter, mechanism.ulParameterLen == CK_ULONG(length) else {
            throw P11Error(CKR_MECHANISM_PARAM_INVALID, "the key wrap initial value has \(length) bytes")
        }
        return .bytes(Array(UnsafeRawBufferPointer(start: pointer, count: length)))
    case .oaep:
        return try oaepParameters(mechanism)
    case .ctr:
        guard let pointer = mechanism.pParameter,
            mechanism.ulParameterLen == CK_ULONG(MemoryLayout<CK_AES_CTR_PARAMS>.size)
        else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "AES-CTR needs CK_AES_CTR_PARAMS") }
        let parameters = pointer.loadUnaligned(as: CK_AES_CTR_PARAMS.self)
        let bits = try hostCount(
            parameters.ulCounterBits, limit: CipherParameters.maximumCounterBits, CKR_MECHANISM_PARAM_INVALID,
            what: "the CTR counter bits")
        return .ctr(counterBlock: withUnsafeBytes(of: parameters.cb) { Array($0) }, counterBits: bits)
    case .gcm:
        return try gcmParameters(mechanism)
    case .pss, .optionalEdDSA, .macLength, .ecdh1, .hkdf:
        return .none
    }
}

/// CK_RSA_PKCS_OAEP_PARAMS (v2.40 §2.1.7), read unaligned: a host's void* parameter carries
/// no alignment promise.
private func oaepParameters(_ mechanism: CK_MECHANISM) throws(P11Error) -> CipherParameters {
    guard let pointer = mechanism.pParameter,
        mechanism.ulParameterLen == CK_ULONG(MemoryLayout<CK_RSA_PKCS_OAEP_PARAMS>.size)
    else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "OAEP needs CK_RSA_PKCS_OAEP_PARAMS") }
    let parameters = pointer.loadUnaligned(as: CK_RSA_PKCS_OAEP_PARAMS.self)
    var label: [UInt8] = []
    if parameters.ulSourceDataLen > 0 {
        guard let source = parameters.pSourceData else {
            throw P11Error(CKR_MECHANISM_PARAM_INVALID, "OAEP label is malformed")
        }
        let length = try hostCount(
            parameters.ulSourceDataLen, limit: CipherParameters.maximumOAEPLabel, CKR_MECHANISM_PARAM_INVALID,
            what: "an OAEP label length")
        label = Array(UnsafeRawBufferPointer(start: source, count: length))
    }
    return .oaep(
        hash: UInt64(parameters.hashAlg), mgf: UInt64(parameters.mgf), source: UInt64(parameters.source),
        label: label)
}

/// CK_GCM_PARAMS in either layout: v3.0's (and p11-kit's) with `ulIvBits`, or v2.40's
/// without it, told apart by the parameter's length. Each length is bounded by what the core
/// takes (`CipherParameters.gcmIVLengths`, `gcmTagLengths`, `maximumGCMAdditionalData`)
/// before anything is copied.
private func gcmParameters(_ mechanism: CK_MECHANISM) throws(P11Error) -> CipherParameters {
    let word = MemoryLayout<CK_ULONG>.size
    let pointerSize = MemoryLayout<UnsafeRawPointer>.size
    guard let pointer = mechanism.pParameter else {
        throw P11Error(CKR_MECHANISM_PARAM_INVALID, "AES-GCM needs CK_GCM_PARAMS")
    }
    // Offsets of pIv, ulIvLen, [ulIvBits], pAAD, ulAADLen, ulTagBits.
    let fields: (iv: Int, ivLength: Int, aad: Int, aadLength: Int, tagBits: Int)
    switch Int(clamping: mechanism.ulParameterLen) {
    case MemoryLayout<CK_GCM_PARAMS>.size:
        fields = (
            0, pointerSize, pointerSize + 2 * word, 2 * pointerSize + 2 * word, 2 * pointerSize + 3 * word
        )
    case 2 * pointerSize + 3 * word:
        fields = (0, pointerSize, pointerSize + word, 2 * pointerSize + word, 2 * pointerSize + 2 * word)
    default:
        throw P11Error(CKR_MECHANISM_PARAM_INVALID, "CK_GCM_PARAMS has the wrong length")
    }
    let ivPointer = pointer.loadUnaligned(fromByteOffset: fields.iv, as: UnsafeRawPointer?.self)
    let ivLengths = CipherParameters.gcmIVLengths
    let ivLength = try hostCount(
        pointer.loadUnaligned(fromByteOffset: fields.ivLength, as: CK_ULONG.self),
        limit: ivLengths.upperBound,
        CKR_MECHANISM_PARAM_INVALID, what: "the GCM IV length")
    let aadPointer = pointer.loadUnaligned(fromByteOffset: fields.aad, as: UnsafeRawPointer?.self)
    let aadLength = try hostCount(
        pointer.loadUnaligned(fromByteOffset: fields.aadLength, as: CK_ULONG.self),
        limit: CipherParameters.maximumGCMAdditionalData, CKR_MECHANISM_PARAM_INVALID,
        what: "the GCM additional data length")
    let tagBits = try hostCount(
        pointer.loadUnaligned(fromByteOffset: fields.tagBits, as: CK_ULONG.self),
        limit: CipherParameters.gcmTagLengths.upperBound * 8, CKR_MECHANISM_PARAM_INVALID,
        what: "the GCM tag length")
    guard ivLength == 0 || ivPointer != nil else {
        throw P11Error(CKR_MECHANISM_PARAM_INVALID, "the GCM IV is NULL")
    }
    guard aadLength == 0 || aadPointer != nil else {
        throw P11Error(CKR_MECHANISM_PARAM_INVALID, "the GCM additional data is NULL")
    }
    let iv = ivLength == 0 ? [] : Array(UnsafeRawBufferPointer(start: ivPointer, count: ivLength))
    let aad = aadLength == 0 ? [] : Array(UnsafeRawBufferPointer(start: aadPointer, count: aadLength))
    return .gcm(iv: iv, additionalData: aad, tagBits: tagBits)
}

/// The parameter of a derivation mechanism, read by its layout (CK_ECDH1_DERIVE_PARAMS,
/// CK_HKDF_PARAMS); a mechanism that derives nothing is CKR_MECHANISM_INVALID.
/// An HKDF salt key's handle becomes a reference here (CKR_KEY_HANDLE_INVALID when it names
/// nothing).
func derivationParameters(_ mechanism: CK_MECHANISM, session: Session) throws(P11Error)
    -> DerivationParameters
{
    guard let registered = MechanismRegistry.mechanism(UInt64(mechanism.mechanism)),
        registered.functions.contains(.derive)
    else {
        throw P11Error(
            CKR_MECHANISM_INVALID,
            "mechanism \(mechanismName(mechanism.mechanism)) derives no key on this token")
    }
    switch registered.parameter {
    case .ecdh1:
        guard let pointer = mechanism.pParameter,
            mechanism.ulParameterLen == CK_ULONG(MemoryLayout<CK_ECDH1_DERIVE_PARAMS>.size)
        else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "ECDH needs CK_ECDH1_DERIVE_PARAMS") }
        let parameters = pointer.loadUnaligned(as: CK_ECDH1_DERIVE_PARAMS.self)
        return .ecdh(
            kdf: UInt64(parameters.kdf),
            sharedData: try parameterBytes(
                parameters.pSharedData, parameters.ulSharedDataLen, what: "the ECDH shared data"),
            publicData: try parameterBytes(
                parameters.pPublicData, parameters.ulPublicDataLen, what: "the peer's public value"))
    case .hkdf:
        guard let pointer = mechanism.pParameter,
            mechanism.ulParameterLen == CK_ULONG(MemoryLayout<CK_HKDF_PARAMS>.size)
        else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "HKDF needs CK_HKDF_PARAMS") }
        let parameters = pointer.loadUnaligned(as: CK_HKDF_PARAMS.self)
        let saltType = UInt64(parameters.ulSaltType)
        let extract = parameters.bExtract != 0
        var saltKey: ObjectReference?
        if extract, saltType == DerivationParameters.hkdfSaltKey {
            do {
                saltKey = try ObjectHandle.reference(parameters.hSaltKey, slot: session.slot)
            } catch {
                throw P11Error(CKR_KEY_HANDLE_INVALID, "handle \(parameters.hSaltKey) names no key")
            }
        }
        return .hkdf(
            extract: extract, expand: parameters.bExpand != 0, hash: UInt64(parameters.prfHashMechanism),
            saltType: saltType,
            salt: extract && saltType == DerivationParameters.hkdfSaltData
                ? try parameterBytes(parameters.pSalt, parameters.ulSaltLen, what: "the HKDF salt") : [],
            saltKey: saltKey,
            info: try parameterBytes(parameters.pInfo, parameters.ulInfoLen, what: "the HKDF info"))
    default:
        throw P11Error(CKR_MECHANISM_INVALID, "mechanism \(registered.name) derives no key on this token")
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
    let count = try hostCount(
        length, limit: DerivationParameters.maximumInput, CKR_MECHANISM_PARAM_INVALID, what: what)
    return Array(UnsafeRawBufferPointer(start: pointer, count: count))
}
