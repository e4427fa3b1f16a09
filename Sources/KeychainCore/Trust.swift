internal import KeychainCrypto
internal import KeychainStorage

/// What a certificate may be trusted for: the purposes every face names (NSS's trust
/// attributes, PKCS#11 3.2 CKO_TRUST, Apple's policies, p11-kit's extended key usages).
public enum TrustPurpose: String, CaseIterable, Sendable {
    /// TLS server authentication (EKU id-kp-serverAuth; Apple's SSL policy for a server).
    case serverAuth
    /// TLS client authentication (id-kp-clientAuth).
    case clientAuth
    /// Code signing (id-kp-codeSigning).
    case codeSigning
    /// S/MIME e-mail protection (id-kp-emailProtection).
    case emailProtection
    /// Every purpose with no setting of its own (Apple's trust settings with no policy).
    case any
}

/// What the keychain says about a certificate for one purpose.
public enum TrustDisposition: String, Sendable, CaseIterable {
    /// A root of trust: chains for the purpose may end here, whether or not the certificate
    /// is self-signed (NSS "C" / CKT_NSS_TRUSTED_DELEGATOR, PKCS#11 3.2 CKT_TRUST_ANCHOR,
    /// Apple's trustRoot / trustAsRoot).
    case trustedAnchor
    /// Trusted itself, as the end of a chain, but not as an issuer: no certificate it signed
    /// gains trust from it (NSS "P" / CKT_NSS_TRUSTED, PKCS#11 3.2 CKT_TRUSTED). Kept apart
    /// from `trustedAnchor` so that a CA marked "trusted peer" in NSS is never read back as
    /// an anchor for everything it issued.
    case trustedPeer
    /// Never trusted, and nothing chains through it (NSS "p" / CKT_NSS_NOT_TRUSTED, PKCS#11
    /// 3.2 CKT_NOT_TRUSTED, Apple's deny, p11-kit's blocklist).
    case distrusted
    /// No opinion: the certificate is judged by its chain like any other.
    case unspecified
}

/// A certificate's trust settings: a disposition per purpose. A purpose with no entry of
/// its own follows `.any`; an entry that is `.unspecified` means the same as none, so two
/// settings that mean the same compare equal and store alike.
public struct TrustSettings: Sendable, Hashable, CustomStringConvertible {
    public var dispositions: [TrustPurpose: TrustDisposition]

    public init(_ dispositions: [TrustPurpose: TrustDisposition] = [:]) {
        self.dispositions = dispositions.filter { $0.value != .unspecified }
    }

    public static func == (lhs: TrustSettings, rhs: TrustSettings) -> Bool {
        lhs.dispositions.filter { $0.value != .unspecified }
            == rhs.dispositions.filter { $0.value != .unspecified }
    }

    /// Hashes the entries other than `.unspecified` (what `==` compares).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(dispositions.filter { $0.value != .unspecified })
    }

    /// No setting for any purpose.
    public static let unspecified = TrustSettings()

    /// A trusted anchor for every purpose (CKA_TRUSTED set by the SO, Apple's trustRoot with no
    /// policy).
    public static let anchorForAnyPurpose = TrustSettings([.any: .trustedAnchor])

    /// Distrusted for every purpose (Apple's deny with no policy, p11-kit's blocklist).
    public static let distrustedForAnyPurpose = TrustSettings([.any: .distrusted])

    /// The disposition for `purpose`: its own entry, else that of `.any`.
    public func disposition(for purpose: TrustPurpose) -> TrustDisposition {
        if let own = dispositions[purpose], own != .unspecified { return own }
        return dispositions[.any] ?? .unspecified
    }

    /// Sets (or with `.unspecified` removes) the entry of one purpose.
    public mutating func set(_ disposition: TrustDisposition, for purpose: TrustPurpose) {
        dispositions[purpose] = disposition == .unspecified ? nil : disposition
    }

    /// True when no purpose has a setting.
    public var isUnspecified: Bool { dispositions.values.allSatisfy { $0 == .unspecified } }

    /// The purposes other than `.any`, each with the disposition it ends up with.
    public var effective: [TrustPurpose: TrustDisposition] {
        var result: [TrustPurpose: TrustDisposition] = [:]
        for purpose in TrustPurpose.allCases where purpose != .any {
            result[purpose] = disposition(for: purpose)
        }
        return result
    }

    /// True when the certificate is an anchor for at least one purpose: what CKA_TRUSTED
    /// (v2.40 §4.6.3) and p11-kit's trust tools read.
    public var isAnchorForSomePurpose: Bool { effective.values.contains(.trustedAnchor) }

    /// True when the certificate is distrusted for every purpose: what p11-kit's
    /// CKA_X_DISTRUSTED (its blocklist) says.
    public var isDistrustedForEveryPurpose: Bool { effective.values.allSatisfy { $0 == .distrusted } }

    public var description: String {
        TrustPurpose.allCases.compactMap { purpose in
            dispositions[purpose].flatMap { $0 == .unspecified ? nil : "\(purpose.rawValue)=\($0.rawValue)" }
        }.joined(separator: ",")
    }

    // MARK: Stored form

    /// One byte per purpose, in `TrustPurpose.allCases` order: 0 unspecified, 1 anchor,
    /// 2 distrusted, 3 peer. A fixed layout, so a damaged value is recognised as one.
    var encoded: [UInt8] {
        TrustPurpose.allCases.map { purpose in
            switch dispositions[purpose] ?? .unspecified {
            case .unspecified: 0
            case .trustedAnchor: 1
            case .distrusted: 2
            case .trustedPeer: 3
            }
        }
    }

    /// The settings in a stored value, or nil when the value is not one.
    init?(encoded bytes: [UInt8]) {
        guard bytes.count == TrustPurpose.allCases.count else { return nil }
        var dispositions: [TrustPurpose: TrustDisposition] = [:]
        for (purpose, byte) in zip(TrustPurpose.allCases, bytes) {
            switch byte {
            case 0: continue
            case 1: dispositions[purpose] = .trustedAnchor
            case 2: dispositions[purpose] = .distrusted
            case 3: dispositions[purpose] = .trustedPeer
            default: return nil
            }
        }
        self.init(dispositions)
    }

    /// The stored attributes of a certificate that carry these settings, all written in the
    /// one transaction that changes them: the settings themselves, the indexed marker that
    /// finds every certificate with settings, and the attributes derived from them that the
    /// PKCS#11 face shows as they are (CKA_TRUSTED, p11-kit's CKA_X_DISTRUSTED).
    var storedAttributes: AttributeSet {
        [
            .trustSettings: encoded,
            .trustMarker: isUnspecified ? [0] : [1],
            .trusted: isAnchorForSomePurpose ? [1] : [0],
            .distrusted: isDistrustedForEveryPurpose ? [1] : [0],
        ]
    }

    /// The settings stored on a certificate (none when it has none).
    static func stored(in attributes: AttributeSet) throws(CoreError) -> TrustSettings {
        guard let bytes = attributes[.trustSettings] else { return .unspecified }
        guard let settings = TrustSettings(encoded: bytes) else {
            throw CoreError(.storageCorrupt, "a certificate's stored trust settings are damaged")
        }
        return settings
    }
}

extension AccessContext {
    /// Who may change trust settings (the keychain's policy, README "Trust"):
    ///
    /// - always a read/write session or connection on a writable store, as for any change;
    /// - on a token with a user PIN, the user or the security officer logged in (as a macOS
    ///   user's trust settings need the user's authorisation, and as the SO alone sets
    ///   CKA_TRUSTED, v2.40 §4.6.3): trust decides what every program on the login accepts,
    ///   so it is no weaker than the private objects the PIN guards;
    /// - on a token with no user PIN (ARCHITECTURE.md §5: certificates need no PIN), whoever may write
    ///   the store: nothing there is behind a PIN, and the file's permissions are the guard.
    ///
    /// CKA_TRUSTED itself stays as the spec has it: TRUE only from the SO (`ObjectPolicy`).
    func checkTrustWrite(tokenObject: Bool, writeProtected: Bool, hasUserPIN: Bool, loggedIn: Bool)
        throws(CoreError)
    {
        try checkWrite(tokenObject: tokenObject, privateObject: false, writeProtected: writeProtected)
        if hasUserPIN, !(loggedIn && (userLoggedIn || securityOfficer)) {
            throw CoreError(
                .userNotLoggedIn,
                "this token has a user PIN: log in (as the user or the SO) to change trust settings")
        }
    }
}

/// Trust settings kept with each certificate (ARCHITECTURE.md §9). One stored model; the PKCS#11
/// face shows it as CKA_TRUSTED, NSS trust objects, PKCS#11 3.2 trust objects and p11-kit's
/// attributes, the Swift faces as trust settings and evaluation anchors.
extension Token {
    /// The trust settings of a certificate that count (`.unspecified` when it has none):
    /// certificates are public objects and need no login, but without the token key a grant
    /// of trust on a token with a user PIN counts as unspecified (TrustIntegrity.swift).
    package func trustSettings(ofCertificate reference: ObjectReference) throws(CoreError) -> TrustSettings {
        try withState { (state) throws(CoreError) in
            let stored = try state.loadStored(reference, context: AccessContext(readWrite: false))
            try Token.checkIsCertificate(stored)
            return try state.effectiveTrustSettings(of: stored)
        }
    }

    /// The trust settings of the certificate `der` in this keychain.
    package func trustSettings(ofCertificateDER der: [UInt8]) throws(CoreError) -> TrustSettings {
        try trustSettings(ofCertificate: try certificateReference(der: der))
    }

    /// Replaces a certificate's trust settings, in one write transaction (all of its stored
    /// trust attributes change, or none), under the policy of `checkTrustWrite`.
    package func setTrustSettings(
        _ settings: TrustSettings, ofCertificate reference: ObjectReference, context: AccessContext
    ) throws(CoreError) {
        try withState { (state) throws(CoreError) in
            let store = try state.store(for: reference)
            let persistent = try state.store()
            state.checkLogin()
            try CoreError.mapping {
                try store.write { () throws in
                    // Read inside the write: a PIN set meanwhile by another process counts.
                    let hasUserPIN = try persistent.metadata(Token.Key.userPIN) != nil
                    let current = try state.loadStored(reference, context: context)
                    try Token.checkIsCertificate(current)
                    try context.checkTrustWrite(
                        tokenObject: !reference.isSessionObject,
                        writeProtected: !reference.isSessionObject
                            && (configuration.readOnly || store.isReadOnly),
                        hasUserPIN: hasUserPIN, loggedIn: state.authentication.login != nil)
                    let sealed = try state.sealedTrustAttributes(settings, der: current[.value] ?? [])
                    let rows = sealed.map { StoredAttribute($0.key.rawValue, $0.value) }
                    try store.update(reference.rowID, attributes: rows)
                }
            }
        }
    }

    /// Replaces the trust settings of the certificate `der` in this keychain; a certificate
    /// the keychain does not hold is refused (`.objectNotFound`), and nothing is written.
    package func setTrustSettings(
        _ settings: TrustSettings, ofCertificateDER der: [UInt8], context: AccessContext
    ) throws(CoreError) {
        try setTrustSettings(settings, ofCertificate: try certificateReference(der: der), context: context)
    }

    /// Every token certificate with a setting other than unspecified: its DER and its
    /// settings, for the anchors and distrust of an evaluation. An index seek on the trust
    /// marker: the cost follows the certificates with settings, not the keychain's size.
    package func certificatesWithTrustSettings() throws(CoreError) -> [(
        der: [UInt8], settings: TrustSettings
    )] {
        let references = try certificateReferencesWithTrustSettings()
        return try withState { (state) throws(CoreError) in
            var result: [(der: [UInt8], settings: TrustSettings)] = []
            for reference in references {
                let attributes: AttributeSet
                do throws(CoreError) {
                    attributes = try state.loadStored(reference, context: AccessContext(readWrite: false))
                } catch  where error.code == .objectNotFound {
                    continue  // deleted since the find
                }
                let settings = try state.effectiveTrustSettings(of: attributes)
                if !settings.isUnspecified, let der = attributes[.value] { result.append((der, settings)) }
            }
            return result
        }
    }

    /// References of the certificates with trust settings, token objects first, then this
    /// process's session certificates.
    package func certificateReferencesWithTrustSettings() throws(CoreError) -> [ObjectReference] {
        let terms = [
            StoredAttribute(AttributeType.trustMarker.rawValue, [1]),
            StoredAttribute(
                AttributeType.class.rawValue, AttributeValue.encode(ObjectClass.certificate.rawValue)),
        ]
        return try withState { (state) throws(CoreError) in
            var found = try CoreError.mapping { try state.store().find(terms) }
                .map { ObjectReference(isSessionObject: false, rowID: $0) }
            if let sessionStore = state.objects.sessionStore {
                found += try CoreError.mapping { try sessionStore.find(terms) }
                    .map { ObjectReference(isSessionObject: true, rowID: $0) }
            }
            return found
        }
    }

    /// The certificate with this issuer and serial number (a token object or a session
    /// object when `tokenObject` says, else either, token store first); nil when the keychain
    /// holds none. An index seek on the serial (ARCHITECTURE.md §3.1).
    package func certificateReference(issuer: [UInt8], serialNumber: [UInt8], tokenObject: Bool? = nil)
        throws(CoreError) -> ObjectReference?
    {
        var template: AttributeSet = [
            .class: AttributeValue.encode(ObjectClass.certificate.rawValue),
            .serialNumber: serialNumber, .issuer: issuer,
        ]
        if let tokenObject { template[.token] = [tokenObject ? 1 : 0] }
        return try findObjects(template, context: AccessContext(readWrite: false)).first
    }

    /// The certificate `der` in this keychain; `.objectNotFound` when it holds no
    /// certificate with this DER.
    func certificateReference(der: [UInt8]) throws(CoreError) -> ObjectReference {
        let certificate: X509Certificate
        do {
            certificate = try X509Certificate(der: der)
        } catch {
            throw CoreError(.attributeValueInvalid, error.message)
        }
        let template: AttributeSet = [
            .class: AttributeValue.encode(ObjectClass.certificate.rawValue),
            .serialNumber: certificate.serialNumber, .issuer: certificate.issuer, .value: der,
        ]
        guard let reference = try findObjects(template, context: AccessContext(readWrite: false)).first else {
            throw CoreError(.objectNotFound, "the certificate is not in this keychain: add it first")
        }
        return reference
    }

    private static func checkIsCertificate(_ attributes: AttributeSet) throws(CoreError) {
        guard attributes.ulong(.class) == ObjectClass.certificate.rawValue else {
            throw CoreError(.objectNotFound, "trust settings belong to certificates; this object is not one")
        }
    }
}

extension TrustSettings {
    /// The stapled extendedKeyUsage extension p11-kit reads for a certificate that is an anchor
    /// for some purposes and not others (RFC 5280 §4.2.1.12, made by OpenSSL): the DER of the
    /// Extension and of its OID. Nil for an anchor for every purpose, or for none: such a
    /// certificate has no purpose extension.
    package func purposeExtension() throws(CoreError) -> (objectID: [UInt8], der: [UInt8])? {
        let purposes: [TrustPurpose] = [.serverAuth, .clientAuth, .codeSigning, .emailProtection]
        let anchored = purposes.filter { disposition(for: $0) == .trustedAnchor }
        guard !anchored.isEmpty, anchored.count < purposes.count else { return nil }
        do throws(CryptoError) {
            return try CertificateExtension.extendedKeyUsage(anchored.map(\.rawValue))
        } catch {
            throw CoreError(error)
        }
    }
}
