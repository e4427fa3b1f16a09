internal import KeychainCore

/// A generic password stored in a keychain (Apple's kSecClassGenericPassword): a secret
/// filed under a service and an account.
///
/// Stored as a private PKCS#11 data object (CKO_DATA, CKA_PRIVATE=TRUE): the service is
/// CKA_APPLICATION, the account the vendor attribute 0x80504B10, the label CKA_LABEL, and the
/// password CKA_VALUE, encrypted under the token key. Like every private item it is visible
/// only while the keychain is unlocked. The value holds no secret: read the password with
/// ``Keychain/password(for:)``.
public struct GenericPasswordItem: Hashable, Sendable {
    /// The service (kSecAttrService): what the password is for, e.g. `com.example.backup`.
    public let service: String
    /// The account (kSecAttrAccount): whose password it is.
    public let account: String
    /// The item's label (kSecAttrLabel); the service unless set otherwise.
    public let label: String
    /// An opaque reference that finds this item again, in any process, while it exists.
    public let persistentReference: [UInt8]
    /// Apple's other item attributes (accessibility, access group, dates…), with defaults.
    public let attributes: ItemAttributes

    /// Creates an item value. Items come from a ``Keychain``; this initializer is for tests
    /// and for code that builds expected values.
    public init(
        service: String, account: String, label: String, persistentReference: [UInt8],
        attributes: ItemAttributes = ItemAttributes()
    ) {
        self.service = service
        self.account = account
        self.label = label
        self.persistentReference = persistentReference
        self.attributes = attributes
    }

    /// The item of a stored password record.
    init(_ attributes: AttributeSet) {
        service = attributes.string(.application) ?? ""
        account = attributes.string(.account) ?? ""
        label = attributes.string(.label) ?? ""
        persistentReference = attributes[.uniqueID] ?? []
        self.attributes = ItemAttributes(stored: attributes)
    }
}

/// Which generic passwords a find, update or delete applies to: every property that is set
/// must match; an empty query matches every generic password.
///
/// Service, label and persistent reference are index lookups; the account is checked on the
/// candidates (a query by account alone scans the store's objects).
public struct GenericPasswordQuery: Hashable, Sendable {
    /// How many matches an operation returns or applies to.
    public typealias Limit = CertificateQuery.Limit

    /// The service, exactly.
    public var service: String?
    /// The account, exactly.
    public var account: String?
    /// The label, exactly.
    public var label: String?
    /// The item with this ``GenericPasswordItem/persistentReference``.
    public var persistentReference: [UInt8]?
    /// Apple's other attributes, each set one matching exactly (see ``ItemAttributes``).
    public var attributes: ItemAttributes
    /// True (the default): `attributes.synchronizable` nil matches synchronizable and other
    /// items alike. False applies the rule of Apple's query without kSecAttrSynchronizable:
    /// nil matches only items that are not synchronizable (the `Security` face's queries).
    public var anySynchronizable: Bool
    /// How many matches an operation returns or applies to; every match by default.
    public var limit: Limit

    /// Creates a query; every criterion left nil matches anything (but see `attributes`).
    public init(
        service: String? = nil, account: String? = nil, label: String? = nil,
        persistentReference: [UInt8]? = nil, attributes: ItemAttributes = ItemAttributes(),
        anySynchronizable: Bool = true,
        limit: Limit = .all
    ) {
        self.service = service
        self.account = account
        self.label = label
        self.persistentReference = persistentReference
        self.attributes = attributes
        self.anySynchronizable = anySynchronizable
        self.limit = limit
    }

    /// What the query selects; a persistent reference names one item, synchronizable or not.
    var selection: PasswordSelection {
        var items = ItemSelection(
            label: label, persistentReference: persistentReference, attributes: attributes,
            anySynchronizable: anySynchronizable, limit: limit)
        if let service { items.terms[.application] = Array(service.utf8) }
        return PasswordSelection(.generic, items: items, account: account)
    }

    /// Every generic password.
    public static var all: GenericPasswordQuery { GenericPasswordQuery() }
}

/// Changes for ``Keychain/updateGenericPasswords(matching:setting:pin:)``: each non-nil property
/// is set on every matching item.
public struct GenericPasswordChanges: Hashable, Sendable {
    /// A new service.
    public var service: String?
    /// A new account.
    public var account: String?
    /// A new label.
    public var label: String?
    /// A new password.
    public var password: [UInt8]?
    /// New values of Apple's other attributes (access control cannot change).
    public var attributes: ItemAttributes

    /// Creates a set of changes.
    public init(
        service: String? = nil, account: String? = nil, label: String? = nil, password: [UInt8]? = nil,
        attributes: ItemAttributes = ItemAttributes()
    ) {
        self.service = service
        self.account = account
        self.label = label
        self.password = password
        self.attributes = attributes
    }

    /// True when nothing would change.
    public var isEmpty: Bool {
        service == nil && account == nil && label == nil && password == nil && attributes.isEmpty
    }

    var template: AttributeSet {
        var template = attributes.template
        if let service { template[.application] = Array(service.utf8) }
        if let account { template[.account] = Array(account.utf8) }
        if let label { template[.label] = Array(label.utf8) }
        if let password { template[.value] = password }
        return template
    }
}

extension Keychain {
    /// Adds a generic password. Needs the keychain unlocked.
    ///
    /// A service and account (with the access group and synchronizable flag) identify one
    /// password, as in Apple's keychain: adding a second for the same identity fails, in this
    /// process or another, and the stored one is kept.
    ///
    /// - Parameters:
    ///   - password: The secret, any bytes (e.g. `Array("hunter2".utf8)`).
    ///   - service: What it is for.
    ///   - account: Whose it is.
    ///   - label: The item's label; by default the service.
    ///   - attributes: Apple's other attributes; accessibility defaults to `.whenUnlocked`,
    ///     synchronizable to false.
    /// - Throws: ``KeychainError/Code/duplicateItem`` when the service and account already
    ///   have a password; ``KeychainError/Code/interactionNotAllowed`` when the keychain is
    ///   locked; ``KeychainError/Code/parameter`` for access control asking for biometry.
    @discardableResult
    public func addGenericPassword(
        _ password: [UInt8], service: String, account: String, label: String? = nil,
        attributes: ItemAttributes = ItemAttributes()
    )
        throws(KeychainError) -> GenericPasswordItem
    {
        let template: AttributeSet = [
            .application: Array(service.utf8), .account: Array(account.utf8),
            .label: Array((label ?? service).utf8), .value: password,
        ]
        return GenericPasswordItem(try addPassword(.generic, template, attributes: attributes).attributes)
    }

    /// The generic passwords matching `query`, in the order they were added; an empty array
    /// when none does or the keychain is locked.
    public func genericPasswords(matching query: GenericPasswordQuery = .all) throws(KeychainError)
        -> [GenericPasswordItem]
    {
        try passwordRecords(query.selection).map { GenericPasswordItem($0.attributes) }
    }

    /// The first generic password matching `query`, or nil.
    public func firstGenericPassword(matching query: GenericPasswordQuery) throws(KeychainError)
        -> GenericPasswordItem?
    {
        var one = query
        one.limit = .one
        return try genericPasswords(matching: one).first
    }

    /// The secret of a stored generic password. Needs the keychain unlocked, and `pin` when
    /// the item's access control needs the PIN for each use.
    ///
    /// - Throws: ``KeychainError/Code/interactionNotAllowed`` when the keychain is locked, or
    ///   the item needs the PIN and none is given; ``KeychainError/Code/itemNotFound`` when the
    ///   item no longer exists.
    public func password(for item: GenericPasswordItem, pin: [UInt8]? = nil) throws(KeychainError) -> [UInt8]
    {
        try passwordSecret(item.persistentReference, .generic, pin: pin)
    }

    /// Changes every generic password matching `query` (up to its limit), in one
    /// transaction: every match changes, or none does. The modification date is the
    /// keychain's.
    ///
    /// - Returns: The changed items, as they are now; empty when nothing matched.
    /// - Throws: ``KeychainError/Code/duplicateItem`` when the change would give two items
    ///   the same service and account (nothing changes);
    ///   ``KeychainError/Code/interactionNotAllowed`` when the keychain is locked, or a
    ///   matching item's access control needs the PIN for each use and `pin` is nil;
    ///   ``KeychainError/Code/authFailed`` when `pin` is wrong.
    @discardableResult
    public func updateGenericPasswords(
        matching query: GenericPasswordQuery, setting changes: GenericPasswordChanges, pin: [UInt8]? = nil
    )
        throws(KeychainError) -> [GenericPasswordItem]
    {
        try updatePasswords(query.selection, setting: changes.template, pin: pin).map {
            GenericPasswordItem($0.attributes)
        }
    }

    /// Deletes every generic password matching `query` (up to its limit), in one transaction.
    ///
    /// - Returns: How many were deleted; 0 when nothing matched (or the keychain is locked).
    @discardableResult
    public func deleteGenericPasswords(matching query: GenericPasswordQuery) throws(KeychainError) -> Int {
        try deletePasswords(query.selection)
    }
}
