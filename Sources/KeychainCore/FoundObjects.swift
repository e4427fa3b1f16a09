internal import KeychainStorage

/// An object a find returned, with its attributes as `Token.attributes(of:context:revealing:)`
/// gives them.
package struct FoundObject: Sendable {
    package var reference: ObjectReference
    package var attributes: AttributeSet
}

/// An object's stored attributes (`Token.storedAttributes`) as read while the store's change
/// counter had `changeCount`: current for as long as the counter keeps that value (no process
/// has written since).
struct CachedObject {
    var attributes: AttributeSet
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
    package func findObjectsWithAttributes(
        _ template: AttributeSet, context: AccessContext, revealing types: Set<AttributeType>? = nil
    ) throws(CoreError) -> [FoundObject] {
        let tokenTerm = template.bool(.token)
        let wantsToken = tokenTerm != false
        let wantsSession = tokenTerm != true
        return try withState { (state) throws(CoreError) in
            // Private objects are found only by a login this token still honours (`checkLogin`).
            // The counter is read once, for that check and for what the find keeps.
            let changeCount = state.objects.persistentStore?.changeCount
            state.checkLogin(changeCount: changeCount)
            let seesPrivate = context.userLoggedIn && state.authentication.login?.user == .user
            guard let search = Token.search(template, seesPrivate: seesPrivate) else { return [] }
            let uid = search.uniqueID
            var found: [FoundObject] = []
            if wantsToken {
                found += try state.records(
                    search.terms, uid: uid, isSession: false, in: try state.store(),
                    changeCount: changeCount, context, types)
            }
            if wantsSession, let sessionStore = state.objects.sessionStore {
                found += try state.records(
                    search.terms, uid: uid, isSession: true, in: sessionStore,
                    changeCount: sessionStore.changeCount,
                    context, types)
            }
            return found
        }
    }

}

extension TokenState {
    /// The matching objects of one store, read and revealed in one read transaction (the
    /// token key's check, when a value is opened, reads the store too). `changeCount`: the
    /// store's, read just now (nil: unknown, nothing is kept or taken from `objectCache`).
    fileprivate func records(
        _ terms: [StoredAttribute], uid: [UInt8]?, isSession: Bool, in store: ObjectStore,
        changeCount: UInt64?, _ context: AccessContext, _ types: Set<AttributeType>?
    ) throws(CoreError) -> [FoundObject] {
        func reference(_ id: Int64) -> ObjectReference {
            ObjectReference(isSessionObject: isSession, rowID: id)
        }
        func visible(_ objects: [(ObjectReference, AttributeSet)]) throws(CoreError) -> [FoundObject] {
            var found: [FoundObject] = []
            for (reference, stored) in objects {
                if let attributes = try visibleObject(stored, context, types) {
                    found.append(FoundObject(reference: reference, attributes: attributes))
                }
            }
            return found
        }
        var id: Int64?
        if let uid {
            // A unique ID names one object (or none: one of another store).
            guard let named = rowID(forUniqueID: uid, isSession: isSession) else { return [] }
            if let cached = objects.objectCache[reference(named)], let changeCount,
                cached.changeCount == changeCount
            {
                guard terms.allSatisfy({ cached.attributes[AttributeType($0.type)] == $0.value }) else {
                    return []
                }
                return try visible([(reference(named), cached.attributes)])
            }
            id = named
        }
        return try CoreError.mapping {
            try store.read { () throws -> [FoundObject] in
                var rows: [(id: Int64, attributes: [StoredAttribute])] = []
                if let id {
                    if let attributes = try store.attributes(of: id), ObjectStore.matches(attributes, terms) {
                        rows = [(id, attributes)]
                    }
                } else {
                    rows = try store.records(matching: terms)
                }
                let objects = rows.map {
                    (reference($0.id), storedAttributes($0.attributes, reference($0.id)))
                }
                // Kept only when no write began since the counter was read, before the reads.
                if let changeCount, changeCount == store.changeCount { remember(objects, at: changeCount) }
                return try visible(objects)
            }
        }
    }

    /// `loadStored`, served from `objectCache` while the store's change counter keeps the
    /// value it had when the object was read (no process has written since: C_GetAttributeValue
    /// asked attribute by attribute, as p11tool asks, reads the object once), and kept there
    /// when the counter did not move during the read. The visibility check runs every time.
    func loadStoredKept(_ reference: ObjectReference, context: AccessContext) throws(CoreError)
        -> AttributeSet
    {
        let store = try store(for: reference)
        let before = store.changeCount
        if let before, let cached = objects.objectCache[reference], cached.changeCount == before {
            try checkVisible(cached.attributes, context: context)
            return cached.attributes
        }
        let rows = try CoreError.mapping { try store.attributes(of: reference.rowID) }
        guard let rows else {
            throw CoreError(.objectNotFound, "the object does not exist (deleted?)")
        }
        let attributes = storedAttributes(rows, reference)
        if let before, before == store.changeCount { remember([(reference, attributes)], at: before) }
        try checkVisible(attributes, context: context)
        return attributes
    }

    /// Keeps objects just read in `objectCache`.
    fileprivate func remember(_ found: [(ObjectReference, AttributeSet)], at changeCount: UInt64) {
        guard found.count <= Token.objectCacheLimit else { return }
        if objects.objectCache.count + found.count > Token.objectCacheLimit {
            objects.objectCache.removeAll()
        }
        for (reference, attributes) in found {
            objects.objectCache[reference] = CachedObject(attributes: attributes, changeCount: changeCount)
        }
    }

    /// An object's attributes as read with `types` revealed; nil when it is private and the
    /// context may not see it. `checkLogin` must have run in this hold of the lock.
    fileprivate func visibleObject(
        _ stored: AttributeSet, _ context: AccessContext, _ types: Set<AttributeType>?
    )
        throws(CoreError) -> AttributeSet?
    {
        do {
            try checkVisible(stored, context: context, loginChecked: true)
        } catch  where error.code == .objectNotFound {
            return nil
        }
        return try readable(stored, revealing: types)
    }
}
