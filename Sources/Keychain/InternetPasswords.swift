internal import KeychainCore

/// An internet password stored in a keychain (Apple's kSecClassInternetPassword): a secret
/// for an account on a server, reached by a protocol, port and path.
///
/// Stored as a private PKCS#11 data object like a generic password, marked with the vendor
/// attribute CKA_P11K_ITEM_CLASS = "inet": the server is CKA_APPLICATION, the account
/// CKA_P11K_ACCOUNT, the protocol, port, path, authentication type and security domain their
/// own vendor attributes (README "Apple keychain attributes on Linux"), the password
/// CKA_VALUE, encrypted under the token key.
public struct InternetPasswordItem: Hashable, Sendable {
    /// kSecAttrServer: the host name, e.g. `www.example.com`.
    public let server: String
    /// kSecAttrAccount.
    public let account: String
    /// kSecAttrProtocol: Apple's four-letter code, e.g. "htps"; nil when not given.
    public let `protocol`: String?
    /// kSecAttrPort; nil when not given.
    public let port: Int?
    /// kSecAttrPath; nil when not given.
    public let path: String?
    /// kSecAttrAuthenticationType: Apple's four-letter code, e.g. "dflt"; nil when not given.
    public let authenticationType: String?
    /// kSecAttrSecurityDomain (an HTTP realm); nil when not given.
    public let securityDomain: String?
    /// kSecAttrLabel; the server unless set otherwise.
    public let label: String
    /// An opaque reference that finds this item again, in any process, while it exists.
    public let persistentReference: [UInt8]
    /// Apple's other item attributes, with defaults.
    public let attributes: ItemAttributes

    init(_ stored: AttributeSet) {
        server = stored.string(.application) ?? ""
        account = stored.string(.account) ?? ""
        `protocol` = stored.string(.internetProtocol)
        port = stored.ulong(.port).map { Int(clamping: $0) }
        path = stored.string(.path)
        authenticationType = stored.string(.authenticationType)
        securityDomain = stored.string(.securityDomain)
        label = stored.string(.label) ?? ""
        persistentReference = stored[.uniqueID] ?? []
        attributes = ItemAttributes(stored: stored)
    }
}

/// The address of an internet password: what identifies it with the account (Apple's primary
/// key for the class), and what a query may match. Nil: not given (in a query, anything).
public struct InternetAddress: Hashable, Sendable {
    public var server: String?
    public var `protocol`: String?
    public var port: Int?
    public var path: String?
    public var authenticationType: String?
    public var securityDomain: String?

    public init(
        server: String? = nil, protocol: String? = nil, port: Int? = nil, path: String? = nil,
        authenticationType: String? = nil, securityDomain: String? = nil
    ) {
        self.server = server
        self.protocol = `protocol`
        self.port = port
        self.path = path
        self.authenticationType = authenticationType
        self.securityDomain = securityDomain
    }

    /// The given parts as vendor attributes; a negative port is refused.
    func template() throws(KeychainError) -> AttributeSet {
        var template: AttributeSet = [:]
        if let server { template[.application] = Array(server.utf8) }
        if let `protocol` { template[.internetProtocol] = Array(`protocol`.utf8) }
        if let port {
            guard let value = UInt64(exactly: port) else {
                throw KeychainError(.parameter, "a port cannot be negative")
            }
            template[.port] = AttributeValue.encode(value)
        }
        if let path { template[.path] = Array(path.utf8) }
        if let authenticationType { template[.authenticationType] = Array(authenticationType.utf8) }
        if let securityDomain { template[.securityDomain] = Array(securityDomain.utf8) }
        return template
    }
}

/// Which internet passwords a find, update or delete applies to: every part that is set
/// must match. The server is an index lookup; the rest is checked on the candidates.
public struct InternetPasswordQuery: Hashable, Sendable {
    public var address: InternetAddress
    public var account: String?
    public var label: String?
    public var persistentReference: [UInt8]?
    /// As ``GenericPasswordQuery/attributes``.
    public var attributes: ItemAttributes
    /// As ``GenericPasswordQuery/anySynchronizable``: true (the default) matches synchronizable
    /// and other items alike; false is Apple's rule for a query without kSecAttrSynchronizable.
    public var anySynchronizable: Bool
    public var limit: CertificateQuery.Limit

    public init(
        address: InternetAddress = InternetAddress(), account: String? = nil, label: String? = nil,
        persistentReference: [UInt8]? = nil, attributes: ItemAttributes = ItemAttributes(),
        anySynchronizable: Bool = true, limit: CertificateQuery.Limit = .all
    ) {
        self.address = address
        self.account = account
        self.label = label
        self.persistentReference = persistentReference
        self.attributes = attributes
        self.anySynchronizable = anySynchronizable
        self.limit = limit
    }

    func selection() throws(KeychainError) -> PasswordSelection {
        var items = ItemSelection(
            label: label, persistentReference: persistentReference, attributes: attributes,
            anySynchronizable: anySynchronizable, limit: limit)
        // The server is looked up; the rest of the address is checked on each candidate.
        var filter = try address.template()
        if let server = filter.removeValue(forKey: .application) { items.terms[.application] = server }
        var selection = PasswordSelection(.internet, items: items, account: account)
        selection.filter = filter
        return selection
    }
}

extension Keychain {
    /// Adds an internet password. Needs the keychain unlocked.
    ///
    /// - Throws: ``KeychainError/Code/duplicateItem`` when an item with the same server,
    ///   account, protocol, port, path, authentication type and security domain (and access
    ///   group, synchronizable) is stored; ``KeychainError/Code/interactionNotAllowed`` when
    ///   the keychain is locked.
    @discardableResult
    public func addInternetPassword(
        _ password: [UInt8], account: String, address: InternetAddress, label: String? = nil,
        attributes: ItemAttributes = ItemAttributes()
    ) throws(KeychainError) -> InternetPasswordItem {
        var template = try address.template()
        template[.application] = template[.application] ?? []
        template[.account] = Array(account.utf8)
        template[.label] = Array((label ?? address.server ?? "").utf8)
        template[.value] = password
        return InternetPasswordItem(try addPassword(.internet, template, attributes: attributes).attributes)
    }

    /// The internet passwords matching `query`, in the order they were added.
    public func internetPasswords(matching query: InternetPasswordQuery = InternetPasswordQuery())
        throws(KeychainError) -> [InternetPasswordItem]
    {
        try passwordRecords(query.selection()).map { InternetPasswordItem($0.attributes) }
    }

    /// The secret of a stored internet password (`pin` as for ``password(for:pin:)``).
    public func password(for item: InternetPasswordItem, pin: [UInt8]? = nil) throws(KeychainError)
        -> [UInt8]
    {
        try passwordSecret(item.persistentReference, .internet, pin: pin)
    }

    /// Changes every internet password matching `query`, in one transaction: the address
    /// parts, account, label, secret and Apple attributes that are set in the arguments.
    /// `pin`: the user PIN, which a change of an item whose access control needs it for each
    /// use asks for (as ``updateGenericPasswords(matching:setting:pin:)``).
    @discardableResult
    public func updateInternetPasswords(
        matching query: InternetPasswordQuery, address: InternetAddress = InternetAddress(),
        account: String? = nil, label: String? = nil, password: [UInt8]? = nil,
        attributes: ItemAttributes = ItemAttributes(), pin: [UInt8]? = nil
    ) throws(KeychainError) -> [InternetPasswordItem] {
        var template = attributes.template.merging(try address.template()) { _, new in new }
        if let account { template[.account] = Array(account.utf8) }
        if let label { template[.label] = Array(label.utf8) }
        if let password { template[.value] = password }
        return try updatePasswords(query.selection(), setting: template, pin: pin).map {
            InternetPasswordItem($0.attributes)
        }
    }

    /// Deletes every internet password matching `query`, in one transaction; how many went.
    @discardableResult
    public func deleteInternetPasswords(matching query: InternetPasswordQuery) throws(KeychainError) -> Int {
        try deletePasswords(query.selection())
    }
}
