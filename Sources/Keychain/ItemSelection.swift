internal import KeychainCore

/// What a query of every item class shares: the exact terms the store looks up (label,
/// persistent reference, and the class's own), Apple's common attributes, each set one
/// matching exactly, and how many matches it takes. Each class's query builds one, so that
/// these rules are written once.
struct ItemSelection {
    /// Exact terms the store looks up (CKA_LABEL, CKA_UNIQUE_ID, the class's own).
    var terms: AttributeSet = [:]
    var attributes = ItemAttributes()
    /// Whether `attributes.synchronizable` nil matches synchronizable items too.
    var anySynchronizable = false
    var limit: CertificateQuery.Limit = .all

    /// Selects every item of a class, synchronizable or not.
    init() {}

    /// The selection of a query's common criteria. A persistent reference names one item,
    /// synchronizable or not, whatever `anySynchronizable` says.
    init(
        label: String?, persistentReference: [UInt8]?, attributes: ItemAttributes, anySynchronizable: Bool,
        limit: CertificateQuery.Limit
    ) {
        if let label { terms[.label] = Array(label.utf8) }
        if let persistentReference { terms[.uniqueID] = persistentReference }
        self.attributes = attributes
        self.anySynchronizable = anySynchronizable || persistentReference != nil
        self.limit = limit
    }

    /// Whether a found item's common attributes match.
    func matches(_ item: ItemAttributes) -> Bool {
        attributes.matches(item, anySynchronizable: anySynchronizable)
    }

    /// Whether a stored object's attributes match the common attributes.
    func matches(stored: AttributeSet) -> Bool {
        attributes.matches(stored, anySynchronizable: anySynchronizable)
    }
}
