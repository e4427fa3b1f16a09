internal import KeychainCore

/// A certificate with its private key (Apple's SecIdentity): a stored certificate and a
/// stored private key whose application labels (CKA_ID) are equal. Nothing stores the pair
/// itself: it is found by joining the two (ARCHITECTURE.md §3.2, §7.1), so a key generated through PKCS#11 and
/// a certificate added later for it form an identity with no further step.
public struct IdentityItem: Hashable, Sendable {
    /// The certificate item.
    public let certificate: CertificateItem
    /// The private key item: its ``KeyItem/applicationLabel`` is the certificate's
    /// ``CertificateItem/publicKeyHash``.
    public let privateKey: KeyItem

    /// Creates an identity value. Identities come from a ``Keychain``; this initializer is
    /// for tests and code that builds expected values.
    public init(certificate: CertificateItem, privateKey: KeyItem) {
        self.certificate = certificate
        self.privateKey = privateKey
    }
}

extension Keychain {
    /// The identities whose certificate matches `query`, in the order their keys were added
    /// (one per certificate of each key). Private keys are found only while the keychain is
    /// unlocked, so a locked keychain has no identities.
    ///
    ///     try keychain.unlock(pin: "1234")
    ///     let mine = try keychain.identities(matching: CertificateQuery(label: "Alice"))
    ///     let signature = try keychain.sign(data, with: mine[0].privateKey, algorithm: .ecdsa(.sha256))
    ///
    /// The query's limit counts identities. Each key costs one index lookup of its
    /// certificates. The query's common ``CertificateQuery/attributes`` (accessibility,
    /// access group, synchronizable) must hold for the certificate and the key alike.
    public func identities(matching query: CertificateQuery = .all) throws(KeychainError) -> [IdentityItem] {
        let limit = try Keychain.count(query.limit)
        guard isUnlocked else { return [] }
        // The common attributes apply to both parts; the dates are the certificate's (Apple
        // returns the certificate's as the identity's).
        let keys = try self.keys(
            matching: KeyQuery(
                keyClass: .private, applicationLabel: query.publicKeyHash,
                attributes: query.attributes.withoutDates,
                anySynchronizable: query.common.anySynchronizable))
        var found: [IdentityItem] = []
        for key in keys where found.count < limit && !key.applicationLabel.isEmpty {
            var certificates = query
            certificates.publicKeyHash = key.applicationLabel
            certificates.limit = .maximum(limit - found.count)
            for certificate in try self.certificates(matching: certificates) {
                found.append(IdentityItem(certificate: certificate, privateKey: key))
            }
        }
        return found
    }

    /// The first identity whose certificate matches `query`, or nil.
    public func firstIdentity(matching query: CertificateQuery) throws(KeychainError) -> IdentityItem? {
        var one = query
        one.limit = .one
        return try identities(matching: one).first
    }

    /// Deletes an identity in one transaction: its certificate, its private key, and the
    /// public keys with the same application label (the rest of the key pair). Other
    /// certificates issued for the same key lose their identity too.
    ///
    /// - Throws: ``KeychainError/Code/itemNotFound`` when neither the certificate nor the key
    ///   exists any more; ``KeychainError/Code/interactionNotAllowed`` when the keychain is
    ///   locked.
    public func delete(_ identity: IdentityItem) throws(KeychainError) {
        try requireUnlocked(to: "delete an identity")
        var references: [ObjectReference] = []
        let certificate: AttributeSet = [
            .class: AttributeValue.encode(ObjectClass.certificate.rawValue),
            .uniqueID: identity.certificate.persistentReference,
        ]
        let privateKey: AttributeSet = [
            .class: AttributeValue.encode(ObjectClass.privateKey.rawValue),
            .uniqueID: identity.privateKey.persistentReference,
        ]
        let publicKeys: AttributeSet = [
            .class: AttributeValue.encode(ObjectClass.publicKey.rawValue), .token: [1],
            .id: identity.privateKey.applicationLabel,
        ]
        for template in [certificate, privateKey, publicKeys] {
            references += try KeychainError.mapping { () throws(CoreError) in
                try token.findObjects(template, context: context)
            }
        }
        let deleted = try KeychainError.mapping { () throws(CoreError) in
            try token.destroyObjects(references, context: context)
        }
        guard !deleted.isEmpty else { throw KeychainError(.itemNotFound, "the identity no longer exists") }
    }
}
