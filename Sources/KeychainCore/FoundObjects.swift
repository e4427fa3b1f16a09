internal import KeychainStorage

/// An object a find returned, with its attributes as `Token.attributes(of:context:revealing:)`
/// gives them.
public struct FoundObject: Sendable {
    public var reference: ObjectReference
    public var attributes: AttributeSet
}

/// An object's stored attributes as read while the store's change counter had `changeCount`:
/// current for as long as the counter keeps that value (no process has written since).
struct CachedObject {
    var rows: [StoredAttribute]
    var changeCount: UInt64
}

extension Token {
    /// How many objects `objectCache` holds at most; a full cache starts again empty.
    static let objectCacheLimit = 64

    /// The objects matching every attribute of `template`, as `findObjects` finds them, each
    /// with its attributes as `attributes(of:context:revealing:)` reads them: the same rules
    /// (private objects only with a login this token honours, sealed values opened only when
    /// asked for and revealable), in one lock and at most one read transaction per store,
    /// each object read once. A keychain's find by service and account, and its read of the
    /// password, were six transactions and seven reads of the object before.
    ///
    /// An object found by its unique ID right after a find read it (and no process wrote the
    /// store since, by its change counter) is not read again.
    public func findObjectsWithAttributes(
        _ template: AttributeSet, context: AccessContext, revealing types: Set<AttributeType>? = nil
    ) throws(CoreError) -> [FoundObject] {
        var terms = template
        let uid = terms.removeValue(forKey: .uniqueID)
        let wantsToken = template.bool(.token) != false
        let wantsSession = template.bool(.token) != true
        return try lock.withLock { () throws(CoreError) in
            // Private objects are found only by a login this token still honours (`checkLogin`).
            // The counter is read once, for that check and for what the find keeps.
            let changeCount = persistentStore?.changeCount
            checkLogin(changeCount: changeCount)
            if !(context.userLoggedIn && login?.user == .user) {
                if template.bool(.private) == true { return [] }
                terms[.private] = [0]
            }
            let ordered = terms.sorted { Token.selectivity($0.key) < Token.selectivity($1.key) }
                .map { StoredAttribute($0.key.rawValue, $0.value) }
            var found: [FoundObject] = []
            if wantsToken {
                found += try records(
                    ordered, uid: uid, isSession: false, in: try store(), changeCount: changeCount, context,
                    types)
            }
            if wantsSession, let sessionStore {
                found += try records(
                    ordered, uid: uid, isSession: true, in: sessionStore,
                    changeCount: sessionStore.changeCount,
                    context, types)
            }
            return found
        }
    }

    /// The matching objects of one store, read and revealed in one read transaction (the
    /// token key's check, when a value is opened, reads the store too). `changeCount`: the
    /// store's, read just now (nil: unknown, nothing is kept or taken from `objectCache`).
    /// `lock` must be held.
    private func records(
        _ terms: [StoredAttribute], uid: [UInt8]?, isSession: Bool, in store: ObjectStore,
        changeCount: UInt64?, _ context: AccessContext, _ types: Set<AttributeType>?
    ) throws(CoreError) -> [FoundObject] {
        func visible(_ rows: [(id: Int64, attributes: [StoredAttribute])]) throws(CoreError) -> [FoundObject]
        {
            var found: [FoundObject] = []
            for row in rows {
                let reference = ObjectReference(isSessionObject: isSession, rowID: row.id)
                if let attributes = try visibleObject(row.attributes, reference, context, types) {
                    found.append(FoundObject(reference: reference, attributes: attributes))
                }
            }
            return found
        }
        var id: Int64?
        if let uid {
            // A unique ID names one object (or none: one of another store).
            guard let named = rowID(forUniqueID: uid, isSession: isSession) else { return [] }
            let reference = ObjectReference(isSessionObject: isSession, rowID: named)
            if let cached = objectCache[reference], let changeCount, cached.changeCount == changeCount {
                guard ObjectStore.matches(cached.rows, terms) else { return [] }
                return try visible([(named, cached.rows)])
            }
            id = named
        }
        return try CoreError.mapping {
            try store.read { () throws -> [FoundObject] in
                let before = changeCount
                var rows: [(id: Int64, attributes: [StoredAttribute])] = []
                if let id {
                    if let attributes = try store.attributes(of: id), ObjectStore.matches(attributes, terms) {
                        rows = [(id, attributes)]
                    }
                } else {
                    rows = try store.records(matching: terms)
                }
                if let before, before == store.changeCount {
                    remember(rows, isSession: isSession, at: before)
                }
                return try visible(rows)
            }
        }
    }

    /// Keeps objects just read in `objectCache`. `lock` must be held.
    private func remember(
        _ rows: [(id: Int64, attributes: [StoredAttribute])], isSession: Bool, at changeCount: UInt64
    ) {
        guard rows.count <= Token.objectCacheLimit else { return }
        if objectCache.count + rows.count > Token.objectCacheLimit { objectCache.removeAll() }
        for row in rows {
            objectCache[ObjectReference(isSessionObject: isSession, rowID: row.id)] = CachedObject(
                rows: row.attributes, changeCount: changeCount)
        }
    }

    /// An object's attributes as read with `types` revealed; nil when it is private and the
    /// context may not see it. `lock` must be held, and `checkLogin` run in this hold.
    private func visibleObject(
        _ rows: [StoredAttribute], _ reference: ObjectReference, _ context: AccessContext,
        _ types: Set<AttributeType>?
    ) throws(CoreError) -> AttributeSet? {
        let stored: AttributeSet
        do {
            stored = try storedObject(rows, reference, context: context, loginChecked: true)
        } catch  where error.code == .objectNotFound {
            return nil
        }
        return try readable(stored, revealing: types)
    }
}
