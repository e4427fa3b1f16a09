internal import CPKCS11
internal import KeychainCore
internal import KeychainCrypto

// Mechanism parsing: which signature scheme, padding and digest a CK_MECHANISM names, with its
// parameters read and checked (v2.40 §2.1 RSA, §2.3 ECDSA; v3.0 §2.3.14 EdDSA).

/// CKM_EC_MONTGOMERY_KEY_PAIR_GEN (v3.0 §2.3.8), which p11-kit 0.24's header lacks.
let CKM_EC_MONTGOMERY_KEY_PAIR_GEN: CK_MECHANISM_TYPE = 0x1056

/// The hashing signature mechanisms, each family in the order of `digests`.
private enum SignatureMechanisms {
    static let digests: [DigestAlgorithm] = [.sha1, .sha224, .sha256, .sha384, .sha512]
    static let rsaPKCS = [
        CKM_SHA1_RSA_PKCS, CKM_SHA224_RSA_PKCS, CKM_SHA256_RSA_PKCS, CKM_SHA384_RSA_PKCS, CKM_SHA512_RSA_PKCS,
    ].map(CK_MECHANISM_TYPE.init)
    static let rsaPSS = [
        CKM_SHA1_RSA_PKCS_PSS, CKM_SHA224_RSA_PKCS_PSS, CKM_SHA256_RSA_PKCS_PSS, CKM_SHA384_RSA_PKCS_PSS,
        CKM_SHA512_RSA_PKCS_PSS,
    ].map(CK_MECHANISM_TYPE.init)
    static let ecdsa = [
        CKM_ECDSA_SHA1, CKM_ECDSA_SHA224, CKM_ECDSA_SHA256, CKM_ECDSA_SHA384, CKM_ECDSA_SHA512,
    ]
    .map(CK_MECHANISM_TYPE.init)

    /// The digest of `type` when it belongs to `family`.
    static func digest(of type: CK_MECHANISM_TYPE, in family: [CK_MECHANISM_TYPE]) -> DigestAlgorithm? {
        family.firstIndex(of: type).map { digests[$0] }
    }
}

/// A mechanism's signature scheme and the key type it needs, from its type and parameters.
func signatureScheme(_ mechanism: CK_MECHANISM) throws(P11Error) -> (SignatureScheme, KeyType) {
    let type = mechanism.mechanism
    func noParameter() throws(P11Error) {
        guard mechanism.ulParameterLen == 0 else {
            throw P11Error(
                CKR_MECHANISM_PARAM_INVALID, "mechanism \(mechanismName(type)) takes no parameter")
        }
    }
    // Built once: a dictionary made on every C_SignInit was 2 % of an ECDSA signature.
    let hashed = SignatureMechanisms.digest(of: type, in: SignatureMechanisms.rsaPKCS)
    let pss = SignatureMechanisms.digest(of: type, in: SignatureMechanisms.rsaPSS)
    let ecdsa = SignatureMechanisms.digest(of: type, in: SignatureMechanisms.ecdsa)
    if type == CK_MECHANISM_TYPE(CKM_RSA_PKCS) {
        try noParameter()
        return (.rsaPKCS1(nil), .rsa)
    }
    if type == CK_MECHANISM_TYPE(CKM_RSA_X_509) {
        try noParameter()
        return (.rsaRaw, .rsa)
    }
    if let digest = hashed {
        try noParameter()
        return (.rsaPKCS1(digest), .rsa)
    }
    if type == CK_MECHANISM_TYPE(CKM_RSA_PKCS_PSS) || pss != nil {
        let parameters = try pssParameters(mechanism)
        if let digest = pss, digest != parameters.hash {
            throw P11Error(CKR_MECHANISM_PARAM_INVALID, "hashAlg differs from the mechanism's hash")
        }
        return (
            .rsaPSS(
                digest: pss, hash: parameters.hash, mgf1: parameters.mgf1, saltLength: parameters.salt),
            .rsa
        )
    }
    if type == CK_MECHANISM_TYPE(CKM_ECDSA) {
        try noParameter()
        return (.ecdsa(nil), .ec)
    }
    if let digest = ecdsa {
        try noParameter()
        return (.ecdsa(digest), .ec)
    }
    if type == CK_MECHANISM_TYPE(CKM_EDDSA) {
        // Pure EdDSA only: Ed25519, or Ed448 with its empty context (RFC 8032 §5.2); the key
        // decides which. CK_EDDSA_PARAMS asking for a prehash (Ed25519ph, Ed448ph) or a
        // context is refused: OpenSSL 3.0 has neither (its EdDSA takes no "instance" or
        // "context-string" parameter; both came in 3.2).
        // The parameter is optional: none (NULL/0), or exactly one CK_EDDSA_PARAMS (v3.0
        // §2.3.14: phFlag, ulContextDataLen, pContextData), read unaligned: a host's void*
        // parameter carries no alignment promise. Any other length is no such struct.
        if mechanism.ulParameterLen != 0 {
            guard let parameter = mechanism.pParameter,
                mechanism.ulParameterLen == CK_ULONG(MemoryLayout<CK_EDDSA_PARAMS>.size)
            else {
                throw P11Error(
                    CKR_MECHANISM_PARAM_INVALID,
                    "CKM_EDDSA takes no parameter or a CK_EDDSA_PARAMS of "
                        + "\(MemoryLayout<CK_EDDSA_PARAMS>.size) bytes, not \(mechanism.ulParameterLen)")
            }
            let parameters = parameter.loadUnaligned(as: CK_EDDSA_PARAMS.self)
            guard parameters.phFlag == 0, parameters.ulContextDataLen == 0 else {
                throw P11Error(
                    CKR_MECHANISM_PARAM_INVALID, "only pure EdDSA is supported (no prehash, no context)")
            }
        }
        return (.ed25519, .ecEdwards)
    }
    throw P11Error(CKR_MECHANISM_INVALID, "mechanism \(mechanismName(type)) cannot sign or verify")
}

/// The digest a CKM_SHA*/CKG_MGF1_SHA* code names.
private func digestAlgorithm(hash code: CK_ULONG) -> DigestAlgorithm? {
    Mechanisms.digests.first { $0.type == code }?.algorithm
}

private func mgf1Algorithm(_ code: CK_ULONG) -> DigestAlgorithm? {
    switch code {
    case CK_ULONG(CKG_MGF1_SHA1): .sha1
    case CK_ULONG(CKG_MGF1_SHA224): .sha224
    case CK_ULONG(CKG_MGF1_SHA256): .sha256
    case CK_ULONG(CKG_MGF1_SHA384): .sha384
    case CK_ULONG(CKG_MGF1_SHA512): .sha512
    default: nil
    }
}

private func pssParameters(_ mechanism: CK_MECHANISM) throws(P11Error)
    -> (hash: DigestAlgorithm, mgf1: DigestAlgorithm, salt: Int)
{
    guard let pointer = mechanism.pParameter,
        mechanism.ulParameterLen == CK_ULONG(MemoryLayout<CK_RSA_PKCS_PSS_PARAMS>.size)
    else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "PSS needs CK_RSA_PKCS_PSS_PARAMS") }
    let parameters = pointer.loadUnaligned(as: CK_RSA_PKCS_PSS_PARAMS.self)
    guard let hash = digestAlgorithm(hash: parameters.hashAlg), let mgf1 = mgf1Algorithm(parameters.mgf)
    else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "unsupported PSS hash or MGF") }
    let salt = try hostCount(
        parameters.sLen, limit: 1024, CKR_MECHANISM_PARAM_INVALID, what: "a PSS salt length")
    return (hash, mgf1, salt)
}

func encryptionPadding(_ mechanism: CK_MECHANISM) throws(P11Error) -> EncryptionPadding {
    switch mechanism.mechanism {
    case CK_MECHANISM_TYPE(CKM_RSA_PKCS):
        return .pkcs1
    case CK_MECHANISM_TYPE(CKM_RSA_X_509):
        // Raw RSA decryption reveals m itself (v2.40 §2.1.8): a PKCS#1 v1.5 padding oracle
        // needs nothing more, so `rsa-pkcs1-decryption = no` turns it off too (the core's
        // `Token.usesTurnedOff`).
        return .raw
    case CK_MECHANISM_TYPE(CKM_RSA_PKCS_OAEP):
        guard let pointer = mechanism.pParameter,
            mechanism.ulParameterLen == CK_ULONG(MemoryLayout<CK_RSA_PKCS_OAEP_PARAMS>.size)
        else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "OAEP needs CK_RSA_PKCS_OAEP_PARAMS") }
        let parameters = pointer.loadUnaligned(as: CK_RSA_PKCS_OAEP_PARAMS.self)
        guard let hash = digestAlgorithm(hash: parameters.hashAlg), let mgf1 = mgf1Algorithm(parameters.mgf)
        else {
            throw P11Error(CKR_MECHANISM_PARAM_INVALID, "unsupported OAEP hash or MGF")
        }
        var label: [UInt8] = []
        if parameters.ulSourceDataLen > 0 {
            guard parameters.source == CK_ULONG(CKZ_DATA_SPECIFIED), let source = parameters.pSourceData
            else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "OAEP label is malformed") }
            let length = try hostCount(
                parameters.ulSourceDataLen, limit: 65536, CKR_MECHANISM_PARAM_INVALID,
                what: "an OAEP label length")
            label = Array(UnsafeRawBufferPointer(start: source, count: length))
        }
        return .oaep(hash: hash, mgf1: mgf1, label: label)
    default:
        throw P11Error(
            CKR_MECHANISM_INVALID,
            "mechanism \(mechanismName(mechanism.mechanism)) cannot encrypt or decrypt")
    }
}
