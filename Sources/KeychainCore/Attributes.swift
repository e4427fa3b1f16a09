/// A PKCS#11 attribute type (CKA_*). An open code space: vendor values round-trip.
public struct AttributeType: RawRepresentable, Hashable, Sendable, Comparable,
    CustomStringConvertible
{
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { PKCS11Names.attribute(rawValue) }

    public static let `class` = AttributeType(0x0000)
    public static let token = AttributeType(0x0001)
    public static let `private` = AttributeType(0x0002)
    public static let label = AttributeType(0x0003)
    public static let uniqueID = AttributeType(0x0004)
    public static let application = AttributeType(0x0010)
    public static let value = AttributeType(0x0011)
    public static let objectID = AttributeType(0x0012)
    public static let certificateType = AttributeType(0x0080)
    public static let issuer = AttributeType(0x0081)
    public static let serialNumber = AttributeType(0x0082)
    public static let trusted = AttributeType(0x0086)
    public static let certificateCategory = AttributeType(0x0087)
    public static let javaMIDPSecurityDomain = AttributeType(0x0088)
    public static let url = AttributeType(0x0089)
    public static let hashOfSubjectPublicKey = AttributeType(0x008A)
    public static let hashOfIssuerPublicKey = AttributeType(0x008B)
    public static let nameHashAlgorithm = AttributeType(0x008C)
    public static let checkValue = AttributeType(0x0090)
    public static let keyType = AttributeType(0x0100)
    public static let subject = AttributeType(0x0101)
    public static let id = AttributeType(0x0102)
    public static let startDate = AttributeType(0x0110)
    public static let endDate = AttributeType(0x0111)
    public static let publicKeyInfo = AttributeType(0x0129)
    public static let modifiable = AttributeType(0x0170)
    public static let copyable = AttributeType(0x0171)
    public static let destroyable = AttributeType(0x0172)
    public static let sensitive = AttributeType(0x0103)
    public static let encrypt = AttributeType(0x0104)
    public static let decrypt = AttributeType(0x0105)
    public static let wrap = AttributeType(0x0106)
    public static let unwrap = AttributeType(0x0107)
    public static let sign = AttributeType(0x0108)
    public static let signRecover = AttributeType(0x0109)
    public static let verify = AttributeType(0x010A)
    public static let verifyRecover = AttributeType(0x010B)
    public static let derive = AttributeType(0x010C)
    public static let modulus = AttributeType(0x0120)
    public static let modulusBits = AttributeType(0x0121)
    public static let publicExponent = AttributeType(0x0122)
    public static let privateExponent = AttributeType(0x0123)
    public static let prime1 = AttributeType(0x0124)
    public static let prime2 = AttributeType(0x0125)
    public static let exponent1 = AttributeType(0x0126)
    public static let exponent2 = AttributeType(0x0127)
    public static let coefficient = AttributeType(0x0128)
    public static let extractable = AttributeType(0x0162)
    public static let local = AttributeType(0x0163)
    public static let neverExtractable = AttributeType(0x0164)
    public static let alwaysSensitive = AttributeType(0x0165)
    public static let keyGenMechanism = AttributeType(0x0166)
    public static let ecParams = AttributeType(0x0180)
    public static let ecPoint = AttributeType(0x0181)
    public static let alwaysAuthenticate = AttributeType(0x0202)
    public static let wrapWithTrusted = AttributeType(0x0210)
    public static let vendorDefined = AttributeType(0x8000_0000)
    /// p11keychain's own (CKA_VENDOR_DEFINED | 0x504B10): a generic password's account name
    /// (Apple's kSecAttrAccount), UTF-8, on a CKO_DATA object. Searchable; not secret.
    public static let account = AttributeType(0x8050_4B10)
    /// p11keychain's own (CKA_VENDOR_DEFINED | 0x504B11): a key's application tag (Apple's
    /// kSecAttrApplicationTag), arbitrary bytes chosen by the application. Indexed.
    public static let applicationTag = AttributeType(0x8050_4B11)
    /// p11-kit's CKA_X_DISTRUSTED (CKA_X_VENDOR + 100, pkcs11x.h): on a certificate, TRUE when
    /// the keychain distrusts it for every purpose (p11-kit's blocklist). Derived from the
    /// certificate's trust settings (Trust.swift), never set by a caller.
    public static let distrusted = AttributeType(0xD844_4764)
    /// p11keychain's own: a certificate's trust settings (`TrustSettings.encoded`). Stored,
    /// never shown to callers; the faces show it in their own vocabularies.
    static let trustSettings = AttributeType(0x8050_4B40)
    /// p11keychain's own: [1] on a certificate with trust settings, else [0] or absent. In
    /// the lookup index, so that the certificates with settings are found by one seek.
    static let trustMarker = AttributeType(0x8050_4B41)
    // Apple keychain item attributes, p11keychain's own in CKA_VENDOR_DEFINED |
    // 0x504B20…0x504B3F, documented in p11/include/p11keychain.h as CKA_P11K_*. Each holds the
    // value Apple's attribute has, in PKCS#11's encoding: strings UTF-8, numbers CK_ULONG,
    // flags CK_BBOOL. The rules for each are `ObjectPolicy.appleItem` and `.passwordItem`.
    /// Which Apple password class a data object is (kSecClass): "genp" or "inet" (ASCII). A
    /// data object with an account and no class is a generic password (stored before this
    /// attribute existed).
    public static let itemClass = AttributeType(0x8050_4B20)
    /// kSecAttrAccessible: Apple's short code of the protection class ("ak", "ck", "dk", "aku",
    /// "cku", "dku", "akpu"), ASCII. Absent: "ak" (kSecAttrAccessibleWhenUnlocked).
    public static let accessible = AttributeType(0x8050_4B21)
    /// kSecAttrAccessGroup: UTF-8. Stored and matched; no entitlement checks it on Linux.
    public static let accessGroup = AttributeType(0x8050_4B22)
    /// kSecAttrSynchronizable: CK_BBOOL. Absent: false. Nothing synchronises on Linux.
    public static let synchronizable = AttributeType(0x8050_4B23)
    /// kSecAttrCreationDate: CK_ULONG milliseconds since 1970-01-01 UTC, set by the token when
    /// the object is stored, never by a caller.
    public static let creationDate = AttributeType(0x8050_4B24)
    /// kSecAttrModificationDate: as the creation date, renewed by the token on every change.
    public static let modificationDate = AttributeType(0x8050_4B25)
    /// kSecAttrAccessControl's flags (SecAccessControlCreateFlags, CK_ULONG); its protection
    /// class is the item's `accessible`. Present only on items created with access control;
    /// fixed once stored. See `AccessControl`.
    public static let accessControl = AttributeType(0x8050_4B26)
    /// kSecAttrGeneric: arbitrary bytes of the application's.
    public static let generic = AttributeType(0x8050_4B27)
    /// kSecAttrComment: UTF-8.
    public static let comment = AttributeType(0x8050_4B28)
    /// kSecAttrDescription: UTF-8 (Apple's "kind" text).
    public static let itemDescription = AttributeType(0x8050_4B29)
    /// kSecAttrCreator: a FourCharCode as CK_ULONG.
    public static let creator = AttributeType(0x8050_4B2A)
    /// kSecAttrType: a FourCharCode as CK_ULONG.
    public static let itemType = AttributeType(0x8050_4B2B)
    /// kSecAttrIsInvisible: CK_BBOOL.
    public static let isInvisible = AttributeType(0x8050_4B2C)
    /// kSecAttrIsNegative: CK_BBOOL.
    public static let isNegative = AttributeType(0x8050_4B2D)
    /// kSecAttrProtocol of an internet password: Apple's four-letter code ("htps"), ASCII.
    /// (The server, kSecAttrServer, is CKA_APPLICATION, as a generic password's service is.)
    public static let internetProtocol = AttributeType(0x8050_4B2E)
    /// kSecAttrPort of an internet password: CK_ULONG. Absent: 0 (any).
    public static let port = AttributeType(0x8050_4B2F)
    /// kSecAttrPath of an internet password: UTF-8.
    public static let path = AttributeType(0x8050_4B30)
    /// kSecAttrAuthenticationType of an internet password: Apple's four-letter code ("dflt").
    public static let authenticationType = AttributeType(0x8050_4B31)
    /// kSecAttrSecurityDomain of an internet password: UTF-8.
    public static let securityDomain = AttributeType(0x8050_4B32)

    /// p11keychain's own: a private key's PKCS#8 encoding, sealed like every secret value,
    /// from which signing rebuilds the key. Stored, never shown to callers.
    static let keyMaterial = AttributeType(0x8050_4B02)
    /// p11keychain's own: the random ID that binds a private object's sealed values to it.
    /// Stored, never shown to callers.
    static let sealID = AttributeType(0x8050_4B01)
}

/// A PKCS#11 object class (CKO_*).
public struct ObjectClass: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static let data = ObjectClass(rawValue: 0)
    public static let certificate = ObjectClass(rawValue: 1)
    public static let publicKey = ObjectClass(rawValue: 2)
    public static let privateKey = ObjectClass(rawValue: 3)
    public static let secretKey = ObjectClass(rawValue: 4)
}

/// A PKCS#11 key type (CKK_*).
public struct KeyType: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static let rsa = KeyType(rawValue: 0)
    public static let ec = KeyType(rawValue: 3)
    public static let ecEdwards = KeyType(rawValue: 0x40)
}

/// A PKCS#11 certificate type (CKC_*).
public struct CertificateType: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static let x509 = CertificateType(rawValue: 0)
}

/// CKA_CERTIFICATE_CATEGORY values.
public enum CertificateCategory: UInt64, Sendable {
    case unspecified = 0
    case tokenUser = 1
    case authority = 2
    case otherEntity = 3
}

/// One attribute: a type and its value in PKCS#11's encoding (CK_BBOOL is one byte,
/// CK_ULONG eight native-endian bytes, strings UTF-8 without a terminator).
public struct Attribute: Sendable, Equatable {
    public var type: AttributeType
    public var value: [UInt8]

    public init(_ type: AttributeType, _ value: [UInt8]) {
        self.type = type
        self.value = value
    }

    public init(_ type: AttributeType, bool: Bool) {
        self.init(type, [bool ? 1 : 0])
    }

    public init(_ type: AttributeType, ulong: UInt64) {
        self.init(type, AttributeValue.encode(ulong))
    }

    public init(_ type: AttributeType, string: String) {
        self.init(type, Array(string.utf8))
    }
}

/// Encoding and decoding of typed attribute values.
public enum AttributeValue {
    public static func encode(_ value: UInt64) -> [UInt8] {
        withUnsafeBytes(of: value) { Array($0) }
    }

    /// The CK_ULONG in `bytes`, or nil unless it is exactly eight bytes.
    public static func ulong(_ bytes: [UInt8]) -> UInt64? {
        guard bytes.count == MemoryLayout<UInt64>.size else { return nil }
        return bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
    }

    /// The CK_BBOOL in `bytes`, or nil unless it is exactly one byte.
    public static func bool(_ bytes: [UInt8]) -> Bool? {
        guard bytes.count == 1 else { return nil }
        return bytes[0] != 0
    }
}

/// A set of attributes keyed by type, as a template or an object's contents.
public typealias AttributeSet = [AttributeType: [UInt8]]

extension AttributeSet {
    public func ulong(_ type: AttributeType) -> UInt64? { self[type].flatMap(AttributeValue.ulong) }
    public func bool(_ type: AttributeType) -> Bool? { self[type].flatMap(AttributeValue.bool) }
    public func string(_ type: AttributeType) -> String? {
        self[type].map { String(decoding: $0, as: UTF8.self) }
    }
}
