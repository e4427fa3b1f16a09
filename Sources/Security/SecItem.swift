public import Foundation
internal import Keychain

// SecItemAdd, SecItemCopyMatching, SecItemUpdate and SecItemDelete over the default keychain
// (ARCHITECTURE.md §7.1). The keychain is the PKCS#11 module's default token: `login` in
// `$P11KEYCHAIN_DIR`, else `$XDG_DATA_HOME/p11keychain/`, or wherever the configuration file
// moves it; the environment and the file are checked on every call (re-read when either
// changed: KeychainCore `ConfigurationCache`).
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
// - a generic password is unique by service and account, likewise;
// - private items (private keys, identities, passwords) are found, used and changed only
//   while the keychain is unlocked (`p11keychain unlock` or `SecKeychainUnlock`): locked, a
//   search for them that finds nothing, and adding one, is `errSecInteractionNotAllowed`.
// - an internet password is unique by server, account, protocol, port, path, authentication
//   type and security domain; both password classes also by access group and synchronizable;
// - a query without kSecAttrSynchronizable matches only items that are not synchronizable;
//   kSecAttrSynchronizableAny matches both;
// - kSecReturnRef on a password returns its data; a lookup by kSecValuePersistentRef needs no
//   kSecClass (the reference names the item and its class).
//
// The functions that return an OSStatus are `@discardableResult`, as C functions imported
// into Swift are on Apple platforms, so that code which ignores a status compiles quietly.

/// Adds an item to the default keychain.
///
/// - Certificates (`kSecClassCertificate`): the certificate as `kSecValueRef` (a
///   `SecCertificate`) or `kSecValueData` (its DER); optionally `kSecAttrLabel` (default: the
///   subject summary) and `kSecAttrPublicKeyHash` (CKA_ID, default: the SHA-1 of the public
///   key). Other certificate attributes may be given but must agree with the certificate.
/// - Keys (`kSecClassKey`): a key held in memory as `kSecValueRef` (a `SecKey`), or as
///   `kSecValueData` (its external representation) with `kSecAttrKeyType` and
///   `kSecAttrKeyClass`; optionally `kSecAttrLabel`, `kSecAttrApplicationTag`,
///   `kSecAttrApplicationLabel`, `kSecAttrIsExtractable`, `kSecAttrIsSensitive`,
///   `kSecAttrCan…`. A private key is stored with a public key object beside it (PKCS#11
///   applications expect the pair), which has the label but not the tag.
/// - Generic passwords (`kSecClassGenericPassword`): `kSecAttrService`, `kSecAttrAccount`,
///   the secret as `kSecValueData`, optionally `kSecAttrLabel` (default: the service).
/// - Identities (`kSecClassIdentity`): an identity held in memory (from `SecPKCS12Import`
///   with `kSecImportToMemoryOnly`) as `kSecValueRef`, stored as its key pair and certificate.
///
/// With `kSecReturn…` keys, `result` receives the new item in that form.
///
/// - Returns: `errSecSuccess`; `errSecDuplicateItem` when the item is stored already (a
///   certificate with the same issuer and serial number, a password with the same service and
///   account, a stored key); `errSecDecode` when `kSecValueData` is not a DER certificate;
///   `errSecInteractionNotAllowed` for a private item while the keychain is locked;
///   `errSecParam` for a bad dictionary; `errSecReadOnly`, `errSecNoSuchKeychain` or
///   `errSecNotAvailable` when the keychain cannot be written or opened
///   (`SecCopyErrorDiagnostic` says why; `SecCopyErrorMessageString` gives Apple's text).
@discardableResult
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    result?.pointee = nil
    return perform { () throws(KeychainError) in
        let attributes = try swiftDictionary(attributes)
        switch try ItemClass(attributes, for: .add) {
        case .certificate:
            let request = try ItemRequest(attributes, for: .add)
            try request.requireResultPointer(result)
            let certificate = try request.certificateToAdd()
            let keychain = try Keychain()
            let item = try keychain.add(
                certificate, label: request.label, publicKeyHash: request.publicKeyHash.map { Array($0) },
                attributes: request.common.attributes)
            if !request.returnTypes.isEmpty {
                result?.pointee = request.returnValue(for: item)
            }
        case .key: try KeyItemRequest(attributes, for: .add).add(result)
        case .genericPassword: try PasswordItemRequest(attributes, .generic, for: .add).add(result)
        case .internetPassword: try PasswordItemRequest(attributes, .internet, for: .add).add(result)
        case .identity: try IdentityItemRequest(attributes, for: .add).add(result)
        }
    }
}

/// Finds items in the default keychain.
///
/// Every attribute given must match. Certificates match on `kSecAttrLabel`,
/// `kSecAttrSubject`, `kSecAttrIssuer`, `kSecAttrSerialNumber`, `kSecAttrPublicKeyHash`,
/// `kSecAttrSubjectKeyID`, `kSecAttrCertificateType`, `kSecAttrCertificateEncoding`, the
/// values `kSecValueRef`, `kSecValueData`, `kSecValuePersistentRef` and the search keys
/// `kSecMatchSubjectContains`, `…StartsWith`, `…EndsWith`, `…WholeString` (case-sensitive
/// unless `kSecMatchCaseInsensitive`), `kSecMatchEmailAddressIfPresent`, `kSecMatchIssuers`,
/// `kSecMatchPolicy`, `kSecMatchTrustedOnly`, `kSecMatchItemList` (or `kSecUseItemList`) and
/// `kSecMatchValidOnDate`; identities on the same keys (their
/// certificate's) and `kSecAttrApplicationLabel`; keys on `kSecAttrKeyClass`,
/// `kSecAttrKeyType`, `kSecAttrKeySizeInBits`, `kSecAttrLabel`, `kSecAttrApplicationLabel`,
/// `kSecAttrApplicationTag`, `kSecAttrCan…`; generic passwords on `kSecAttrService`,
/// `kSecAttrAccount`, `kSecAttrLabel`.
///
/// `result` receives, per `kSecReturn…`: a reference (`SecCertificate`, `SecKey`,
/// `SecIdentity`), the data (a certificate's DER, a password's secret, a key's external
/// representation), a persistent reference, or an attributes dictionary; several return keys
/// give one dictionary per item holding each. With no `kSecReturn…` key the call only tells
/// whether something matches.
///
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when nothing matches (never an empty
///   array); `errSecInteractionNotAllowed` when nothing matches while the keychain is locked
///   and the class has private items (all but certificates); `errSecParam` for a bad query,
///   or for `kSecReturn…` with a NULL `result`.
@discardableResult
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?)
    -> OSStatus
{
    result?.pointee = nil
    return perform { () throws(KeychainError) in
        let query = try swiftDictionary(query)
        let itemClass = try ItemClass(query, for: .copyMatching)
        try reportingLockedKeychain(for: itemClass, query) { () throws(KeychainError) in
            let values: [CFTypeRef]
            let limit: MatchLimit
            switch itemClass {
            case .certificate:
                let request = try ItemRequest(query, for: .copyMatching)
                try request.requireResultPointer(result)
                limit = request.limit ?? .one
                let items = try request.matchingItems(in: Keychain(), limit: limit)
                guard !items.isEmpty else {
                    throw KeychainError(.itemNotFound, "no certificate matches the query")
                }
                values = request.returnTypes.isEmpty ? [] : items.map { request.returnValue(for: $0) }
            case .key:
                let request = try KeyItemRequest(query, for: .copyMatching)
                try requireResultPointer(request.returnTypes, result)
                limit = request.limit ?? .one
                values = try request.copyMatching(limit: limit)
            case .genericPassword, .internetPassword:
                let request = try PasswordItemRequest(query, itemClass.passwordClass, for: .copyMatching)
                try requireResultPointer(request.returnTypes, result)
                limit = request.limit ?? .one
                values = try request.copyMatching(limit: limit)
            case .identity:
                let request = try IdentityItemRequest(query, for: .copyMatching)
                try requireResultPointer(request.returnTypes, result)
                limit = request.limit ?? .one
                values = try request.copyMatching(limit: limit)
            }
            guard let first = values.first else { return }
            // Only a limit of one returns the item itself; any other returns an array.
            result?.pointee = limit == .one ? first : values as AnyObject
        }
    }
}

/// Changes attributes of every item matching `query` in the default keychain.
///
/// A certificate's `kSecAttrLabel` and `kSecAttrPublicKeyHash` can change; everything else
/// comes from the certificate itself (delete the item and add the new certificate). A key's
/// `kSecAttrLabel`, `kSecAttrApplicationLabel` and `kSecAttrApplicationTag` can change; a
/// generic password's `kSecAttrService`, `kSecAttrAccount`, `kSecAttrLabel` and its secret
/// (`kSecValueData`). Identities are changed through their certificate or key.
///
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when nothing matches
///   (`errSecInteractionNotAllowed` while the keychain is locked, as SecItemCopyMatching);
///   `errSecDuplicateItem` when a password change would make two items with the same service
///   and account;
///   `errSecParam` for a bad query or attributes (a `kSecReturn…` key, a limit other than all,
///   an attribute that cannot change), in which case nothing is changed.
@discardableResult
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    perform { () throws(KeychainError) in
        let query = try swiftDictionary(query)
        let attributesToUpdate = try swiftDictionary(attributesToUpdate)
        let itemClass = try ItemClass(query, for: .update)
        if let changedClass = attributesToUpdate[kSecClass], (changedClass as? String) != itemClass.name {
            throw KeychainError(.parameter, "kSecClass cannot be changed by SecItemUpdate")
        }
        try reportingLockedKeychain(for: itemClass, query) { () throws(KeychainError) in
            switch itemClass {
            case .certificate:
                let request = try ItemRequest(query, for: .update)
                let changes = try ItemRequest(attributesToUpdate, for: .changes)
                let keychain = try Keychain()
                let items = try request.matchingItems(in: keychain, limit: .all)
                guard !items.isEmpty else {
                    throw KeychainError(.itemNotFound, "no certificate matches the query")
                }
                let setting = CertificateChanges(
                    label: changes.label, publicKeyHash: changes.publicKeyHash.map { Array($0) },
                    attributes: changes.common.attributes)
                guard !setting.isEmpty else { return }
                // One transaction: every match changes, or none (items deleted meanwhile are skipped).
                try keychain.update(items, setting: setting)
            case .key:
                try KeyItemRequest(query, for: .update).update(
                    with: KeyItemRequest(attributesToUpdate, for: .changes))
            case .genericPassword, .internetPassword:
                try PasswordItemRequest(query, itemClass.passwordClass, for: .update).update(
                    with: PasswordItemRequest(attributesToUpdate, itemClass.passwordClass, for: .changes))
            case .identity:
                throw KeychainError(
                    .unimplemented,
                    "identities are not updated as such: update their certificate (kSecClassCertificate) or key "
                        + "(kSecClassKey)")
            }
        }
    }
}

/// Deletes every item matching `query` from the default keychain. Deleting an identity
/// deletes its certificate and its key pair.
///
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when nothing matches
///   (`errSecInteractionNotAllowed` while the keychain is locked, as SecItemCopyMatching);
///   `errSecParam` for a bad query (a `kSecReturn…` or `kSecMatch…` search key but an item
///   list, a limit other than all).
@discardableResult
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    perform { () throws(KeychainError) in
        let query = try swiftDictionary(query)
        let itemClass = try ItemClass(query, for: .delete)
        try reportingLockedKeychain(for: itemClass, query) { () throws(KeychainError) in
            switch itemClass {
            case .certificate:
                let request = try ItemRequest(query, for: .delete)
                let keychain = try Keychain()
                let items = try request.matchingItems(in: keychain, limit: .all)
                guard !items.isEmpty else {
                    throw KeychainError(.itemNotFound, "no certificate matches the query")
                }
                // One transaction: every match goes, or none.
                guard try keychain.delete(items) > 0 else {
                    throw KeychainError(.itemNotFound, "no certificate matches the query")
                }
            case .key: try KeyItemRequest(query, for: .delete).delete()
            case .genericPassword, .internetPassword:
                try PasswordItemRequest(query, itemClass.passwordClass, for: .delete).delete()
            case .identity: try IdentityItemRequest(query, for: .delete).delete()
            }
        }
    }
}

/// The class of the items a dictionary is about: its `kSecClass`, or the class its
/// `kSecValueRef` implies (as on Apple platforms).
enum ItemClass {
    case certificate, key, identity, genericPassword, internetPassword

    init(_ dictionary: ItemDictionary, for operation: ItemOperation) throws(KeychainError) {
        guard let value = dictionary[kSecClass] else {
            switch dictionary[kSecValueRef] {
            case is SecCertificate: self = .certificate
            case is SecKey: self = .key
            case is SecIdentity: self = .identity
            case nil where operation != .add && dictionary[kSecValuePersistentRef] is Data:
                // As Apple's: a persistent reference names its item, and so its class.
                guard let reference = dictionary[kSecValuePersistentRef] as? Data,
                    let kind = try Keychain().itemKind(persistentReference: Array(reference))
                else { throw KeychainError(.itemNotFound, "no item has this persistent reference") }
                switch kind {
                case .certificate: self = .certificate
                case .key: self = .key
                case .genericPassword: self = .genericPassword
                case .internetPassword: self = .internetPassword
                }
            default:
                throw KeychainError(
                    .parameter, "\(operation.name) needs kSecClass (e.g. kSecClassCertificate)")
            }
            return
        }
        guard let name = value as? String else {
            throw KeychainError(
                .parameter,
                "kSecClass must be a CFString such as kSecClassCertificate, not \(typeName(value))")
        }
        switch name {
        case kSecClassCertificate: self = .certificate
        case kSecClassKey: self = .key
        case kSecClassIdentity: self = .identity
        case kSecClassGenericPassword: self = .genericPassword
        case kSecClassInternetPassword: self = .internetPassword
        default:
            throw KeychainError(.noSuchClass, "unknown kSecClass '\(name)'")
        }
    }

    /// The `kSecClass` value.
    var name: String {
        switch self {
        case .certificate: kSecClassCertificate as String
        case .key: kSecClassKey as String
        case .identity: kSecClassIdentity as String
        case .genericPassword: kSecClassGenericPassword as String
        case .internetPassword: kSecClassInternetPassword as String
        }
    }

    /// What the items are called in messages.
    var description: String {
        switch self {
        case .certificate: "certificates"
        case .key: "keys"
        case .identity: "identities"
        case .genericPassword: "generic passwords"
        case .internetPassword: "internet passwords"
        }
    }

    /// The password class of `.genericPassword` and `.internetPassword`.
    var passwordClass: PasswordItemClass { self == .internetPassword ? .internet : .generic }
}

/// A result was asked for: there must be somewhere to put it.
func requireResultPointer(_ returnTypes: ReturnTypes, _ result: UnsafeMutablePointer<CFTypeRef?>?)
    throws(KeychainError)
{
    if !returnTypes.isEmpty, result == nil {
        throw KeychainError(
            .parameter, "a kSecReturn… key asks for a result but the result pointer is NULL")
    }
}

/// Runs one Security call: maps its error to an OSStatus and records the details for
/// `SecCopyErrorDiagnostic` (Apple's text stays `SecCopyErrorMessageString`'s).
func perform(_ body: () throws(KeychainError) -> Void) -> OSStatus {
    do {
        try body()
        return errSecSuccess
    } catch {
        return LastError.record(error)
    }
}

/// Runs a search (SecItemCopyMatching, SecItemUpdate, SecItemDelete) for items of
/// `itemClass`. When it finds nothing while the keychain is locked, and the class has private
/// items (every class but certificates; keys unless the query asks for public ones), the answer is Apple's
/// errSecInteractionNotAllowed, not errSecItemNotFound: the items may be there, unreadable
/// until the keychain is unlocked. A public key found while locked is still returned.
func reportingLockedKeychain(
    for itemClass: ItemClass, _ query: ItemDictionary, _ search: () throws(KeychainError) -> Void
) throws(KeychainError) {
    // Public keys and certificates are never hidden: not finding one is errSecItemNotFound.
    let searchesPublicKeys =
        itemClass == .key && (query[kSecAttrKeyClass] as? String) == kSecAttrKeyClassPublic as String
    do {
        try search()
    } catch  where error.code == .itemNotFound && itemClass != .certificate && !searchesPublicKeys {
        // The keychain opened for the search opens again (cheaply); if it cannot, the search's
        // own error stands.
        guard let keychain = try? Keychain(), !keychain.isUnlocked else { throw error }
        // try?: the status only picks the message; unreadable, it says "locked".
        let hasPIN = (try? keychain.authenticationStatus.hasUserPIN) ?? true
        throw KeychainError(
            .interactionNotAllowed,
            hasPIN
                ? "the keychain is locked: unlock it (p11keychain unlock, or SecKeychainUnlock) to find "
                    + "\(itemClass.description)"
                : "the keychain has no user PIN, which private items need: \(itemClass.description) "
                    + "cannot be stored or found")
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
struct KeySpec {
    let name: String
    let operations: Set<ItemOperation>
    /// Why `changes` refuses it, when it does.
    var notChangeable: String? = nil
}

/// The entries of a dictionary but kSecClass (which `ItemClass` reads), each with its key's
/// name for messages; errSecParam for a key `specs` does not know or `operation` does not take.
func checkedEntries(_ dictionary: ItemDictionary, for operation: ItemOperation, _ specs: [String: KeySpec])
    throws(KeychainError) -> [(key: String, name: String, value: Any)]
{
    var entries: [(key: String, name: String, value: Any)] = []
    for (key, value) in dictionary where key != kSecClass {
        guard let spec = specs[key] else {
            throw KeychainError(.parameter, "unknown key '\(key)' in \(operation.name)")
        }
        guard spec.operations.contains(operation) else {
            if operation == .changes, let reason = spec.notChangeable {
                throw KeychainError(.parameter, "\(spec.name) cannot be changed: \(reason)")
            }
            throw KeychainError(.parameter, "\(spec.name) is not allowed in \(operation.name)")
        }
        entries.append((key, spec.name, value))
    }
    return entries
}

let queryOperations: Set<ItemOperation> = [.add, .copyMatching, .update, .delete]
private let derivedAttribute =
    "it comes from the certificate; delete the item and add the new certificate instead"

private let keySpecs: [String: KeySpec] = [
    kSecClass as String: KeySpec(name: "kSecClass", operations: Set(ItemOperation.allCases)),
    kSecAttrLabel as String: KeySpec(name: "kSecAttrLabel", operations: Set(ItemOperation.allCases)),
    kSecAttrPublicKeyHash as String: KeySpec(
        name: "kSecAttrPublicKeyHash", operations: Set(ItemOperation.allCases)),
    kSecAttrSubject as String: KeySpec(
        name: "kSecAttrSubject", operations: queryOperations, notChangeable: derivedAttribute),
    kSecAttrIssuer as String: KeySpec(
        name: "kSecAttrIssuer", operations: queryOperations, notChangeable: derivedAttribute),
    kSecAttrSerialNumber as String: KeySpec(
        name: "kSecAttrSerialNumber", operations: queryOperations, notChangeable: derivedAttribute),
    kSecAttrSubjectKeyID as String: KeySpec(
        name: "kSecAttrSubjectKeyID", operations: queryOperations, notChangeable: derivedAttribute),
    kSecAttrCertificateType as String: KeySpec(
        name: "kSecAttrCertificateType", operations: queryOperations, notChangeable: derivedAttribute),
    kSecAttrCertificateEncoding as String: KeySpec(
        name: "kSecAttrCertificateEncoding", operations: queryOperations, notChangeable: derivedAttribute),
    kSecValueRef as String: KeySpec(
        name: "kSecValueRef", operations: queryOperations, notChangeable: derivedAttribute),
    kSecValueData as String: KeySpec(
        name: "kSecValueData", operations: queryOperations, notChangeable: derivedAttribute),
    kSecMatchValidOnDate as String: KeySpec(name: "kSecMatchValidOnDate", operations: [.copyMatching]),
].merging(certificateAttributeSpecs) { own, _ in own }.merging(resultSpecs) { own, _ in own }.merging(
    CertificateSearchKeys.specs
) { own, _ in own }

/// A dictionary given to a `SecItem…` call, checked and typed. Creating one changes nothing:
/// every check happens before the keychain is touched.
struct ItemRequest {
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
    var validOnDate: Date?
    /// kSecMatchSubject…, kSecMatchIssuers, kSecMatchPolicy… (SecItemSearchKeys.swift).
    var search = CertificateSearchKeys()
    /// Apple's common attributes (not part of a certificate's identity) and `kSecUse…` options.
    var common = ItemAttributeRequest()

    init(_ dictionary: ItemDictionary, for operation: ItemOperation) throws(KeychainError) {
        for (key, name, value) in try checkedEntries(dictionary, for: operation, keySpecs) {
            if certificateAttributeSpecs[key] != nil, try common.read(key, name, value, for: operation) {
                continue
            }
            try read(key, name, value)
        }
        try check(for: operation)
    }

    private mutating func read(_ key: String, _ name: String, _ value: Any) throws(KeychainError) {
        if try search.read(key, name, value) { return }
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
                throw KeychainError(
                    .parameter, "kSecValueRef must be a SecCertificate, not \(typeName(value))")
            }
            valueRef = certificate
        case kSecValueData: valueData = try typed(value, name, "CFData") as Data
        case kSecValuePersistentRef: valuePersistentRef = try typed(value, name, "CFData") as Data
        case kSecReturnData: if try typed(value, name, "a CFBoolean") as Bool { returnTypes.insert(.data) }
        case kSecReturnAttributes:
            if try typed(value, name, "a CFBoolean") as Bool { returnTypes.insert(.attributes) }
        case kSecReturnRef:
            if try typed(value, name, "a CFBoolean") as Bool { returnTypes.insert(.reference) }
        case kSecReturnPersistentRef:
            if try typed(value, name, "a CFBoolean") as Bool { returnTypes.insert(.persistentReference) }
        case kSecMatchLimit: limit = try matchLimit(value)
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
                .parameter,
                "\(operation.name) applies to every match: kSecMatchLimit may only be kSecMatchLimitAll")
        }
    }

    /// A result was asked for: there must be somewhere to put it.
    func requireResultPointer(_ result: UnsafeMutablePointer<CFTypeRef?>?) throws(KeychainError) {
        if !returnTypes.isEmpty, result == nil {
            throw KeychainError(
                .parameter, "a kSecReturn… key asks for a result but the result pointer is NULL")
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
            throw KeychainError(
                .parameter, "SecItemAdd needs the certificate as kSecValueRef or kSecValueData")
        }
        let agrees: [(String, Bool)] = [
            (
                "kSecAttrSubject",
                subject.map { Self.names($0, certificate.subjectDER, certificate.normalizedSubjectSequence) }
                    ?? true
            ),
            (
                "kSecAttrIssuer",
                issuer.map { Self.names($0, certificate.issuerDER, certificate.normalizedIssuerSequence) }
                    ?? true
            ),
            ("kSecAttrSerialNumber", serialNumber.map { Array($0) == certificate.serialNumber } ?? true),
            (
                "kSecAttrSubjectKeyID",
                subjectKeyID.map { Array($0) == certificate.subjectKeyIdentifier } ?? true
            ),
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
        let checkedHere = certificateType != nil || certificateEncoding != nil || search.filters
        let keychainLimit: CertificateQuery.Limit
        switch limit {
        case .one: keychainLimit = .one
        case .all: keychainLimit = .all
        case .maximum(let count): keychainLimit = .maximum(count)
        }
        query.limit = checkedHere ? .all : keychainLimit
        var items = try keychain.certificates(matching: query)
        if checkedHere {
            let context = SearchContext(keychain)
            var accepted: [CertificateItem] = []
            for item in items {
                guard try acceptsBeyondQuery(item, in: context) else { continue }
                accepted.append(item)
                if limit == .one { break }
            }
            items = accepted
            switch limit {
            case .one: items = Array(items.prefix(1))
            case .all: break
            case .maximum(let count): items = Array(items.prefix(count))
            }
        }
        return items
    }

    /// The checks `matchingItems` makes beyond the typed query: certificate type and
    /// encoding, and the search keys.
    func acceptsBeyondQuery(_ item: CertificateItem, in context: SearchContext) throws(KeychainError) -> Bool
    {
        guard certificateType.map({ $0 == item.certificate.version }) ?? true,
            certificateEncoding.map({ $0 == Self.derEncoding }) ?? true
        else { return false }
        return try search.accepts(item, in: context)
    }

    /// The typed query; nil when nothing can match (kSecValueData that is not a certificate).
    func certificateQuery() -> CertificateQuery? {
        var certificate = valueRef?.certificate
        if certificate == nil, let valueData {
            guard let parsed = try? Certificate(derEncoded: valueData) else { return nil }
            certificate = parsed
        }
        return CertificateQuery(
            label: label, subject: subject.map { Array($0) }, issuer: issuer.map { Array($0) },
            serialNumber: serialNumber.map { Array($0) }, publicKeyHash: publicKeyHash.map { Array($0) },
            subjectKeyIdentifier: subjectKeyID.map { Array($0) }, subjectContains: search.subjectContains,
            validOn: validOnDate, certificate: certificate,
            persistentReference: valuePersistentRef.map { Array($0) }, attributes: common.attributes,
            anySynchronizable: common.anySynchronizable)
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
            if returnTypes.contains(.reference) {
                dictionary[kSecValueRef] = SecCertificate(item.certificate)
            }
            if returnTypes.contains(.data) { dictionary[kSecValueData] = Data(item.certificate.derEncoded) }
            if returnTypes.contains(.persistentReference) {
                dictionary[kSecValuePersistentRef] = Data(item.persistentReference)
            }
            return dictionary as AnyObject
        }
    }

    /// A certificate item's attributes, keyed as Apple's, with the common ones (`pdmn`, `sync`,
    /// the dates…).
    static func attributes(of item: CertificateItem) -> [String: Any] {
        let certificate = item.certificate
        var attributes = returnedItemAttributes(item.attributes)
        attributes.merge([
            kSecClass as String: kSecClassCertificate,
            kSecAttrLabel as String: item.label,
            kSecAttrSubject as String: Data(certificate.subjectDER),
            kSecAttrIssuer as String: Data(certificate.issuerDER),
            kSecAttrSerialNumber as String: Data(certificate.serialNumber),
            kSecAttrPublicKeyHash as String: Data(item.publicKeyHash),
            kSecAttrCertificateType as String: certificate.version,
            kSecAttrCertificateEncoding as String: derEncoding,
        ]) { _, own in own }
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
