internal import KeychainCore

// What the two kinds of stored key (halves of key pairs, secret keys) share: the attributes
// a key query matches and the `Security` face returns, and the one way both are found.

/// A stored key item of either kind: half of a key pair (``KeyItem``) or a secret key
/// (``SecretKeyItem``).
package protocol StoredKeyItem {
    var label: String { get }
    var applicationLabel: [UInt8] { get }
    var applicationTag: [UInt8]? { get }
    var usage: KeyUsage { get }
    var isSensitive: Bool { get }
    var isExtractable: Bool { get }
    var persistentReference: [UInt8] { get }
    var attributes: ItemAttributes { get }
    /// The key's size in bits: an RSA modulus's, an EC field's, a secret key's.
    var sizeInBits: Int { get }
}

extension KeyItem: StoredKeyItem {
    package var sizeInBits: Int { algorithm.sizeInBits }
}

extension SecretKeyItem: StoredKeyItem {}

extension KeyUsage {
    /// Each usage attribute of a key object and the usage it grants.
    static let attributes: [(AttributeType, KeyUsage)] = [
        (.sign, .sign), (.verify, .verify), (.encrypt, .encrypt), (.decrypt, .decrypt), (.derive, .derive),
        (.wrap, .wrap), (.unwrap, .unwrap),
    ]

    /// The usages a stored key object's attributes grant.
    init(stored attributes: AttributeSet) {
        self = []
        for (type, flag) in Self.attributes where attributes.bool(type) == true { insert(flag) }
    }
}

/// What a key query of either kind selects: the terms the store looks up (class, type, label,
/// identifier, tag, persistent reference) and what each candidate must have besides.
struct KeySelection {
    var items: ItemSelection
    var sizeInBits: Int?
    var usage: KeyUsage

    init(
        _ terms: AttributeSet, label: String?, applicationLabel: [UInt8]?, applicationTag: [UInt8]?,
        persistentReference: [UInt8]?, sizeInBits: Int?, usage: KeyUsage, attributes: ItemAttributes,
        anySynchronizable: Bool, limit: CertificateQuery.Limit
    ) {
        items = ItemSelection(
            label: label, persistentReference: persistentReference, attributes: attributes,
            anySynchronizable: anySynchronizable, limit: limit)
        items.terms.merge(terms) { _, given in given }
        items.terms[.token] = [1]
        if let applicationLabel { items.terms[.id] = applicationLabel }
        if let applicationTag { items.terms[.applicationTag] = applicationTag }
        self.sizeInBits = sizeInBits
        self.usage = usage
    }

    /// Whether a found key has the size, usages and common attributes asked for.
    func admits(_ key: some StoredKeyItem) -> Bool {
        if let sizeInBits, key.sizeInBits != sizeInBits { return false }
        return key.usage.isSuperset(of: usage) && items.matches(key.attributes)
    }
}

extension Keychain {
    /// A key found, with its stored object.
    struct KeyMatch<Item: StoredKeyItem> {
        var reference: ObjectReference
        var item: Item
    }

    /// The keys `selection` selects, up to its limit, in the order they were added; `load`
    /// reads a candidate's item (nil: it vanished meanwhile, or is not of the kind).
    func keyMatches<Item: StoredKeyItem>(
        _ selection: KeySelection, load: (ObjectReference) throws(KeychainError) -> Item?
    ) throws(KeychainError) -> [KeyMatch<Item>] {
        let limit = try Keychain.count(selection.items.limit)
        let candidates = try KeychainError.mapping { () throws(CoreError) in
            try token.findObjects(selection.items.terms, context: context)
        }
        var found: [KeyMatch<Item>] = []
        for reference in candidates where found.count < limit {
            guard let item = try load(reference), selection.admits(item) else { continue }
            found.append(KeyMatch(reference: reference, item: item))
        }
        return found
    }
}
