internal import Foundation
internal import Keychain

// SecItem… with kSecClassIdentity: a stored certificate joined with the stored private key
// of the same application label (ARCHITECTURE.md §7.1). An identity query is a certificate query (its
// attributes are the certificate's) with two key attributes besides.

/// A `SecItem…` dictionary for identities, checked and typed. Creating one changes nothing.
struct IdentityItemRequest {
    /// The certificate part of the query.
    let certificates: ItemRequest
    /// kSecValueRef: one identity.
    var identity: SecIdentity?
    /// kSecAttrKeyType: the private key's type.
    var keyType: KeyType?
    /// False when the query contradicts itself (kSecAttrApplicationLabel and
    /// kSecAttrPublicKeyHash with different values): nothing matches.
    var canMatch = true
    /// SecItemAdd's common attributes, for the private key; the certificate gets them without
    /// access control.
    var addedAttributes = ItemAttributes()

    var returnTypes: ReturnTypes { certificates.returnTypes }
    var limit: MatchLimit? { certificates.limit }

    init(_ dictionary: ItemDictionary, for operation: ItemOperation) throws(KeychainError) {
        var certificateDictionary = dictionary
        certificateDictionary[kSecClass] = kSecClassCertificate
        if let value = dictionary[kSecValueRef] {
            guard let identity = value as? SecIdentity else {
                throw KeychainError(.parameter, "kSecValueRef must be a SecIdentity, not \(typeName(value))")
            }
            self.identity = identity
            certificateDictionary[kSecValueRef] = identity.certificate
        }
        if let value = certificateDictionary.removeValue(forKey: kSecAttrApplicationLabel) {
            let label = try typed(value, "kSecAttrApplicationLabel", "CFData") as Data
            if let hash = dictionary[kSecAttrPublicKeyHash] as? Data, hash != label { canMatch = false }
            certificateDictionary[kSecAttrPublicKeyHash] = label
        }
        if let value = certificateDictionary.removeValue(forKey: kSecAttrKeyType) {
            guard operation != .add else {
                throw KeychainError(.parameter, "kSecAttrKeyType is not allowed in SecItemAdd")
            }
            keyType = try Security.keyType(value)
        }
        if operation == .add {
            let common: [(NSString, String)] = [
                (kSecAttrAccessible, "kSecAttrAccessible"), (kSecAttrAccessGroup, "kSecAttrAccessGroup"),
                (kSecAttrSynchronizable, "kSecAttrSynchronizable"),
                (kSecAttrAccessControl, "kSecAttrAccessControl"),
            ]
            let allowed = Set(
                [
                    kSecClass, kSecValueRef, kSecAttrLabel, kSecReturnRef, kSecReturnData,
                    kSecReturnAttributes,
                    kSecReturnPersistentRef, kSecUseDataProtectionKeychain,
                ].map { $0 as String } + common.map { $0.0 as String })
            if let key = dictionary.keys.first(where: { !allowed.contains($0) }) {
                throw KeychainError(.parameter, "'\(key)' is not allowed when adding an identity")
            }
            // Both parts get the common attributes (access control: the key only).
            var attributes = ItemAttributeRequest()
            for (key, name) in common {
                guard let value = certificateDictionary.removeValue(forKey: key as String) else { continue }
                _ = try attributes.read(key as String, name, value, for: .add)
            }
            addedAttributes = attributes.attributes
            // The certificate request reads the label and return types; the identity is added here.
            certificateDictionary[kSecValueRef] = nil
            certificates = try ItemRequest(certificateDictionary, for: .copyMatching)
        } else {
            certificates = try ItemRequest(certificateDictionary, for: operation)
        }
    }

    // MARK: Adding

    /// SecItemAdd: stores an identity held in memory as its key pair and certificate.
    func add(_ result: UnsafeMutablePointer<CFTypeRef?>?) throws(KeychainError) {
        try requireResultPointer(returnTypes, result)
        guard let identity else {
            throw KeychainError(.parameter, "SecItemAdd needs the identity as kSecValueRef (a SecIdentity)")
        }
        guard identity.item == nil, case .privateKey(let privateKey) = identity.privateKey.storage else {
            throw KeychainError(.duplicateItem, "the identity is already stored")
        }
        let keychain = try Keychain()
        let certificate = identity.certificate.certificate
        let label = certificates.label ?? certificate.subjectSummary
        let hash = privateKey.publicKey.publicKeyHash
        let stored = KeyQuery(
            keyClass: .private, applicationLabel: hash, anySynchronizable: true, limit: .one)
        if try keychain.keys(matching: stored).isEmpty {
            try keychain.add(privateKey, label: label, attributes: addedAttributes)
        }
        var certificateAttributes = addedAttributes
        certificateAttributes.accessControl = nil
        try keychain.add(certificate, label: label, attributes: certificateAttributes)
        guard
            let stored = try keychain.firstIdentity(
                matching: CertificateQuery(certificate: certificate, anySynchronizable: true))
        else {
            throw KeychainError(.internal, "the stored identity cannot be found")
        }
        if !returnTypes.isEmpty { result?.pointee = try value(for: stored, in: keychain) }
    }

    // MARK: Matching

    /// The identities matching the request, up to `limit`.
    private func matchingIdentities(in keychain: Keychain, limit: MatchLimit) throws(KeychainError)
        -> [IdentityItem]
    {
        guard canMatch, let query = certificates.certificateQuery() else { return [] }
        let context = SearchContext(keychain)
        var identities: [IdentityItem] = []
        for item in try keychain.identities(matching: query)
        where (keyType.map { $0 == item.privateKey.algorithm.type } ?? true)
            && (identity.map { $0.privateKey.publicKey == item.privateKey.publicKey } ?? true)
        {
            guard try certificates.acceptsBeyondQuery(item.certificate, in: context) else { continue }
            identities.append(item)
            if limit == .one { break }
        }
        switch limit {
        case .one: identities = Array(identities.prefix(1))
        case .all: break
        case .maximum(let count): identities = Array(identities.prefix(count))
        }
        return identities
    }

    /// SecItemCopyMatching: the values to return (none without `kSecReturn…` keys).
    func copyMatching(limit: MatchLimit) throws(KeychainError) -> [CFTypeRef] {
        let keychain = try Keychain()
        let identities = try matchingIdentities(in: keychain, limit: limit)
        guard !identities.isEmpty else { throw KeychainError(.itemNotFound, "no identity matches the query") }
        guard !returnTypes.isEmpty else { return [] }
        var values: [CFTypeRef] = []
        for identity in identities { values.append(try value(for: identity, in: keychain)) }
        return values
    }

    /// An identity's value: its `SecIdentity`, its certificate's DER and persistent
    /// reference, or the attributes of its certificate and key together.
    private func value(for identity: IdentityItem, in keychain: Keychain) throws(KeychainError) -> CFTypeRef {
        try returnValue(
            returnTypes,
            attributes: {
                var attributes = keyAttributes(of: identity.privateKey)
                attributes.merge(ItemRequest.attributes(of: identity.certificate)) { _, certificate in
                    certificate
                }
                attributes[kSecClass] = kSecClassIdentity
                return attributes
            },
            // The identity's key keeps the query's kSecUseAuthenticationContext, as a key's does.
            reference: {
                SecIdentity(
                    identity, in: keychain, authentication: certificates.common.authentication)
            },
            data: { Data(identity.certificate.certificate.derEncoded) },
            persistentReference: identity.certificate.persistentReference)
    }

    // MARK: Deleting

    /// SecItemDelete: each identity's certificate and key pair.
    func delete() throws(KeychainError) {
        let keychain = try Keychain()
        let identities = try matchingIdentities(in: keychain, limit: .all)
        guard !identities.isEmpty else { throw KeychainError(.itemNotFound, "no identity matches the query") }
        for identity in identities {
            do {
                try keychain.delete(identity)
            } catch  where error.code == .itemNotFound {
                continue  // another identity of this call shared its key
            }
        }
    }
}
