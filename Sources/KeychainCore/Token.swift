internal import KeychainCrypto
internal import KeychainStorage

#if canImport(Glibc)
    import Glibc
#endif

/// Where an object lives: in the token's store, or in this process's session store.
/// The row ID is never reused within a store, so a reference stays valid for the life of the
/// object and never comes to mean another one.
public struct ObjectReference: Hashable, Sendable {
    public let isSessionObject: Bool
    public let rowID: Int64

    public init(isSessionObject: Bool, rowID: Int64) {
        self.isSessionObject = isSessionObject
        self.rowID = rowID
    }
}

/// Who is asking: the state of the caller's session (PKCS#11) or keychain connection.
public struct AccessContext: Sendable {
    public var readWrite: Bool
    public var userLoggedIn: Bool
    public var securityOfficer: Bool

    public init(readWrite: Bool, userLoggedIn: Bool = false, securityOfficer: Bool = false) {
        self.readWrite = readWrite
        self.userLoggedIn = userLoggedIn
        self.securityOfficer = securityOfficer
    }

    /// The access rules for changing an object (v2.40 §6.7.1 and table 6): a pure function of
    /// the session state and the object's kind.
    public func checkWrite(tokenObject: Bool, privateObject: Bool, writeProtected: Bool)
        throws(KeychainError)
    {
        if tokenObject, writeProtected {
            throw KeychainError(.tokenWriteProtected, "the token is write-protected")
        }
        if tokenObject, !readWrite {
            throw KeychainError(.sessionReadOnly, "token objects can be changed only in a read/write session")
        }
        if privateObject, !userLoggedIn {
            throw KeychainError(.userNotLoggedIn, "private objects need a logged-in user")
        }
    }

    /// Whether the caller may see an object at all.
    public func canSee(privateObject: Bool) -> Bool { !privateObject || userLoggedIn }
}

/// One token: a store of items and the rules every face applies to them.
///
/// Thread-safe: one lock serialises the store connection (DESIGN §9, lock order: the
/// PKCS#11 adapter's session lock, then this lock). Only parsed keys are kept across calls,
/// and only while the store's change counter says no process has written since they were
/// read, so other processes' changes are seen on the next call.
public final class Token: @unchecked Sendable {
    // @unchecked: every mutable property is touched only with `lock` held.
    public let configuration: TokenConfiguration
    let lock = Lock()
    private var persistentStore: ObjectStore?
    private var sessionStore: ObjectStore?
    /// The store's serial number, read once when it opens: it never changes.
    private var storeSerial = ""
    /// Prefix of this process's session-object unique IDs, made with the session store:
    /// random numbers are not drawn in C_Initialize, whose time every host pays.
    private var sessionPrefix = ""

    /// Who is logged in to this token in this process, and the token key their PIN
    /// unwrapped (Authentication.swift). Logging in is per application (v2.40 §5.6).
    var login: (user: UserType, tokenKey: [UInt8])?
    /// Parsed private keys by object, with what they came from (KeyObjects.swift).
    var keyCache: [ObjectReference: CachedKey] = [:]
    /// Parsed public keys by key object (public or private), likewise.
    var publicKeyCache: [ObjectReference: CachedKey] = [:]

    /// A key as last read: what it was parsed from (a private key's sealed PKCS#8, a public
    /// key's SubjectPublicKeyInfo), the parsed key, the attributes a caller may see, and the
    /// store's change count when it was read (nil: read during a write).
    struct CachedKey {
        var material: [UInt8]
        var key: AsymmetricKey
        var attributes: AttributeSet
        var changeCount: UInt64?
    }

    public init(configuration: TokenConfiguration) {
        self.configuration = configuration
    }

    // MARK: Opening

    /// The persistent store, opened (and created, with its directory) on first use. A failure
    /// is not remembered: the next call tries again (`openError` reports its reason).
    func store() throws(KeychainError) -> ObjectStore {
        if let persistentStore { return persistentStore }
        let path = configuration.path
        let create = !configuration.readOnly
        if create { Token.createDirectory(forFile: path) }
        do {
            let store = try ObjectStore(
                path: path, create: create, durability: configuration.durability)
            var serial = try store.metadata(Token.serialKey).map { String(decoding: $0, as: UTF8.self) }
            if serial == nil, !store.isReadOnly {
                // Read again and set in one write: processes opening a new store at once all
                // keep the serial the first of them wrote.
                serial = try store.write { () throws -> String in
                    if let stored = try store.metadata(Token.serialKey) {
                        return String(decoding: stored, as: UTF8.self)
                    }
                    let created = try SecureRandom.bytes(8).map { String($0, radix: 16).leftPadded(2) }
                        .joined()
                    try store.setMetadata(Token.serialKey, Array(created.utf8))
                    return created
                }
            }
            // A read-only store made by an older writer: derive a stable value from its path.
            storeSerial =
                serial
                ?? DigestAlgorithm.sha1.hash(Array(path.utf8)).prefix(8)
                .map { String($0, radix: 16).leftPadded(2) }.joined()
            persistentStore = store
            return store
        } catch let error as StorageError {
            throw KeychainError(error)
        } catch {
            throw KeychainError(.tokenNotPresent, "cannot open store \(path): \(error)")
        }
    }

    private func volatileStore() throws(KeychainError) -> ObjectStore {
        if let sessionStore { return sessionStore }
        let store = try KeychainError.mapping { try ObjectStore(path: ":memory:", create: true) }
        let random = try KeychainError.mapping { try SecureRandom.bytes(8) }
        sessionPrefix = "s" + random.map { String($0, radix: 16).leftPadded(2) }.joined()
        sessionStore = store
        return store
    }

    func store(for reference: ObjectReference) throws(KeychainError) -> ObjectStore {
        reference.isSessionObject ? try volatileStore() : try store()
    }

    /// Creates the parent directory, mode 0700, with any missing ancestors.
    private static func createDirectory(forFile path: String) {
        var components = path.split(separator: "/", omittingEmptySubsequences: false).dropLast()
        guard !components.isEmpty else { return }
        var prefix = components.removeFirst().isEmpty ? "" : "."
        for component in components where !component.isEmpty {
            prefix += "/" + component
            mkdir(prefix, 0o700)
        }
    }

    private static let serialKey = "serial"

    /// Opens the store now, reporting why it cannot be opened.
    public func open() throws(KeychainError) {
        try lock.withLock { () throws(KeychainError) in _ = try store() }
    }

    /// True when the store exists or can be created.
    public var isPresent: Bool { openError == nil }

    /// Why the store cannot be opened (tried again now), or nil when it is open: the reason
    /// a face reports instead of a bare "not present" (a FIFO, a damaged file, a directory
    /// it may not create…).
    public var openError: KeychainError? {
        lock.withLock { () -> KeychainError? in
            do throws(KeychainError) {
                _ = try store()
                return nil
            } catch {
                return error
            }
        }
    }

    /// True when this process cannot write the store (configuration or permissions).
    public var isWriteProtected: Bool {
        configuration.readOnly
            || lock.withLock { (try? store().isReadOnly) ?? true }
    }

    /// A stable serial number for CK_TOKEN_INFO, kept in the store.
    public var serialNumber: String {
        lock.withLock { (try? store()).map { _ in storeSerial } ?? "" }
    }

    /// CKA_UNIQUE_ID: the store's serial (or this process's session prefix) and the row ID,
    /// which is never reused. Unique across tokens and for the life of the store, with no
    /// column or index of its own.
    private func uniqueID(of reference: ObjectReference) -> String {
        (reference.isSessionObject ? sessionPrefix : storeSerial) + ":" + String(reference.rowID)
    }

    /// The row ID a unique ID names in the store `isSession` selects, or nil.
    private func rowID(forUniqueID uid: [UInt8], isSession: Bool) -> Int64? {
        let text = String(decoding: uid, as: UTF8.self)
        let prefix = (isSession ? sessionPrefix : storeSerial) + ":"
        guard text.hasPrefix(prefix) else { return nil }
        return Int64(text.dropFirst(prefix.count))
    }

    // MARK: Objects

    /// Creates an object from a template (C_CreateObject, SecItemAdd). CKA_TOKEN in the
    /// template chooses the token store or the session store.
    public func createObject(_ template: AttributeSet, context: AccessContext)
        throws(KeychainError) -> ObjectReference
    {
        let object = try NewObject(template: template, asSecurityOfficer: context.securityOfficer)
        return try insert(object, context: context)
    }

    /// Creates several objects in one transaction: all are stored, or none (a batch import).
    public func createObjects(_ templates: [AttributeSet], context: AccessContext)
        throws(KeychainError) -> [ObjectReference]
    {
        var objects: [NewObject] = []
        for template in templates {
            objects.append(try NewObject(template: template, asSecurityOfficer: context.securityOfficer))
        }
        return try insertAll(objects, context: context)
    }

    /// Stores objects in one transaction: all, or none.
    func insertAll(_ objects: [NewObject], context: AccessContext) throws(KeychainError) -> [ObjectReference]
    {
        guard !objects.isEmpty else { return [] }
        let isTokenObject = objects.map { $0.attributes.bool(.token) ?? false }
        return try lock.withLock { () throws(KeychainError) in
            // Every store the batch writes to takes part in the transaction: a failure must
            // not leave the batch's session objects behind either. A store it does not write
            // to stays out (a batch of session objects needs no writable token store).
            let persistent = isTokenObject.contains(true) ? try store() : nil
            let session = isTokenObject.contains(false) ? try volatileStore() : nil
            return try KeychainError.mapping {
                try Token.write(persistent) {
                    try Token.write(session) {
                        var references: [ObjectReference] = []
                        for object in objects {
                            references.append(try insertLocked(object, context: context))
                        }
                        return references
                    }
                }
            }
        }
    }

    /// Runs `body` in a write transaction of `store`, or as it is when there is no store.
    private static func write<T>(_ store: ObjectStore?, _ body: () throws -> T) throws -> T {
        guard let store else { return try body() }
        return try store.write(body)
    }

    private func insert(_ object: NewObject, context: AccessContext) throws(KeychainError)
        -> ObjectReference
    {
        try lock.withLock { () throws(KeychainError) in try insertLocked(object, context: context) }
    }

    /// Stores a new object; `lock` must be held.
    private func insertLocked(_ object: NewObject, context: AccessContext) throws(KeychainError)
        -> ObjectReference
    {
        let isToken = object.attributes.bool(.token) ?? false
        let isPrivate = object.attributes.bool(.private) ?? false
        let store = isToken ? try store() : try volatileStore()
        try context.checkWrite(
            tokenObject: isToken, privateObject: isPrivate,
            writeProtected: configuration.readOnly || store.isReadOnly)
        var attributes = object.attributes
        if isPrivate {
            attributes[.sealID] = try KeychainError.mapping { try SecureRandom.bytes(16) }
            attributes = try sealed(attributes)
        }
        let rows = attributes.map { StoredAttribute($0.key.rawValue, $0.value) }
        do throws(KeychainError) {
            let id = try KeychainError.mapping {
                try store.insert(uniqueKey: object.uniqueKey, attributes: rows)
            }
            return ObjectReference(isSessionObject: !isToken, rowID: id)
        } catch  where error.code == .duplicateItem {
            throw NewObject.duplicate(object.attributes)
        }
    }

    /// Every attribute of an object, CKA_UNIQUE_ID included. Private objects are not found
    /// unless the context may see them.
    public func attributes(of reference: ObjectReference, context: AccessContext)
        throws(KeychainError) -> AttributeSet
    {
        var attributes = try lock.withLock { () throws(KeychainError) in
            try load(reference, context: context)
        }
        attributes[.keyMaterial] = nil
        return attributes
    }

    /// The attributes of `attributes` whose values are never revealed: a private key's
    /// secret parts while it is sensitive or unextractable (CKR_ATTRIBUTE_SENSITIVE).
    public static func sensitiveTypes(of attributes: AttributeSet) -> Set<AttributeType> {
        guard attributes.ulong(.class) == ObjectClass.privateKey.rawValue,
            attributes.bool(.sensitive) != false || attributes.bool(.extractable) != true
        else { return [] }
        return [.privateExponent, .prime1, .prime2, .exponent1, .exponent2, .coefficient, .value]
    }

    func load(_ reference: ObjectReference, context: AccessContext, unseal: Bool = true) throws(KeychainError)
        -> AttributeSet
    {
        let store = try store(for: reference)
        let rows = try KeychainError.mapping { try store.attributes(of: reference.rowID) }
        guard let rows else {
            throw KeychainError(.objectNotFound, "the object does not exist (deleted?)")
        }
        var attributes: AttributeSet = [:]
        for row in rows { attributes[AttributeType(row.type)] = row.value }
        guard context.canSee(privateObject: attributes.bool(.private) ?? false) else {
            throw KeychainError(.objectNotFound, "the object is private: log in first")
        }
        if unseal, attributes[.sealID] != nil { attributes = try unsealed(attributes) }
        attributes[.uniqueID] = Array(uniqueID(of: reference).utf8)
        return attributes
    }

    /// The attribute types whose values a private object keeps sealed (DESIGN §7): secret
    /// values and private key parts. Labels, IDs and public key parts stay readable for finds.
    static let sealedTypes: Set<AttributeType> = [
        .value, .privateExponent, .prime1, .prime2, .exponent1, .exponent2, .coefficient, .keyMaterial,
    ]

    /// Seals the secret values of a private object with the token key; the associated data
    /// binds each box to its object (CKA seal ID) and attribute. `lock` must be held.
    func sealed(_ attributes: AttributeSet) throws(KeychainError) -> AttributeSet {
        guard let key = login?.tokenKey, let sealID = attributes[.sealID] else {
            throw KeychainError(.userNotLoggedIn, "private objects need a logged-in user")
        }
        var result = attributes
        for (type, value) in attributes where Token.sealedTypes.contains(type) {
            result[type] = try KeychainError.mapping {
                try SecretBox.seal(
                    value, key: key, associatedData: sealID + AttributeValue.encode(type.rawValue))
            }
        }
        return result
    }

    /// Opens the sealed values of a private object; drops the seal ID, which callers never see.
    /// With `only`, opens just those types and drops the other sealed values.
    func unsealed(_ attributes: AttributeSet, only: Set<AttributeType>? = nil) throws(KeychainError)
        -> AttributeSet
    {
        guard let key = login?.tokenKey, let sealID = attributes[.sealID] else {
            throw KeychainError(.objectNotFound, "the object is private: log in first")
        }
        var result = attributes
        result[.sealID] = nil
        for (type, value) in attributes where Token.sealedTypes.contains(type) {
            if let only, !only.contains(type) {
                result[type] = nil
                continue
            }
            do {
                result[type] = try SecretBox.open(
                    value, key: key, associatedData: sealID + AttributeValue.encode(type.rawValue))
            } catch {
                throw KeychainError(.storageCorrupt, "a sealed value of a private object does not open")
            }
        }
        return result
    }

    /// Changes attributes of an object (C_SetAttributeValue, SecItemUpdate).
    public func updateObject(
        _ reference: ObjectReference, with template: AttributeSet, context: AccessContext
    ) throws(KeychainError) {
        try lock.withLock { () throws(KeychainError) in
            try updateLocked(reference, with: template, context: context)
        }
    }

    /// Changes the same attributes of several token objects in one transaction: all of them
    /// change, or none (SecItemUpdate applies to every match). Objects deleted meanwhile are
    /// skipped. Returns the references changed.
    public func updateObjects(
        _ references: [ObjectReference], with template: AttributeSet, context: AccessContext
    ) throws(KeychainError) -> [ObjectReference] {
        try inOneTransaction(references) { (reference) throws(KeychainError) in
            try updateLocked(reference, with: template, context: context)
        }
    }

    /// Destroys several token objects in one transaction: all of them go, or none
    /// (SecItemDelete applies to every match). Objects deleted meanwhile are skipped.
    /// Returns the references destroyed.
    public func destroyObjects(_ references: [ObjectReference], context: AccessContext)
        throws(KeychainError) -> [ObjectReference]
    {
        try inOneTransaction(references) { (reference) throws(KeychainError) in
            try destroyLocked(reference, context: context)
        }
    }

    /// Runs `body` on each reference inside one write transaction of the token store, with
    /// `lock` held; a reference whose object no longer exists is left out of the result.
    private func inOneTransaction(
        _ references: [ObjectReference], _ body: (ObjectReference) throws(KeychainError) -> Void
    ) throws(KeychainError) -> [ObjectReference] {
        guard !references.isEmpty else { return [] }
        return try lock.withLock { () throws(KeychainError) in
            let persistent = try store()
            return try KeychainError.mapping {
                try persistent.write {
                    var done: [ObjectReference] = []
                    for reference in references {
                        do {
                            try body(reference)
                            done.append(reference)
                        } catch let error as KeychainError where error.code == .objectNotFound {
                            continue
                        }
                    }
                    return done
                }
            }
        }
    }

    /// Changes attributes of an object; `lock` must be held.
    private func updateLocked(
        _ reference: ObjectReference, with template: AttributeSet, context: AccessContext
    ) throws(KeychainError) {
        let current = try load(reference, context: context)
        let store = try store(for: reference)
        try context.checkWrite(
            tokenObject: !reference.isSessionObject,
            privateObject: current.bool(.private) ?? false,
            writeProtected: !reference.isSessionObject && (configuration.readOnly || store.isReadOnly))
        guard current.bool(.modifiable) ?? true else {
            throw KeychainError(
                .actionProhibited, "the object is not modifiable (CKA_MODIFIABLE is false)")
        }
        let policy = try Token.policy(of: current)
        for (type, value) in template {
            guard let spec = policy.specs[type] else {
                throw KeychainError(
                    .attributeTypeInvalid, "attribute \(type) does not belong to this object class")
            }
            try ObjectPolicy.validate(value, as: spec)
            // CKA_COPYABLE may only go from true to false (v2.40 §4.4).
            let turnsOffCopy = type == .copyable && AttributeValue.bool(value) == false
            // A key can become sensitive or unextractable, never the reverse (v2.40 §4.9).
            if type == .sensitive, AttributeValue.bool(value) == false, current.bool(.sensitive) == true {
                throw KeychainError(.attributeReadOnly, "CKA_SENSITIVE cannot be turned off")
            }
            if type == .extractable, AttributeValue.bool(value) == true, current.bool(.extractable) == false {
                throw KeychainError(.attributeReadOnly, "CKA_EXTRACTABLE cannot be turned back on")
            }
            guard spec.rules.contains(.modifiable) || turnsOffCopy else {
                throw KeychainError(.attributeReadOnly, "attribute \(type) cannot be changed")
            }
        }
        var changes = template
        if current.bool(.private) == true {
            // `current` was unsealed by `load`; reseal the changed values under its seal ID.
            let rawSealID = try KeychainError.mapping {
                try store.attribute(AttributeType.sealID.rawValue, of: reference.rowID)
            }
            guard let sealID = rawSealID else {
                throw KeychainError(.storageCorrupt, "a private object has no seal ID")
            }
            changes[.sealID] = sealID
            changes = try sealed(changes)
            changes[.sealID] = nil
        }
        let rows = changes.map { StoredAttribute($0.key.rawValue, $0.value) }
        // A generic password given another service or account takes that pair's key.
        let changed = current.merging(template) { _, new in new }
        let uniqueKey =
            template[.application] != nil || template[.account] != nil
            ? NewObject.passwordKey(of: changed) : nil
        do throws(KeychainError) {
            try KeychainError.mapping {
                try store.update(reference.rowID, attributes: rows, uniqueKey: uniqueKey)
            }
        } catch  where error.code == .duplicateItem {
            throw NewObject.duplicate(changed)
        }
    }

    /// Copies an object with changes (C_CopyObject).
    public func copyObject(
        _ reference: ObjectReference, with template: AttributeSet, context: AccessContext
    ) throws(KeychainError) -> ObjectReference {
        let source = try attributes(of: reference, context: context)
        guard source.bool(.copyable) ?? true else {
            throw KeychainError(.actionProhibited, "the object is not copyable (CKA_COPYABLE is false)")
        }
        let policy = try Token.policy(of: source)
        var attributes = source
        attributes[.uniqueID] = nil
        for (type, value) in template {
            guard let spec = policy.specs[type] else {
                throw KeychainError(
                    .attributeTypeInvalid, "attribute \(type) does not belong to this object class")
            }
            try ObjectPolicy.validate(value, as: spec)
            guard spec.rules.contains(.modifiable) || spec.rules.contains(.settableOnCopy) else {
                throw KeychainError(.attributeReadOnly, "attribute \(type) cannot be changed by a copy")
            }
            // CKA_MODIFIABLE, CKA_COPYABLE and CKA_DESTROYABLE can only be turned off.
            if [.modifiable, .copyable, .destroyable].contains(type),
                AttributeValue.bool(value) == true, source.bool(type) == false
            {
                throw KeychainError(.attributeReadOnly, "attribute \(type) cannot be turned back on")
            }
            attributes[type] = value
        }
        let uniqueKey: [UInt8]? =
            policy.objectClass == .certificate
            ? AttributeValue.encode(CertificateType.x509.rawValue) + (attributes[.issuer] ?? [])
                + (attributes[.serialNumber] ?? [])
            : NewObject.passwordKey(of: attributes)
        return try insert(NewObject(attributes: attributes, uniqueKey: uniqueKey), context: context)
    }

    /// Destroys an object (C_DestroyObject, SecItemDelete).
    public func destroyObject(_ reference: ObjectReference, context: AccessContext)
        throws(KeychainError)
    {
        try lock.withLock { () throws(KeychainError) in
            try destroyLocked(reference, context: context)
        }
    }

    /// Destroys an object; `lock` must be held.
    private func destroyLocked(_ reference: ObjectReference, context: AccessContext)
        throws(KeychainError)
    {
        let current = try load(reference, context: context)
        let store = try store(for: reference)
        try context.checkWrite(
            tokenObject: !reference.isSessionObject,
            privateObject: current.bool(.private) ?? false,
            writeProtected: !reference.isSessionObject && (configuration.readOnly || store.isReadOnly))
        guard current.bool(.destroyable) ?? true else {
            throw KeychainError(
                .actionProhibited, "the object is not destroyable (CKA_DESTROYABLE is false)")
        }
        guard try KeychainError.mapping({ try store.delete(reference.rowID) }) else {
            throw KeychainError(.objectNotFound, "the object does not exist (deleted?)")
        }
    }

    /// Removes session objects whose session ended. Never fails: the session store is
    /// private to this process.
    public func discardSessionObjects(_ references: [ObjectReference]) {
        lock.withLock {
            guard let sessionStore else { return }
            for reference in references where reference.isSessionObject {
                _ = try? sessionStore.delete(reference.rowID)
            }
        }
    }

    /// References of the objects matching every attribute of `template` (C_FindObjectsInit,
    /// SecItemCopyMatching), token objects first. Private objects only when the context may
    /// see them. Each lookup is an index seek on the template's most selective attribute.
    public func findObjects(_ template: AttributeSet, context: AccessContext) throws(KeychainError)
        -> [ObjectReference]
    {
        var terms = template
        if !context.userLoggedIn {
            if template.bool(.private) == true { return [] }
            terms[.private] = [0]
        }
        let uid = terms.removeValue(forKey: .uniqueID)
        let ordered = terms.sorted { Token.selectivity($0.key) < Token.selectivity($1.key) }
            .map { StoredAttribute($0.key.rawValue, $0.value) }
        let wantsToken = template.bool(.token) != false
        let wantsSession = template.bool(.token) != true
        return try lock.withLock { () throws(KeychainError) in
            var found: [ObjectReference] = []
            if wantsToken {
                let store = try store()
                let ids = try KeychainError.mapping {
                    try Token.find(
                        ordered, id: uid.map { rowID(forUniqueID: $0, isSession: false) }, in: store)
                }
                found += ids.map { ObjectReference(isSessionObject: false, rowID: $0) }
            }
            if wantsSession, let sessionStore {
                let ids = try KeychainError.mapping {
                    try Token.find(
                        ordered, id: uid.map { rowID(forUniqueID: $0, isSession: true) }, in: sessionStore)
                }
                found += ids.map { ObjectReference(isSessionObject: true, rowID: $0) }
            }
            return found
        }
    }

    /// Finds by terms, or, when the template names a unique ID (`id` is then non-nil), checks
    /// the terms on the one object it names (`.some(nil)`: a unique ID of another store).
    private static func find(_ terms: [StoredAttribute], id: Int64??, in store: ObjectStore) throws -> [Int64]
    {
        guard let id else { return try store.find(terms) }
        guard let id else { return [] }
        return try store.read {
            guard try store.contains(id) else { return [] }
            let matches = try terms.allSatisfy { try store.attribute($0.type, of: id) == $0.value }
            return matches ? [id] : []
        }
    }

    /// Lower is more selective: the find query is driven by the first indexable term.
    private static func selectivity(_ type: AttributeType) -> Int {
        switch type {
        case .serialNumber: 0
        case .id: 1
        case .label: 2
        case .subject: 3
        case .hashOfSubjectPublicKey, .checkValue: 4
        case .issuer: 5
        case .value: 6
        case .application, .objectID: 7
        case .class, .token, .private, .certificateType: 100
        default: 50
        }
    }

    private static func policy(of attributes: AttributeSet) throws(KeychainError) -> ObjectPolicy {
        guard let rawClass = attributes.ulong(.class),
            let policy = ObjectPolicy.forClass(ObjectClass(rawValue: rawClass))
        else { throw KeychainError(.storageCorrupt, "stored object has an unknown class") }
        return policy
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
