internal import CPKCS11
internal import KeychainCore

// Mechanism parameters: read from a CK_MECHANISM as the registry's layout says (v2.40 §2.1
// RSA, §2.3 ECDSA; v3.0 §2.3.14 EdDSA, §2.15 MAC lengths), and RSA encryption's padding.

/// CKM_EC_MONTGOMERY_KEY_PAIR_GEN (v3.0 §2.3.8), which p11-kit 0.24's header lacks.
let CKM_EC_MONTGOMERY_KEY_PAIR_GEN: CK_MECHANISM_TYPE = 0x1056

/// Reads a signature or MAC mechanism's parameter, laid out as the registry says, into the
/// core's plain values; the core checks them. A length that is no such structure is
/// CKR_MECHANISM_PARAM_INVALID. Structures are read unaligned: a host's void* parameter
/// carries no alignment promise.
func signatureParameters(_ mechanism: CK_MECHANISM, layout: ParameterLayout) throws(P11Error)
    -> SignatureParameters
{
    func structure<T>(_ type: T.Type, _ what: String) throws(P11Error) -> T {
        guard let pointer = mechanism.pParameter, mechanism.ulParameterLen == CK_ULONG(MemoryLayout<T>.size)
        else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, what) }
        return pointer.loadUnaligned(as: T.self)
    }
    switch layout {
    case .pss:
        let parameters = try structure(CK_RSA_PKCS_PSS_PARAMS.self, "PSS needs CK_RSA_PKCS_PSS_PARAMS")
        let salt = try hostCount(
            parameters.sLen, limit: 1024, CKR_MECHANISM_PARAM_INVALID, what: "a PSS salt length")
        return .pss(hash: UInt64(parameters.hashAlg), mgf: UInt64(parameters.mgf), saltLength: salt)
    case .optionalEdDSA:
        // None (NULL/0), or exactly one CK_EDDSA_PARAMS (v3.0 §2.3.14: phFlag,
        // ulContextDataLen, pContextData).
        guard mechanism.ulParameterLen != 0 else { return .none }
        let parameters = try structure(
            CK_EDDSA_PARAMS.self,
            "CKM_EDDSA takes no parameter or a CK_EDDSA_PARAMS of \(MemoryLayout<CK_EDDSA_PARAMS>.size) bytes, "
                + "not \(mechanism.ulParameterLen)")
        return .eddsa(
            prehash: parameters.phFlag != 0,
            contextLength: Int(exactly: parameters.ulContextDataLen) ?? Int.max)
    case .macLength:
        let length = try structure(CK_ULONG.self, "a _GENERAL MAC needs CK_MAC_GENERAL_PARAMS")
        return .macLength(
            try hostCount(length, limit: 64, CKR_MECHANISM_PARAM_INVALID, what: "a MAC length"))
    default:
        guard mechanism.ulParameterLen == 0 else {
            throw P11Error(
                CKR_MECHANISM_PARAM_INVALID,
                "mechanism \(mechanismName(mechanism.mechanism)) takes no parameter")
        }
        return .none
    }
}
