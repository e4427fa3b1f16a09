internal import KeychainCrypto

// Secret key objects (PKCS#11 v2.40 §4.10, v3.0 §4.10; AES §2.10, generic secret §2.34, HMAC
// key types §2.5.x): their attributes and rules, the key types and lengths the token holds,
// and the one way every path (create, generate, unwrap, derive) turns a value into a stored,
// sealed key object.

extension AttributeType {
    public static let valueLength = AttributeType(0x0161)
    /// CK_MECHANISM_TYPE array (CKF_ARRAY_ATTRIBUTE | 0x600).
    public static let allowedMechanisms = AttributeType(0x4000_0600)
}

extension KeyType {
    public static let genericSecret = KeyType(rawValue: 0x10)
    public static let aes = KeyType(rawValue: 0x1F)
    public static let sha1HMAC = KeyType(rawValue: 0x28)
    public static let sha256HMAC = KeyType(rawValue: 0x2B)
    public static let sha384HMAC = KeyType(rawValue: 0x2C)
    public static let sha512HMAC = KeyType(rawValue: 0x2D)
    public static let sha224HMAC = KeyType(rawValue: 0x2E)
}

/// A kind of secret key: which lengths its value may have and how its check value is made.
public struct SecretKeyKind: Sendable, Equatable {
    public let keyType: KeyType
    /// Allowed value lengths in bytes.
    public let lengths: ClosedRange<Int>
    /// AES keys have only 16, 24 or 32 bytes.
    private let isAES: Bool

    /// The longest generic secret or HMAC key the token holds: far beyond any hash's block
    /// (HMAC hashes longer keys first), and a bound on what a host can make it store.
    public static let maximumGenericLength = 4096

    /// The kind of `keyType`, or nil for a key type the token has no secret keys of.
    public init?(_ keyType: KeyType) {
        self.keyType = keyType
        switch keyType {
        case .aes:
            lengths = 16...32
            isAES = true
        case .genericSecret, .sha1HMAC, .sha224HMAC, .sha256HMAC, .sha384HMAC, .sha512HMAC:
            lengths = 1...SecretKeyKind.maximumGenericLength
            isAES = false
        default:
            return nil
        }
    }

    /// True when a value of `length` bytes makes a key of this kind.
    public func allows(length: Int) -> Bool {
        lengths.contains(length) && (!isAES || length % 8 == 0)
    }

    /// The fewest bytes a key's value needs for a search through 2^(8·length) values, each
    /// tested against something computed from the value alone, to stay out of reach: 128
    /// bits, the smallest AES key. A 3-byte check value names a key of 3 bytes or fewer after
    /// at most 2^24 tries and leaves few candidates for a slightly longer one; C_DigestKey,
    /// whose output is a whole digest and mixes in the caller's data, refuses every sensitive
    /// or unextractable key whatever its length (`Token.keyToDigest`).
    public static let searchResistantLength = 16

    /// True when a value of `length` bytes withstands such a search.
    public static func withstandsSearch(length: UInt64) -> Bool {
        length >= UInt64(searchResistantLength)
    }

    /// CKA_CHECK_VALUE (v3.0 §4.10): for AES the first three bytes of the ECB encryption of
    /// a zero block, for the others the first three bytes of the SHA-1 hash of the value.
    /// Empty for a value too short to withstand a search of it (`searchResistantLength`):
    /// the check value is kept in clear beside a sealed value and readable wherever the
    /// object is, so no flag could keep it from naming the key (v3.0 §4.10 lets a token leave
    /// a key without one).
    func checkValue(of value: SecretBytes) throws(CoreError) -> [UInt8] {
        guard SecretKeyKind.withstandsSearch(length: UInt64(value.count)) else { return [] }
        return isAES
            ? try CoreError.mapping { try SecretKeyCheckValue.aes(value) }
            : SecretKeyCheckValue.sha1(value)
    }

    /// CKM_AES_KEY_GEN and CKM_GENERIC_SECRET_KEY_GEN (v2.40 §2.10.3, §2.34.2).
    public static let aesKeyGeneration: UInt64 = 0x1080
    public static let genericSecretKeyGeneration: UInt64 = 0x0350

    /// The kind of key a C_GenerateKey mechanism makes with `template`: AES for
    /// CKM_AES_KEY_GEN; for CKM_GENERIC_SECRET_KEY_GEN a generic secret, or the HMAC key
    /// type the template names. A CKA_KEY_TYPE that contradicts the mechanism is refused.
    public init(generating mechanism: UInt64, template: AttributeSet) throws(CoreError) {
        _ = try MechanismRegistry.require(mechanism, for: .generate)
        let named = template.ulong(.keyType).map(KeyType.init(rawValue:))
        let kind: SecretKeyKind?
        switch mechanism {
        case SecretKeyKind.aesKeyGeneration:
            kind = SecretKeyKind(named ?? .aes).flatMap { $0.isAES ? $0 : nil }
        case SecretKeyKind.genericSecretKeyGeneration:
            kind = SecretKeyKind(named ?? .genericSecret).flatMap { $0.isAES ? nil : $0 }
        default:
            throw CoreError(
                .mechanismInvalid, "mechanism \(PKCS11Names.mechanism(mechanism)) generates no secret key")
        }
        guard let kind else {
            throw CoreError(.templateInconsistent, "CKA_KEY_TYPE contradicts the generation mechanism")
        }
        self = kind
    }
}

extension ObjectPolicy {
    /// Secret keys (v2.40 §4.10): the value is sealed at rest and sensitive by default, like a
    /// private key's; both halves' usages (`protectedKey`, `publicUses`).
    static let secretKey = ObjectPolicy(
        .secretKey,
        anyKey + protectedKey + publicUses + [
            AttributeSpec(
                type: .value, kind: .bytes, rules: [.settableOnCreate, .secret], defaultValue: nil),
            AttributeSpec(
                type: .valueLength, kind: .ulong, rules: [.settableOnCreate, .derived, .generationParameter],
                defaultValue: nil),
            AttributeSpec(
                type: .checkValue, kind: .bytes, rules: [.settableOnCreate, .derived], defaultValue: nil),
        ])
}

extension NewObject {
    /// A secret key object from `value` and a template already checked for `change`: the
    /// token sets class, key type, length and check value, and settles the key's history
    /// (`before`: the base key of a derivation). A CKA_VALUE_LEN or CKA_CHECK_VALUE the
    /// template gives must agree with the value. Nothing is stored here; the value is sealed
    /// when the object is inserted (`Token.sealedTypes`).
    init(
        secretKey value: SecretBytes, kind: SecretKeyKind, template: AttributeSet, change: ObjectChange,
        before: AttributeSet?, generatedBy mechanism: UInt64?
    ) throws(CoreError) {
        guard kind.allows(length: value.count) else {
            throw CoreError(.attributeValueInvalid, "the key's value has a length its key type does not have")
        }
        if let named = template.ulong(.keyType), named != kind.keyType.rawValue {
            throw CoreError(.templateInconsistent, "CKA_KEY_TYPE contradicts the key")
        }
        if let named = template.ulong(.class), named != ObjectClass.secretKey.rawValue {
            throw CoreError(.templateInconsistent, "CKA_CLASS contradicts the key's class")
        }
        let policy = ObjectPolicy.secretKey
        // The class's defaults (`ObjectPolicy.defaults`: a table already sized for every
        // attribute), the template over them, then what the token sets.
        var attributes = policy.defaults
        for (type, value) in template { attributes[type] = value }
        let derived: KeyValuePairs<AttributeType, [UInt8]> = [
            .valueLength: AttributeValue.encode(UInt64(value.count)),
            .checkValue: try kind.checkValue(of: value),
        ]
        // A short key's check value is not compared with one the template gives: the answer
        // would name the key after a search of the 3 bytes (`checkValue(of:)`).
        for (type, computed) in derived {
            if let given = template[type], given != computed {
                throw CoreError(
                    type == .valueLength ? .templateInconsistent : .attributeValueInvalid,
                    "attribute \(type) contradicts the key's value")
            }
            attributes[type] = computed
        }
        attributes[.class] = AttributeValue.encode(ObjectClass.secretKey.rawValue)
        attributes[.keyType] = AttributeValue.encode(kind.keyType.rawValue)
        attributes[.value] = value.copyBytes()
        attributes[.local] = [mechanism == nil ? 0 : 1]
        attributes[.keyGenMechanism] = AttributeValue.encode(mechanism ?? UInt64.max)
        attributes[.label] = template[.label] ?? []
        // Secret keys are private objects (ARCHITECTURE.md §3.6) unless the template says otherwise.
        attributes[.private] = template[.private] ?? [1]
        policy.settleHistory(&attributes, after: change, before: before)
        self.init(attributes: attributes, uniqueKey: nil)
    }

    /// A secret key from a C_CreateObject / SecItemAdd template (checked as `.create`):
    /// the value is the template's CKA_VALUE.
    init(importingSecretKey template: AttributeSet) throws(CoreError) {
        guard let rawType = template.ulong(.keyType) else {
            throw CoreError(.templateIncomplete, "template lacks CKA_KEY_TYPE")
        }
        guard let kind = SecretKeyKind(KeyType(rawValue: rawType)) else {
            throw CoreError(
                .attributeValueInvalid, "key type \(PKCS11Names.keyType(rawType)) is not a secret key type")
        }
        guard let bytes = template[.value] else {
            throw CoreError(.templateIncomplete, "a secret key needs CKA_VALUE")
        }
        try self.init(
            secretKey: SecretBytes(bytes), kind: kind, template: template, change: .create, before: nil,
            generatedBy: nil)
    }
}

extension Token {
    /// Stores a secret key the token made or received: `.generate` (C_GenerateKey, SecItem
    /// generation), `.unwrap` (C_UnwrapKey) or `.derive` (C_DeriveKey, with `base` the base
    /// key's attributes). The template is checked by the one rule check for `change` (no
    /// value in it, nothing the token sets), and the value sealed before it is written.
    func storeSecretKey(
        _ value: SecretBytes, kind: SecretKeyKind, template: AttributeSet, change: ObjectChange,
        base: AttributeSet? = nil, generatedBy mechanism: UInt64? = nil, context: AccessContext
    ) throws(CoreError) -> ObjectReference {
        let policy = ObjectPolicy.secretKey
        try policy.check(template, change, asSecurityOfficer: context.securityOfficer)
        let object = try NewObject(
            secretKey: value, kind: kind, template: template, change: change, before: base,
            generatedBy: change == .generate ? mechanism : nil)
        let references = try insertAll([object], context: context)
        guard let reference = references.first else {
            throw CoreError(.storageFailure, "the key was not stored")
        }
        return reference
    }

    /// Generates a secret key (C_GenerateKey, v2.40 §5.14): `kind` from
    /// `SecretKeyKind(generating:template:)`, its length from CKA_VALUE_LEN (which AES and
    /// generic secrets need), its bytes from the token's generator.
    package func generateSecretKey(
        _ kind: SecretKeyKind, mechanism: UInt64, template: AttributeSet, context: AccessContext
    ) throws(CoreError) -> ObjectReference {
        guard let requested = template.ulong(.valueLength) else {
            throw CoreError(.templateIncomplete, "secret key generation needs CKA_VALUE_LEN")
        }
        guard let length = Int(exactly: requested), kind.allows(length: length) else {
            throw CoreError(.attributeValueInvalid, "CKA_VALUE_LEN is not a length this key type has")
        }
        let value = try CoreError.mapping { try SecureRandom.secret(length) }
        return try storeSecretKey(
            value, kind: kind, template: template, change: .generate, generatedBy: mechanism,
            context: context)
    }
}
