internal import CPKCS11
internal import KeychainCore
internal import KeychainCrypto

// Mechanism parsing: which signature scheme, padding and digest a CK_MECHANISM names, with its
// parameters read and checked (v2.40 §2.1 RSA, §2.3 ECDSA; v3.0 §2.3.14 EdDSA).

/// CKM_EC_MONTGOMERY_KEY_PAIR_GEN (v3.0 §2.3.8), which p11-kit 0.24's header lacks.
let CKM_EC_MONTGOMERY_KEY_PAIR_GEN: CK_MECHANISM_TYPE = 0x1056

/// A mechanism's signature scheme and the key type it needs, from the registry's entry for its
/// type and the parameters the caller gave.
func signatureScheme(_ mechanism: CK_MECHANISM, for function: MechanismFunctions) throws(P11Error) -> (
    SignatureScheme, KeyType
) {
    let type = mechanism.mechanism
    func noParameter() throws(P11Error) {
        guard mechanism.ulParameterLen == 0 else {
            throw P11Error(
                CKR_MECHANISM_PARAM_INVALID, "mechanism \(mechanismName(type)) takes no parameter")
        }
    }
    let registered = try core { () throws(CoreError) in
        try MechanismRegistry.require(UInt64(type), for: function)
    }
    let digest = registered.digest
    switch registered.family {
    case .rsaPKCS1:
        try noParameter()
        return (.rsaPKCS1(digest), .rsa)
    case .rsaRaw:
        try noParameter()
        return (.rsaRaw, .rsa)
    case .rsaPSS:
        let parameters = try pssParameters(mechanism)
        if let digest, digest != parameters.hash {
            throw P11Error(CKR_MECHANISM_PARAM_INVALID, "hashAlg differs from the mechanism's hash")
        }
        return (
            .rsaPSS(
                digest: digest, hash: parameters.hash, mgf1: parameters.mgf1, saltLength: parameters.salt),
            .rsa
        )
    case .ecdsa:
        try noParameter()
        return (.ecdsa(digest), .ec)
    case .eddsa:
        try checkEdDSAParameters(mechanism)
        return (.ed25519, .ecEdwards)
    default:
        throw P11Error(CKR_MECHANISM_INVALID, "mechanism \(mechanismName(type)) cannot sign or verify")
    }
}

private func checkEdDSAParameters(_ mechanism: CK_MECHANISM) throws(P11Error) {
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
}

/// The digest a CKM_SHA*/CKG_MGF1_SHA* code names.
private func digestAlgorithm(hash code: CK_ULONG) -> DigestAlgorithm? {
    MechanismRegistry.hash(named: UInt64(code))
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
