public import KeychainCore

// What selects keys (KeyQuery), changes them (KeyChanges) and describes new ones
// (NewKeyAttributes), for the key functions of KeyItems.swift.

/// Which keys a find, update or delete applies to: every property that is set must match;
/// an empty query matches every key.
///
/// Label, application label, application tag and persistent reference are index lookups;
/// the other criteria are checked on the candidates.
public struct KeyQuery: Hashable, Sendable {
    /// How many matches an operation returns or applies to.
    public typealias Limit = CertificateQuery.Limit

    /// Public or private keys.
    public var keyClass: KeyClass?
    /// The key type.
    public var type: KeyType?
    /// The key size in bits.
    public var sizeInBits: Int?
    /// The item's label, exactly.
    public var label: String?
    /// The key identifier (CKA_ID, kSecAttrApplicationLabel).
    public var applicationLabel: [UInt8]?
    /// The application tag (kSecAttrApplicationTag).
    public var applicationTag: [UInt8]?
    /// Uses every match must allow (e.g. `.sign`).
    public var usage: KeyUsage
    /// The item with this ``KeyItem/persistentReference``, synchronizable or not.
    public var persistentReference: [UInt8]?
    /// Apple's common attributes, each set one matching exactly (see ``ItemAttributes``).
    public var attributes: ItemAttributes
    /// True (the default): `attributes.synchronizable` nil matches synchronizable and other
    /// keys alike. False applies the rule of Apple's query without kSecAttrSynchronizable:
    /// nil matches only keys that are not synchronizable (the `Security` face's queries).
    public var anySynchronizable: Bool
    /// How many matches to return or change; every match by default.
    public var limit: Limit

    /// Creates a query; every criterion left nil matches anything (but see `attributes`).
    public init(
        keyClass: KeyClass? = nil, type: KeyType? = nil, sizeInBits: Int? = nil, label: String? = nil,
        applicationLabel: [UInt8]? = nil, applicationTag: [UInt8]? = nil, usage: KeyUsage = [],
        persistentReference: [UInt8]? = nil, attributes: ItemAttributes = ItemAttributes(),
        anySynchronizable: Bool = true, limit: Limit = .all
    ) {
        self.keyClass = keyClass
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

    /// Every key.
    public static var all: KeyQuery { KeyQuery() }

    /// What the query selects: private or public key objects (or both) of its type.
    var selection: KeySelection {
        var terms: AttributeSet = [:]
        switch keyClass {
        case .public: terms[.class] = AttributeValue.encode(ObjectClass.publicKey.rawValue)
        case .private: terms[.class] = AttributeValue.encode(ObjectClass.privateKey.rawValue)
        case nil: break
        }
        if let type { terms[.keyType] = AttributeValue.encode(type.pkcs11.rawValue) }
        return KeySelection(
            terms, label: label, applicationLabel: applicationLabel, applicationTag: applicationTag,
            persistentReference: persistentReference, sizeInBits: sizeInBits, usage: usage,
            attributes: attributes, anySynchronizable: anySynchronizable, limit: limit)
    }
}

/// Attribute changes for ``Keychain/updateKeys(matching:setting:)``: each non-nil property
/// is set on every matching key.
public struct KeyChanges: Hashable, Sendable {
    /// A new label.
    public var label: String?
    /// A new key identifier (CKA_ID). Changing it unpairs the key from its certificates.
    public var applicationLabel: [UInt8]?
    /// A new application tag.
    public var applicationTag: [UInt8]?
    /// New values of Apple's common attributes: accessibility, access group, synchronizable.
    /// Access control cannot change (``KeychainError/Code/parameter``); the dates are the
    /// keychain's.
    public var attributes: ItemAttributes

    /// Creates a set of changes.
    public init(
        label: String? = nil, applicationLabel: [UInt8]? = nil, applicationTag: [UInt8]? = nil,
        attributes: ItemAttributes = ItemAttributes()
    ) {
        self.label = label
        self.applicationLabel = applicationLabel
        self.applicationTag = applicationTag
        self.attributes = attributes
    }

    /// True when nothing would change.
    public var isEmpty: Bool {
        label == nil && applicationLabel == nil && applicationTag == nil && attributes.isEmpty
    }

    /// The PKCS#11 template of the changes.
    var template: AttributeSet {
        get throws(KeychainError) {
            if attributes.accessControl != nil {
                throw KeychainError(.parameter, "access control is fixed when the key is stored")
            }
            var template = attributes.withoutDates.template
            if let label { template[.label] = Array(label.utf8) }
            if let applicationLabel { template[.id] = applicationLabel }
            if let applicationTag { template[.applicationTag] = applicationTag }
            return template
        }
    }
}

/// The attributes of one half of a key pair being stored, as the `Security` façade gives
/// them (Apple's kSecPrivateKeyAttrs / kSecPublicKeyAttrs). Nil means the token's default.
package struct NewKeyAttributes: Sendable {
    package var label: String?
    package var applicationTag: [UInt8]?
    package var applicationLabel: [UInt8]?
    package var usage: KeyUsage?
    package var isSensitive: Bool?
    package var isExtractable: Bool?
    /// Apple's common attributes (accessibility, access group, synchronizable, access control):
    /// access control with a presence flag makes a private key CKA_ALWAYS_AUTHENTICATE (core).
    package var common = ItemAttributes()

    package init(
        label: String? = nil, applicationTag: [UInt8]? = nil, applicationLabel: [UInt8]? = nil,
        usage: KeyUsage? = nil, isSensitive: Bool? = nil, isExtractable: Bool? = nil,
        common: ItemAttributes = ItemAttributes()
    ) {
        self.label = label
        self.applicationTag = applicationTag
        self.applicationLabel = applicationLabel
        self.usage = usage
        self.isSensitive = isSensitive
        self.isExtractable = isExtractable
        self.common = common.withoutDates
    }

    /// The attributes of the public half of a pair whose private half has these: the same
    /// label, tag, identifier and common attributes, but no access control (it guards the
    /// private key's use; a public key is public).
    func forPublicHalf(usage: KeyUsage? = nil) -> NewKeyAttributes {
        var common = self.common
        common.accessControl = nil
        return NewKeyAttributes(
            label: label, applicationTag: applicationTag, applicationLabel: applicationLabel, usage: usage,
            common: common)
    }

    /// The PKCS#11 template of a token key object of `keyClass` with these attributes.
    func template(_ keyClass: KeyClass) -> AttributeSet {
        var template: AttributeSet = [.token: [1]]
        if let label { template[.label] = Array(label.utf8) }
        if let applicationTag { template[.applicationTag] = applicationTag }
        if let applicationLabel { template[.id] = applicationLabel }
        if let usage {
            let flags: [(AttributeType, KeyUsage)] =
                keyClass == .private
                ? [(.sign, .sign), (.decrypt, .decrypt), (.derive, .derive), (.unwrap, .unwrap)]
                : [(.verify, .verify), (.encrypt, .encrypt), (.derive, .derive), (.wrap, .wrap)]
            for (type, flag) in flags { template[type] = [usage.contains(flag) ? 1 : 0] }
        }
        let common = self.common.template
        // A label given as bytes that are not text is the common attributes' (`binaryValues`).
        for type: AttributeType in [
            .accessible, .accessGroup, .synchronizable, .accessControl, .valueTypes, .label,
        ] {
            if let value = common[type] { template[type] = value }
        }
        if keyClass == .private {
            if let isSensitive { template[.sensitive] = [isSensitive ? 1 : 0] }
            if let isExtractable { template[.extractable] = [isExtractable ? 1 : 0] }
        }
        return template
    }
}
