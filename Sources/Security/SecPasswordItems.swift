internal import Foundation
internal import Keychain

// SecItem… with kSecClassGenericPassword: private PKCS#11 data objects (DESIGN §5).

private let allOperations = Set(ItemOperation.allCases)

private let passwordItemSpecs: [String: KeySpec] = [
    kSecAttrService as String: KeySpec(name: "kSecAttrService", operations: allOperations),
    kSecAttrAccount as String: KeySpec(name: "kSecAttrAccount", operations: allOperations),
    kSecAttrLabel as String: KeySpec(name: "kSecAttrLabel", operations: allOperations),
    kSecValueData as String: KeySpec(name: "kSecValueData", operations: [.add, .changes]),
    kSecValuePersistentRef as String: KeySpec(
        name: "kSecValuePersistentRef", operations: [.copyMatching, .update, .delete]),
    kSecReturnData as String: KeySpec(name: "kSecReturnData", operations: [.add, .copyMatching]),
    kSecReturnAttributes as String: KeySpec(name: "kSecReturnAttributes", operations: [.add, .copyMatching]),
    kSecReturnRef as String: KeySpec(name: "kSecReturnRef", operations: [.add, .copyMatching]),
    kSecReturnPersistentRef as String: KeySpec(
        name: "kSecReturnPersistentRef", operations: [.add, .copyMatching]),
    kSecMatchLimit as String: KeySpec(name: "kSecMatchLimit", operations: [.copyMatching, .update, .delete]),
]

/// A `SecItem…` dictionary for generic passwords, checked and typed. Creating one changes
/// nothing.
struct PasswordItemRequest {
    var service: String?
    var account: String?
    var label: String?
    var valueData: Data?
    var valuePersistentRef: [UInt8]?
    var returnTypes: ReturnTypes = []
    var limit: MatchLimit?

    init(_ dictionary: ItemDictionary, for operation: ItemOperation) throws(KeychainError) {
        for (key, name, value) in try checkedEntries(dictionary, for: operation, passwordItemSpecs) {
            if try readReturnType(key, name, value, into: &returnTypes) { continue }
            switch key {
            case kSecAttrService: service = try typed(value, name, "a CFString") as String
            case kSecAttrAccount: account = try typed(value, name, "a CFString") as String
            case kSecAttrLabel: label = try typed(value, name, "a CFString") as String
            case kSecValueData: valueData = try typed(value, name, "CFData") as Data
            case kSecValuePersistentRef: valuePersistentRef = Array(try typed(value, name, "CFData") as Data)
            case kSecMatchLimit: limit = try matchLimit(value)
            default: throw KeychainError(.parameter, "unknown key '\(key)'")
            }
        }
        if returnTypes.contains(.reference) {
            throw KeychainError(
                .parameter,
                "generic passwords have no reference: ask for kSecReturnData or kSecReturnAttributes")
        }
        if operation == .update || operation == .delete, let limit, limit != .all {
            throw KeychainError(
                .parameter,
                "\(operation.name) applies to every match: kSecMatchLimit may only be kSecMatchLimitAll")
        }
    }

    private var query: GenericPasswordQuery {
        GenericPasswordQuery(
            service: service, account: account, label: label, persistentReference: valuePersistentRef)
    }

    /// SecItemAdd. Apple's keychain files a password without a service or account under the
    /// empty string; so does this one.
    func add(_ result: UnsafeMutablePointer<CFTypeRef?>?) throws(KeychainError) {
        try requireResultPointer(returnTypes, result)
        guard let valueData else {
            throw KeychainError(.parameter, "SecItemAdd needs the password as kSecValueData")
        }
        let keychain = try Keychain()
        let item = try keychain.addGenericPassword(
            Array(valueData), service: service ?? "", account: account ?? "", label: label)
        if !returnTypes.isEmpty { result?.pointee = try value(for: item, in: keychain) }
    }

    /// SecItemCopyMatching: the values to return (none without `kSecReturn…` keys).
    func copyMatching(limit: MatchLimit) throws(KeychainError) -> [CFTypeRef] {
        let keychain = try Keychain()
        var query = self.query
        switch limit {
        case .one: query.limit = .one
        case .all: query.limit = .all
        case .maximum(let count): query.limit = .maximum(count)
        }
        let items = try keychain.genericPasswords(matching: query)
        guard !items.isEmpty else {
            throw KeychainError(.itemNotFound, "no generic password matches the query")
        }
        guard !returnTypes.isEmpty else { return [] }
        var values: [CFTypeRef] = []
        for item in items { values.append(try value(for: item, in: keychain)) }
        return values
    }

    private func value(for item: GenericPasswordItem, in keychain: Keychain) throws(KeychainError)
        -> CFTypeRef
    {
        try returnValue(
            returnTypes,
            attributes: {
                [
                    kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: item.service,
                    kSecAttrAccount as String: item.account,
                    kSecAttrLabel as String: item.label,
                ]
            },
            reference: { () throws(KeychainError) in
                throw KeychainError(.parameter, "generic passwords have no reference")
            },
            data: { () throws(KeychainError) in Data(try keychain.password(for: item)) },
            persistentReference: item.persistentReference)
    }

    /// SecItemUpdate: `changes` is the attributesToUpdate request.
    func update(with changes: PasswordItemRequest) throws(KeychainError) {
        let keychain = try Keychain()
        guard try !keychain.genericPasswords(matching: query).isEmpty else {
            throw KeychainError(.itemNotFound, "no generic password matches the query")
        }
        let setting = GenericPasswordChanges(
            service: changes.service, account: changes.account, label: changes.label,
            password: changes.valueData.map { Array($0) })
        guard !setting.isEmpty else { return }
        try keychain.updateGenericPasswords(matching: query, setting: setting)
    }

    /// SecItemDelete.
    func delete() throws(KeychainError) {
        guard try Keychain().deleteGenericPasswords(matching: query) > 0 else {
            throw KeychainError(.itemNotFound, "no generic password matches the query")
        }
    }
}
