public import Foundation
internal import KeychainCore

/// A certificate stored in a keychain: the certificate and the item's own attributes.
///
/// The item is a PKCS#11 token object (CKO_CERTIFICATE, CKC_X_509), so PKCS#11 applications
/// see it as soon as it is added, with ``label`` as CKA_LABEL and ``publicKeyHash`` as CKA_ID.
public struct CertificateItem: Hashable, Sendable {
    /// The certificate.
    public let certificate: Certificate
    /// The item's label (CKA_LABEL, kSecAttrLabel). Defaults to the subject summary.
    public let label: String
    /// The item's key identifier (CKA_ID, kSecAttrPublicKeyHash): the certificate's
    /// ``Certificate/publicKeyHash`` unless set otherwise, so that it pairs with its key.
    public let publicKeyHash: [UInt8]
    /// An opaque reference that finds this item again, in this process or another, for as
    /// long as it exists (CKA_UNIQUE_ID, kSecValuePersistentRef). Never reused.
    public let persistentReference: [UInt8]
    /// Apple's common item attributes (accessibility, access group, synchronizable, dates),
    /// with Apple's defaults for what the item lacks. They are not part of a certificate's
    /// identity: it stays unique by issuer and serial number, as on Apple platforms.
    public let attributes: ItemAttributes

    /// Creates an item value. Items come from a ``Keychain``; this initializer is for tests
    /// and for code that builds expected values.
    public init(
        certificate: Certificate, label: String, publicKeyHash: [UInt8], persistentReference: [UInt8],
        attributes: ItemAttributes = ItemAttributes()
    ) {
        self.certificate = certificate
        self.label = label
        self.publicKeyHash = publicKeyHash
        self.persistentReference = persistentReference
        self.attributes = attributes
    }
}

/// Which certificates a find, update or delete applies to: every property that is set must
/// match (a logical AND); an empty query matches every certificate.
///
///     var query = CertificateQuery(label: "My Certificate")
///     query.validOn = Date()
///     let items = try keychain.certificates(matching: query)
///
/// Label, public-key hash, issuer with serial number, subject, persistent reference and
/// SHA-1 fingerprint are index lookups; the other criteria are checked on the candidates.
public struct CertificateQuery: Hashable, Sendable {
    /// How many matches an operation returns or applies to.
    public enum Limit: Hashable, Sendable {
        /// The first match only.
        case one
        /// Every match.
        case all
        /// At most this many matches (1 or more).
        case maximum(Int)
    }

    /// The item's label, exactly (CKA_LABEL).
    public var label: String?
    /// The subject Name: its DER, or Apple's normalized sequence of it.
    public var subject: [UInt8]?
    /// The issuer Name: its DER, or Apple's normalized sequence of it.
    public var issuer: [UInt8]?
    /// The serial number's INTEGER content bytes, as ``Certificate/serialNumber`` gives them.
    public var serialNumber: [UInt8]?
    /// The item's key identifier (CKA_ID, kSecAttrPublicKeyHash).
    public var publicKeyHash: [UInt8]?
    /// The subjectKeyIdentifier extension's value.
    public var subjectKeyIdentifier: [UInt8]?
    /// Text that some value of the subject contains, or the subject's one-line form
    /// (case-insensitive), like Apple's kSecMatchSubjectContains.
    public var subjectContains: String?
    /// An e-mail address of the certificate (case-insensitive).
    public var emailAddress: String?
    /// A date the certificate is valid on (kSecMatchValidOnDate).
    public var validOn: Date?
    /// SHA-1 of the certificate's DER.
    public var sha1Fingerprint: [UInt8]?
    /// SHA-256 of the certificate's DER.
    public var sha256Fingerprint: [UInt8]?
    /// This exact certificate (same DER).
    public var certificate: Certificate?
    /// The item with this ``CertificateItem/persistentReference``, synchronizable or not.
    public var persistentReference: [UInt8]?
    /// Apple's common attributes, each set one matching exactly (see ``ItemAttributes``). Of an
    /// identity query, they apply to the certificate and (but for the dates, which are the
    /// certificate's) to the private key.
    public var attributes: ItemAttributes
    /// True (the default): `attributes.synchronizable` nil matches synchronizable and other
    /// items alike. False applies the rule of Apple's query without kSecAttrSynchronizable:
    /// nil matches only items that are not synchronizable (the `Security` face's queries).
    public var anySynchronizable: Bool
    /// How many matches to return or change; every match by default.
    public var limit: Limit

    /// Creates a query; every criterion left nil matches anything (but see `attributes`).
    public init(
        label: String? = nil, subject: [UInt8]? = nil, issuer: [UInt8]? = nil,
        serialNumber: [UInt8]? = nil, publicKeyHash: [UInt8]? = nil,
        subjectKeyIdentifier: [UInt8]? = nil, subjectContains: String? = nil,
        emailAddress: String? = nil, validOn: Date? = nil, sha1Fingerprint: [UInt8]? = nil,
        sha256Fingerprint: [UInt8]? = nil, certificate: Certificate? = nil,
        persistentReference: [UInt8]? = nil, attributes: ItemAttributes = ItemAttributes(),
        anySynchronizable: Bool = true, limit: Limit = .all
    ) {
        self.label = label
        self.subject = subject
        self.issuer = issuer
        self.serialNumber = serialNumber
        self.publicKeyHash = publicKeyHash
        self.subjectKeyIdentifier = subjectKeyIdentifier
        self.subjectContains = subjectContains
        self.emailAddress = emailAddress
        self.validOn = validOn
        self.sha1Fingerprint = sha1Fingerprint
        self.sha256Fingerprint = sha256Fingerprint
        self.certificate = certificate
        self.persistentReference = persistentReference
        self.attributes = attributes
        self.anySynchronizable = anySynchronizable
        self.limit = limit
    }

    /// Every certificate.
    public static var all: CertificateQuery { CertificateQuery() }

    /// The query's common criteria (its other terms are the search plan's).
    var common: ItemSelection {
        ItemSelection(
            label: nil, persistentReference: persistentReference, attributes: attributes,
            anySynchronizable: anySynchronizable, limit: limit)
    }

    /// Whether a found item's common attributes match.
    func matchesAttributes(of item: CertificateItem) -> Bool { common.matches(item.attributes) }
}

/// Attribute changes for ``Keychain/updateCertificates(matching:setting:)``: each non-nil
/// property is set on every matching item. A certificate's DER and the attributes derived
/// from it cannot change: delete the item and add the new certificate.
public struct CertificateChanges: Hashable, Sendable {
    /// A new label (CKA_LABEL).
    public var label: String?
    /// A new key identifier (CKA_ID).
    public var publicKeyHash: [UInt8]?
    /// New values of Apple's common attributes: accessibility, access group, synchronizable.
    /// The dates are the keychain's.
    public var attributes: ItemAttributes

    /// Creates a set of changes.
    public init(
        label: String? = nil, publicKeyHash: [UInt8]? = nil, attributes: ItemAttributes = ItemAttributes()
    ) {
        self.label = label
        self.publicKeyHash = publicKeyHash
        self.attributes = attributes
    }

    /// True when nothing would change.
    public var isEmpty: Bool { label == nil && publicKeyHash == nil && attributes.isEmpty }

    /// The PKCS#11 template of the changes.
    var template: AttributeSet {
        get throws(KeychainError) {
            var template = try attributes.certificateTemplate
            if let label { template[.label] = Array(label.utf8) }
            if let publicKeyHash { template[.id] = publicKeyHash }
            return template
        }
    }
}

extension ItemAttributes {
    /// The common attributes of a new certificate: access control is refused (a certificate
    /// is a public item; nothing would be enforced), the dates are the keychain's.
    var certificateTemplate: AttributeSet {
        get throws(KeychainError) {
            if accessControl != nil {
                throw KeychainError(.parameter, "certificates are public items: they have no access control")
            }
            return withoutDates.template
        }
    }
}
