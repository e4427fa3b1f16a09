// Keychain item keys and values, with the string values Apple's Security framework uses, so
// that dictionaries print and compare as they do there.

// MARK: Item classes

/// The key of an item's class: one of the `kSecClass…` values. Required by every `SecItem…`
/// call unless `kSecValueRef` implies it.
public let kSecClass: CFString = "class"
/// Certificates: PKCS#11 CKO_CERTIFICATE objects of type CKC_X_509 (DESIGN §5).
public let kSecClassCertificate: CFString = "cert"
/// Keys. Not implemented yet: `SecItem…` calls return `errSecUnimplemented`.
public let kSecClassKey: CFString = "keys"
/// Identities (a certificate with its private key). Not implemented yet:
/// `SecItem…` calls return `errSecUnimplemented`.
public let kSecClassIdentity: CFString = "idnt"
/// Generic passwords. Not implemented yet: `SecItem…` calls return `errSecUnimplemented`.
public let kSecClassGenericPassword: CFString = "genp"
/// Internet passwords. Not implemented: `SecItem…` calls return `errSecUnimplemented`.
public let kSecClassInternetPassword: CFString = "inet"

// MARK: Attributes

/// The item's label (CFString): CKA_LABEL. A certificate's default is its subject summary.
public let kSecAttrLabel: CFString = "labl"
/// A certificate's subject Name (CFData): its DER (CKA_SUBJECT), or in queries also Apple's
/// normalized sequence of it.
public let kSecAttrSubject: CFString = "subj"
/// A certificate's issuer Name (CFData): its DER (CKA_ISSUER), or in queries also Apple's
/// normalized sequence of it.
public let kSecAttrIssuer: CFString = "issr"
/// A certificate's serial number (CFData): the INTEGER's content bytes. PKCS#11's
/// CKA_SERIAL_NUMBER holds the full DER INTEGER; the façade converts.
public let kSecAttrSerialNumber: CFString = "slnr"
/// A certificate's public-key hash (CFData): CKA_ID, by default the SHA-1 of the public key,
/// shared with the certificate's key pair. Settable when adding and updating.
public let kSecAttrPublicKeyHash: CFString = "pkhh"
/// A certificate's subject key identifier extension (CFData).
public let kSecAttrSubjectKeyID: CFString = "skid"
/// A certificate's type (CFNumber): CSSM's X.509 type, which is the X.509 version (1, 2, 3).
/// Every certificate is CKA_CERTIFICATE_TYPE = CKC_X_509 in PKCS#11.
public let kSecAttrCertificateType: CFString = "ctyp"
/// A certificate's encoding (CFNumber): always 3, DER.
public let kSecAttrCertificateEncoding: CFString = "cenc"

// MARK: Search

/// How many items `SecItemCopyMatching` returns: `kSecMatchLimitOne` (the default),
/// `kSecMatchLimitAll`, or a positive CFNumber. `SecItemUpdate` and `SecItemDelete` always
/// apply to every match and accept only `kSecMatchLimitAll`.
public let kSecMatchLimit: CFString = "m_Limit"
/// One item: the result is the item itself, not an array.
public let kSecMatchLimitOne: CFString = "m_LimitOne"
/// Every item: the result is an array, even of one item.
public let kSecMatchLimitAll: CFString = "m_LimitAll"
/// Certificates whose subject contains this text, ignoring case (CFString).
/// `SecItemCopyMatching` only.
public let kSecMatchSubjectContains: CFString = "m_SubjectContains"
/// Certificates valid on this date (CFDate, or NSNull for now). `SecItemCopyMatching` only.
public let kSecMatchValidOnDate: CFString = "m_ValidOnDate"

// MARK: Return types

/// Return each item's data (CFBoolean): a certificate's DER as CFData.
public let kSecReturnData: CFString = "r_Data"
/// Return each item's attributes (CFBoolean): a dictionary of `kSecAttr…` keys.
public let kSecReturnAttributes: CFString = "r_Attributes"
/// Return a reference to each item (CFBoolean): a `SecCertificate`.
public let kSecReturnRef: CFString = "r_Ref"
/// Return a persistent reference to each item (CFBoolean): CFData that finds the item again
/// through `kSecValuePersistentRef`, in any process, as long as it exists.
public let kSecReturnPersistentRef: CFString = "r_PersistentRef"

// MARK: Values

/// An item's data (CFData): a certificate's DER.
public let kSecValueData: CFString = "v_Data"
/// A reference to an item (`SecCertificate`).
public let kSecValueRef: CFString = "v_Ref"
/// A persistent reference to an item (CFData), as `kSecReturnPersistentRef` returned it.
public let kSecValuePersistentRef: CFString = "v_PersistentRef"
