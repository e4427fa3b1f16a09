package import KeychainCrypto

/// What a mechanism may do: PKCS#11's CKF_* function flags of C_GetMechanismInfo.
public struct MechanismFunctions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let encrypt = MechanismFunctions(rawValue: 1 << 0)
    public static let decrypt = MechanismFunctions(rawValue: 1 << 1)
    public static let digest = MechanismFunctions(rawValue: 1 << 2)
    public static let sign = MechanismFunctions(rawValue: 1 << 3)
    public static let verify = MechanismFunctions(rawValue: 1 << 4)
    public static let generate = MechanismFunctions(rawValue: 1 << 5)
    public static let generateKeyPair = MechanismFunctions(rawValue: 1 << 6)
    public static let wrap = MechanismFunctions(rawValue: 1 << 7)
    public static let unwrap = MechanismFunctions(rawValue: 1 << 8)
    public static let derive = MechanismFunctions(rawValue: 1 << 9)

    /// The function a key use needs of its mechanism.
    public init(_ use: KeyUse) {
        switch use {
        case .sign: self = .sign
        case .verify: self = .verify
        case .encrypt: self = .encrypt
        case .decrypt: self = .decrypt
        case .wrap: self = .wrap
        case .unwrap: self = .unwrap
        case .derive: self = .derive
        }
    }

    /// The functions' names, for messages: "sign, verify".
    public var names: String {
        let all: [(MechanismFunctions, String)] = [
            (.encrypt, "encrypt"), (.decrypt, "decrypt"), (.digest, "digest"), (.sign, "sign"),
            (.verify, "verify"), (.generate, "generate"), (.generateKeyPair, "generate key pairs"),
            (.wrap, "wrap"), (.unwrap, "unwrap"), (.derive, "derive"),
        ]
        let named = all.filter { contains($0.0) }.map(\.1)
        return named.isEmpty ? "nothing" : named.joined(separator: ", ")
    }
}

/// How a mechanism's parameter is laid out: which C structure a face reads from the caller's
/// `pParameter` into ``MechanismParameters``. One layout serves many mechanisms.
public enum ParameterLayout: Sendable, Hashable {
    /// No parameter: a non-zero length is CKR_MECHANISM_PARAM_INVALID.
    case none
    /// CK_RSA_PKCS_PSS_PARAMS.
    case pss
    /// CK_RSA_PKCS_OAEP_PARAMS.
    case oaep
    /// None, or CK_EDDSA_PARAMS.
    case optionalEdDSA
    /// CK_MAC_GENERAL_PARAMS: one CK_ULONG.
    case macLength
    /// A byte string of exactly this many bytes (an IV).
    case bytes(Int)
    /// None, or a byte string of exactly this many bytes (an AES key wrap's initial value).
    case optionalBytes(Int)
    /// CK_AES_CTR_PARAMS.
    case ctr
    /// CK_GCM_PARAMS.
    case gcm
    /// CK_ECDH1_DERIVE_PARAMS.
    case ecdh1
    /// CK_HKDF_PARAMS.
    case hkdf
}

/// Which operation a mechanism is: what the core builds for it (the operation factory's key).
package enum MechanismFamily: Sendable, Hashable {
    case digest
    case keyGeneration, keyPairGeneration
    /// PKCS #1 v1.5 signatures and encryption (CKM_RSA_PKCS; hashing when `digest` is set).
    case rsaPKCS1
    /// RSASSA-PSS (CKM_RSA_PKCS_PSS; hashing when `digest` is set).
    case rsaPSS
    /// Raw RSA (CKM_RSA_X_509).
    case rsaRaw
    case rsaOAEP
    /// ECDSA (CKM_ECDSA; hashing when `digest` is set).
    case ecdsa
    case eddsa
    /// HMAC of `digest`, or AES-CMAC (`digest` nil); `general`: of a chosen length.
    case mac(general: Bool)
    case aesECB, aesCBC, aesCBCPad, aesCTR, aesGCM
    /// AES key wrap: RFC 3394, or RFC 5649 with padding.
    case aesKeyWrap(padded: Bool)
    case ecdh(cofactor: Bool)
    /// HKDF to a key, or to a data object.
    case hkdf(data: Bool)
}

/// A mechanism this token implements: its CKM_* value, what it may do, the keys it takes, and
/// how its parameter is laid out. ``MechanismRegistry`` holds every one; C_GetMechanismList and
/// C_GetMechanismInfo, the key-use check, the call trace, the Swift faces' algorithms and the
/// command line's list all read it there.
public struct Mechanism: Sendable, Hashable {
    /// The CKM_* value.
    public let type: UInt64
    public let functions: MechanismFunctions
    /// The key types it takes; empty for a mechanism that uses no key (a digest).
    public let keyTypes: [KeyType]
    /// The key sizes C_GetMechanismInfo reports: bits of an RSA modulus or of an EC field,
    /// bytes of a secret key; nil for none (a digest).
    public let keySizes: ClosedRange<Int>?
    /// It takes EC keys over prime fields by named curve, with uncompressed points
    /// (CKF_EC_F_P | CKF_EC_NAMEDCURVE | CKF_EC_UNCOMPRESS).
    public let takesNamedCurves: Bool
    public let parameter: ParameterLayout
    package let family: MechanismFamily
    /// The hash it computes or signs with: a digest, a hashing signature, an HMAC.
    package let digest: DigestAlgorithm?

    init(
        _ type: UInt64, _ family: MechanismFamily, _ functions: MechanismFunctions, keyTypes: [KeyType] = [],
        keySizes: ClosedRange<Int>? = nil, namedCurves: Bool = false, parameter: ParameterLayout = .none,
        digest: DigestAlgorithm? = nil
    ) {
        self.type = type
        self.family = family
        self.digest = digest
        self.functions = functions
        self.keyTypes = keyTypes
        self.keySizes = keySizes
        self.takesNamedCurves = namedCurves
        self.parameter = parameter
    }

    /// Its name: `CKM_ECDSA_SHA256`.
    public var name: String { PKCS11Names.mechanism(type) }

    /// The key sizes it reports for a token whose configuration raises the smallest RSA key
    /// (`rsa-minimum-bits`).
    package func keySizes(on token: Token) -> ClosedRange<Int>? {
        guard keySizes != nil, keyTypes == [.rsa] else { return keySizes }
        return token.rsaKeySizes
    }
}
