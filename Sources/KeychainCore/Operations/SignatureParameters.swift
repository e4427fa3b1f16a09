package import KeychainCrypto

/// A signature or MAC mechanism's parameter as plain values, read by a face from the caller's
/// C structure according to the registry's ``ParameterLayout``; the core checks the values.
public enum SignatureParameters: Sendable, Equatable {
    /// No parameter (NULL, length 0).
    case none
    /// CK_RSA_PKCS_PSS_PARAMS: `hash` a CKM_SHA* value, `mgf` a CKG_MGF1_* value.
    case pss(hash: UInt64, mgf: UInt64, saltLength: Int)
    /// CK_EDDSA_PARAMS: a prehash flag and the length of a context.
    case eddsa(prehash: Bool, contextLength: Int)
    /// CK_MAC_GENERAL_PARAMS: the length of the MAC.
    case macLength(Int)
}

/// A signature mechanism checked with its parameters: what a C_SignInit or C_VerifyInit (or a
/// Swift face's signature) asks of the core before any key is read, so that a mechanism or
/// parameter the token refuses is refused first.
public struct SignatureMechanism: Sendable, Equatable {
    public let type: UInt64
    private(set) var scheme: SignatureScheme
    /// The key type the mechanism takes.
    let keyType: KeyType
    /// `keyType` as the registry lists it, for the key-use check: the registry's own array,
    /// so that no array is made per operation.
    let keyTypes: [KeyType]
    /// The parameters as the caller gave them, which a restart without the registry compares
    /// (`Token.restartedSignature`).
    let parameters: SignatureParameters
    /// The input is a digest the caller computed, for a hashing scheme: Apple's PKCS#1 v1.5
    /// "digest" signatures, which CKM_RSA_PKCS makes over the digest's DigestInfo (OpenSSL
    /// builds it from the digest).
    private(set) var signsDigest = false

    /// The mechanism of `type` for `function` (`.sign` or `.verify`), with its parameters
    /// checked: `mechanismInvalid` for one that does not sign, `mechanismParameterInvalid`
    /// for a parameter it does not take.
    public init(_ type: UInt64, _ parameters: SignatureParameters, for function: MechanismFunctions)
        throws(CoreError)
    {
        try self.init(MechanismRegistry.require(type, for: function), parameters)
    }

    /// The mechanism `registered`, which the registry already allowed for the function, with
    /// its parameters checked.
    public init(_ registered: Mechanism, _ parameters: SignatureParameters) throws(CoreError) {
        let digest = registered.digest
        type = registered.type
        keyTypes = registered.keyTypes
        self.parameters = parameters
        func none() throws(CoreError) {
            guard parameters == .none else {
                throw CoreError(.mechanismParameterInvalid, "mechanism \(registered.name) takes no parameter")
            }
        }
        switch registered.family {
        case .rsaPKCS1:
            try none()
            (scheme, keyType) = (.rsaPKCS1(digest), .rsa)
        case .rsaRaw:
            try none()
            (scheme, keyType) = (.rsaRaw, .rsa)
        case .rsaPSS:
            guard case .pss(let hashType, let mgf, let salt) = parameters else {
                throw CoreError(.mechanismParameterInvalid, "PSS needs CK_RSA_PKCS_PSS_PARAMS")
            }
            guard let hash = MechanismRegistry.hash(named: hashType),
                let mgf1 = MechanismRegistry.hash(mgf1: mgf)
            else { throw CoreError(.mechanismParameterInvalid, "unsupported PSS hash or MGF") }
            if let digest, digest != hash {
                throw CoreError(.mechanismParameterInvalid, "hashAlg differs from the mechanism's hash")
            }
            guard salt >= 0, salt <= 1024 else {
                throw CoreError(.mechanismParameterInvalid, "a PSS salt length is 0 to 1024 bytes")
            }
            (scheme, keyType) = (.rsaPSS(digest: digest, hash: hash, mgf1: mgf1, saltLength: salt), .rsa)
        case .ecdsa:
            try none()
            (scheme, keyType) = (.ecdsa(digest), .ec)
        case .eddsa:
            // Pure EdDSA only: Ed25519, or Ed448 with its empty context (RFC 8032 §5.2); the
            // key decides which. A prehash (Ed25519ph, Ed448ph) or a context is refused:
            // OpenSSL 3.0 has neither (both came in 3.2).
            if case .eddsa(let prehash, let contextLength) = parameters, prehash || contextLength != 0 {
                throw CoreError(
                    .mechanismParameterInvalid, "only pure EdDSA is supported (no prehash, no context)")
            }
            guard parameters == .none || parameters == .eddsa(prehash: false, contextLength: 0) else {
                throw CoreError(.mechanismParameterInvalid, "CKM_EDDSA takes no parameter or CK_EDDSA_PARAMS")
            }
            (scheme, keyType) = (.ed25519, .ecEdwards)
        default:
            throw CoreError(.mechanismInvalid, "mechanism \(registered.name) cannot sign or verify")
        }
    }

    /// CKM_RSA_PKCS over the DigestInfo of a `digest` the caller computed.
    init(pkcs1DigestOf digest: DigestAlgorithm, for function: MechanismFunctions) throws(CoreError) {
        self = try SignatureMechanism(0x01, .none, for: function)
        scheme = .rsaPKCS1(digest)
        signsDigest = true
    }
}

extension MechanismRegistry {
    /// The hash of a CKG_MGF1_* value (v2.40 §2.1.7), in a PSS or OAEP parameter; nil for any
    /// other value.
    package static func hash(mgf1 code: UInt64) -> DigestAlgorithm? {
        switch code {
        case 1: .sha1
        case 2: .sha256
        case 3: .sha384
        case 4: .sha512
        case 5: .sha224
        default: nil
        }
    }
}
