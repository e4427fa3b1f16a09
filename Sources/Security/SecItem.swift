internal import Foundation
internal import Keychain

// SecItemAdd, SecItemCopyMatching, SecItemUpdate and SecItemDelete over the default keychain
// (DESIGN §5). The keychain is the PKCS#11 module's default token: `login` in
// `$P11KEYCHAIN_DIR`, else `$XDG_DATA_HOME/p11keychain/`, or wherever the configuration file
// moves it; the environment and the file are read on every call.
//
// The rules Apple's implementation follows and this one keeps:
// - every call needs `kSecClass` (or a `kSecValueRef` that implies it); an unknown key, a
//   value of the wrong type, or a key the operation does not take is `errSecParam`, and
//   nothing is stored or changed;
// - `SecItemCopyMatching` returns one item unless `kSecMatchLimit` says otherwise; any limit
//   but one returns an array, even of one item; no match is `errSecItemNotFound`, never an
//   empty array; several `kSecReturn…` keys return one dictionary per item; asking for a
//   result with a NULL result pointer is `errSecParam`;
// - `SecItemUpdate` and `SecItemDelete` apply to every match, refuse `kSecReturn…` and any
//   limit but `kSecMatchLimitAll`, and report `errSecItemNotFound` when nothing matches;
// - a certificate is unique by issuer and serial number: adding it again is
//   `errSecDuplicateItem` and the stored item is left as it was.
// Keys, identities and passwords (`kSecClassKey`, `kSecClassIdentity`,
// `kSecClassGenericPassword`, `kSecClassInternetPassword`) are not implemented yet: every
// call with them returns `errSecUnimplemented`.

/// Adds an item to the default keychain.
///
/// For a certificate, give `kSecClass: kSecClassCertificate` and the certificate as
/// `kSecValueRef` (a `SecCertificate`) or `kSecValueData` (its DER); optionally
/// `kSecAttrLabel` (default: the subject summary) and `kSecAttrPublicKeyHash` (CKA_ID,
/// default: the SHA-1 of the public key). Other certificate attributes may be given but must
/// agree with the certificate. With `kSecReturn…` keys, `result` receives the new item in
/// that form.
///
/// - Returns: `errSecSuccess`; `errSecDuplicateItem` when a certificate with the same issuer
///   and serial number is stored; `errSecDecode` when `kSecValueData` is not a DER
///   certificate; `errSecParam` for a bad dictionary; `errSecReadOnly`,
///   `errSecNoSuchKeychain` or `errSecNotAvailable` when the keychain cannot be written or
///   opened (`SecCopyErrorMessageString` says why).
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    result?.pointee = nil
    return perform { () throws(KeychainError) in
        let request = try ItemRequest(attributes, for: .add)
        try request.requireResultPointer(result)
        let certificate = try request.certificateToAdd()
        let keychain = try Keychain()
        let item = try keychain.add(
            certificate, label: request.label, publicKeyHash: request.publicKeyHash.map { Array($0) })
        if !request.returnTypes.isEmpty {
            result?.pointee = request.returnValue(for: item)
        }
    }
}

/// Finds items in the default keychain.
///
/// Match attributes (`kSecAttrLabel`, `kSecAttrSubject`, `kSecAttrIssuer`,
/// `kSecAttrSerialNumber`, `kSecAttrPublicKeyHash`, `kSecAttrSubjectKeyID`,
/// `kSecAttrCertificateType`, `kSecAttrCertificateEncoding`), values (`kSecValueRef`,
/// `kSecValueData`, `kSecValuePersistentRef`) and search keys (`kSecMatchSubjectContains`,
/// `kSecMatchValidOnDate`) must all match. `result` receives, per `kSecReturn…`: a
/// `SecCertificate`, its DER, a persistent reference, or an attributes dictionary; several
/// return keys give one dictionary per item holding each. With no `kSecReturn…` key the call
/// only tells whether something matches.
///
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when nothing matches (never an empty
///   array); `errSecParam` for a bad query, or for `kSecReturn…` with a NULL `result`.
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    result?.pointee = nil
    return perform { () throws(KeychainError) in
        let request = try ItemRequest(query, for: .copyMatching)
        try request.requireResultPointer(result)
        let limit = request.limit ?? .one
        let items = try request.matchingItems(in: Keychain(), limit: limit)
        guard let first = items.first else { throw KeychainError(.itemNotFound, "no certificate matches the query") }
        guard !request.returnTypes.isEmpty else { return }
        // Only a limit of one returns the item itself; any other returns an array.
        result?.pointee =
            limit == .one ? request.returnValue(for: first) : items.map { request.returnValue(for: $0) } as AnyObject
    }
}

/// Changes attributes of every item matching `query` in the default keychain.
///
/// A certificate's `kSecAttrLabel` and `kSecAttrPublicKeyHash` can change; everything else
/// comes from the certificate itself (delete the item and add the new certificate).
///
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when nothing matches; `errSecParam` for
///   a bad query or attributes (a `kSecReturn…` key, a limit other than all, an attribute
///   that cannot change), in which case nothing is changed.
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    perform { () throws(KeychainError) in
        let request = try ItemRequest(query, for: .update)
        let changes = try ItemRequest(attributesToUpdate, for: .changes)
        if let itemClass = changes.givenClass, itemClass != request.itemClass {
            throw KeychainError(.parameter, "kSecClass cannot be changed by SecItemUpdate")
        }
        let keychain = try Keychain()
        let items = try request.matchingItems(in: keychain, limit: .all)
        guard !items.isEmpty else { throw KeychainError(.itemNotFound, "no certificate matches the query") }
        let setting = CertificateChanges(label: changes.label, publicKeyHash: changes.publicKeyHash.map { Array($0) })
        guard !setting.isEmpty else { return }
        // One transaction: every match changes, or none (items deleted meanwhile are skipped).
        try keychain.update(items, setting: setting)
    }
}

/// Deletes every item matching `query` from the default keychain.
///
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when nothing matches; `errSecParam` for
///   a bad query (a `kSecReturn…` or `kSecMatch…` search key, a limit other than all).
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    perform { () throws(KeychainError) in
        let request = try ItemRequest(query, for: .delete)
        let keychain = try Keychain()
        let items = try request.matchingItems(in: keychain, limit: .all)
        guard !items.isEmpty else { throw KeychainError(.itemNotFound, "no certificate matches the query") }
        // One transaction: every match goes, or none.
        guard try keychain.delete(items) > 0 else { throw KeychainError(.itemNotFound, "no certificate matches the query") }
    }
}

/// Runs one Security call: maps its error to an OSStatus and records the details for
/// `SecCopyErrorMessageString`.
private func perform(_ body: () throws(KeychainError) -> Void) -> OSStatus {
    do {
        try body()
        return errSecSuccess
    } catch {
        return LastError.record(error)
    }
}

// MARK: - Parsing a dictionary

/// Which call a dictionary is given to; each takes its own set of keys.
enum ItemOperation: CaseIterable {
    case add, copyMatching, update, delete
    /// SecItemUpdate's `attributesToUpdate`.
    case changes

    var name: String {
        switch self {
        case .add: "SecItemAdd"
        case .copyMatching: "SecItemCopyMatching"
        case .update: "SecItemUpdate's query"
        case .delete: "SecItemDelete"
        case .changes: "SecItemUpdate's attributesToUpdate"
        }
    }
}

/// The `kSecReturn…` keys set to true.
struct ReturnTypes: OptionSet {
    let rawValue: UInt8
    static let data = ReturnTypes(rawValue: 1 << 0)
    static let attributes = ReturnTypes(rawValue: 1 << 1)
    static let reference = ReturnTypes(rawValue: 1 << 2)
    static let persistentReference = ReturnTypes(rawValue: 1 << 3)
}

/// `kSecMatchLimit`.
enum MatchLimit: Equatable {
    case one, all
    case maximum(Int)
}

/// One key the façade knows: its name for messages and the calls that take it.
private struct KeySpec {
    let name: String
    let operations: Set<ItemOperation>
    /// Why `changes` refuses it, when it does.
    var notChangeable: String? = nil
}

private let queryOperations: Set<ItemOperation> = [.add, .copyMatching, .update, .delete]
private let derivedAttribute =
    "it comes from the certificate; delete the item and add the new certificate instead"

private let keySpecs: [String: KeySpec] = [
    kSecClass: KeySpec(name: "kSecClass", operations: Set(ItemOperation.allCases)),
    kSecAttrLabel: KeySpec(name: "kSecAttrLabel", operations: Set(ItemOperation.allCases)),
    kSecAttrPublicKeyHash: KeySpec(name: "kSecAttrPublicKeyHash", operations: Set(ItemOperation.allCases)),
    kSecAttrSubject: KeySpec(name: "kSecAttrSubject", operations: queryOperations, notChangeable: derivedAttribute),
    kSecAttrIssuer: KeySpec(name: "kSecAttrIssuer", operations: queryOperations, notChangeable: derivedAttribute),
    kSecAttrSerialNumber: KeySpec(
        name: "kSecAttrSerialNumber", operations: queryOperations, notChangeable: derivedAttribute),
    kSecAttrSubjectKeyID: KeySpec(
        name: "kSecAttrSubjectKeyID", operations: queryOperations, notChangeable: derivedAttribute),
    kSecAttrCertificateType: KeySpec(
        name: "kSecAttrCertificateType", operations: queryOperations, notChangeable: derivedAttribute),
    kSecAttrCertificateEncoding: KeySpec(
        name: "kSecAttrCertificateEncoding", operations: queryOperations, notChangeable: derivedAttribute),
    kSecValueRef: KeySpec(name: "kSecValueRef", operations: queryOperations, notChangeable: derivedAttribute),
    kSecValueData: KeySpec(name: "kSecValueData", operations: queryOperations, notChangeable: derivedAttribute),
    kSecValuePersistentRef: KeySpec(name: "kSecValuePersistentRef", operations: [.copyMatching, .update, .delete]),
    kSecReturnData: KeySpec(name: "kSecReturnData", operations: [.add, .copyMatching]),
    kSecReturnAttributes: KeySpec(name: "kSecReturnAttributes", operations: [.add, .copyMatching]),
    kSecReturnRef: KeySpec(name: "kSecReturnRef", operations: [.add, .copyMatching]),
    kSecReturnPersistentRef: KeySpec(name: "kSecReturnPersistentRef", operations: [.add, .copyMatching]),
    kSecMatchLimit: KeySpec(name: "kSecMatchLimit", operations: [.copyMatching, .update, .delete]),
    kSecMatchSubjectContains: KeySpec(name: "kSecMatchSubjectContains", operations: [.copyMatching]),
    kSecMatchValidOnDate: KeySpec(name: "kSecMatchValidOnDate", operations: [.copyMatching]),
]

/// A dictionary given to a `SecItem…` call, checked and typed. Creating one changes nothing:
/// every check happens before the keychain is touched.
struct ItemRequest {
    var itemClass: String = kSecClassCertificate
    /// kSecClass as given (nil when it was implied or, for attributesToUpdate, absent).
    var givenClass: String?
    var label: String?
    var subject: Data?
    var issuer: Data?
    var serialNumber: Data?
    var publicKeyHash: Data?
    var subjectKeyID: Data?
    var certificateType: Int?
    var certificateEncoding: Int?
    var valueRef: SecCertificate?
    var valueData: Data?
    var valuePersistentRef: Data?
    var returnTypes: ReturnTypes = []
    var limit: MatchLimit?
    var subjectContains: String?
    var validOnDate: Date?

    init(_ dictionary: CFDictionary, for operation: ItemOperation) throws(KeychainError) {
        try readClass(dictionary, for: operation)
        for (key, value) in dictionary where key != kSecClass {
            guard let spec = keySpecs[key] else {
                throw KeychainError(.parameter, "unknown key '\(key)' in \(operation.name)")
            }
            guard spec.operations.contains(operation) else {
                if operation == .changes, let reason = spec.notChangeable {
                    throw KeychainError(.parameter, "\(spec.name) cannot be changed: \(reason)")
                }
                throw KeychainError(.parameter, "\(spec.name) is not allowed in \(operation.name)")
            }
            try read(key, spec.name, value)
        }
        try check(for: operation)
    }

    /// kSecClass: required (unless kSecValueRef implies it), a CFString, a known class, and
    /// one that is implemented.
    private mutating func readClass(_ dictionary: CFDictionary, for operation: ItemOperation) throws(KeychainError) {
        guard let value = dictionary[kSecClass] else {
            if operation == .changes { return }
            if dictionary[kSecValueRef] is SecCertificate { return }  // implied, as on Apple platforms
            throw KeychainError(.parameter, "\(operation.name) needs kSecClass (e.g. kSecClassCertificate)")
        }
        guard let name = value as? String else {
            throw KeychainError(.parameter, "kSecClass must be a CFString such as kSecClassCertificate, not \(typeName(value))")
        }
        if operation == .changes {
            givenClass = name  // SecItemUpdate compares it with the query's class
            return
        }
        switch name {
        case kSecClassCertificate:
            itemClass = name
            givenClass = name
        case kSecClassKey, kSecClassIdentity, kSecClassGenericPassword, kSecClassInternetPassword:
            throw KeychainError(
                .unimplemented, "items of class '\(name)' are not implemented yet; only kSecClassCertificate is")
        default:
            throw KeychainError(.noSuchClass, "unknown kSecClass '\(name)'")
        }
    }

    private mutating func read(_ key: String, _ name: String, _ value: Any) throws(KeychainError) {
        switch key {
        case kSecAttrLabel: label = try typed(value, name, "a CFString") as String
        case kSecAttrSubject: subject = try typed(value, name, "CFData") as Data
        case kSecAttrIssuer: issuer = try typed(value, name, "CFData") as Data
        case kSecAttrSerialNumber: serialNumber = try typed(value, name, "CFData") as Data
        case kSecAttrPublicKeyHash: publicKeyHash = try typed(value, name, "CFData") as Data
        case kSecAttrSubjectKeyID: subjectKeyID = try typed(value, name, "CFData") as Data
        case kSecAttrCertificateType: certificateType = try integer(value, name)
        case kSecAttrCertificateEncoding: certificateEncoding = try integer(value, name)
        case kSecValueRef:
            guard let certificate = value as? SecCertificate else {
                throw KeychainError(.parameter, "kSecValueRef must be a SecCertificate, not \(typeName(value))")
            }
            valueRef = certificate
        case kSecValueData: valueData = try typed(value, name, "CFData") as Data
        case kSecValuePersistentRef: valuePersistentRef = try typed(value, name, "CFData") as Data
        case kSecReturnData: if try typed(value, name, "a CFBoolean") as Bool { returnTypes.insert(.data) }
        case kSecReturnAttributes: if try typed(value, name, "a CFBoolean") as Bool { returnTypes.insert(.attributes) }
        case kSecReturnRef: if try typed(value, name, "a CFBoolean") as Bool { returnTypes.insert(.reference) }
        case kSecReturnPersistentRef:
            if try typed(value, name, "a CFBoolean") as Bool { returnTypes.insert(.persistentReference) }
        case kSecMatchLimit: limit = try matchLimit(value)
        case kSecMatchSubjectContains: subjectContains = try typed(value, name, "a CFString") as String
        case kSecMatchValidOnDate:
            if value is NSNull {
                validOnDate = Date()  // kCFNull: now
            } else {
                validOnDate = try typed(value, name, "a CFDate") as Date
            }
        default:
            throw KeychainError(.parameter, "unknown key '\(key)'")
        }
    }

    /// Checks across keys, once every key has been read.
    private func check(for operation: ItemOperation) throws(KeychainError) {
        if let valueRef, let valueData, Data(valueRef.certificate.derEncoded) != valueData {
            throw KeychainError(.parameter, "kSecValueRef and kSecValueData name different certificates")
        }
        if operation == .update || operation == .delete, let limit, limit != .all {
            throw KeychainError(
                .parameter, "\(operation.name) applies to every match: kSecMatchLimit may only be kSecMatchLimitAll")
        }
    }

    /// A result was asked for: there must be somewhere to put it.
    func requireResultPointer(_ result: UnsafeMutablePointer<CFTypeRef?>?) throws(KeychainError) {
        if !returnTypes.isEmpty, result == nil {
            throw KeychainError(.parameter, "a kSecReturn… key asks for a result but the result pointer is NULL")
        }
    }

    // MARK: Adding

    /// The certificate SecItemAdd stores, checked against every attribute given with it.
    func certificateToAdd() throws(KeychainError) -> Certificate {
        let certificate: Certificate
        if let valueRef {
            certificate = valueRef.certificate
        } else if let valueData {
            certificate = try Certificate(derEncoded: valueData)
        } else {
            throw KeychainError(.parameter, "SecItemAdd needs the certificate as kSecValueRef or kSecValueData")
        }
        let agrees: [(String, Bool)] = [
            ("kSecAttrSubject", subject.map { Self.names($0, certificate.subjectDER, certificate.normalizedSubjectSequence) } ?? true),
            ("kSecAttrIssuer", issuer.map { Self.names($0, certificate.issuerDER, certificate.normalizedIssuerSequence) } ?? true),
            ("kSecAttrSerialNumber", serialNumber.map { Array($0) == certificate.serialNumber } ?? true),
            ("kSecAttrSubjectKeyID", subjectKeyID.map { Array($0) == certificate.subjectKeyIdentifier } ?? true),
            ("kSecAttrCertificateType", certificateType.map { $0 == certificate.version } ?? true),
            ("kSecAttrCertificateEncoding", certificateEncoding.map { $0 == Self.derEncoding } ?? true),
        ]
        if let disagreeing = agrees.first(where: { !$0.1 }) {
            throw KeychainError(.parameter, "\(disagreeing.0) does not match the certificate being added")
        }
        return certificate
    }

    // MARK: Matching

    /// The items matching the request, up to `limit`, in the order they were added.
    func matchingItems(in keychain: Keychain, limit: MatchLimit) throws(KeychainError) -> [CertificateItem] {
        guard var query = certificateQuery() else { return [] }
        let checkedHere = certificateType != nil || certificateEncoding != nil
        let keychainLimit: CertificateQuery.Limit
        switch limit {
        case .one: keychainLimit = .one
        case .all: keychainLimit = .all
        case .maximum(let count): keychainLimit = .maximum(count)
        }
        query.limit = checkedHere ? .all : keychainLimit
        var items = try keychain.certificates(matching: query)
        if checkedHere {
            items = items.filter { item in
                (certificateType.map { $0 == item.certificate.version } ?? true)
                    && (certificateEncoding.map { $0 == Self.derEncoding } ?? true)
            }
            switch limit {
            case .one: items = Array(items.prefix(1))
            case .all: break
            case .maximum(let count): items = Array(items.prefix(count))
            }
        }
        return items
    }

    /// The typed query; nil when nothing can match (kSecValueData that is not a certificate).
    private func certificateQuery() -> CertificateQuery? {
        var certificate = valueRef?.certificate
        if certificate == nil, let valueData {
            guard let parsed = try? Certificate(derEncoded: valueData) else { return nil }
            certificate = parsed
        }
        return CertificateQuery(
            label: label, subject: subject.map { Array($0) }, issuer: issuer.map { Array($0) },
            serialNumber: serialNumber.map { Array($0) }, publicKeyHash: publicKeyHash.map { Array($0) },
            subjectKeyIdentifier: subjectKeyID.map { Array($0) }, subjectContains: subjectContains,
            validOn: validOnDate, certificate: certificate,
            persistentReference: valuePersistentRef.map { Array($0) })
    }

    // MARK: Results

    /// What `result` receives for one item: the one requested form, or a dictionary of all of
    /// them when several `kSecReturn…` keys are set.
    func returnValue(for item: CertificateItem) -> CFTypeRef {
        switch returnTypes {
        case .reference: return SecCertificate(item.certificate)
        case .data: return Data(item.certificate.derEncoded) as AnyObject
        case .persistentReference: return Data(item.persistentReference) as AnyObject
        case .attributes: return Self.attributes(of: item) as AnyObject
        default:
            var dictionary = returnTypes.contains(.attributes) ? Self.attributes(of: item) : [:]
            if returnTypes.contains(.reference) { dictionary[kSecValueRef] = SecCertificate(item.certificate) }
            if returnTypes.contains(.data) { dictionary[kSecValueData] = Data(item.certificate.derEncoded) }
            if returnTypes.contains(.persistentReference) {
                dictionary[kSecValuePersistentRef] = Data(item.persistentReference)
            }
            return dictionary as AnyObject
        }
    }

    /// A certificate item's attributes, keyed as Apple's.
    static func attributes(of item: CertificateItem) -> [String: Any] {
        let certificate = item.certificate
        var attributes: [String: Any] = [
            kSecClass: kSecClassCertificate,
            kSecAttrLabel: item.label,
            kSecAttrSubject: Data(certificate.subjectDER),
            kSecAttrIssuer: Data(certificate.issuerDER),
            kSecAttrSerialNumber: Data(certificate.serialNumber),
            kSecAttrPublicKeyHash: Data(item.publicKeyHash),
            kSecAttrCertificateType: certificate.version,
            kSecAttrCertificateEncoding: derEncoding,
        ]
        if let identifier = certificate.subjectKeyIdentifier {
            attributes[kSecAttrSubjectKeyID] = Data(identifier)
        }
        return attributes
    }

    /// CSSM_CERT_ENCODING_DER, the only encoding stored.
    static let derEncoding = 3

    /// Whether a given Name is the certificate's, as DER or in Apple's normalized form.
    private static func names(_ given: Data, _ der: [UInt8], _ normalized: [UInt8]) -> Bool {
        let bytes = Array(given)
        return bytes == der || bytes == normalized
    }
}

// MARK: - Value types

private func typeName(_ value: Any) -> String { String(describing: type(of: value)) }

/// `value` as a `T`, or errSecParam naming the key and what it should be.
private func typed<T>(_ value: Any, _ name: String, _ expected: String) throws(KeychainError) -> T {
    guard let typed = value as? T else {
        throw KeychainError(.parameter, "\(name) must be \(expected), not \(typeName(value))")
    }
    return typed
}

private func integer(_ value: Any, _ name: String) throws(KeychainError) -> Int {
    guard !(value is Bool), let number = value as? Int else {
        throw KeychainError(.parameter, "\(name) must be a CFNumber, not \(typeName(value))")
    }
    return number
}

private func matchLimit(_ value: Any) throws(KeychainError) -> MatchLimit {
    if let name = value as? String {
        switch name {
        case kSecMatchLimitOne: return .one
        case kSecMatchLimitAll: return .all
        default: throw KeychainError(.parameter, "kSecMatchLimit must be kSecMatchLimitOne, kSecMatchLimitAll or a number, not '\(name)'")
        }
    }
    guard !(value is Bool), let count = value as? Int else {
        throw KeychainError(.parameter, "kSecMatchLimit must be kSecMatchLimitOne, kSecMatchLimitAll or a number, not \(typeName(value))")
    }
    guard count > 0 else { throw KeychainError(.parameter, "kSecMatchLimit must be 1 or more, not \(count)") }
    return count == 1 ? .one : .maximum(count)
}
