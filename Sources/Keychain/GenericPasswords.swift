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

    /// Creates an item value. Items come from a ``Keychain``; this initializer is for tests
    /// and for code that builds expected values.
    public init(service: String, account: String, label: String, persistentReference: [UInt8]) {
        self.service = service
        self.account = account
        self.label = label
        self.persistentReference = persistentReference
    }

    /// The item of a stored data object; nil unless it is a private data object.
    init?(_ attributes: AttributeSet) {
        guard attributes.ulong(.class) == ObjectClass.data.rawValue, attributes.bool(.private) == true else {
            return nil
        }
        service = attributes.string(.application) ?? ""
        account = attributes.string(.account) ?? ""
        label = attributes.string(.label) ?? ""
        persistentReference = attributes[.uniqueID] ?? []
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
    /// How many matches to return or change; every match by default.
    public var limit: Limit

    /// Creates a query; every criterion left nil matches anything.
    public init(
        service: String? = nil, account: String? = nil, label: String? = nil,
        persistentReference: [UInt8]? = nil,
        limit: Limit = .all
    ) {
        self.service = service
        self.account = account
        self.label = label
        self.persistentReference = persistentReference
        self.limit = limit
    }

    /// Every generic password.
    public static var all: GenericPasswordQuery { GenericPasswordQuery() }
}

/// Changes for ``Keychain/updateGenericPasswords(matching:setting:)``: each non-nil property
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

    /// Creates a set of changes.
    public init(
        service: String? = nil, account: String? = nil, label: String? = nil, password: [UInt8]? = nil
    ) {
        self.service = service
        self.account = account
        self.label = label
        self.password = password
    }

    /// True when nothing would change.
    public var isEmpty: Bool { service == nil && account == nil && label == nil && password == nil }
}

/// Serialises this process's generic-password writes, so that the check for an existing
/// (service, account) and the write that follows it are not interleaved with another
/// thread's. Another process writing the same pair at the same instant is stopped by the
/// store itself: a password's service and account are its uniqueness key (KeychainCore).
private let passwordWrites = Lock()

extension Keychain {
    /// Adds a generic password. Needs the keychain unlocked.
    ///
    /// A service and account identify one password, as in Apple's keychain: adding a second
    /// for the same pair fails, and the stored one is kept.
    ///
    /// - Parameters:
    ///   - password: The secret, any bytes (e.g. `Array("hunter2".utf8)`).
    ///   - service: What it is for.
    ///   - account: Whose it is.
    ///   - label: The item's label; by default the service.
    /// - Throws: ``KeychainError/Code/duplicateItem`` when the service and account already
    ///   have a password; ``KeychainError/Code/interactionNotAllowed`` when the keychain is
    ///   locked.
    @discardableResult
    public func addGenericPassword(
        _ password: [UInt8], service: String, account: String, label: String? = nil
    )
        throws(KeychainError) -> GenericPasswordItem
    {
        try requireUnlocked(to: "store a password")
        let template: AttributeSet = [
            .class: AttributeValue.encode(ObjectClass.data.rawValue), .token: [1], .private: [1],
            .application: Array(service.utf8), .account: Array(account.utf8),
            .label: Array((label ?? service).utf8), .value: password,
        ]
        let reference = try passwordWrites.withLock { () throws(KeychainError) in
            guard
                try passwordMatches(GenericPasswordQuery(service: service, account: account, limit: .one))
                    .isEmpty
            else { throw Keychain.duplicatePassword }
            return try KeychainError.mapping { () throws(CoreError) in
                try token.createObject(template, context: context)
            }
        }
        guard let item = try loadPassword(reference)?.item else {
            throw KeychainError(.internal, "the new password item cannot be read back")
        }
        return item
    }

    /// The generic passwords matching `query`, in the order they were added; an empty array
    /// when none does or the keychain is locked.
    public func genericPasswords(matching query: GenericPasswordQuery = .all) throws(KeychainError)
        -> [GenericPasswordItem]
    {
        try passwordMatches(query).map(\.item)
    }

    /// The first generic password matching `query`, or nil.
    public func firstGenericPassword(matching query: GenericPasswordQuery) throws(KeychainError)
        -> GenericPasswordItem?
    {
        var one = query
        one.limit = .one
        return try passwordMatches(one).first?.item
    }

    /// The secret of a stored generic password. Needs the keychain unlocked.
    ///
    /// - Throws: ``KeychainError/Code/interactionNotAllowed`` when the keychain is locked;
    ///   ``KeychainError/Code/itemNotFound`` when the item no longer exists.
    public func password(for item: GenericPasswordItem) throws(KeychainError) -> [UInt8] {
        try requireUnlocked(to: "read a password")
        guard
            let match = try passwordMatches(
                GenericPasswordQuery(persistentReference: item.persistentReference)
            ).first
        else { throw KeychainError(.itemNotFound, "the password item no longer exists") }
        return match.password
    }

    /// Changes every generic password matching `query` (up to its limit), in one
    /// transaction: every match changes, or none does.
    ///
    /// - Returns: The changed items, as they are now; empty when nothing matched.
    /// - Throws: ``KeychainError/Code/duplicateItem`` when the change would give two items
    ///   the same service and account (nothing changes);
    ///   ``KeychainError/Code/interactionNotAllowed`` when the keychain is locked.
    @discardableResult
    public func updateGenericPasswords(
        matching query: GenericPasswordQuery, setting changes: GenericPasswordChanges
    )
        throws(KeychainError) -> [GenericPasswordItem]
    {
        try requireUnlocked(to: "change a password")
        var template: AttributeSet = [:]
        if let service = changes.service { template[.application] = Array(service.utf8) }
        if let account = changes.account { template[.account] = Array(account.utf8) }
        if let label = changes.label { template[.label] = Array(label.utf8) }
        if let password = changes.password { template[.value] = password }
        return try passwordWrites.withLock { () throws(KeychainError) in
            let matches = try passwordMatches(query)
            if changes.service != nil || changes.account != nil {
                // The pairs the matches will have must be distinct, and not another item's.
                let changing = Set(matches.map(\.item.persistentReference))
                var pairs = Set<[String]>()
                for match in matches {
                    let pair = [changes.service ?? match.item.service, changes.account ?? match.item.account]
                    guard pairs.insert(pair).inserted else { throw Keychain.duplicatePassword }
                    let others = try passwordMatches(GenericPasswordQuery(service: pair[0], account: pair[1]))
                    if others.contains(where: { !changing.contains($0.item.persistentReference) }) {
                        throw Keychain.duplicatePassword
                    }
                }
            }
            var changed = matches.map(\.reference)
            if !template.isEmpty {
                changed = try KeychainError.mapping { () throws(CoreError) in
                    try token.updateObjects(changed, with: template, context: context)
                }
            }
            var items: [GenericPasswordItem] = []
            for reference in changed {
                if let item = try loadPassword(reference)?.item { items.append(item) }
            }
            return items
        }
    }

    /// Deletes every generic password matching `query` (up to its limit), in one transaction.
    ///
    /// - Returns: How many were deleted; 0 when nothing matched (or the keychain is locked).
    @discardableResult
    public func deleteGenericPasswords(matching query: GenericPasswordQuery) throws(KeychainError) -> Int {
        let references = try passwordMatches(query).map(\.reference)
        return try KeychainError.mapping { () throws(CoreError) in
            try token.destroyObjects(references, context: context)
        }.count
    }

    private static var duplicatePassword: KeychainError {
        KeychainError(.duplicateItem, "a generic password with this service and account is already stored")
    }

    // MARK: Matching passwords

    private struct PasswordMatch {
        var reference: ObjectReference
        var item: GenericPasswordItem
        var password: [UInt8]
    }

    private func passwordMatches(_ query: GenericPasswordQuery) throws(KeychainError) -> [PasswordMatch] {
        let limit = try Keychain.count(query.limit)
        guard isUnlocked else { return [] }
        var template: AttributeSet = [
            .class: AttributeValue.encode(ObjectClass.data.rawValue), .token: [1], .private: [1],
        ]
        if let service = query.service { template[.application] = Array(service.utf8) }
        // Service and account name one password: the store finds it by its uniqueness key. An
        // empty account also matches objects without one, so it is checked below instead.
        if let account = query.account, !account.isEmpty { template[.account] = Array(account.utf8) }
        if let label = query.label { template[.label] = Array(label.utf8) }
        if let persistentReference = query.persistentReference { template[.uniqueID] = persistentReference }
        let candidates = try KeychainError.mapping { () throws(CoreError) in
            try token.findObjects(template, context: context)
        }
        var found: [PasswordMatch] = []
        for reference in candidates where found.count < limit {
            // An item without an account (a data object made through PKCS#11) has account "".
            guard let match = try loadPassword(reference) else { continue }
            if let account = query.account, match.item.account != account { continue }
            found.append(match)
        }
        return found
    }

    private func loadPassword(_ reference: ObjectReference) throws(KeychainError) -> PasswordMatch? {
        let attributes: AttributeSet
        do {
            attributes = try token.attributes(of: reference, context: context)
        } catch  where error.code == .objectNotFound {
            return nil
        } catch {
            throw KeychainError(error)
        }
        guard let item = GenericPasswordItem(attributes) else { return nil }
        return PasswordMatch(reference: reference, item: item, password: attributes[.value] ?? [])
    }
}
