public import KeychainCore

/// What a certificate may be trusted for (its extended key usage purposes, RFC 5280
/// §4.2.1.12): `serverAuth`, `clientAuth`, `codeSigning`, `emailProtection`, and `any`, which
/// a purpose without a setting of its own follows. The core's type.
public typealias TrustPurpose = KeychainCore.TrustPurpose

/// What the keychain says of a certificate for one purpose: `trustedAnchor`, `trustedPeer`,
/// `distrusted` or `unspecified`. The core's type.
public typealias TrustDisposition = KeychainCore.TrustDisposition

/// A certificate's trust settings: a disposition per purpose. The same stored settings are
/// what the PKCS#11 module shows as CKA_TRUSTED and NSS trust objects, and what
/// `p11keychain dump-trust-settings` prints. The core's type.
///
///     try keychain.setTrust(.trustedAnchor, for: root, purposes: [.serverAuth])
///     keychain.trustSettings(for: root).disposition(for: .serverAuth)   // .trustedAnchor
public typealias TrustSettings = KeychainCore.TrustSettings

extension Keychain {
    /// The trust settings of `certificate` in this keychain (``TrustSettings/unspecified``
    /// when it has none). No login is needed: certificates are public items.
    ///
    /// - Throws: ``KeychainError/Code/itemNotFound`` when the keychain does not hold the
    ///   certificate.
    public func trustSettings(for certificate: Certificate) throws(KeychainError) -> TrustSettings {
        try KeychainError.mapping { () throws(CoreError) in
            try token.trustSettings(ofCertificateDER: certificate.derEncoded)
        }
    }

    /// Sets `disposition` for each of `purposes` of `certificate`, keeping its other
    /// purposes' settings; one atomic change.
    ///
    /// - Throws: ``KeychainError/Code/itemNotFound`` when the keychain does not hold the
    ///   certificate (add it first); ``KeychainError/Code/interactionNotAllowed`` when the
    ///   keychain has a PIN and is locked (trust is a security decision: see
    ///   `KeychainCore`'s trust-write policy); ``KeychainError/Code/readOnly`` for a
    ///   read-only keychain. Nothing is written on error.
    public func setTrust(
        _ disposition: TrustDisposition, for certificate: Certificate, purposes: Set<TrustPurpose> = [.any]
    ) throws(KeychainError) {
        guard !purposes.isEmpty else { throw KeychainError(.parameter, "no trust purpose given") }
        var settings = try trustSettings(for: certificate)
        for purpose in purposes { settings.set(disposition, for: purpose) }
        try setTrustSettings(settings, for: certificate)
    }

    /// Replaces every trust setting of `certificate` with `settings`, atomically.
    ///
    /// - Throws: as ``setTrust(_:for:purposes:)``.
    public func setTrustSettings(_ settings: TrustSettings, for certificate: Certificate)
        throws(KeychainError)
    {
        let context = self.context
        try KeychainError.mapping { () throws(CoreError) in
            try token.setTrustSettings(
                settings, ofCertificateDER: certificate.derEncoded, context: context)
        }
    }

    /// Removes every trust setting of `certificate` (the certificate stays).
    ///
    /// - Throws: as ``setTrust(_:for:purposes:)``.
    public func removeTrustSettings(for certificate: Certificate) throws(KeychainError) {
        try setTrustSettings(.unspecified, for: certificate)
    }

    /// Every certificate of this keychain that has trust settings, with them. Costs the
    /// number of such certificates, not the size of the keychain.
    public func certificatesWithTrustSettings() throws(KeychainError)
        -> [(certificate: Certificate, settings: TrustSettings)]
    {
        let stored = try KeychainError.mapping { () throws(CoreError) in
            try token.certificatesWithTrustSettings()
        }
        return stored.compactMap { entry in
            // try?: the store holds only certificates that parsed when written; one that no
            // longer does carries no trust anyone could check, so it is left out.
            guard let certificate = try? Certificate(derEncoded: entry.der) else { return nil }
            return (certificate, entry.settings)
        }
    }
}
