internal import CPKCS11
internal import KeychainCore

// Trust objects: NSS's CKO_NSS_TRUST (pkcs11n.h, also p11-kit's pkcs11x.h) and PKCS#11 3.2's
// CKO_TRUST, both views of the trust settings the keychain keeps with each certificate
// (KeychainCore Trust.swift). Nothing is stored as a trust object: creating one sets the
// settings of the certificate its CKA_ISSUER and CKA_SERIAL_NUMBER name, destroying one
// clears them, reading one reads them. Who may change trust is the core's rule
// (`AccessContext.checkTrustWrite`); this file only translates vocabularies.

/// Which trust-object vocabulary a handle or template speaks.
enum TrustView: CaseIterable {
    /// CKO_NSS_TRUST: what NSS (certutil -M, Firefox) writes and reads.
    case nss
    /// CKO_TRUST of PKCS#11 3.2 §4.15.
    case pkcs11
    /// p11-kit's CKO_X_CERTIFICATE_EXTENSION: an extendedKeyUsage extension "stapled" to a
    /// certificate that is an anchor for some purposes only, listing them, so that p11-kit's
    /// trust tools and GnuTLS do not take it for an anchor of every purpose. Read-only.
    case purposeExtension

    /// A trust object's handle is its certificate's, with one of these bits set in the row
    /// ID. Row IDs count up from 1 and never reach 2^53, so no stored object has them; a
    /// handle with one that names no certificate is CKR_OBJECT_HANDLE_INVALID like any other.
    private var bit: Int64 {
        switch self {
        case .nss: 1 << 54
        case .pkcs11: 1 << 53
        case .purposeExtension: 1 << 52
        }
    }
    private static let bits: Int64 = (1 << 54) | (1 << 53) | (1 << 52)

    var objectClass: UInt64 {
        switch self {
        case .nss: TrustVocabulary.nssTrustClass
        case .pkcs11: TrustVocabulary.trustClass
        case .purposeExtension: TrustVocabulary.certificateExtensionClass
        }
    }

    /// The trust objects a caller may create, change and destroy.
    var isWritable: Bool { self != .purposeExtension }

    /// The view a template's CKA_CLASS asks for, or nil for any other class. With `writable`,
    /// only the views C_CreateObject makes (a stapled extension is the token's own).
    init?(template: AttributeSet, writable: Bool = true) {
        guard let objectClass = template.ulong(.class),
            let view = TrustView.allCases.first(where: { $0.objectClass == objectClass }),
            view.isWritable || !writable
        else { return nil }
        self = view
    }

    /// The trust object of `certificate` in this view.
    func reference(of certificate: ObjectReference) -> ObjectReference {
        ObjectReference(isSessionObject: certificate.isSessionObject, rowID: certificate.rowID | bit)
    }

    /// The view and certificate a trust object's reference stands for; nil for a stored object.
    static func parse(_ reference: ObjectReference) -> (view: TrustView, certificate: ObjectReference)? {
        guard let view = allCases.first(where: { reference.rowID & $0.bit != 0 }) else { return nil }
        let certificate = ObjectReference(
            isSessionObject: reference.isSessionObject, rowID: reference.rowID & ~TrustView.bits)
        return (view, certificate)
    }

    /// The trust attributes of this view and the purpose each stands for. PKCS#11 3.2's IPsec,
    /// time-stamping and OCSP-signing purposes have no setting of their own in the keychain:
    /// they read as the certificate's `.any` disposition.
    var purposes: [(type: AttributeType, purpose: TrustPurpose)] {
        switch self {
        case .nss:
            [
                (TrustVocabulary.nssServerAuth, .serverAuth), (TrustVocabulary.nssClientAuth, .clientAuth),
                (TrustVocabulary.nssCodeSigning, .codeSigning),
                (TrustVocabulary.nssEmailProtection, .emailProtection),
            ]
        case .pkcs11:
            [
                (TrustVocabulary.serverAuth, .serverAuth), (TrustVocabulary.clientAuth, .clientAuth),
                (TrustVocabulary.codeSigning, .codeSigning),
                (TrustVocabulary.emailProtection, .emailProtection),
                (TrustVocabulary.ipsecIKE, .any), (TrustVocabulary.timeStamping, .any),
                (TrustVocabulary.ocspSigning, .any),
            ]
        case .purposeExtension: []
        }
    }

    /// The CK_TRUST value of a disposition: NSS's CKT_NSS_* or PKCS#11 3.2's CKT_*. An
    /// unspecified purpose is "must verify" to NSS (what NSS itself writes for no flags: judge
    /// by the chain) and "unknown" to PKCS#11 3.2 (no opinion).
    func value(of disposition: TrustDisposition) -> UInt64 {
        switch (self, disposition) {
        case (.nss, .trustedAnchor): TrustVocabulary.nssTrustedDelegator
        case (.nss, .trustedPeer): TrustVocabulary.nssTrusted
        case (.nss, .distrusted): TrustVocabulary.nssNotTrusted
        case (.nss, .unspecified): TrustVocabulary.nssMustVerifyTrust
        case (.pkcs11, .trustedAnchor): TrustVocabulary.trustAnchor
        case (.pkcs11, .trustedPeer): TrustVocabulary.trusted
        case (.pkcs11, .distrusted): TrustVocabulary.notTrusted
        case (.pkcs11, .unspecified): TrustVocabulary.trustUnknown
        case (.purposeExtension, _): 0  // has no trust attributes
        }
    }

    /// The disposition a CK_TRUST value gives, or nil for a value this view does not define.
    /// NSS's "valid delegator" (certutil "c": a CA that may issue, not an anchor) and every
    /// "unknown" or "must verify" value leave the purpose unspecified.
    func disposition(of value: UInt64) -> TrustDisposition? {
        switch (self, value) {
        case (.nss, TrustVocabulary.nssTrustedDelegator), (.pkcs11, TrustVocabulary.trustAnchor):
            .trustedAnchor
        case (.nss, TrustVocabulary.nssTrusted), (.pkcs11, TrustVocabulary.trusted): .trustedPeer
        case (.nss, TrustVocabulary.nssNotTrusted), (.pkcs11, TrustVocabulary.notTrusted): .distrusted
        case (.nss, TrustVocabulary.nssMustVerifyTrust), (.nss, TrustVocabulary.nssTrustUnknown),
            (.nss, TrustVocabulary.nssValidDelegator), (.pkcs11, TrustVocabulary.trustUnknown),
            (.pkcs11, TrustVocabulary.trustMustVerifyTrust):
            .unspecified
        default: nil
        }
    }

    /// Every attribute a trust object of this view has (and so may be searched by).
    var attributeTypes: Set<AttributeType> {
        var types: Set<AttributeType> = [
            .class, .token, .private, .modifiable, .copyable, .destroyable, .label,
        ]
        if self != .purposeExtension { types.formUnion([.issuer, .serialNumber]) }
        types.formUnion(purposes.map(\.type))
        switch self {
        case .nss:
            types.formUnion([
                TrustVocabulary.nssCertSHA1Hash, TrustVocabulary.nssCertMD5Hash,
                TrustVocabulary.nssStepUpApproved,
            ])
        case .pkcs11:
            types.formUnion([TrustVocabulary.hashOfCertificate, .nameHashAlgorithm])
        case .purposeExtension:
            types.formUnion([.publicKeyInfo, .objectID, .value])
        }
        return types
    }

    /// Attributes a creation template may give beyond `attributeTypes`: NSS's older key-usage
    /// trust attributes (digital signature … time stamping), accepted and not kept.
    var ignoredTypes: Set<AttributeType> {
        self == .nss ? Set((0xCE53_6351...0xCE53_635F).map { AttributeType($0) }) : []
    }
}

/// The constants of both vocabularies (NSS's pkcs11n.h, PKCS#11 3.2 §4.15; also in
/// p11/include/p11keychain.h for C callers).
enum TrustVocabulary {
    static let nssTrustClass: UInt64 = 0xCE53_4353  // CKO_NSS_TRUST
    static let trustClass: UInt64 = 0x0000_000B  // CKO_TRUST
    static let certificateExtensionClass: UInt64 = 0xD844_47C8  // CKO_X_CERTIFICATE_EXTENSION
    static let nssServerAuth = AttributeType(0xCE53_6358)
    static let nssClientAuth = AttributeType(0xCE53_6359)
    static let nssCodeSigning = AttributeType(0xCE53_635A)
    static let nssEmailProtection = AttributeType(0xCE53_635B)
    static let nssStepUpApproved = AttributeType(0xCE53_6360)
    static let nssCertSHA1Hash = AttributeType(0xCE53_63B4)
    static let nssCertMD5Hash = AttributeType(0xCE53_63B5)
    static let serverAuth = AttributeType(0x062C)
    static let clientAuth = AttributeType(0x062D)
    static let codeSigning = AttributeType(0x062E)
    static let emailProtection = AttributeType(0x062F)
    static let ipsecIKE = AttributeType(0x0630)
    static let timeStamping = AttributeType(0x0631)
    static let ocspSigning = AttributeType(0x0632)
    static let hashOfCertificate = AttributeType(0x0635)
    static let nssTrusted: UInt64 = 0xCE53_4351
    static let nssTrustedDelegator: UInt64 = 0xCE53_4352
    static let nssMustVerifyTrust: UInt64 = 0xCE53_4353
    static let nssTrustUnknown: UInt64 = 0xCE53_4355
    static let nssNotTrusted: UInt64 = 0xCE53_435A
    static let nssValidDelegator: UInt64 = 0xCE53_435B
    static let trustUnknown: UInt64 = 0
    static let trusted: UInt64 = 1
    static let trustAnchor: UInt64 = 2
    static let notTrusted: UInt64 = 3
    static let trustMustVerifyTrust: UInt64 = 4
    /// CKM_SHA_1 and CKM_SHA256: the hash of a 3.2 trust object (v3.0 §2.16).
    static let sha1: UInt64 = 0x0220
    static let sha256: UInt64 = 0x0250

    /// The digest a CKA_NAME_HASH_ALGORITHM names, or nil for one the token does not offer.
    static func digest(_ mechanism: UInt64) -> HashAlgorithm? {
        MechanismRegistry.hash(named: mechanism).map(HashAlgorithm.init)
    }
}

// MARK: The object functions on trust objects

/// C_CreateObject of a trust object: sets the trust settings of the certificate it names and
/// returns the trust object's reference. The certificate must be in this token, a token
/// object for a token trust object (a session certificate for a session one): the keychain
/// keeps trust with the certificate, and refuses (CKR_ATTRIBUTE_VALUE_INVALID) trust for a
/// certificate it does not hold rather than keep trust for it elsewhere (README "Trust").
/// The object states the certificate's whole trust: purposes it leaves out are unspecified.
func createTrustObject(_ view: TrustView, _ template: AttributeSet, in session: Session)
    throws(P11Error) -> ObjectReference
{
    for (type, value) in template {
        guard view.attributeTypes.contains(type) || view.ignoredTypes.contains(type) else {
            throw P11Error(CKR_ATTRIBUTE_TYPE_INVALID, "attribute \(type) does not belong to a trust object")
        }
        if [.token, .private, .modifiable, .copyable, .destroyable, TrustVocabulary.nssStepUpApproved]
            .contains(type), AttributeValue.bool(value) == nil
        {
            throw P11Error(CKR_ATTRIBUTE_VALUE_INVALID, "attribute \(type) is not a CK_BBOOL")
        }
    }
    guard let issuer = template[.issuer], let serial = template[.serialNumber] else {
        throw P11Error(
            CKR_TEMPLATE_INCOMPLETE,
            "a trust object needs CKA_ISSUER and CKA_SERIAL_NUMBER of its certificate")
    }
    if template.bool(.private) == true {
        throw P11Error(
            CKR_ATTRIBUTE_VALUE_INVALID, "trust objects are public, like the certificates they are for")
    }
    var settings = TrustSettings()
    for (type, purpose) in view.purposes where purpose != .any {
        guard let raw = template[type] else { continue }
        guard let value = AttributeValue.ulong(raw), let disposition = view.disposition(of: value) else {
            throw P11Error(
                CKR_ATTRIBUTE_VALUE_INVALID, "attribute \(type) is not a trust value of this class")
        }
        settings.set(disposition, for: purpose)
    }
    settings = canonical(settings)
    let tokenObject = template.bool(.token) ?? false
    let token = session.token
    let found = try core { () throws(CoreError) in
        try token.certificateReference(issuer: issuer, serialNumber: serial, tokenObject: tokenObject)
    }
    guard let certificate = found else {
        throw P11Error(
            CKR_ATTRIBUTE_VALUE_INVALID,
            "no \(tokenObject ? "token" : "session") certificate of this token has this issuer and serial "
                + "number: the keychain keeps trust with its certificate (add the certificate first)")
    }
    let der = try core { () throws(CoreError) in
        try token.attributes(of: certificate, context: session.context, revealing: [])[.value] ?? []
    }
    try checkHashes(view, template, der: der, settings: settings)
    try core { () throws(CoreError) in
        try token.setTrustSettings(settings, ofCertificate: certificate, context: session.context)
    }
    return view.reference(of: certificate)
}

/// NSS's four purposes all alike are the keychain's "any purpose" (as certutil -t CT,C,C).
private func canonical(_ settings: TrustSettings) -> TrustSettings {
    let specific = TrustPurpose.allCases.filter { $0 != .any }.map { settings.disposition(for: $0) }
    guard let first = specific.first, specific.allSatisfy({ $0 == first }) else { return settings }
    return TrustSettings([.any: first])
}

/// A trust object's certificate hashes, when given, must be those of the certificate its
/// issuer and serial name (NSS checks them when it reads; a trust object for another
/// certificate with a reused serial must not land on this one). A 3.2 trust object that
/// trusts needs its hash (PKCS#11 3.2 §4.15 footnote 2).
private func checkHashes(_ view: TrustView, _ template: AttributeSet, der: [UInt8], settings: TrustSettings)
    throws(P11Error)
{
    switch view {
    case .nss:
        if let sha1 = template[TrustVocabulary.nssCertSHA1Hash], sha1 != HashAlgorithm.sha1.hash(der) {
            throw P11Error(CKR_ATTRIBUTE_VALUE_INVALID, "CKA_CERT_SHA1_HASH is not that of the certificate")
        }
        if let md5 = template[TrustVocabulary.nssCertMD5Hash], md5 != certificateMD5(der) {
            throw P11Error(CKR_ATTRIBUTE_VALUE_INVALID, "CKA_CERT_MD5_HASH is not that of the certificate")
        }
    case .purposeExtension:
        return  // never created by a caller (`TrustView.isWritable`)
    case .pkcs11:
        guard let hash = template[TrustVocabulary.hashOfCertificate] else {
            let trusts = TrustPurpose.allCases.contains {
                [.trustedAnchor, .trustedPeer].contains(settings.disposition(for: $0))
            }
            if trusts {
                throw P11Error(
                    CKR_TEMPLATE_INCOMPLETE, "a trust object that trusts needs CKA_HASH_OF_CERTIFICATE")
            }
            return
        }
        let mechanism = template[.nameHashAlgorithm].map { AttributeValue.ulong($0) } ?? TrustVocabulary.sha1
        guard let mechanism, let digest = TrustVocabulary.digest(mechanism) else {
            throw P11Error(
                CKR_ATTRIBUTE_VALUE_INVALID, "CKA_NAME_HASH_ALGORITHM names no digest this token has")
        }
        guard hash == digest.hash(der) else {
            throw P11Error(
                CKR_ATTRIBUTE_VALUE_INVALID, "CKA_HASH_OF_CERTIFICATE is not that of the certificate")
        }
    }
}

/// C_DestroyObject of a trust object: the certificate's trust settings are cleared.
func destroyTrustObject(_ view: TrustView, _ certificate: ObjectReference, in session: Session)
    throws(P11Error)
{
    guard view.isWritable else {
        throw P11Error(
            CKR_ACTION_PROHIBITED, "a stapled purpose extension follows the certificate's trust: change that")
    }
    try core { () throws(CoreError) in
        try session.token.setTrustSettings(
            .unspecified, ofCertificate: certificate, context: session.context)
    }
}

/// C_SetAttributeValue of a trust object: the purposes given change, the others stay.
func updateTrustObject(
    _ view: TrustView, _ certificate: ObjectReference, with template: AttributeSet, in session: Session
) throws(P11Error) {
    guard view.isWritable else {
        throw P11Error(CKR_ATTRIBUTE_READ_ONLY, "a stapled purpose extension cannot be changed")
    }
    let token = session.token
    var settings = try core { () throws(CoreError) in try token.trustSettings(ofCertificate: certificate) }
    let purposes = Dictionary(view.purposes.filter { $0.purpose != .any }.map { ($0.type, $0.purpose) }) {
        a, _ in a
    }
    for (type, raw) in template {
        if type == TrustVocabulary.nssStepUpApproved, view == .nss, AttributeValue.bool(raw) != nil {
            continue
        }
        guard let purpose = purposes[type] else {
            throw P11Error(CKR_ATTRIBUTE_READ_ONLY, "attribute \(type) of a trust object cannot be changed")
        }
        guard let value = AttributeValue.ulong(raw), let disposition = view.disposition(of: value) else {
            throw P11Error(
                CKR_ATTRIBUTE_VALUE_INVALID, "attribute \(type) is not a trust value of this class")
        }
        // A purpose set apart from `.any` keeps the others as they read now.
        let before = settings
        for other in TrustPurpose.allCases
        where other != .any && (settings.dispositions[other] ?? .unspecified) == .unspecified {
            settings.set(before.disposition(for: other), for: other)
        }
        settings.set(.unspecified, for: .any)
        settings.set(disposition, for: purpose)
    }
    try core { () throws(CoreError) in
        try token.setTrustSettings(canonical(settings), ofCertificate: certificate, context: session.context)
    }
}

/// The attributes of a trust object, made from its certificate and the certificate's trust
/// settings. A certificate with no settings still answers through a handle a caller holds
/// (every purpose "must verify" / "unknown"); searches list only certificates with settings.
func trustObjectAttributes(_ view: TrustView, _ certificate: ObjectReference, in session: Session)
    throws(P11Error) -> AttributeSet
{
    let token = session.token
    let stored = try core { () throws(CoreError) in
        try token.attributes(of: certificate, context: session.context, revealing: [])
    }
    guard stored.ulong(.class) == ObjectClass.certificate.rawValue else {
        throw P11Error(CKR_OBJECT_HANDLE_INVALID, "the handle names no trust object")
    }
    let settings = try core { () throws(CoreError) in try token.trustSettings(ofCertificate: certificate) }
    if view == .purposeExtension {
        return try purposeExtension(of: stored, settings)
    }
    let der = stored[.value] ?? []
    var attributes: AttributeSet = [
        .class: AttributeValue.encode(view.objectClass), .token: stored[.token] ?? [0], .private: [0],
        .modifiable: [1], .copyable: [0], .destroyable: [1], .label: stored[.label] ?? [],
        .issuer: stored[.issuer] ?? [], .serialNumber: stored[.serialNumber] ?? [],
    ]
    for (type, purpose) in view.purposes {
        attributes[type] = AttributeValue.encode(view.value(of: settings.disposition(for: purpose)))
    }
    switch view {
    case .nss:
        attributes[TrustVocabulary.nssCertSHA1Hash] = HashAlgorithm.sha1.hash(der)
        attributes[TrustVocabulary.nssCertMD5Hash] = certificateMD5(der)
        attributes[TrustVocabulary.nssStepUpApproved] = [0]
    case .pkcs11:
        attributes[TrustVocabulary.hashOfCertificate] = HashAlgorithm.sha256.hash(der)
        attributes[.nameHashAlgorithm] = AttributeValue.encode(TrustVocabulary.sha256)
    case .purposeExtension: break
    }
    return attributes
}

/// The stapled extendedKeyUsage extension (RFC 5280 §4.2.1.12) of a certificate that is an
/// anchor for some purposes and not others: the form p11-kit reads (a DER Extension in
/// CKA_VALUE, tied to the certificate by CKA_PUBLIC_KEY_INFO). A certificate that is an
/// anchor for every purpose, or for none, has no such object.
private func purposeExtension(of certificate: AttributeSet, _ settings: TrustSettings) throws(P11Error)
    -> AttributeSet
{
    guard let purposeExtension = try core({ () throws(CoreError) in try settings.purposeExtension() }) else {
        throw P11Error(CKR_OBJECT_HANDLE_INVALID, "the certificate has no purpose extension")
    }
    return [
        .class: AttributeValue.encode(TrustVocabulary.certificateExtensionClass),
        .token: certificate[.token] ?? [0], .private: [0], .modifiable: [0], .copyable: [0],
        .destroyable: [0], .label: certificate[.label] ?? [],
        .publicKeyInfo: certificate[.publicKeyInfo] ?? [], .objectID: purposeExtension.objectID,
        .value: purposeExtension.der,
    ]
}

/// C_GetAttributeValue of a trust object, in the core's reading form.
func readTrustObject(
    _ types: [AttributeType], _ view: TrustView, _ certificate: ObjectReference, in session: Session
) throws(P11Error) -> [Token.AttributeReading] {
    let attributes = try trustObjectAttributes(view, certificate, in: session)
    return types.map { type in attributes[type].map { .value($0) } ?? .absent }
}

/// The trust objects a C_FindObjectsInit template matches: none unless it asks for a trust
/// class or for no class at all; then one per certificate with trust settings (an index seek,
/// or the one certificate the template's issuer and serial name) whose view matches every
/// attribute of the template.
func findTrustObjects(_ template: AttributeSet, in session: Session) throws(P11Error) -> [ObjectReference] {
    let views: [TrustView]
    if template[.class] != nil {
        guard let view = TrustView(template: template, writable: false) else { return [] }
        views = [view]
    } else {
        views = TrustView.allCases
    }
    let wanted = views.filter { Set(template.keys).isSubset(of: $0.attributeTypes) }
    guard !wanted.isEmpty else { return [] }
    let token = session.token
    let certificates = try core { () throws(CoreError) -> [ObjectReference] in
        if let issuer = template[.issuer], let serial = template[.serialNumber] {
            let one = try token.certificateReference(
                issuer: issuer, serialNumber: serial, tokenObject: template.bool(.token))
            guard let one, !(try token.trustSettings(ofCertificate: one).isUnspecified) else { return [] }
            return [one]
        }
        return try token.certificateReferencesWithTrustSettings()
    }
    var found: [ObjectReference] = []
    for view in wanted {
        for certificate in certificates {
            let attributes: AttributeSet
            do {
                attributes = try trustObjectAttributes(view, certificate, in: session)
            } catch  where error.rv == CKR_OBJECT_HANDLE_INVALID {
                continue  // deleted since the find began
            }
            if template.allSatisfy({ attributes[$0.key] == $0.value }) {
                found.append(view.reference(of: certificate))
            }
        }
    }
    return found
}
