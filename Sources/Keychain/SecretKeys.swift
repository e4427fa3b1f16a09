public import KeychainCore

// Secret keys in a keychain (PKCS#11 CKO_SECRET_KEY; Apple's kSecAttrKeyClassSymmetric):
// what they are, how they are made, found and deleted. What they do (encrypt, MAC, wrap) is
// in SecretKeyOperations.swift. Every rule (lengths, check values, sealing, usage) is the
// core's; this face names things for Swift and translates.

/// The kind of a secret key (PKCS#11's CKA_KEY_TYPE of a secret key).
public enum SecretKeyType: Hashable, Sendable, CustomStringConvertible {
    /// AES (CKK_AES): 128, 192 or 256 bits.
    case aes
    /// An HMAC key bound to one hash function (CKK_SHA256_HMAC…): 8 to 32768 bits.
    case hmac(DigestAlgorithm)
    /// A generic secret (CKK_GENERIC_SECRET): HMAC with any hash, key derivation; 8 to 32768 bits.
    case generic

    /// `AES`, `HMAC-SHA256`, `generic`.
    public var description: String {
        switch self {
        case .aes: "AES"
        case .hmac(let digest): "HMAC-\(digest.name)"
        case .generic: "generic"
        }
    }

    /// The core's key type.
    var core: KeychainCore.KeyType {
        switch self {
        case .aes: .aes
        case .generic: .genericSecret
        case .hmac(.sha1): .sha1HMAC
        case .hmac(.sha224): .sha224HMAC
        case .hmac(.sha256): .sha256HMAC
        case .hmac(.sha384): .sha384HMAC
        case .hmac(.sha512): .sha512HMAC
        }
    }

    /// The type of a core key type; nil for one that is not a secret key type.
    init?(_ type: KeychainCore.KeyType) {
        switch type {
        case .aes: self = .aes
        case .genericSecret: self = .generic
        case .sha1HMAC: self = .hmac(.sha1)
        case .sha224HMAC: self = .hmac(.sha224)
        case .sha256HMAC: self = .hmac(.sha256)
        case .sha384HMAC: self = .hmac(.sha384)
        case .sha512HMAC: self = .hmac(.sha512)
        default: return nil
        }
    }
}

/// A secret key type with its size: what ``Keychain/generateSecretKey(_:label:applicationLabel:applicationTag:usage:extractable:attributes:)``
/// makes.
///
///     try keychain.generateSecretKey(.aes256, label: "backup key", usage: [.wrap, .unwrap])
///     try keychain.generateSecretKey(.hmac(.sha256), label: "API signing")
public struct SecretKeyAlgorithm: Hashable, Sendable, CustomStringConvertible {
    /// The key type.
    public let type: SecretKeyType
    /// The key's length in bits: a whole number of bytes.
    public let sizeInBits: Int

    /// A type and size; whether the pair is supported is checked when a key is made.
    public init(type: SecretKeyType, sizeInBits: Int) {
        self.type = type
        self.sizeInBits = sizeInBits
    }

    /// AES with a key of `bits` bits (128, 192 or 256).
    public static func aes(bits: Int) -> SecretKeyAlgorithm {
        SecretKeyAlgorithm(type: .aes, sizeInBits: bits)
    }
    /// AES-128.
    public static let aes128 = aes(bits: 128)
    /// AES-192.
    public static let aes192 = aes(bits: 192)
    /// AES-256.
    public static let aes256 = aes(bits: 256)

    /// An HMAC key for `digest`; by default as long as the hash's output, the length RFC 2104
    /// §3 recommends (longer keys add no strength).
    public static func hmac(_ digest: DigestAlgorithm, bits: Int? = nil) -> SecretKeyAlgorithm {
        SecretKeyAlgorithm(type: .hmac(digest), sizeInBits: bits ?? digest.length * 8)
    }

    /// A generic secret of `bits` bits.
    public static func generic(bits: Int) -> SecretKeyAlgorithm {
        SecretKeyAlgorithm(type: .generic, sizeInBits: bits)
    }

    /// E.g. `AES-256`, `HMAC-SHA256-256`, `generic-128`.
    public var description: String { "\(type)-\(sizeInBits)" }

    /// The key's length in bytes, or an error naming the sizes the type has.
    var byteCount: Int {
        get throws(KeychainError) {
            let kind = SecretKeyKind(type.core)
            guard sizeInBits > 0, sizeInBits % 8 == 0, let kind, kind.allows(length: sizeInBits / 8) else {
                throw KeychainError(
                    .parameter,
                    type == .aes
                        ? "AES keys have 128, 192 or 256 bits, not \(sizeInBits)"
                        : "\(type) keys have 8 to \(SecretKeyKind.maximumGenericLength * 8) bits in whole "
                            + "bytes, not \(sizeInBits)")
            }
            return sizeInBits / 8
        }
    }
}

/// A secret key stored in a keychain: a PKCS#11 secret key object (CKO_SECRET_KEY), visible
/// to PKCS#11 applications under the same label and ID.
///
/// Secret keys are private items: found only while the keychain is unlocked. Their value is
/// stored encrypted and never leaves the keychain in clear; it leaves only wrapped under
/// another key (``Keychain/wrap(_:with:using:)``), and only when the key is extractable.
/// Use one with ``Keychain/encrypt(_:with:using:)``, ``Keychain/authenticationCode(for:with:using:)``
/// and the other operations of `Keychain`.
public struct SecretKeyItem: Hashable, Sendable {
    /// The key's type and size.
    public let algorithm: SecretKeyAlgorithm
    /// The item's label (CKA_LABEL, kSecAttrLabel).
    public let label: String
    /// The key's identifier (CKA_ID, kSecAttrApplicationLabel).
    public let applicationLabel: [UInt8]
    /// The application's tag for the key (kSecAttrApplicationTag), or nil.
    public let applicationTag: [UInt8]?
    /// What the key may be used for.
    public let usage: KeyUsage
    /// True when the key's value is never revealed, even to PKCS#11 applications
    /// (CKA_SENSITIVE).
    public let isSensitive: Bool
    /// True when the key may leave the keychain wrapped under another key (CKA_EXTRACTABLE).
    public let isExtractable: Bool
    /// The key check value (CKA_CHECK_VALUE, PKCS#11 v3.0 §4.10): three bytes that identify
    /// the key's value without revealing it. AES: the start of the encryption of a zero
    /// block; others: the start of the SHA-1 of the value. Equal keys have equal check values,
    /// so it tells whether a key restored from a backup is the one that was saved.
    public let checkValue: [UInt8]
    /// An opaque reference that finds this item again, in any process, while it exists
    /// (CKA_UNIQUE_ID, kSecValuePersistentRef).
    public let persistentReference: [UInt8]
    /// Apple's common item attributes (accessibility, access group, synchronizable, dates),
    /// with Apple's defaults for what the key lacks.
    public let attributes: ItemAttributes

    /// The key's type.
    public var type: SecretKeyType { algorithm.type }
    /// The key's size in bits.
    public var sizeInBits: Int { algorithm.sizeInBits }

    /// The item for a stored secret key object's attributes; nil for another kind of object.
    init?(_ attributes: AttributeSet) {
        guard attributes.ulong(.class) == ObjectClass.secretKey.rawValue,
            let rawType = attributes.ulong(.keyType),
            let type = SecretKeyType(KeychainCore.KeyType(rawValue: rawType)),
            let length = attributes.ulong(.valueLength), let bytes = Int(exactly: length),
            bytes <= SecretKeyKind.maximumGenericLength
        else { return nil }
        algorithm = SecretKeyAlgorithm(type: type, sizeInBits: bytes * 8)
        label = attributes.string(.label) ?? ""
        applicationLabel = attributes[.id] ?? []
        applicationTag = attributes[.applicationTag]
        usage = KeyUsage(stored: attributes)
        isSensitive = attributes.bool(.sensitive) != false
        isExtractable = attributes.bool(.extractable) == true
        checkValue = attributes[.checkValue] ?? []
        persistentReference = attributes[.uniqueID] ?? []
        self.attributes = ItemAttributes(stored: attributes)
    }

}

/// Which secret keys a find or delete applies to: every property that is set must match; an
/// empty query matches every secret key.
public struct SecretKeyQuery: Hashable, Sendable {
    /// How many matches an operation returns or applies to.
    public typealias Limit = CertificateQuery.Limit

    /// The key type.
    public var type: SecretKeyType?
    /// The key size in bits.
    public var sizeInBits: Int?
    /// The item's label, exactly.
    public var label: String?
    /// The key identifier (CKA_ID).
    public var applicationLabel: [UInt8]?
    /// The application tag (kSecAttrApplicationTag).
    public var applicationTag: [UInt8]?
    /// Uses every match must allow (e.g. `.wrap`).
    public var usage: KeyUsage
    /// The item with this ``SecretKeyItem/persistentReference``, synchronizable or not.
    public var persistentReference: [UInt8]?
    /// Apple's common attributes, each set one matching exactly (see ``ItemAttributes``).
    public var attributes: ItemAttributes
    /// True (the default): `attributes.synchronizable` nil matches synchronizable and other
    /// keys alike. False applies the rule of Apple's query without kSecAttrSynchronizable:
    /// nil matches only keys that are not synchronizable (the `Security` face's queries).
    public var anySynchronizable: Bool
    /// How many matches to return or delete; every match by default.
    public var limit: Limit

    /// Creates a query; every criterion left nil matches anything (but see `attributes`).
    public init(
        type: SecretKeyType? = nil, sizeInBits: Int? = nil, label: String? = nil,
        applicationLabel: [UInt8]? = nil, applicationTag: [UInt8]? = nil, usage: KeyUsage = [],
        persistentReference: [UInt8]? = nil, attributes: ItemAttributes = ItemAttributes(),
        anySynchronizable: Bool = true, limit: Limit = .all
    ) {
        self.type = type
        self.sizeInBits = sizeInBits
        self.label = label
        self.applicationLabel = applicationLabel
        self.applicationTag = applicationTag
        self.usage = usage
        self.persistentReference = persistentReference
        self.attributes = attributes
        self.anySynchronizable = anySynchronizable
        self.limit = limit
    }

    /// Every secret key.
    public static var all: SecretKeyQuery { SecretKeyQuery() }

    /// What the query selects: secret key objects of its type.
    var selection: KeySelection {
        var terms: AttributeSet = [.class: AttributeValue.encode(ObjectClass.secretKey.rawValue)]
        if let type { terms[.keyType] = AttributeValue.encode(type.core.rawValue) }
        return KeySelection(
            terms, label: label, applicationLabel: applicationLabel, applicationTag: applicationTag,
            persistentReference: persistentReference, sizeInBits: sizeInBits, usage: usage,
            attributes: attributes, anySynchronizable: anySynchronizable, limit: limit)
    }
}

/// The attributes of a secret key being stored. Nil means the token's default.
struct NewSecretKeyAttributes {
    var label: String?
    var applicationLabel: [UInt8]?
    var applicationTag: [UInt8]?
    var usage: KeyUsage?
    var isExtractable: Bool
    var common = ItemAttributes()

    /// The PKCS#11 template of a token secret key of `type` with these attributes. The key
    /// is always sensitive: its value is never readable, only usable (and wrappable when
    /// extractable). Without an identifier it gets a random one, so that every key can be
    /// named on its own (CKA_ID; PKCS#11 applications select keys by it).
    func template(_ type: SecretKeyType) throws(KeychainError) -> AttributeSet {
        var template: AttributeSet = [
            .token: [1], .private: [1], .sensitive: [1], .extractable: [isExtractable ? 1 : 0],
            .keyType: AttributeValue.encode(type.core.rawValue),
        ]
        if let label { template[.label] = Array(label.utf8) }
        if let applicationLabel {
            template[.id] = applicationLabel
        } else {
            template[.id] = try KeychainError.mapping { () throws(CoreError) in try RandomGeneration.bytes(16)
            }
        }
        if let applicationTag { template[.applicationTag] = applicationTag }
        if let usage {
            for (type, flag) in KeyUsage.attributes { template[type] = [usage.contains(flag) ? 1 : 0] }
        }
        guard common.accessControl == nil else {
            // The core asks for the PIN per use of private keys and passwords only.
            throw KeychainError(
                .parameter, "access control is not enforced on secret keys here: store the key without it")
        }
        template.merge(common.withoutDates.template) { given, _ in given }
        return template
    }
}

// MARK: - Secret keys in a keychain

extension Keychain {
    /// Generates a secret key in the keychain (PKCS#11 C_GenerateKey with CKM_AES_KEY_GEN or
    /// CKM_GENERIC_SECRET_KEY_GEN). Needs the keychain unlocked: secret keys are private items.
    ///
    /// - Parameters:
    ///   - algorithm: e.g. `.aes256`, `.hmac(.sha256)`, `.generic(bits: 256)`.
    ///   - label: The item's label; empty by default.
    ///   - applicationLabel: The key's identifier (CKA_ID); by default 16 random bytes.
    ///   - applicationTag: The item's application tag, to find it by.
    ///   - usage: What the key may do; by default the token's: encrypt, decrypt, sign
    ///     (MAC) and verify, but not wrap, unwrap or derive. A key that wraps others needs
    ///     `.wrap` and `.unwrap`.
    ///   - extractable: Whether the key may leave the keychain wrapped under another key. By
    ///     default it never leaves.
    ///   - attributes: Apple's common attributes (accessibility, access group,
    ///     synchronizable); access control is refused (``KeychainError/Code/parameter``).
    /// - Throws: ``KeychainError/Code/interactionNotAllowed`` when the keychain is locked;
    ///   ``KeychainError/Code/parameter`` for a size the type does not have.
    @discardableResult
    public func generateSecretKey(
        _ algorithm: SecretKeyAlgorithm, label: String? = nil, applicationLabel: [UInt8]? = nil,
        applicationTag: [UInt8]? = nil, usage: KeyUsage? = nil, extractable: Bool = false,
        attributes: ItemAttributes = ItemAttributes()
    ) throws(KeychainError) -> SecretKeyItem {
        let length = try algorithm.byteCount
        try requireUnlocked(to: "store a secret key")
        var template = try NewSecretKeyAttributes(
            label: label, applicationLabel: applicationLabel, applicationTag: applicationTag, usage: usage,
            isExtractable: extractable, common: attributes
        ).template(algorithm.type)
        template[.valueLength] = AttributeValue.encode(UInt64(length))
        let mechanism =
            algorithm.type == .aes ? SecretKeyKind.aesKeyGeneration : SecretKeyKind.genericSecretKeyGeneration
        let reference = try KeychainError.mapping { () throws(CoreError) in
            let kind = try SecretKeyKind(generating: mechanism, template: template)
            return try token.generateSecretKey(
                kind, mechanism: mechanism, template: token.withDefaultAccessGroup(template), context: context
            )
        }
        return try storedSecretKey(reference)
    }

    /// Stores a secret key whose value the caller has (PKCS#11 C_CreateObject of a
    /// CKO_SECRET_KEY). The value is sealed before it is written. Needs the keychain unlocked.
    ///
    /// - Parameters:
    ///   - value: The key's bytes: 16, 24 or 32 for AES, 1 to 4096 for the others.
    ///   - type: The key's type.
    ///   - label, applicationLabel, applicationTag, usage, extractable, attributes: as for
    ///     ``generateSecretKey(_:label:applicationLabel:applicationTag:usage:extractable:attributes:)``.
    /// - Throws: ``KeychainError/Code/interactionNotAllowed`` when the keychain is locked;
    ///   ``KeychainError/Code/parameter`` for a length the type does not have.
    @discardableResult
    public func importSecretKey(
        _ value: [UInt8], type: SecretKeyType, label: String? = nil, applicationLabel: [UInt8]? = nil,
        applicationTag: [UInt8]? = nil, usage: KeyUsage? = nil, extractable: Bool = false,
        attributes: ItemAttributes = ItemAttributes()
    ) throws(KeychainError) -> SecretKeyItem {
        _ = try SecretKeyAlgorithm(type: type, sizeInBits: value.count * 8).byteCount
        try requireUnlocked(to: "store a secret key")
        var template = try NewSecretKeyAttributes(
            label: label, applicationLabel: applicationLabel, applicationTag: applicationTag, usage: usage,
            isExtractable: extractable, common: attributes
        ).template(type)
        template[.class] = AttributeValue.encode(ObjectClass.secretKey.rawValue)
        template[.value] = value
        defer { template[.value] = nil }
        let reference = try KeychainError.mapping { () throws(CoreError) in
            try token.createObject(token.withDefaultAccessGroup(template), context: context)
        }
        return try storedSecretKey(reference)
    }

    /// The secret keys matching `query`, in the order they were added; an empty array when
    /// none does, or when the keychain is locked (secret keys are private items).
    public func secretKeys(matching query: SecretKeyQuery = .all) throws(KeychainError) -> [SecretKeyItem] {
        try secretKeyMatches(query).map(\.item)
    }

    /// The first secret key matching `query`, or nil.
    public func firstSecretKey(matching query: SecretKeyQuery) throws(KeychainError) -> SecretKeyItem? {
        var one = query
        one.limit = .one
        return try secretKeyMatches(one).first?.item
    }

    /// Deletes every secret key matching `query` (up to its limit), in one transaction.
    ///
    /// - Returns: How many keys were deleted; 0 when nothing matched.
    @discardableResult
    public func deleteSecretKeys(matching query: SecretKeyQuery) throws(KeychainError) -> Int {
        let references = try secretKeyMatches(query).map(\.reference)
        return try KeychainError.mapping { () throws(CoreError) in
            try token.destroyObjects(references, context: context)
        }.count
    }

    /// Deletes one stored secret key.
    ///
    /// - Throws: ``KeychainError/Code/itemNotFound`` when it no longer exists (or the
    ///   keychain is locked).
    public func delete(_ key: SecretKeyItem) throws(KeychainError) {
        let reference = try reference(of: key)
        let deleted = try KeychainError.mapping { () throws(CoreError) in
            try token.destroyObjects([reference], context: context)
        }
        guard !deleted.isEmpty else { throw KeychainError(.itemNotFound, "the secret key no longer exists") }
    }

    // MARK: Matching secret keys

    private func secretKeyMatches(_ query: SecretKeyQuery) throws(KeychainError) -> [KeyMatch<SecretKeyItem>]
    {
        try keyMatches(query.selection, load: loadSecretKey)
    }

    /// The item behind a reference; nil when it vanished meanwhile or is not a secret key.
    /// Nothing sealed is opened: the item holds no key value.
    private func loadSecretKey(_ reference: ObjectReference) throws(KeychainError) -> SecretKeyItem? {
        do {
            return SecretKeyItem(try token.attributes(of: reference, context: context, revealing: []))
        } catch  where error.code == .objectNotFound {
            return nil
        } catch {
            throw KeychainError(error)
        }
    }

    /// The item of a key just stored.
    func storedSecretKey(_ reference: ObjectReference) throws(KeychainError) -> SecretKeyItem {
        guard let item = try loadSecretKey(reference) else {
            throw KeychainError(.internal, "the new secret key cannot be read back")
        }
        return item
    }

    /// The stored object of a secret key item, once the keychain is unlocked.
    func reference(of key: SecretKeyItem) throws(KeychainError) -> ObjectReference {
        try requireUnlocked(to: "use a secret key")
        let template: AttributeSet = [
            .class: AttributeValue.encode(ObjectClass.secretKey.rawValue), .uniqueID: key.persistentReference,
        ]
        let found = try KeychainError.mapping { () throws(CoreError) in
            try token.findObjects(template, context: context)
        }
        guard let reference = found.first else {
            throw KeychainError(.itemNotFound, "the secret key \"\(key.label)\" no longer exists")
        }
        return reference
    }
}
