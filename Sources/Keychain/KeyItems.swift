public import KeychainCore

/// Whether a stored key is the public or the private half of its pair (Apple's
/// kSecAttrKeyClass; PKCS#11's CKO_PUBLIC_KEY / CKO_PRIVATE_KEY).
public enum KeyClass: Hashable, Sendable {
    case `public`
    case `private`
}

/// A key stored in a keychain: a PKCS#11 key object, visible to PKCS#11 applications under
/// the same label and ID.
///
/// Private keys are private objects: found only while the keychain is unlocked, and their
/// secret parts are stored encrypted. Sign and decrypt with ``Keychain/sign(_:with:algorithm:)``
/// and ``Keychain/decrypt(_:with:algorithm:)``; verify and encrypt with ``publicKey``.
public struct KeyItem: Hashable, Sendable {
    /// Public or private.
    public let keyClass: KeyClass
    /// The key's type and size (kSecAttrKeyType, kSecAttrKeySizeInBits).
    public let algorithm: KeyAlgorithm
    /// The item's label (CKA_LABEL, kSecAttrLabel).
    public let label: String
    /// The key's identifier (CKA_ID, kSecAttrApplicationLabel): by default the SHA-1 of the
    /// public key, the same for both halves of the pair and for the certificates issued for
    /// it, which is what makes a certificate and its private key an identity.
    public let applicationLabel: [UInt8]
    /// The application's tag for the key (kSecAttrApplicationTag; PKCS#11 vendor attribute
    /// 0x80504B11), or nil.
    public let applicationTag: [UInt8]?
    /// What the key may be used for.
    public let usage: KeyUsage
    /// True for a private key whose secret parts are never revealed (CKA_SENSITIVE).
    public let isSensitive: Bool
    /// True for a private key that may leave the keychain (CKA_EXTRACTABLE).
    public let isExtractable: Bool
    /// The public key (of either half).
    public let publicKey: PublicKey
    /// An opaque reference that finds this item again, in any process, while it exists
    /// (CKA_UNIQUE_ID, kSecValuePersistentRef).
    public let persistentReference: [UInt8]
    /// Apple's common item attributes (accessibility, access group, synchronizable, access
    /// control, dates), with Apple's defaults for what the key lacks.
    public let attributes: ItemAttributes

    /// True when ``Keychain/exportPrivateKey(_:)`` may return the key's secret: a public key,
    /// or a private key neither sensitive nor unextractable.
    public var isExportable: Bool { keyClass == .public || (!isSensitive && isExtractable) }

    /// The item for a stored key object's attributes; nil for an object of a kind the API
    /// does not read.
    init?(_ attributes: AttributeSet) {
        let keyClass: KeyClass
        switch attributes.ulong(.class) {
        case ObjectClass.publicKey.rawValue: keyClass = .public
        case ObjectClass.privateKey.rawValue: keyClass = .private
        default: return nil
        }
        guard let info = attributes[.publicKeyInfo],
            let publicKey = try? PublicKey(subjectPublicKeyInfo: info)
        else {
            return nil
        }
        self.keyClass = keyClass
        self.publicKey = publicKey
        algorithm = publicKey.algorithm
        label = attributes.string(.label) ?? ""
        applicationLabel = attributes[.id] ?? []
        applicationTag = attributes[.applicationTag]
        usage = KeyUsage(stored: attributes)
        isSensitive = keyClass == .private && attributes.bool(.sensitive) != false
        isExtractable = keyClass == .public || attributes.bool(.extractable) == true
        persistentReference = attributes[.uniqueID] ?? []
        self.attributes = ItemAttributes(stored: attributes)
    }
}

/// The two halves of a stored key pair.
public struct KeyPair: Hashable, Sendable {
    /// The public key item.
    public let publicKey: KeyItem
    /// The private key item.
    public let privateKey: KeyItem
}

// MARK: - Keys in a keychain

extension Keychain {
    /// Generates a key pair and stores both halves (PKCS#11 C_GenerateKeyPair). Needs the
    /// keychain unlocked: the private key is a private item.
    ///
    /// The pair's application label (CKA_ID) is the SHA-1 of its public key, so a
    /// certificate issued for it later pairs with it as an identity.
    ///
    /// - Parameters:
    ///   - algorithm: e.g. `.p256`, `.rsa(bits: 2048)`, `.ed25519`.
    ///   - label: Both items' label; empty by default.
    ///   - applicationTag: Both items' application tag, to find them by.
    ///   - exportable: Whether ``exportPrivateKey(_:)`` may return the private key. By default
    ///     its secret never leaves the keychain (CKA_SENSITIVE, not CKA_EXTRACTABLE).
    ///   - attributes: Apple's common attributes of both items (accessibility, access group,
    ///     synchronizable); access control, on the private key only: with `.userPresence` each
    ///     use needs the PIN (CKA_ALWAYS_AUTHENTICATE).
    /// - Throws: ``KeychainError/Code/interactionNotAllowed`` when the keychain is locked;
    ///   ``KeychainError/Code/parameter`` for an unsupported size or access control asking for
    ///   biometry.
    @discardableResult
    public func generateKeyPair(
        _ algorithm: KeyAlgorithm, label: String? = nil, applicationTag: [UInt8]? = nil,
        exportable: Bool = false, attributes: ItemAttributes = ItemAttributes()
    ) throws(KeychainError) -> KeyPair {
        let privateKey = NewKeyAttributes(
            label: label, applicationTag: applicationTag, isSensitive: !exportable, isExtractable: exportable,
            common: attributes)
        return try generateKeyPair(algorithm, privateKey: privateKey, publicKey: privateKey.forPublicHalf())
    }

    /// Generates and stores a key pair with separate attributes for each half (the
    /// `Security` façade's `SecKeyCreateRandomKey`).
    package func generateKeyPair(
        _ algorithm: KeyAlgorithm, privateKey: NewKeyAttributes, publicKey: NewKeyAttributes
    ) throws(KeychainError) -> KeyPair {
        let kind = try KeychainError.mapping { () throws(CoreError) in try algorithm.keyPairKind() }
        try requireUnlocked(to: "store a private key")
        let references = try KeychainError.mapping { () throws(CoreError) in
            try token.generateKeyPair(
                kind, publicTemplate: token.withDefaultAccessGroup(publicKey.template(.public)),
                privateTemplate: token.withDefaultAccessGroup(
                    privateKey.template(.private, for: algorithm.type)),
                context: context)
        }
        return try keyPair(references)
    }

    /// Stores a private key held in memory, with its public key, as a key pair. Needs the
    /// keychain unlocked.
    ///
    /// - Parameters: as for ``generateKeyPair(_:label:applicationTag:exportable:attributes:)``.
    /// - Throws: ``KeychainError/Code/interactionNotAllowed`` when the keychain is locked.
    @discardableResult
    public func add(
        _ key: PrivateKey, label: String? = nil, applicationTag: [UInt8]? = nil, exportable: Bool = false,
        attributes: ItemAttributes = ItemAttributes()
    ) throws(KeychainError) -> KeyPair {
        let privateKey = NewKeyAttributes(
            label: label, applicationTag: applicationTag, isSensitive: !exportable, isExtractable: exportable,
            common: attributes)
        return try add(key, privateKey: privateKey, publicKey: privateKey.forPublicHalf())
    }

    /// Stores a private key with separate attributes for each half (`SecItemAdd` of a key).
    package func add(_ key: PrivateKey, privateKey: NewKeyAttributes, publicKey: NewKeyAttributes)
        throws(KeychainError) -> KeyPair
    {
        try requireUnlocked(to: "store a private key")
        let references = try KeychainError.mapping { () throws(CoreError) in
            try token.storeKeyPair(
                key.material, publicTemplate: token.withDefaultAccessGroup(publicKey.template(.public)),
                privateTemplate: token.withDefaultAccessGroup(
                    privateKey.template(.private, for: key.algorithm.type)),
                context: context)
        }
        return try keyPair(references)
    }

    private func keyPair(_ references: KeyPairReferences) throws(KeychainError) -> KeyPair {
        guard let publicKey = try loadKey(references.publicKey),
            let privateKey = try loadKey(references.privateKey)
        else { throw KeychainError(.internal, "the new key pair cannot be read back") }
        return KeyPair(publicKey: publicKey, privateKey: privateKey)
    }

    /// The keys matching `query`, in the order they were added; an empty array when none
    /// does. Private keys are found only while the keychain is unlocked.
    public func keys(matching query: KeyQuery = .all) throws(KeychainError) -> [KeyItem] {
        try keyMatches(query).map(\.item)
    }

    /// The first key matching `query`, or nil.
    public func firstKey(matching query: KeyQuery) throws(KeychainError) -> KeyItem? {
        var one = query
        one.limit = .one
        return try keyMatches(one).first?.item
    }

    /// Stores a public key alone (a key whose private half is elsewhere), as PKCS#11's
    /// C_CreateObject would: CKO_PUBLIC_KEY with its parts, CKA_ID the SHA-1 of the key.
    /// Needs no unlocking: public keys are public items.
    ///
    /// - Parameter attributes: Apple's common attributes (accessibility, access group,
    ///   synchronizable); access control guards private keys only.
    /// - Throws: ``KeychainError/Code/readOnly`` when the keychain cannot be written;
    ///   ``KeychainError/Code/parameter`` for access control.
    @discardableResult
    public func add(
        _ publicKey: PublicKey, label: String? = nil, applicationTag: [UInt8]? = nil,
        attributes: ItemAttributes = ItemAttributes()
    ) throws(KeychainError) -> KeyItem {
        guard attributes.accessControl == nil else {
            throw KeychainError(
                .parameter, "access control guards a private key's use: a public key is public")
        }
        var template = NewKeyAttributes(label: label, applicationTag: applicationTag, common: attributes)
            .template(.public)
        template[.class] = AttributeValue.encode(ObjectClass.publicKey.rawValue)
        let parts = try KeychainError.mapping { () throws(CoreError) in
            try publicKey.material.publicKeyAttributes()
        }
        for (type, value) in parts { template[type] = value }
        let reference = try KeychainError.mapping { () throws(CoreError) in
            try token.createObject(token.withDefaultAccessGroup(template), context: context)
        }
        guard let item = try loadKey(reference) else {
            throw KeychainError(.internal, "the new public key cannot be read back")
        }
        return item
    }

    /// Changes attributes of every key matching `query` (up to its limit), in one
    /// transaction: every match changes, or none does.
    ///
    /// - Returns: The changed items, as they are now; empty when nothing matched.
    @discardableResult
    public func updateKeys(matching query: KeyQuery, setting changes: KeyChanges) throws(KeychainError)
        -> [KeyItem]
    {
        try update(references: try keyMatches(query).map(\.reference), setting: changes)
    }

    /// Changes attributes of stored keys, in one transaction: all of them change, or none.
    /// Keys deleted meanwhile are left out.
    ///
    /// - Returns: The changed items, as they are now.
    @discardableResult
    public func update(_ keys: [KeyItem], setting changes: KeyChanges) throws(KeychainError) -> [KeyItem] {
        try update(references: try existingReferences(of: keys), setting: changes)
    }

    private func update(references: [ObjectReference], setting changes: KeyChanges) throws(KeychainError)
        -> [KeyItem]
    {
        let template = try changes.template
        var changed = references
        if !template.isEmpty {
            changed = try KeychainError.mapping { () throws(CoreError) in
                try token.updateObjects(references, with: template, context: context)
            }
        }
        var items: [KeyItem] = []
        for reference in changed {
            if let item = try loadKey(reference) { items.append(item) }
        }
        return items
    }

    /// Deletes every key matching `query` (up to its limit), in one transaction.
    ///
    /// - Returns: How many keys were deleted; 0 when nothing matched.
    @discardableResult
    public func deleteKeys(matching query: KeyQuery) throws(KeychainError) -> Int {
        try delete(references: try keyMatches(query).map(\.reference))
    }

    /// Deletes stored keys, in one transaction: all of them go, or none. Keys deleted
    /// meanwhile are not counted.
    ///
    /// - Returns: How many keys were deleted.
    @discardableResult
    public func delete(_ keys: [KeyItem]) throws(KeychainError) -> Int {
        try delete(references: try existingReferences(of: keys))
    }

    /// Deletes one stored key.
    ///
    /// - Throws: ``KeychainError/Code/itemNotFound`` when it no longer exists (or is a
    ///   private key and the keychain is locked).
    public func delete(_ key: KeyItem) throws(KeychainError) {
        guard try delete(references: [try reference(of: key)]) > 0 else {
            throw KeychainError(.itemNotFound, "the key item no longer exists")
        }
    }

    private func delete(references: [ObjectReference]) throws(KeychainError) -> Int {
        try KeychainError.mapping { () throws(CoreError) in
            try token.destroyObjects(references, context: context)
        }.count
    }

    /// The stored objects of key items; items that no longer exist are left out.
    private func existingReferences(of keys: [KeyItem]) throws(KeychainError) -> [ObjectReference] {
        var references: [ObjectReference] = []
        for key in keys {
            do {
                references.append(try reference(of: key))
            } catch  where error.code == .itemNotFound {
                continue
            }
        }
        return references
    }

    /// Signs `data` with a stored private key. Needs the keychain unlocked.
    ///
    /// - Parameter pin: the user PIN, for a key that needs it for each use (PKCS#11's
    ///   CKA_ALWAYS_AUTHENTICATE); a wrong one counts as a failed unlock.
    /// - Throws: ``KeychainError/Code/interactionNotAllowed`` when the keychain is locked, or
    ///   the key needs its PIN for each use and none was given;
    ///   ``KeychainError/Code/parameter`` when `key` is not a private key that may sign, the
    ///   algorithm does not fit it, or a digest has the wrong length;
    ///   ``KeychainError/Code/itemNotFound`` when the key no longer exists.
    public func sign(
        _ data: [UInt8], with key: KeyItem, algorithm: SignatureAlgorithm, pin: [UInt8]? = nil
    ) throws(KeychainError) -> [UInt8] {
        let reference = try privateKeyReference(key, to: "sign")
        return try KeychainError.mapping { () throws(CoreError) in
            // The mechanism the algorithm amounts to, so that the key's CKA_ALLOWED_MECHANISMS
            // reads as it does for C_Sign.
            let operation = try algorithm.operation(on: token, reference, for: .sign, context: context)
            if operation.needsPIN {
                guard let pin else {
                    throw CoreError(
                        .userNotLoggedIn,
                        "the key needs the user PIN for each use (CKA_ALWAYS_AUTHENTICATE): pass pin:")
                }
                try operation.authenticate(pin: pin)
            }
            return try algorithm.sign(data, with: operation)
        }
    }

    /// Decrypts `data` with a stored RSA private key. Needs the keychain unlocked.
    ///
    /// - Throws: as ``sign(_:with:algorithm:pin:)``; ``KeychainError/Code/parameter`` also when
    ///   the data does not decrypt.
    public func decrypt(
        _ data: [UInt8], with key: KeyItem, algorithm: EncryptionAlgorithm, pin: [UInt8]? = nil
    ) throws(KeychainError) -> [UInt8] {
        // The key's type first: only an RSA key has CKA_DECRYPT to check. The core refuses
        // PKCS#1 v1.5 decryption when the configuration turned it off.
        try KeychainError.mapping { () throws(CoreError) in try algorithm.check(key.algorithm.type) }
        let reference = try privateKeyReference(key, to: "decrypt")
        let (mechanism, parameters) = algorithm.mechanism
        let operation = try KeychainError.mapping { () throws(CoreError) in
            try token.startCipher(
                reference, mechanism: mechanism, parameters: parameters, encrypting: false, context: context)
        }
        try giveUsePIN(pin, to: operation.authentication)
        do throws(CoreError) {
            return try operation.run(data)
        } catch  where [.encryptedDataInvalid, .encryptedDataLengthRange].contains(error.code) {
            // The typed API reports data that does not decrypt as a parameter error.
            throw KeychainError(.parameter, error.message)
        } catch {
            throw KeychainError(error)
        }
    }

    /// Gives the user's PIN to an operation whose key needs it for each use
    /// (CKA_ALWAYS_AUTHENTICATE, or an access control): the core checks it and spends it on
    /// this use. A wrong one counts as a failed unlock.
    func giveUsePIN(_ pin: [UInt8]?, to authentication: UseAuthentication) throws(KeychainError) {
        guard authentication.isRequired else { return }
        guard let pin else {
            throw KeychainError(
                .interactionNotAllowed,
                "the key needs the user PIN for each use (CKA_ALWAYS_AUTHENTICATE): pass pin:")
        }
        try KeychainError.mapping { () throws(CoreError) in try authentication.authenticate(pin: pin) }
    }

    /// A stored private key's secret, in memory: only for a key stored as exportable.
    ///
    /// - Throws: ``KeychainError/Code/interactionNotAllowed`` when the key is sensitive or
    ///   not extractable (PKCS#11's CKR_ATTRIBUTE_SENSITIVE), or the keychain is locked.
    public func exportPrivateKey(_ key: KeyItem) throws(KeychainError) -> PrivateKey {
        let reference = try privateKeyReference(key, to: "export a private key")
        let privateKey = try KeychainError.mapping { () throws(CoreError) in
            try token.exportPrivateKey(reference, context: context)
        }
        return try PrivateKey(privateKey)
    }

    // MARK: Matching keys

    private func keyMatches(_ query: KeyQuery) throws(KeychainError) -> [KeyMatch<KeyItem>] {
        try keyMatches(query.selection, load: loadKey)
    }

    /// The key item behind a reference; nil when it vanished meanwhile or is not a key.
    private func loadKey(_ reference: ObjectReference) throws(KeychainError) -> KeyItem? {
        do {
            return KeyItem(try token.attributes(of: reference, context: context))
        } catch  where error.code == .objectNotFound {
            return nil
        } catch {
            throw KeychainError(error)
        }
    }

    /// The stored object of a key item.
    private func reference(of key: KeyItem) throws(KeychainError) -> ObjectReference {
        let objectClass: ObjectClass = key.keyClass == .private ? .privateKey : .publicKey
        let template: AttributeSet = [
            .class: AttributeValue.encode(objectClass.rawValue), .uniqueID: key.persistentReference,
        ]
        let found = try KeychainError.mapping { () throws(CoreError) in
            try token.findObjects(template, context: context)
        }
        guard let reference = found.first else {
            throw KeychainError(.itemNotFound, "the key item no longer exists")
        }
        return reference
    }

    /// The stored object of a private key item, once the keychain is unlocked.
    func privateKeyReference(_ key: KeyItem, to action: String) throws(KeychainError)
        -> ObjectReference
    {
        guard key.keyClass == .private else {
            throw KeychainError(.parameter, "only a private key can \(action)")
        }
        try requireUnlocked(to: action)
        return try self.reference(of: key)
    }

    /// Throws a helpful error unless this process has unlocked the keychain.
    func requireUnlocked(to action: String) throws(KeychainError) {
        guard !isUnlocked else { return }
        let hasPIN = (try? token.authenticationState().hasUserPIN) ?? true
        throw KeychainError(
            .interactionNotAllowed,
            hasPIN
                ? "the keychain is locked: unlock it with its PIN to \(action)"
                : "the keychain has no user PIN, which private items need: set one (setUserPIN) and "
                    + "unlock, to \(action)"
        )
    }

    /// A query limit as a count.
    static func count(_ limit: CertificateQuery.Limit) throws(KeychainError) -> Int {
        switch limit {
        case .one: return 1
        case .all: return Int.max
        case .maximum(let count):
            guard count > 0 else { throw KeychainError(.parameter, "a match limit must be 1 or more") }
            return count
        }
    }
}
