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
        throws(CoreError)
    {
        if tokenObject, writeProtected {
            throw CoreError(.tokenWriteProtected, "the token is write-protected")
        }
        if tokenObject, !readWrite {
            throw CoreError(.sessionReadOnly, "token objects can be changed only in a read/write session")
        }
        if privateObject, !userLoggedIn {
            throw CoreError(.userNotLoggedIn, "private objects need a logged-in user")
        }
    }

    /// Whether the caller may see an object at all.
    public func canSee(privateObject: Bool) -> Bool { !privateObject || userLoggedIn }
}

/// One token: a store of items and the rules every face applies to them. The façade every
/// face uses; what it holds lives in `TokenState`, by responsibility (ARCHITECTURE.md §4.4).
///
/// Thread-safe: the state is reached only inside `withState`, which holds its lock (the lock
/// order is the PKCS#11 adapter's session lock, then `logins`, then the state's lock). Only
/// parsed keys and found objects are kept across calls, and only while the store's change
/// counter says no process has written since they were read, so other processes' changes
/// are seen on the next call.
package final class Token: Sendable {
    package let configuration: TokenConfiguration
    /// The stores, the login and the kept keys, behind one lock: it serialises the store
    /// connection, and a login ends with everything kept under it in one hold.
    private let state: Locked<TokenState>
    /// Held for the whole of a login, PIN derivation included, so that two threads of this
    /// process cannot both log in (as SO and as user) by checking before either has finished.
    /// It comes before the state's lock by construction (`OrderedLock`); the slow derivation
    /// runs with the state's lock free.
    let logins: OrderedLock<TokenState>

    /// Who is logged in, published by the state (`loggedInUser`).
    let loggedIn = LoggedInUser()

    package init(configuration: TokenConfiguration) {
        self.configuration = configuration
        let state = Locked(TokenState(configuration: configuration, loggedIn: loggedIn))
        self.state = state
        logins = OrderedLock(before: state)
    }

    /// Runs `body` with the state's lock held: the only way to the token's state.
    func withState<T, E: Error>(_ body: (TokenState) throws(E) -> T) throws(E) -> T {
        try state.withLock(body)
    }

    /// Opens the store now, reporting why it cannot be opened.
    package func open() throws(CoreError) {
        try withState { (state) throws(CoreError) in _ = try state.store() }
    }

    /// True when the store exists or can be created.
    package var isPresent: Bool { openError == nil }

    /// Why the store cannot be opened (tried again now), or nil when it is open: the reason
    /// a face reports instead of a bare "not present" (a FIFO, a damaged file, a directory
    /// it may not create…).
    package var openError: CoreError? {
        withState { state -> CoreError? in
            do throws(CoreError) {
                _ = try state.store()
                return nil
            } catch {
                return error
            }
        }
    }

    /// True when this process cannot write the store (configuration or permissions).
    package var isWriteProtected: Bool {
        configuration.readOnly
            || withState { (try? $0.store().isReadOnly) ?? true }
    }

    /// A stable serial number for CK_TOKEN_INFO, kept in the store.
    package var serialNumber: String {
        withState { state in (try? state.store()).map { _ in state.objects.storeSerial } ?? "" }
    }

}

extension TokenState {
    // MARK: Opening

    /// The persistent store, opened (and created, with its directory) on first use. A failure
    /// is not remembered: the next call tries again (`openError` reports its reason).
    func store() throws(CoreError) -> ObjectStore {
        if let store = objects.persistentStore { return store }
        let path = configuration.path
        let create = !configuration.readOnly
        if create, !ObjectStore.isServerLocation(path) { TokenState.createDirectory(forFile: path) }
        do {
            // The engine is the location's (a file, or `postgresql:`): the rules do not know it.
            let store = try ObjectStore.open(
                path, token: configuration.storeName, create: create, durability: configuration.durability,
                server: configuration.serverOptions)
            var serial = try store.metadata(TokenState.serialKey).map { String(decoding: $0, as: UTF8.self) }
            if serial == nil, !store.isReadOnly {
                // Read again and set in one write: processes opening a new store at once all
                // keep the serial the first of them wrote.
                serial = try store.write { () throws -> String in
                    if let stored = try store.metadata(TokenState.serialKey) {
                        return String(decoding: stored, as: UTF8.self)
                    }
                    let created = try SecureRandom.bytes(8).map { String($0, radix: 16).leftPadded(2) }
                        .joined()
                    try store.setMetadata(TokenState.serialKey, Array(created.utf8))
                    return created
                }
            }
            // A read-only store made by an older writer: derive a stable value from its path.
            objects.storeSerial =
                serial
                ?? DigestAlgorithm.sha1.hash(Array(path.utf8)).prefix(8)
                .map { String($0, radix: 16).leftPadded(2) }.joined()
            objects.persistentStore = store
            return store
        } catch let error as StorageError {
            throw CoreError(error)
        } catch {
            throw CoreError(.tokenNotPresent, "cannot open store \(ObjectStore.printable(path)): \(error)")
        }
    }

    func volatileStore() throws(CoreError) -> ObjectStore {
        if let store = objects.sessionStore { return store }
        let store = ObjectStore(engine: MemoryStore())
        let random = try CoreError.mapping { try SecureRandom.bytes(8) }
        let sealingKey = try CoreError.mapping { try SecureRandom.secret(SecretBox.keyLength) }
        let sealer = try CoreError.mapping { try SealingContext(key: sealingKey) }
        objects.sessionPrefix = "s" + random.map { String($0, radix: 16).leftPadded(2) }.joined()
        objects.sessionSealingKey = sealingKey
        objects.sessionSealer = sealer
        objects.sessionStore = store
        return store
    }

    func store(for reference: ObjectReference) throws(CoreError) -> ObjectStore {
        reference.isSessionObject ? try volatileStore() : try store()
    }

    /// Creates the parent directory, mode 0700, with any missing ancestors.
    fileprivate static func createDirectory(forFile path: String) {
        var components = path.split(separator: "/", omittingEmptySubsequences: false).dropLast()
        guard !components.isEmpty else { return }
        var prefix = components.removeFirst().isEmpty ? "" : "."
        for component in components where !component.isEmpty {
            // Appended one String at a time: `"/" + component` (a Substring) was generic code
            // whose types the runtime builds by mangled name, 30 µs of a module's load.
            prefix += "/"
            prefix += String(component)
            mkdir(prefix, 0o700)
        }
    }

    fileprivate static let serialKey = "serial"

    /// CKA_UNIQUE_ID: the store's serial (or this process's session prefix) and the row ID,
    /// which is never reused. Unique across tokens and for the life of the store, with no
    /// column or index of its own.
    func uniqueID(of reference: ObjectReference) -> String {
        (reference.isSessionObject ? objects.sessionPrefix : objects.storeSerial) + ":"
            + String(reference.rowID)
    }

    /// The row ID a unique ID names in the store `isSession` selects, or nil.
    func rowID(forUniqueID uid: [UInt8], isSession: Bool) -> Int64? {
        let text = String(decoding: uid, as: UTF8.self)
        let prefix = (isSession ? objects.sessionPrefix : objects.storeSerial) + ":"
        guard text.hasPrefix(prefix) else { return nil }
        return Int64(text.dropFirst(prefix.count))
    }

}

extension Token {
    // MARK: Objects

    /// Creates an object from a template (C_CreateObject, SecItemAdd). CKA_TOKEN in the
    /// template chooses the token store or the session store.
    package func createObject(_ template: AttributeSet, context: AccessContext)
        throws(CoreError) -> ObjectReference
    {
        let object = try NewObject(template: template, asSecurityOfficer: context.securityOfficer)
        try checkImportedKeySize(object)
        return try withState { (state) throws(CoreError) in
            // A private key a failed multi-object write left behind, written again exactly as
            // stored, is taken up again rather than stored twice (KeyReimport.swift).
            if let stored = try state.storedOrphanTwinLocked(of: object, context: context) { return stored }
            return try state.insertLocked(object, context: context)
        }
    }

    /// Creates several objects in one transaction: all are stored, or none (a batch import).
    package func createObjects(_ templates: [AttributeSet], context: AccessContext)
        throws(CoreError) -> [ObjectReference]
    {
        var objects: [NewObject] = []
        for template in templates {
            let object = try NewObject(template: template, asSecurityOfficer: context.securityOfficer)
            try checkImportedKeySize(object)
            objects.append(object)
        }
        return try insertAll(objects, context: context)
    }

    /// Stores objects in one transaction: all, or none.
    func insertAll(_ objects: [NewObject], context: AccessContext) throws(CoreError) -> [ObjectReference] {
        guard !objects.isEmpty else { return [] }
        let isTokenObject = objects.map { $0.attributes.bool(.token) ?? false }
        return try withState { (state) throws(CoreError) in
            // Every store the batch writes to takes part in the transaction: a failure must
            // not leave the batch's session objects behind either. A store it does not write
            // to stays out (a batch of session objects needs no writable token store).
            let persistent = isTokenObject.contains(true) ? try state.store() : nil
            let session = isTokenObject.contains(false) ? try state.volatileStore() : nil
            return try CoreError.mapping {
                try Token.write(persistent) {
                    try Token.write(session) {
                        var references: [ObjectReference] = []
                        for object in objects {
                            references.append(try state.insertLocked(object, context: context))
                        }
                        return references
                    }
                }
            }
        }
    }

    /// Runs `body` in a write transaction of `store`, or as it is when there is no store.
    static func write<T>(_ store: ObjectStore?, _ body: () throws -> T) throws -> T {
        guard let store else { return try body() }
        return try store.write(body)
    }

    /// The attributes of an object a caller may read, CKA_UNIQUE_ID included. Sealed values
    /// are opened only when asked for in `types` (nil: every one) and revealable: a
    /// sensitive or unextractable key's secret parts never are, and reading a key's label
    /// opens nothing. Private objects are not found unless the context may see them.
    package func attributes(
        of reference: ObjectReference, context: AccessContext, revealing types: Set<AttributeType>? = nil
    ) throws(CoreError) -> AttributeSet {
        try withState { (state) throws(CoreError) in
            try state.readable(try state.loadStored(reference, context: context), revealing: types)
        }
    }

    /// One attribute of an object as a caller may read it (C_GetAttributeValue, v2.40 §5.7).
    package enum AttributeReading: Sendable, Equatable {
        case value([UInt8])
        /// The object has it, but its value is never revealed (CKR_ATTRIBUTE_SENSITIVE): a
        /// sensitive or unextractable key's secret part, or a sealed value with no login.
        case sensitive
        /// The object has no such attribute (CKR_ATTRIBUTE_TYPE_INVALID).
        case absent
    }

    /// The attributes `types` of an object, each as a caller may read it. Only the sealed
    /// values asked for are opened: reading a key's label opens none of its secret parts.
    package func read(_ types: [AttributeType], of reference: ObjectReference, context: AccessContext)
        throws(CoreError) -> [AttributeReading]
    {
        try withState { (state) throws(CoreError) in
            let loaded = try state.loadStoredKept(reference, context: context)
            let stored = try state.withEffectiveTrust(loaded, stored: loaded)
            let hidden: Set<AttributeType> = [
                .keyMaterial, .sealID, .trustSettings, .trustMarker, .trustSeal,
            ]
            let sensitive = Token.sensitiveTypes(of: stored)
            let sealed = Token.sealedTypes(of: stored)
            var toOpen = Set(types).intersection(sealed).subtracting(sensitive).subtracting(hidden)
            // Without its key a sealed value cannot be opened: it reads as sensitive.
            let opens = state.canOpen(stored)
            if !opens { toOpen = [] }
            let opened = try state.revealed(stored, toOpen)
            return types.map { type in
                guard !hidden.contains(type), stored[type] != nil else { return .absent }
                if sensitive.contains(type) || (sealed.contains(type) && !opens) { return .sensitive }
                return opened[type].map { .value($0) } ?? .absent
            }
        }
    }

    /// The attributes of `attributes` whose values are never revealed: a key's secret parts
    /// while it is sensitive or unextractable, and a data object's value while its access
    /// control needs the PIN for each use (CKR_ATTRIBUTE_SENSITIVE).
    package static func sensitiveTypes(of attributes: AttributeSet) -> Set<AttributeType> {
        if attributes.ulong(.class) == ObjectClass.data.rawValue, AccessControl.needsPINForEachUse(attributes)
        {
            return [.value]  // opened only with the PIN, by `protectedValue`
        }
        guard let policy = policy(ofStored: attributes), !policy.secretTypes.isEmpty,
            attributes.bool(.sensitive) != false || attributes.bool(.extractable) != true
        else { return [] }
        return policy.secretTypes
    }

    /// Removes session objects whose session ended. Never fails: the session store is
    /// private to this process.
    package func discardSessionObjects(_ references: [ObjectReference]) {
        withState { state in
            guard let sessionStore = state.objects.sessionStore else { return }
            for reference in references where reference.isSessionObject {
                _ = try? sessionStore.delete(reference.rowID)
            }
        }
    }

    /// References of the objects matching every attribute of `template` (C_FindObjectsInit,
    /// SecItemCopyMatching), token objects first. Private objects only when the context may
    /// see them. Each lookup is an index seek on the template's most selective attribute.
    package func findObjects(_ template: AttributeSet, context: AccessContext) throws(CoreError)
        -> [ObjectReference]
    {
        // Private objects are found only by a login this token still honours (`checkLogin`).
        let seesPrivate =
            context.userLoggedIn
            && withState { state in
                state.checkLogin()
                return state.authentication.login?.user == .user
            }
        guard let search = Token.search(template, seesPrivate: seesPrivate) else { return [] }
        let tokenTerm = template.bool(.token)
        let wantsToken = tokenTerm != false
        let wantsSession = tokenTerm != true
        return try withState { (state) throws(CoreError) in
            var found: [ObjectReference] = []
            if wantsToken {
                let store = try state.store()
                let ids = try CoreError.mapping {
                    try Token.find(
                        search.terms,
                        id: search.uniqueID.map { state.rowID(forUniqueID: $0, isSession: false) }, in: store)
                }
                for id in ids { found.append(ObjectReference(isSessionObject: false, rowID: id)) }
            }
            if wantsSession, let sessionStore = state.objects.sessionStore {
                let ids = try CoreError.mapping {
                    try Token.find(
                        search.terms,
                        id: search.uniqueID.map { state.rowID(forUniqueID: $0, isSession: true) },
                        in: sessionStore)
                }
                for id in ids { found.append(ObjectReference(isSessionObject: true, rowID: id)) }
            }
            return found
        }
    }

    /// What a find of `template` asks the stores: its terms, most selective first (the first
    /// indexed one drives the lookup), and apart its unique ID, which names one object. Without
    /// `seesPrivate` the terms also ask for CKA_PRIVATE false; nil when the template asks for
    /// private objects only, so that nothing can be found.
    ///
    /// Built straight into the array the stores take: copying the template to add CKA_PRIVATE
    /// and sorting its pairs were four allocations and a rehash on every find.
    static func search(_ template: AttributeSet, seesPrivate: Bool) -> (
        terms: [StoredAttribute], uniqueID: [UInt8]?
    )? {
        if !seesPrivate, template.bool(.private) == true { return nil }
        var terms: [StoredAttribute] = []
        terms.reserveCapacity(template.count + 1)
        var uniqueID: [UInt8]?
        for (type, value) in template {
            if type == .uniqueID {
                uniqueID = value
            } else if seesPrivate || type != .private {
                terms.append(StoredAttribute(type.rawValue, value))
            }
        }
        if !seesPrivate { terms.append(StoredAttribute(AttributeType.private.rawValue, Token.falseValue)) }
        terms.sort { Token.selectivity(AttributeType($0.type)) < Token.selectivity(AttributeType($1.type)) }
        return (terms, uniqueID)
    }

    /// CK_FALSE as an attribute value, made once.
    private static let falseValue: [UInt8] = [0]

    /// Finds by terms, or, when the template names a unique ID (`id` is then non-nil), checks
    /// the terms on the one object it names (`.some(nil)`: a unique ID of another store).
    private static func find(_ terms: [StoredAttribute], id: Int64??, in store: ObjectStore) throws -> [Int64]
    {
        guard let id else { return try store.find(terms) }
        guard let id else { return [] }
        // One read of the object (its own snapshot) for every term.
        guard let attributes = try store.attributes(of: id) else { return [] }
        return ObjectStore.matches(attributes, terms) ? [id] : []
    }

    /// Lower is more selective: the find query is driven by the first indexable term.
    static func selectivity(_ type: AttributeType) -> Int {
        switch type {
        case .serialNumber: 0
        case .id, .account: 1
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

    static func policy(of attributes: AttributeSet) throws(CoreError) -> ObjectPolicy {
        guard let policy = policy(ofStored: attributes) else {
            throw CoreError(.storageCorrupt, "stored object has an unknown class")
        }
        return policy
    }

    /// The rules of a stored object's class, or nil for a class the token does not know.
    static func policy(ofStored attributes: AttributeSet) -> ObjectPolicy? {
        attributes.ulong(.class).flatMap { ObjectPolicy.forClass(ObjectClass(rawValue: $0)) }
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

extension TokenState {
    /// Stores a new object. A key's secret parts, and the values of any
    /// private object, are sealed here, in the write transaction that stores them (so a
    /// re-initialisation by another process cannot slip in between): no path reaches the
    /// store with a key byte in clear (ARCHITECTURE.md §3.6, §6.3).
    func insertLocked(_ object: NewObject, context: AccessContext) throws(CoreError) -> ObjectReference {
        let store = try checkInsert(object, context: context)
        let isToken = object.attributes.bool(.token) ?? false
        do throws(CoreError) {
            let id = try CoreError.mapping {
                try store.write { () throws -> Int64 in
                    var attributes = object.attributes
                    let stamps = Token.stamps(for: attributes)
                    if attributes[.trustSettings] != nil, let der = attributes[.value] {
                        // CKA_TRUSTED from the SO at creation: sealed like any trust setting.
                        let settings = try TrustSettings.stored(in: attributes)
                        attributes.merge(try sealedTrustAttributes(settings, der: der)) { _, sealed in sealed
                        }
                    }
                    if !object.isSealed {
                        let types = Token.sealedTypes(of: attributes)
                        if !types.isEmpty {
                            attributes[.sealID] = try newSealID(tokenObject: isToken)
                            try seal(&attributes, types: types)
                        }
                    }
                    var rows: [StoredAttribute] = []
                    rows.reserveCapacity(attributes.count + stamps.count)
                    for (type, value) in attributes where !stamps.contains(where: { $0.type == type }) {
                        rows.append(StoredAttribute(type.rawValue, value))
                    }
                    for stamp in stamps { rows.append(StoredAttribute(stamp.type.rawValue, stamp.value)) }
                    return try store.insert(uniqueKey: object.uniqueKey, attributes: rows)
                }
            }
            return ObjectReference(isSessionObject: !isToken, rowID: id)
        } catch  where error.code == .duplicateItem {
            throw NewObject.duplicate(object.attributes)
        }
    }

    /// Every check a new object must pass before it is stored, and the store it goes to;
    /// Storing (`insertLocked`) and taking up a stored twin
    /// (KeyReimport.swift) both run it first, so neither gives a caller what the other refuses.
    func checkInsert(_ object: NewObject, context: AccessContext) throws(CoreError) -> ObjectStore {
        try AccessControl.checkKeyStaysInToken(object.attributes)
        let isToken = object.attributes.bool(.token) ?? false
        let isPrivate = object.attributes.bool(.private) ?? false
        let store = isToken ? try store() : try volatileStore()
        try context.checkWrite(
            tokenObject: isToken, privateObject: isPrivate,
            writeProtected: configuration.readOnly || store.isReadOnly)
        if isToken, authentication.login == nil, !object.isSealed,
            !Token.sealedTypes(of: object.attributes).isEmpty
        {
            // A token key that is not private still needs the token key: say what to do
            // first. A session object is sealed under the session key (Sealing.swift).
            _ = try currentTokenKey(toSeal: true)
        }
        return store
    }

    /// What `attributes(of:context:revealing:)` gives of an object as `loadStored` loaded
    /// it.
    func readable(_ stored: AttributeSet, revealing types: Set<AttributeType>?) throws(CoreError)
        -> AttributeSet
    {
        let hidden = Token.sensitiveTypes(of: stored).union([.keyMaterial])
        var wanted = Token.sealedTypes(of: stored).subtracting(hidden)
        if let types { wanted.formIntersection(types) }
        // A key that is not private is found without a login, but its sealed parts open
        // only with their key: without it they stay out, as if sensitive.
        if !canOpen(stored) { wanted = [] }
        var result = try withEffectiveTrust(try revealed(stored, wanted), stored: stored)
        // Trust settings are read through `trustSettings(ofCertificate:)` (Trust.swift).
        result[.trustSettings] = nil
        result[.trustMarker] = nil
        result[.trustSeal] = nil
        return result
    }

    /// An object as stored, sealed values still sealed, with its unique ID; checks that the
    /// context may see it.
    func loadStored(_ reference: ObjectReference, context: AccessContext) throws(CoreError)
        -> AttributeSet
    {
        let store = try store(for: reference)
        let rows = try CoreError.mapping { try store.attributes(of: reference.rowID) }
        guard let rows else {
            throw CoreError(.objectNotFound, "the object does not exist (deleted?)")
        }
        return try storedObject(rows, reference, context: context)
    }

    /// `loadStored` of rows already read.
    func storedObject(_ rows: [StoredAttribute], _ reference: ObjectReference, context: AccessContext)
        throws(CoreError) -> AttributeSet
    {
        let attributes = storedAttributes(rows, reference)
        try checkVisible(attributes, context: context)
        return attributes
    }

    /// An object's rows as attributes, with its unique ID: what `loadStored` gives, unchecked.
    func storedAttributes(_ rows: [StoredAttribute], _ reference: ObjectReference) -> AttributeSet {
        // Sized once: grown row by row, the table was rehashed several times per load.
        var attributes = AttributeSet(minimumCapacity: rows.count + 1)
        for row in rows { attributes[AttributeType(row.type)] = row.value }
        attributes[.uniqueID] = Array(uniqueID(of: reference).utf8)
        ObjectPolicy.settleStored(&attributes)
        return attributes
    }

    /// Throws `objectNotFound` unless the context may see the object; `loginChecked`: the
    /// caller ran `checkLogin` in this hold of the lock.
    func checkVisible(_ attributes: AttributeSet, context: AccessContext, loginChecked: Bool = false)
        throws(CoreError)
    {
        // A private object needs the context's word and this token's login: a context kept
        // from before a logout, or a login another process's re-initialisation ended, sees
        // nothing.
        let isPrivate = attributes.bool(.private) ?? false
        if isPrivate, !loginChecked { checkLogin() }
        guard context.canSee(privateObject: isPrivate), !isPrivate || authentication.login != nil else {
            throw CoreError(.objectNotFound, "the object is private: log in first")
        }
    }
}
