internal import KeychainCore

// What generic and internet passwords share: both are private data objects, found by an
// indexed term (the account, else service or server as CKA_APPLICATION), filtered on the rest, unique by the
// core's rule for their class (`NewObject.passwordKey`), and their secret is read apart from
// their attributes, with the PIN when their access control needs it.

/// One stored password: its object and its attributes, the secret left out.
struct PasswordRecord {
    var reference: ObjectReference
    var attributes: AttributeSet
}

/// Which passwords of one class an operation applies to.
struct PasswordSelection {
    var passwordClass: PasswordClass
    /// The terms the store looks up (CKA_APPLICATION, CKA_LABEL, CKA_UNIQUE_ID…), Apple's
    /// attributes and the limit.
    var items = ItemSelection()
    /// Exact terms checked on each candidate (an internet password's address).
    var filter: AttributeSet = [:]
    /// The account, checked on each candidate; an object without one has account "".
    var account: String?

    init(_ passwordClass: PasswordClass, items: ItemSelection = ItemSelection(), account: String? = nil) {
        self.passwordClass = passwordClass
        self.items = items
        self.account = account
    }
}

extension Keychain {
    /// The selected passwords, with their attributes; `revealing: [.value]` opens their
    /// secret too (never an item's whose access control needs the PIN for each use: the core
    /// leaves that sealed).
    func passwordRecords(_ selection: PasswordSelection, revealing: Set<AttributeType> = [])
        throws(KeychainError) -> [PasswordRecord]
    {
        let limit = try Keychain.count(selection.items.limit)
        guard isUnlocked else { return [] }
        var template = selection.items.terms
        template[.class] = AttributeValue.encode(ObjectClass.data.rawValue)
        template[.token] = [1]
        template[.private] = [1]
        // The account is indexed: a password found by service and account is one seek among
        // every password of the service. An empty account also matches objects without one,
        // so it is checked on each candidate instead.
        if let account = selection.account, !account.isEmpty { template[.account] = Array(account.utf8) }
        // Found and read in one transaction, each candidate read once; the secret stays
        // sealed unless `revealing` asks for it.
        let candidates = try KeychainError.mapping { () throws(CoreError) in
            try token.findObjectsWithAttributes(template, context: context, revealing: revealing)
        }
        var found: [PasswordRecord] = []
        for candidate in candidates where found.count < limit {
            let record = PasswordRecord(reference: candidate.reference, attributes: candidate.attributes)
            guard Self.isOfClass(record.attributes, selection.passwordClass),
                selection.filter.allSatisfy({ record.attributes[$0.key] == $0.value }),
                selection.account.map({ Array($0.utf8) == record.attributes[.account] ?? [] }) ?? true,
                selection.items.matches(stored: record.attributes)
            else { continue }
            found.append(record)
        }
        return found
    }

    /// Whether a private data object is a password of the class: a data object made through
    /// PKCS#11 with neither account nor class counts as a generic password with account "".
    private static func isOfClass(_ attributes: AttributeSet, _ passwordClass: PasswordClass) -> Bool {
        if let stored = PasswordClass(of: attributes) { return stored == passwordClass }
        return passwordClass == .generic && attributes[.itemClass] == nil
    }

    /// The record of an object; nil when it no longer exists.
    func passwordRecord(_ reference: ObjectReference) throws(KeychainError) -> PasswordRecord? {
        do {
            let attributes = try token.attributes(of: reference, context: context, revealing: [])
            return PasswordRecord(reference: reference, attributes: attributes)
        } catch  where error.code == .objectNotFound {
            return nil
        } catch {
            throw KeychainError(error)
        }
    }

    /// Stores a password of `passwordClass`; the core refuses a second item with the same
    /// identity (`errSecDuplicateItem`), in this process or another.
    func addPassword(_ passwordClass: PasswordClass, _ template: AttributeSet, attributes: ItemAttributes)
        throws(KeychainError) -> PasswordRecord
    {
        try requireUnlocked(to: "store a password")
        var stored = attributes
        stored.accessibility = attributes.accessibility ?? .whenUnlocked
        stored.synchronizable = attributes.synchronizable ?? false
        // The class's own terms and the common attributes do not overlap, but for a value
        // given as bytes that are not text (`binaryValues`), which stands for the class's term.
        var full = template.merging(stored.template) { _, binary in binary }
        full[.class] = AttributeValue.encode(ObjectClass.data.rawValue)
        full[.token] = [1]
        full[.private] = [1]
        full[.itemClass] = passwordClass.code
        let reference = try KeychainError.mapping { () throws(CoreError) in
            try token.createObject(token.withDefaultAccessGroup(full), context: context)
        }
        guard let record = try passwordRecord(reference) else {
            throw KeychainError(.internal, "the new password item cannot be read back")
        }
        return record
    }

    /// Changes every selected password in one transaction: all change, or none (a change that
    /// would make two items one identity is `errSecDuplicateItem`, from the core). An item
    /// whose access control needs the PIN for each use changes only with `pin`, which the
    /// core checks (`Token.updateObjects`).
    func updatePasswords(_ selection: PasswordSelection, setting template: AttributeSet, pin: [UInt8]?)
        throws(KeychainError) -> [PasswordRecord]
    {
        try requireUnlocked(to: "change a password")
        var changed = try passwordRecords(selection).map(\.reference)
        if !template.isEmpty {
            changed = try KeychainError.mapping { () throws(CoreError) in
                try token.updateObjects(changed, with: template, context: context, pin: pin)
            }
        }
        var records: [PasswordRecord] = []
        for reference in changed {
            if let record = try passwordRecord(reference) { records.append(record) }
        }
        return records
    }

    /// Deletes every selected password in one transaction; how many went.
    func deletePasswords(_ selection: PasswordSelection) throws(KeychainError) -> Int {
        let references = try passwordRecords(selection).map(\.reference)
        return try KeychainError.mapping { () throws(CoreError) in
            try token.destroyObjects(references, context: context)
        }.count
    }

    /// The secret of a stored password. An item whose access control needs presence opens
    /// only with `pin`, checked again for this read (KeychainCore `Token.protectedValue`).
    func passwordSecret(_ persistentReference: [UInt8], _ passwordClass: PasswordClass, pin: [UInt8]?)
        throws(KeychainError) -> [UInt8]
    {
        try requireUnlocked(to: "read a password")
        let selection = PasswordSelection(
            passwordClass,
            items: ItemSelection(
                label: nil, persistentReference: persistentReference, attributes: ItemAttributes(),
                anySynchronizable: true, limit: .all))
        // The item and its secret in one read: a copy-matching that returns data reads the
        // item once to find it and once here.
        guard let record = try passwordRecords(selection, revealing: [.value]).first else {
            throw KeychainError(.itemNotFound, "the password item no longer exists")
        }
        if AccessControl.needsPINForEachUse(record.attributes) {
            guard let pin else {
                throw KeychainError(
                    .interactionNotAllowed,
                    "the item's access control needs the user PIN for each use: give it (pin:, or "
                        + "kSecUseAuthenticationContext)")
            }
            return try KeychainError.mapping { () throws(CoreError) in
                try token.protectedValue(of: record.reference, pin: pin, context: context)
            }
        }
        return record.attributes[.value] ?? []
    }
}
