internal import KeychainCrypto
internal import KeychainStorage

/// Changing, copying and destroying objects (C_SetAttributeValue, C_CopyObject,
/// C_DestroyObject; SecItemUpdate, SecItemDelete). Every change is checked by the one rule
/// function (`ObjectPolicy.check`) against the object as stored, inside the write
/// transaction that makes it, so another process's change or deletion cannot come between.
extension Token {
    /// Changes attributes of an object (C_SetAttributeValue, SecItemUpdate). `pin`: the user's
    /// PIN, which an item whose access control needs it for each use asks for any change
    /// (`checkPINForChange`); PKCS#11 has no way to give it, so there such an item does not
    /// change.
    package func updateObject(
        _ reference: ObjectReference, with template: AttributeSet, context: AccessContext,
        pin: [UInt8]? = nil
    ) throws(CoreError) {
        let pinChecked = try checkPIN(pin)
        try withState { (state) throws(CoreError) in
            try state.updateLocked(reference, with: template, context: context, pinChecked: pinChecked)
        }
    }

    /// Changes the same attributes of several token objects in one transaction: all of them
    /// change, or none (SecItemUpdate applies to every match). Objects deleted meanwhile are
    /// skipped. Returns the references changed. `pin` as for `updateObject`.
    package func updateObjects(
        _ references: [ObjectReference], with template: AttributeSet, context: AccessContext,
        pin: [UInt8]? = nil
    ) throws(CoreError) -> [ObjectReference] {
        let pinChecked = try checkPIN(pin)
        return try inOneTransaction(references) { (state, reference) throws(CoreError) in
            try state.updateLocked(reference, with: template, context: context, pinChecked: pinChecked)
        }
    }

    /// Checks a PIN given for a change as a context-specific login (a failure counted, as for
    /// `protectedValue`); false when none is given. Runs before the state's lock is taken: the PIN's
    /// derivation is slow and takes the lock itself.
    private func checkPIN(_ pin: [UInt8]?) throws(CoreError) -> Bool {
        guard let pin else { return false }
        try reauthenticateUser(pin: pin)
        return true
    }

    /// An item whose access control needs the PIN for each use (a password's value: see
    /// `protectedValue`) changes only with that PIN, checked for this change: otherwise a
    /// process without the PIN could replace the value, or the item's identity, that the PIN
    /// guards. As on Apple platforms, where any SecItemUpdate of such an item asks for
    /// authentication. Without the PIN this answers as a use of a key that needs a
    /// context-specific login does (CKR_USER_NOT_LOGGED_IN, v2.40 §5.5; errSecInteractionNotAllowed
    /// for a call that may not ask).
    static func checkPINForChange(of current: AttributeSet, pinChecked: Bool) throws(CoreError) {
        guard !pinChecked, current.ulong(.class) == ObjectClass.data.rawValue,
            AccessControl.needsPINForEachUse(current)
        else { return }
        throw CoreError(
            .userNotLoggedIn,
            "the item's access control needs the user PIN for each use, changes included: give it "
                + "(kSecUseAuthenticationContext, or pin:); PKCS#11 has no way to")
    }

    /// Destroys several token objects in one transaction: all of them go, or none
    /// (SecItemDelete applies to every match). Objects deleted meanwhile are skipped.
    /// Returns the references destroyed.
    package func destroyObjects(_ references: [ObjectReference], context: AccessContext)
        throws(CoreError) -> [ObjectReference]
    {
        try inOneTransaction(references) { (state, reference) throws(CoreError) in
            try state.destroyLocked(reference, context: context)
        }
    }

    /// Runs `body` on each reference inside one write transaction of the token store, with
    /// the state's lock held; a reference whose object no longer exists is left out of the result.
    private func inOneTransaction(
        _ references: [ObjectReference], _ body: (TokenState, ObjectReference) throws(CoreError) -> Void
    ) throws(CoreError) -> [ObjectReference] {
        guard !references.isEmpty else { return [] }
        return try withState { (state) throws(CoreError) in
            let persistent = try state.store()
            return try CoreError.mapping {
                try persistent.write {
                    var done: [ObjectReference] = []
                    for reference in references {
                        do {
                            try body(state, reference)
                            done.append(reference)
                        } catch let error as CoreError where error.code == .objectNotFound {
                            continue
                        }
                    }
                    return done
                }
            }
        }
    }

    /// Copies an object with changes (C_CopyObject): a real copy, key material included, that
    /// signs and decrypts like the original, changed only as v2.40 §5.7 lets a copy change
    /// (`ObjectPolicy.check`, `.copy`). Within one store the sealed values move as they are
    /// (still sealed, bound to the original's seal ID): a token key that is not private copies
    /// to a token object without a login. A copy into the other store (CKA_TOKEN changed), or
    /// one that changes a sealed value, opens the values under the original's key and seals
    /// them again under the copy's (Sealing.swift).
    package func copyObject(
        _ reference: ObjectReference, with template: AttributeSet, context: AccessContext
    ) throws(CoreError) -> ObjectReference {
        try withState { (state) throws(CoreError) in
            let source = try state.loadStored(reference, context: context)
            guard source.bool(.copyable) ?? true else {
                throw CoreError(.actionProhibited, "the object is not copyable (CKA_COPYABLE is false)")
            }
            let policy = try Token.policy(of: source)
            try policy.check(template, .copy, current: source, asSecurityOfficer: context.securityOfficer)
            var attributes = source.merging(template) { _, new in new }
            attributes[.uniqueID] = nil
            if AccessControl.needsPINForEachUse(source), attributes.bool(.private) != true {
                // A public copy would hold the value in clear, past the PIN it needs.
                throw CoreError(
                    .attributeValueInvalid,
                    "an item whose access control needs the PIN cannot be copied public")
            }
            // What the copy may change, C_SetAttributeValue could: the PIN a protected item
            // needs for a change cannot be given here (`checkPINForChange`).
            if !template.keys.allSatisfy({ policy.specs[$0]?.rules.contains(.settableOnCopy) == true }) {
                try Token.checkPINForChange(of: source, pinChecked: false)
            }
            policy.settleHistory(&attributes, after: .copy, before: source)
            policy.settleTrust(&attributes, asSecurityOfficer: context.securityOfficer)
            var isSealed = source[.sealID] != nil
            let sourceSealed = Token.sealedTypes(of: source)
            if isSealed,
                Token.sealedTypes(of: attributes).isEmpty
                    || (source.bool(.token) == true) != (attributes.bool(.token) == true)
                    || !sourceSealed.isDisjoint(with: template.keys)
            {
                // A private object copied into a public one (its values are no longer sealed),
                // a copy into the other store, or a new sealed value: the original's values
                // open under its own key, and `insertLocked` seals them under the copy's.
                let opened = try state.revealed(source, sourceSealed)
                for type in sourceSealed where template[type] == nil { attributes[type] = opened[type] }
                attributes[.sealID] = nil
                isSealed = false
            }
            let uniqueKey: [UInt8]? =
                policy.objectClass == .certificate
                ? AttributeValue.encode(CertificateType.x509.rawValue) + (attributes[.issuer] ?? [])
                    + (attributes[.serialNumber] ?? [])
                : NewObject.passwordKey(of: attributes)
            return try state.insertLocked(
                NewObject(attributes: attributes, uniqueKey: uniqueKey, isSealed: isSealed), context: context)
        }
    }

    /// Destroys an object (C_DestroyObject, SecItemDelete).
    package func destroyObject(_ reference: ObjectReference, context: AccessContext)
        throws(CoreError)
    {
        try withState { (state) throws(CoreError) in
            try state.destroyLocked(reference, context: context)
        }
    }

}

extension TokenState {
    /// The object as stored, once the context may change it (v2.40 §6.7.1 table 6), and
    /// with the caller's write transaction of `store` open.
    fileprivate func changeable(_ reference: ObjectReference, in store: ObjectStore, context: AccessContext)
        throws(CoreError) -> AttributeSet
    {
        let current = try loadStored(reference, context: context)
        try context.checkWrite(
            tokenObject: !reference.isSessionObject, privateObject: current.bool(.private) ?? false,
            writeProtected: !reference.isSessionObject && (configuration.readOnly || store.isReadOnly))
        return current
    }

    /// Changes attributes of an object. The read, the rule check and
    /// the write are one transaction, so another process's change or deletion cannot come
    /// between them.
    fileprivate func updateLocked(
        _ reference: ObjectReference, with template: AttributeSet, context: AccessContext,
        pinChecked: Bool
    ) throws(CoreError) {
        let store = try store(for: reference)
        try CoreError.mapping {
            try store.write { () throws in
                let current = try changeable(reference, in: store, context: context)
                guard current.bool(.modifiable) ?? true else {
                    throw CoreError(
                        .actionProhibited, "the object is not modifiable (CKA_MODIFIABLE is false)")
                }
                let policy = try Token.policy(of: current)
                try policy.check(
                    template, .update, current: current, asSecurityOfficer: context.securityOfficer)
                try Token.checkPINForChange(of: current, pinChecked: pinChecked)
                var changed = current.merging(template) { _, new in new }
                policy.settleHistory(&changed, after: .update, before: current)
                var changes = template
                changes[.modificationDate] = Token.now()
                AppleValueTypes.settle(&changes, current: current)
                for type: AttributeType in [.alwaysSensitive, .neverExtractable]
                where changed[type] != current[type] {
                    changes[type] = changed[type]
                }
                let toSeal = Token.sealedTypes(of: current).intersection(changes.keys)
                if !toSeal.isEmpty {
                    guard let sealID = current[.sealID] else {
                        throw CoreError(.storageCorrupt, "a sealed object has no seal ID")
                    }
                    // The seal ID binds each box; CKA_TOKEN picks the key (Sealing.swift).
                    changes[.sealID] = sealID
                    changes[.token] = current[.token]
                    changes = try sealed(changes, types: toSeal)
                    changes[.sealID] = nil
                    changes[.token] = template[.token]
                }
                let rows = changes.map { StoredAttribute($0.key.rawValue, $0.value) }
                // A password given another service, account (…) takes that identity's key.
                let uniqueKey =
                    PasswordClass.keyTypes.isDisjoint(with: template.keys)
                    ? nil : NewObject.passwordKey(of: changed)
                do {
                    try store.update(reference.rowID, attributes: rows, uniqueKey: uniqueKey)
                } catch let error as StorageError where error.code == .constraint {
                    throw NewObject.duplicate(changed)
                }
            }
        }
    }

    /// Destroys an object.
    fileprivate func destroyLocked(_ reference: ObjectReference, context: AccessContext)
        throws(CoreError)
    {
        let store = try store(for: reference)
        try CoreError.mapping {
            try store.write { () throws in
                let current = try changeable(reference, in: store, context: context)
                guard current.bool(.destroyable) ?? true else {
                    throw CoreError(
                        .actionProhibited, "the object is not destroyable (CKA_DESTROYABLE is false)")
                }
                if current[.trustMarker] == [1] {
                    // Removing a certificate removes its trust settings: a distrust set with
                    // the PIN must not be undone without it (the chain would be trusted again
                    // through the system's anchors).
                    checkLogin()
                    try context.checkTrustWrite(
                        tokenObject: !reference.isSessionObject,
                        writeProtected: !reference.isSessionObject
                            && (configuration.readOnly || store.isReadOnly),
                        hasUserPIN: try self.store().metadata(Token.Key.userPIN) != nil,
                        loggedIn: authentication.login != nil)
                }
                guard try store.delete(reference.rowID) else {
                    throw CoreError(.objectNotFound, "the object does not exist (deleted?)")
                }
            }
        }
    }
}
