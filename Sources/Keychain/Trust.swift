internal import KeychainCore

/// What a certificate may be trusted for (its extended key usage purposes, RFC 5280
/// §4.2.1.12). A purpose without a setting of its own follows ``any``.
public enum TrustPurpose: String, CaseIterable, Hashable, Sendable {
    /// TLS servers (Apple's SSL policy for a server).
    case serverAuth
    /// TLS clients (Apple's SSL policy for a client).
    case clientAuth
    case codeSigning
    /// S/MIME.
    case emailProtection
    /// Every purpose that has no setting of its own.
    case any
}

/// What the keychain says of a certificate for one purpose.
public enum TrustDisposition: String, CaseIterable, Hashable, Sendable {
    /// A root of trust: chains for the purpose may end here, self-signed or not (Apple's
    /// `trustRoot` and `trustAsRoot`, NSS "C").
    case trustedAnchor
    /// Trusted as itself, never as an issuer (NSS "P"): a leaf the user accepted.
    case trustedPeer
    /// Never trusted, and nothing chains through it, even when it is also an anchor
    /// (Apple's `deny`, NSS "p", p11-kit's blocklist).
    case distrusted
    /// No opinion: the certificate is judged by its chain.
    case unspecified
}

/// A certificate's trust settings: a disposition per purpose. The same stored settings are
/// what the PKCS#11 module shows as CKA_TRUSTED and NSS trust objects, and what
/// `p11keychain dump-trust-settings` prints.
///
///     try keychain.setTrust(.trustedAnchor, for: root, purposes: [.serverAuth])
///     keychain.trustSettings(for: root).disposition(for: .serverAuth)   // .trustedAnchor
public struct TrustSettings: Hashable, Sendable, CustomStringConvertible {
    /// The purposes with a setting of their own; `.unspecified` entries are left out, so
    /// settings that mean the same compare equal.
    public private(set) var dispositions: [TrustPurpose: TrustDisposition]

    /// Settings with these dispositions.
    public init(_ dispositions: [TrustPurpose: TrustDisposition] = [:]) {
        self.dispositions = dispositions.filter { $0.value != .unspecified }
    }

    /// No setting for any purpose.
    public static let unspecified = TrustSettings()

    /// The disposition for `purpose`: its own setting, else that of ``TrustPurpose/any``.
    public func disposition(for purpose: TrustPurpose) -> TrustDisposition {
        dispositions[purpose] ?? dispositions[.any] ?? .unspecified
    }

    /// Sets the disposition of one purpose (`.unspecified` removes its setting).
    public mutating func set(_ disposition: TrustDisposition, for purpose: TrustPurpose) {
        dispositions[purpose] = disposition == .unspecified ? nil : disposition
    }

    /// True when no purpose has a setting.
    public var isUnspecified: Bool { dispositions.isEmpty }

    /// `serverAuth=trustedAnchor,any=distrusted`, in ``TrustPurpose`` order.
    public var description: String {
        TrustPurpose.allCases.compactMap { purpose in
            dispositions[purpose].map { "\(purpose.rawValue)=\($0.rawValue)" }
        }.joined(separator: ",")
    }
}

extension Keychain {
    /// The trust settings of `certificate` in this keychain (``TrustSettings/unspecified``
    /// when it has none). No login is needed: certificates are public items.
    ///
    /// - Throws: ``KeychainError/Code/itemNotFound`` when the keychain does not hold the
    ///   certificate.
    public func trustSettings(for certificate: Certificate) throws(KeychainError) -> TrustSettings {
        let core = try KeychainError.mapping { () throws(CoreError) in
            try token.trustSettings(ofCertificateDER: certificate.derEncoded)
        }
        return TrustSettings(core)
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
                settings.core, ofCertificateDER: certificate.derEncoded, context: context)
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
            return (certificate, TrustSettings(entry.settings))
        }
    }
}

extension TrustSettings {
    init(_ core: KeychainCore.TrustSettings) {
        var dispositions: [TrustPurpose: TrustDisposition] = [:]
        for (purpose, disposition) in core.dispositions {
            guard let purpose = TrustPurpose(rawValue: purpose.rawValue),
                let disposition = TrustDisposition(rawValue: disposition.rawValue)
            else { continue }
            dispositions[purpose] = disposition
        }
        self.init(dispositions)
    }

    var core: KeychainCore.TrustSettings {
        var dispositions: [KeychainCore.TrustPurpose: KeychainCore.TrustDisposition] = [:]
        for (purpose, disposition) in self.dispositions {
            guard let purpose = KeychainCore.TrustPurpose(rawValue: purpose.rawValue),
                let disposition = KeychainCore.TrustDisposition(rawValue: disposition.rawValue)
            else { continue }
            dispositions[purpose] = disposition
        }
        return KeychainCore.TrustSettings(dispositions)
    }
}
