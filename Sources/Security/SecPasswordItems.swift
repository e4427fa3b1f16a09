internal import Foundation
internal import Keychain

// SecItem… with kSecClassGenericPassword and kSecClassInternetPassword: private PKCS#11 data
// objects (ARCHITECTURE.md §7.1, README "Apple keychain attributes on Linux").

private let allOperations = Set(ItemOperation.allCases)

/// The keys both password classes take.
private let commonPasswordSpecs: [String: KeySpec] = [
    kSecAttrAccount as String: KeySpec(name: "kSecAttrAccount", operations: allOperations),
    kSecAttrLabel as String: KeySpec(name: "kSecAttrLabel", operations: allOperations),
    kSecValueData as String: KeySpec(name: "kSecValueData", operations: [.add, .changes]),
].merging(itemAttributeSpecs) { own, _ in own }.merging(resultSpecs) { own, _ in own }

private let genericPasswordSpecs = commonPasswordSpecs.merging([
    kSecAttrService as String: KeySpec(name: "kSecAttrService", operations: allOperations),
    kSecAttrGeneric as String: KeySpec(name: "kSecAttrGeneric", operations: allOperations),
]) { own, _ in own }

private let internetPasswordSpecs = commonPasswordSpecs.merging([
    kSecAttrServer as String: KeySpec(name: "kSecAttrServer", operations: allOperations),
    kSecAttrProtocol as String: KeySpec(name: "kSecAttrProtocol", operations: allOperations),
    kSecAttrPort as String: KeySpec(name: "kSecAttrPort", operations: allOperations),
    kSecAttrPath as String: KeySpec(name: "kSecAttrPath", operations: allOperations),
    kSecAttrAuthenticationType as String: KeySpec(
        name: "kSecAttrAuthenticationType", operations: allOperations),
    kSecAttrSecurityDomain as String: KeySpec(name: "kSecAttrSecurityDomain", operations: allOperations),
]) { own, _ in own }

/// A `SecItem…` dictionary for passwords of either class, checked and typed. Creating one
/// changes nothing.
struct PasswordItemRequest {
    let passwordClass: PasswordItemClass
    /// The service (generic) or server (internet).
    var service: String?
    var account: String?
    var label: String?
    var address = InternetAddress()
    var common = ItemAttributeRequest()
    var valueData: Data?
    var valuePersistentRef: [UInt8]?
    var returnTypes: ReturnTypes = []
    var limit: MatchLimit?

    init(_ dictionary: ItemDictionary, _ passwordClass: PasswordItemClass, for operation: ItemOperation)
        throws(KeychainError)
    {
        self.passwordClass = passwordClass
        let specs = passwordClass == .generic ? genericPasswordSpecs : internetPasswordSpecs
        for (key, name, value) in try checkedEntries(dictionary, for: operation, specs) {
            if try readReturnType(key, name, value, into: &returnTypes) { continue }
            if try common.read(key, name, value, for: operation) { continue }
            switch key {
            case kSecAttrService, kSecAttrServer:
                service = try text(value, name, .service, into: &common.attributes)
            case kSecAttrAccount: account = try text(value, name, .account, into: &common.attributes)
            case kSecAttrLabel: label = try text(value, name, .label, into: &common.attributes)
            case kSecAttrProtocol:
                address.protocol = try typed(value, name, "a kSecAttrProtocol… value") as String
            case kSecAttrPort: address.port = try integer(value, name)
            case kSecAttrPath: address.path = try text(value, name, .path, into: &common.attributes)
            case kSecAttrAuthenticationType:
                address.authenticationType =
                    try typed(value, name, "a kSecAttrAuthenticationType… value") as String
            case kSecAttrSecurityDomain:
                address.securityDomain = try text(value, name, .securityDomain, into: &common.attributes)
            case kSecValueData: valueData = try typed(value, name, "CFData") as Data
            case kSecValuePersistentRef: valuePersistentRef = Array(try typed(value, name, "CFData") as Data)
            case kSecMatchLimit: limit = try matchLimit(value)
            default: throw KeychainError(.parameter, "unknown key '\(key)'")
            }
        }
        address.server = passwordClass == .internet ? service : nil
        if operation == .update || operation == .delete, let limit, limit != .all {
            throw KeychainError(
                .parameter,
                "\(operation.name) applies to every match: kSecMatchLimit may only be kSecMatchLimitAll")
        }
    }

    private var genericQuery: GenericPasswordQuery {
        GenericPasswordQuery(
            service: service, account: account, label: label, persistentReference: valuePersistentRef,
            attributes: common.attributes, anySynchronizable: common.anySynchronizable)
    }

    private var internetQuery: InternetPasswordQuery {
        InternetPasswordQuery(
            address: address, account: account, label: label, persistentReference: valuePersistentRef,
            attributes: common.attributes, anySynchronizable: common.anySynchronizable)
    }

    /// SecItemAdd. Apple's keychain files a password without a service or account under the
    /// empty string; so does this one.
    func add(_ result: UnsafeMutablePointer<CFTypeRef?>?) throws(KeychainError) {
        try requireResultPointer(returnTypes, result)
        guard let valueData else {
            throw KeychainError(.parameter, "SecItemAdd needs the password as kSecValueData")
        }
        let keychain = try Keychain()
        let item: PasswordItem
        switch passwordClass {
        case .generic:
            item = PasswordItem(
                try keychain.addGenericPassword(
                    Array(valueData), service: service ?? "", account: account ?? "", label: label,
                    attributes: common.attributes))
        case .internet:
            item = PasswordItem(
                try keychain.addInternetPassword(
                    Array(valueData), account: account ?? "", address: address, label: label,
                    attributes: common.attributes))
        }
        if !returnTypes.isEmpty { result?.pointee = try value(for: item, in: keychain) }
    }

    /// The matching items, up to `limit`.
    private func items(in keychain: Keychain, limit: MatchLimit) throws(KeychainError) -> [PasswordItem] {
        let keychainLimit: CertificateQuery.Limit
        switch limit {
        case .one: keychainLimit = .one
        case .all: keychainLimit = .all
        case .maximum(let count): keychainLimit = .maximum(count)
        }
        switch passwordClass {
        case .generic:
            var query = genericQuery
            query.limit = keychainLimit
            return try keychain.genericPasswords(matching: query).map(PasswordItem.init)
        case .internet:
            var query = internetQuery
            query.limit = keychainLimit
            return try keychain.internetPasswords(matching: query).map(PasswordItem.init)
        }
    }

    /// SecItemCopyMatching: the values to return (none without `kSecReturn…` keys). With
    /// `kSecUseAuthenticationUISkip`, items whose data needs the PIN (and none is given) are
    /// passed over, as Apple skips items that would need the user.
    func copyMatching(limit: MatchLimit) throws(KeychainError) -> [CFTypeRef] {
        let keychain = try Keychain()
        let wantsSecret = returnTypes.contains(.data) || returnTypes.contains(.reference)
        let skipping = wantsSecret && common.authenticationUI == .skip && common.authentication == nil
        var items = try items(in: keychain, limit: skipping ? .all : limit)
        if skipping {
            items = items.filter { !($0.attributes.accessControl?.needsPINForEachUse ?? false) }
            if case .one = limit { items = Array(items.prefix(1)) }
            if case .maximum(let count) = limit { items = Array(items.prefix(count)) }
        }
        guard !items.isEmpty else {
            throw KeychainError(.itemNotFound, "no \(passwordClass.noun) matches the query")
        }
        guard !returnTypes.isEmpty else { return [] }
        var values: [CFTypeRef] = []
        for item in items { values.append(try value(for: item, in: keychain)) }
        return values
    }

    private func value(for item: PasswordItem, in keychain: Keychain) throws(KeychainError) -> CFTypeRef {
        let secret = { () throws(KeychainError) -> Data in
            switch item.kind {
            case .generic(let generic):
                Data(
                    try withPIN(common.authentication) { pin throws(KeychainError) in
                        try keychain.password(for: generic, pin: pin)
                    })
            case .internet(let internet):
                Data(
                    try withPIN(common.authentication) { pin throws(KeychainError) in
                        try keychain.password(for: internet, pin: pin)
                    })
            }
        }
        return try returnValue(
            returnTypes, attributes: { item.returnedAttributes },
            // Apple has no reference type for passwords: kSecReturnRef gives the data.
            reference: { () throws(KeychainError) in try secret() as AnyObject },
            data: secret, persistentReference: item.persistentReference)
    }

    /// SecItemUpdate: `changes` is the attributesToUpdate request. The query's
    /// `kSecUseAuthenticationContext` (the user PIN) goes to the core, which asks it for a
    /// change of an item whose access control needs it for each use; without it, such a
    /// change is `errSecInteractionNotAllowed`, Apple's answer when authentication would need
    /// a UI (there is none here), and a wrong PIN `errSecAuthFailed`.
    func update(with changes: PasswordItemRequest) throws(KeychainError) {
        let keychain = try Keychain()
        guard try !items(in: keychain, limit: .all).isEmpty else {
            throw KeychainError(.itemNotFound, "no \(passwordClass.noun) matches the query")
        }
        let password = changes.valueData.map { Array($0) }
        switch passwordClass {
        case .generic:
            let setting = GenericPasswordChanges(
                service: changes.service, account: changes.account, label: changes.label, password: password,
                attributes: changes.common.attributes)
            guard !setting.isEmpty else { return }
            _ = try withPIN(common.authentication) { pin throws(KeychainError) in
                try keychain.updateGenericPasswords(matching: genericQuery, setting: setting, pin: pin)
            }
        case .internet:
            _ = try withPIN(common.authentication) { pin throws(KeychainError) in
                try keychain.updateInternetPasswords(
                    matching: internetQuery, address: changes.address, account: changes.account,
                    label: changes.label, password: password, attributes: changes.common.attributes, pin: pin)
            }
        }
    }

    /// SecItemDelete.
    func delete() throws(KeychainError) {
        let keychain = try Keychain()
        let count =
            switch passwordClass {
            case .generic: try keychain.deleteGenericPasswords(matching: genericQuery)
            case .internet: try keychain.deleteInternetPasswords(matching: internetQuery)
            }
        guard count > 0 else {
            throw KeychainError(.itemNotFound, "no \(passwordClass.noun) matches the query")
        }
    }
}

/// The two password classes.
enum PasswordItemClass {
    case generic, internet

    var noun: String { self == .generic ? "generic password" : "internet password" }
}

/// A found password of either class, with what `kSecReturnAttributes` gives for it.
struct PasswordItem {
    enum Kind {
        case generic(GenericPasswordItem)
        case internet(InternetPasswordItem)
    }
    let kind: Kind

    init(_ item: GenericPasswordItem) { kind = .generic(item) }
    init(_ item: InternetPasswordItem) { kind = .internet(item) }

    var attributes: ItemAttributes {
        switch kind {
        case .generic(let item): item.attributes
        case .internet(let item): item.attributes
        }
    }

    var persistentReference: [UInt8] {
        switch kind {
        case .generic(let item): item.persistentReference
        case .internet(let item): item.persistentReference
        }
    }

    /// The attributes dictionary, keyed as Apple's: the class's own and the common ones.
    var returnedAttributes: [String: Any] {
        var dictionary = returnedItemAttributes(attributes)
        switch kind {
        case .generic(let item):
            dictionary[kSecClass] = kSecClassGenericPassword
            dictionary[kSecAttrService] = returned(item.service, .service, item.attributes)
            dictionary[kSecAttrAccount] = returned(item.account, .account, item.attributes)
            dictionary[kSecAttrLabel] = returned(item.label, .label, item.attributes)
        case .internet(let item):
            dictionary[kSecClass] = kSecClassInternetPassword
            dictionary[kSecAttrServer] = returned(item.server, .service, item.attributes)
            dictionary[kSecAttrAccount] = returned(item.account, .account, item.attributes)
            dictionary[kSecAttrLabel] = returned(item.label, .label, item.attributes)
            if let value = item.protocol { dictionary[kSecAttrProtocol] = value }
            if let value = item.port { dictionary[kSecAttrPort] = value }
            if let value = item.path { dictionary[kSecAttrPath] = returned(value, .path, item.attributes) }
            if let value = item.authenticationType { dictionary[kSecAttrAuthenticationType] = value }
            if let value = item.securityDomain {
                dictionary[kSecAttrSecurityDomain] = returned(value, .securityDomain, item.attributes)
            }
        }
        return dictionary
    }
}

/// A CFString, or CFData holding UTF-8 (Apple code often gives the account as Data).
func text(_ value: Any, _ name: String) throws(KeychainError) -> String {
    if let string = value as? String { return string }
    if let data = value as? Data {
        guard let string = String(data: data, encoding: .utf8) else {
            throw KeychainError(.parameter, "\(name) as CFData must hold UTF-8 text")
        }
        return string
    }
    throw KeychainError(.parameter, "\(name) must be a CFString or CFData, not \(typeName(value))")
}
