internal import KeychainCore

/// The decrypted contents of a PKCS#12 file (`.p12`, `.pfx`): a private key, its certificate
/// and the certificates of its chain. Held in memory; ``Keychain/add(_:label:)`` stores it.
///
/// Reads the encodings OpenSSL writes today (AES-256-CBC with PBKDF2, `openssl pkcs12
/// -export`) and the legacy ones older tools and Windows write (3DES, RC2-40; `-legacy`).
public struct PKCS12Bundle: Sendable {
    /// The private key, or nil for a file of certificates only.
    public let privateKey: PrivateKey?
    /// The certificate of the private key (without a key: the file's first certificate).
    public let certificate: Certificate?
    /// The file's other certificates, in file order: usually the issuer chain.
    public let chain: [Certificate]
    /// The friendlyName the file gives the certificate, if any (Apple's kSecImportItemLabel).
    public let friendlyName: String?
    /// The localKeyId the file gives the certificate, if any (Apple's kSecImportItemKeyID).
    public let localKeyID: [UInt8]?

    /// Decrypts a DER PKCS#12 file.
    ///
    /// - Throws: ``KeychainError/Code/authFailed`` when the password is wrong;
    ///   ``KeychainError/Code/decode`` when the data is not PKCS#12, or holds a key or
    ///   certificate this keychain cannot read.
    public init(derEncoded data: [UInt8], password: String) throws(KeychainError) {
        let contents: PKCS12Import
        do {
            contents = try PKCS12Import(der: data, password: password)
        } catch {
            if error.code == .pinIncorrect {
                throw KeychainError(.authFailed, "wrong password for the PKCS#12 file")
            }
            throw KeychainError(.decode, "not a readable PKCS#12 file: \(error.message)")
        }
        do {
            privateKey = try contents.privateKey.map { key throws(KeychainError) in try PrivateKey(key) }
        } catch {
            throw KeychainError(.decode, "the PKCS#12 file's private key: \(error.message)")
        }
        certificate = try contents.certificate.map { der throws(KeychainError) in
            try Certificate(derEncoded: der)
        }
        var chain: [Certificate] = []
        for der in contents.otherCertificates { chain.append(try Certificate(derEncoded: der)) }
        self.chain = chain
        friendlyName = contents.friendlyName
        localKeyID = contents.localKeyID
    }
}

extension Keychain {
    /// Imports a PKCS#12 file: decrypts it and stores its private key (with its public
    /// key), its certificate and its chain. Needs the keychain unlocked when the file holds a
    /// key. See ``add(_:label:)``.
    ///
    ///     try keychain.unlock(pin: "1234")
    ///     let identities = try keychain.importPKCS12(Array(fileData), password: "secret")
    ///
    /// - Returns: The identity of the file's key and certificate (none for a file without a
    ///   key or without its certificate).
    /// - Throws: ``KeychainError/Code/authFailed`` for a wrong password;
    ///   ``KeychainError/Code/decode`` for data that is not PKCS#12;
    ///   ``KeychainError/Code/interactionNotAllowed`` when the keychain is locked.
    @discardableResult
    public func importPKCS12(_ data: [UInt8], password: String) throws(KeychainError) -> [IdentityItem] {
        try add(PKCS12Bundle(derEncoded: data, password: password))
    }

    /// Stores a decrypted PKCS#12 file: the private key as a key pair (sensitive, not
    /// exportable), the certificate, and the chain's certificates. What is already stored (the
    /// same key, a certificate with the same issuer and serial number) is kept as it is, so
    /// importing a file twice changes nothing. If a step fails, what this call stored is
    /// removed again.
    ///
    /// - Parameters:
    ///   - bundle: The file's contents.
    ///   - label: The key's and certificate's label; by default the file's friendlyName,
    ///     else the certificate's subject summary. The chain's certificates get their subject
    ///     summaries.
    /// - Returns: The identity of the key and its certificate, if the file has both.
    @discardableResult
    public func add(_ bundle: PKCS12Bundle, label: String? = nil) throws(KeychainError) -> [IdentityItem] {
        let label = label ?? bundle.friendlyName ?? bundle.certificate?.subjectSummary
        var stored: [ObjectReference] = []
        do {
            if let key = bundle.privateKey {
                try requireUnlocked(to: "import a private key")
                let existing = try keys(
                    matching: KeyQuery(
                        keyClass: .private, applicationLabel: key.publicKey.publicKeyHash, limit: .one))
                if existing.isEmpty {
                    let attributes = NewKeyAttributes(label: label, isSensitive: true, isExtractable: false)
                    let references = try KeychainError.mapping { () throws(CoreError) in
                        try token.storeKeyPair(
                            key.material,
                            publicTemplate: token.withDefaultAccessGroup(attributes.template(.public)),
                            privateTemplate: token.withDefaultAccessGroup(attributes.template(.private)),
                            context: context)
                    }
                    stored += [references.publicKey, references.privateKey]
                }
            }
            if let certificate = bundle.certificate {
                stored += try addUnlessStored([certificate], label: label)
            }
            stored += try addUnlessStored(bundle.chain, label: nil)
        } catch {
            _ = try? token.destroyObjects(stored, context: context)
            throw error
        }
        guard bundle.privateKey != nil, let certificate = bundle.certificate else { return [] }
        return try identities(matching: CertificateQuery(certificate: certificate))
    }

    /// Adds the certificates not stored yet, in one transaction; returns their objects.
    private func addUnlessStored(_ certificates: [Certificate], label: String?) throws(KeychainError)
        -> [ObjectReference]
    {
        let added = try add(contentsOf: certificates, label: label, duplicates: .skip)
        var references: [ObjectReference] = []
        for item in added {
            let template: AttributeSet = [
                .class: AttributeValue.encode(ObjectClass.certificate.rawValue),
                .uniqueID: item.persistentReference,
            ]
            references += try KeychainError.mapping { () throws(CoreError) in
                try token.findObjects(template, context: context)
            }
        }
        return references
    }
}
