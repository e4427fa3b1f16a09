// Keychain item keys and values, with the string values Apple's Security framework uses, so
// that dictionaries print and compare as they do there.

// MARK: Item classes

/// The key of an item's class: one of the `kSecClass…` values. Required by every `SecItem…`
/// call unless `kSecValueRef` implies it.
nonisolated(unsafe) public let kSecClass: CFString = "class"
/// Certificates: PKCS#11 CKO_CERTIFICATE objects of type CKC_X_509 (ARCHITECTURE.md §7.1).
nonisolated(unsafe) public let kSecClassCertificate: CFString = "cert"
/// Keys: PKCS#11 CKO_PUBLIC_KEY and CKO_PRIVATE_KEY objects (ARCHITECTURE.md §7.1). Private keys are
/// found only while the keychain is unlocked (`SecKeychainUnlock`).
nonisolated(unsafe) public let kSecClassKey: CFString = "keys"
/// Identities: a certificate and the private key with the same application label (CKA_ID),
/// joined when searched for; nothing stores the pair as such. Needs the keychain unlocked.
nonisolated(unsafe) public let kSecClassIdentity: CFString = "idnt"
/// Generic passwords: private PKCS#11 data objects (CKO_DATA, CKA_PRIVATE=TRUE), the service
/// as CKA_APPLICATION, the account as vendor attribute 0x80504B10, the secret as CKA_VALUE
/// (encrypted at rest). Need the keychain unlocked.
nonisolated(unsafe) public let kSecClassGenericPassword: CFString = "genp"
/// Internet passwords: private PKCS#11 data objects like generic passwords, marked
/// CKA_P11K_ITEM_CLASS = "inet", the server as CKA_APPLICATION (README table). Unique by
/// server, account, protocol, port, path, authentication type and security domain (with the
/// access group and synchronizable flag). Need the keychain unlocked.
nonisolated(unsafe) public let kSecClassInternetPassword: CFString = "inet"

// MARK: Attributes

/// The item's label (CFString): CKA_LABEL. A certificate's default is its subject summary.
nonisolated(unsafe) public let kSecAttrLabel: CFString = "labl"
/// A certificate's subject Name (CFData): its DER (CKA_SUBJECT), or in queries also Apple's
/// normalized sequence of it.
nonisolated(unsafe) public let kSecAttrSubject: CFString = "subj"
/// A certificate's issuer Name (CFData): its DER (CKA_ISSUER), or in queries also Apple's
/// normalized sequence of it.
nonisolated(unsafe) public let kSecAttrIssuer: CFString = "issr"
/// A certificate's serial number (CFData): the INTEGER's content bytes. PKCS#11's
/// CKA_SERIAL_NUMBER holds the full DER INTEGER; the façade converts.
nonisolated(unsafe) public let kSecAttrSerialNumber: CFString = "slnr"
/// A certificate's public-key hash (CFData): CKA_ID, by default the SHA-1 of the public key,
/// shared with the certificate's key pair. Settable when adding and updating.
nonisolated(unsafe) public let kSecAttrPublicKeyHash: CFString = "pkhh"
/// A certificate's subject key identifier extension (CFData).
nonisolated(unsafe) public let kSecAttrSubjectKeyID: CFString = "skid"
/// A certificate's type (CFNumber): CSSM's X.509 type, which is the X.509 version (1, 2, 3).
/// Every certificate is CKA_CERTIFICATE_TYPE = CKC_X_509 in PKCS#11.
nonisolated(unsafe) public let kSecAttrCertificateType: CFString = "ctyp"
/// A certificate's encoding (CFNumber): always 3, DER.
nonisolated(unsafe) public let kSecAttrCertificateEncoding: CFString = "cenc"

// MARK: Key attributes

/// A key's class (CFString): `kSecAttrKeyClassPublic` or `kSecAttrKeyClassPrivate`.
nonisolated(unsafe) public let kSecAttrKeyClass: CFString = "kcls"
/// The public half of a key pair (CKO_PUBLIC_KEY).
nonisolated(unsafe) public let kSecAttrKeyClassPublic: CFString = "0"
/// The private half of a key pair (CKO_PRIVATE_KEY).
nonisolated(unsafe) public let kSecAttrKeyClassPrivate: CFString = "1"
/// Symmetric keys (CKO_SECRET_KEY): AES, HMAC and generic secret keys, made by the `Keychain`
/// API or any PKCS#11 application. `SecItemAdd` stores one from its value (`kSecValueData`,
/// with `kSecAttrKeyTypeAES`…), `SecItemCopyMatching` finds them (attributes, references,
/// persistent references) and `SecItemDelete` deletes them; the `Keychain` API uses them.
nonisolated(unsafe) public let kSecAttrKeyClassSymmetric: CFString = "2"
/// A key's type (CFString): `kSecAttrKeyTypeRSA`, `kSecAttrKeyTypeECSECPrimeRandom` or
/// `kSecAttrKeyTypeEd25519`; for symmetric keys `kSecAttrKeyTypeAES`, `kSecAttrKeyTypeHMAC…`
/// or `kSecAttrKeyTypeGenericSecret`.
nonisolated(unsafe) public let kSecAttrKeyType: CFString = "type"
/// RSA keys (CKK_RSA), 2048 to 4096 bits.
nonisolated(unsafe) public let kSecAttrKeyTypeRSA: CFString = "42"
/// EC keys on P-256, P-384 or P-521 (CKK_EC).
nonisolated(unsafe) public let kSecAttrKeyTypeECSECPrimeRandom: CFString = "73"
/// EC keys: the older name of `kSecAttrKeyTypeECSECPrimeRandom`, with the same value.
nonisolated(unsafe) public let kSecAttrKeyTypeEC: CFString = "73"
/// Ed25519 keys (CKK_EC_EDWARDS). Not Apple's (its SecKey has no Ed25519): a p11keychain
/// addition, so that Ed25519 keys made through PKCS#11 can be found and used here.
nonisolated(unsafe) public let kSecAttrKeyTypeEd25519: CFString = "p11keychain.ed25519"
/// AES keys (CKK_AES), 128, 192 or 256 bits: macOS's constant (CSSM_ALGID_AES), with its value.
nonisolated(unsafe) public let kSecAttrKeyTypeAES: CFString = "2147483649"
/// Generic secret keys (CKK_GENERIC_SECRET). Not Apple's (its SecItem.h names no such type): a
/// p11keychain addition, as are the HMAC key types below.
nonisolated(unsafe) public let kSecAttrKeyTypeGenericSecret: CFString = "p11keychain.generic-secret"
/// HMAC-SHA-1 keys (CKK_SHA_1_HMAC). A p11keychain addition.
nonisolated(unsafe) public let kSecAttrKeyTypeHMACSHA1: CFString = "p11keychain.hmac-sha1"
/// HMAC-SHA-224 keys (CKK_SHA224_HMAC). A p11keychain addition.
nonisolated(unsafe) public let kSecAttrKeyTypeHMACSHA224: CFString = "p11keychain.hmac-sha224"
/// HMAC-SHA-256 keys (CKK_SHA256_HMAC). A p11keychain addition.
nonisolated(unsafe) public let kSecAttrKeyTypeHMACSHA256: CFString = "p11keychain.hmac-sha256"
/// HMAC-SHA-384 keys (CKK_SHA384_HMAC). A p11keychain addition.
nonisolated(unsafe) public let kSecAttrKeyTypeHMACSHA384: CFString = "p11keychain.hmac-sha384"
/// HMAC-SHA-512 keys (CKK_SHA512_HMAC). A p11keychain addition.
nonisolated(unsafe) public let kSecAttrKeyTypeHMACSHA512: CFString = "p11keychain.hmac-sha512"
/// A key's size in bits (CFNumber): the RSA modulus, the EC curve (256, 384, 521).
nonisolated(unsafe) public let kSecAttrKeySizeInBits: CFString = "bsiz"
/// A key's effective size in bits (CFNumber): the same as `kSecAttrKeySizeInBits` here.
nonisolated(unsafe) public let kSecAttrEffectiveKeySize: CFString = "esiz"
/// A key's application label (CFData): CKA_ID, by default the SHA-1 of the public key, shared
/// by the pair and the certificates issued for it.
nonisolated(unsafe) public let kSecAttrApplicationLabel: CFString = "klbl"
/// A key's application tag (CFData, or a CFString as its UTF-8): PKCS#11 vendor attribute
/// 0x80504B11, indexed. The usual way to find a key again.
nonisolated(unsafe) public let kSecAttrApplicationTag: CFString = "atag"
/// Whether a key is stored in the keychain (CFBoolean). `SecKeyCreateRandomKey` keeps a
/// key with `false` (the default) in memory only; stored items are always permanent.
nonisolated(unsafe) public let kSecAttrIsPermanent: CFString = "perm"
/// Whether a private key's secret is never revealed (CFBoolean; CKA_SENSITIVE). Default for
/// new keys, as Apple's: false.
nonisolated(unsafe) public let kSecAttrIsSensitive: CFString = "sens"
/// Whether a private key may leave the keychain (CFBoolean; CKA_EXTRACTABLE). Default for
/// new keys, as Apple's: true. `SecKeyCopyExternalRepresentation` returns a stored private
/// key only when it is extractable and not sensitive.
nonisolated(unsafe) public let kSecAttrIsExtractable: CFString = "extr"
/// Whether the key may encrypt (CFBoolean; CKA_ENCRYPT).
nonisolated(unsafe) public let kSecAttrCanEncrypt: CFString = "encr"
/// Whether the key may decrypt (CFBoolean; CKA_DECRYPT).
nonisolated(unsafe) public let kSecAttrCanDecrypt: CFString = "decr"
/// Whether the key may derive keys (CFBoolean; CKA_DERIVE).
nonisolated(unsafe) public let kSecAttrCanDerive: CFString = "drve"
/// Whether the key may sign (CFBoolean; CKA_SIGN).
nonisolated(unsafe) public let kSecAttrCanSign: CFString = "sign"
/// Whether the key may verify (CFBoolean; CKA_VERIFY).
nonisolated(unsafe) public let kSecAttrCanVerify: CFString = "vrfy"
/// Whether the key may wrap keys (CFBoolean; CKA_WRAP).
nonisolated(unsafe) public let kSecAttrCanWrap: CFString = "wrap"
/// Whether the key may unwrap keys (CFBoolean; CKA_UNWRAP).
nonisolated(unsafe) public let kSecAttrCanUnwrap: CFString = "unwp"
/// Attributes of the private key `SecKeyCreateRandomKey` makes (a dictionary).
nonisolated(unsafe) public let kSecPrivateKeyAttrs: CFString = "private"
/// Attributes of the public key `SecKeyCreateRandomKey` makes (a dictionary).
nonisolated(unsafe) public let kSecPublicKeyAttrs: CFString = "public"
/// A hardware token for a new key (Apple's Secure Enclave). There is none:
/// `SecKeyCreateRandomKey` with it fails with `errSecUnimplemented`.
nonisolated(unsafe) public let kSecAttrTokenID: CFString = "tkid"
/// Apple's Secure Enclave token ID.
nonisolated(unsafe) public let kSecAttrTokenIDSecureEnclave: CFString = "com.apple.setoken"

// MARK: Password attributes

/// A generic password's service (CFString): CKA_APPLICATION. With the account, it identifies
/// the item: a second item with the same pair is `errSecDuplicateItem`.
nonisolated(unsafe) public let kSecAttrService: CFString = "svce"
/// A password's account (CFString, or CFData holding UTF-8): vendor attribute 0x80504B10.
nonisolated(unsafe) public let kSecAttrAccount: CFString = "acct"
/// An internet password's server (CFString): CKA_APPLICATION, as a generic password's service.
nonisolated(unsafe) public let kSecAttrServer: CFString = "srvr"
/// An internet password's security domain, e.g. an HTTP realm (CFString): CKA_P11K_SECURITY_DOMAIN.
nonisolated(unsafe) public let kSecAttrSecurityDomain: CFString = "sdmn"
/// An internet password's protocol (one of the `kSecAttrProtocol…` values): CKA_P11K_PROTOCOL.
nonisolated(unsafe) public let kSecAttrProtocol: CFString = "ptcl"
/// An internet password's authentication type (a `kSecAttrAuthenticationType…` value):
/// CKA_P11K_AUTHENTICATION_TYPE.
nonisolated(unsafe) public let kSecAttrAuthenticationType: CFString = "atyp"
/// An internet password's port (CFNumber): CKA_P11K_PORT.
nonisolated(unsafe) public let kSecAttrPort: CFString = "port"
/// An internet password's path (CFString): CKA_P11K_PATH.
nonisolated(unsafe) public let kSecAttrPath: CFString = "path"

// MARK: Attributes every item has (README "Apple keychain attributes on Linux")

/// When the item may be read (one of the `kSecAttrAccessible…` values; default
/// `kSecAttrAccessibleWhenUnlocked`): CKA_P11K_ACCESSIBLE. Stored and matched; on Linux every
/// value means "while the keychain is unlocked".
nonisolated(unsafe) public let kSecAttrAccessible: CFString = "pdmn"
/// Readable while the keychain is unlocked (Apple's default).
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlocked: CFString = "ak"
/// Readable after the first unlock (stored as such; here: while unlocked).
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlock: CFString = "ck"
/// Always readable (deprecated by Apple; stored as such; here: while unlocked).
nonisolated(unsafe) public let kSecAttrAccessibleAlways: CFString = "dk"
/// As `kSecAttrAccessibleWhenUnlocked`, never migrated to another device.
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = "aku"
/// As `kSecAttrAccessibleAfterFirstUnlock`, never migrated to another device.
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
/// As `kSecAttrAccessibleAlways`, never migrated to another device.
nonisolated(unsafe) public let kSecAttrAccessibleAlwaysThisDeviceOnly: CFString = "dku"
/// Only while a device passcode is set (stored as such; here: while unlocked).
nonisolated(unsafe) public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString = "akpu"
/// The item's access group (CFString): CKA_P11K_ACCESS_GROUP. Stored and matched; no
/// entitlement restricts it on Linux.
nonisolated(unsafe) public let kSecAttrAccessGroup: CFString = "agrp"
/// Whether the item is synchronised through iCloud (CFBoolean; default false):
/// CKA_P11K_SYNCHRONIZABLE. Stored and matched; nothing leaves the machine. A query without it
/// matches only items that are not synchronizable; `kSecAttrSynchronizableAny` matches both.
nonisolated(unsafe) public let kSecAttrSynchronizable: CFString = "sync"
/// In a query, as the value of `kSecAttrSynchronizable`: synchronizable or not.
nonisolated(unsafe) public let kSecAttrSynchronizableAny: CFString = "syna"
/// The item's access control (a `SecAccessControl`): its protection is the item's
/// `kSecAttrAccessible`, its flags CKA_P11K_ACCESS_CONTROL. Set when the item is added.
nonisolated(unsafe) public let kSecAttrAccessControl: CFString = "accc"
/// When the item was stored (CFDate, read-only): CKA_P11K_CREATION_DATE, set by the keychain.
nonisolated(unsafe) public let kSecAttrCreationDate: CFString = "cdat"
/// When the item last changed (CFDate, read-only): CKA_P11K_MODIFICATION_DATE.
nonisolated(unsafe) public let kSecAttrModificationDate: CFString = "mdat"
/// A password's description (CFString): CKA_P11K_DESCRIPTION.
nonisolated(unsafe) public let kSecAttrDescription: CFString = "desc"
/// A password's comment (CFString): CKA_P11K_COMMENT.
nonisolated(unsafe) public let kSecAttrComment: CFString = "icmt"
/// A password's creator (CFNumber, a FourCharCode): CKA_P11K_CREATOR.
nonisolated(unsafe) public let kSecAttrCreator: CFString = "crtr"
/// A password's type (CFNumber, a FourCharCode): CKA_P11K_TYPE. (Apple's key spelled the same
/// as `kSecAttrKeyType`; on a password it is this one.)
nonisolated(unsafe) public let kSecAttrType: CFString = "type"
/// Whether a password is hidden from keychain browsers (CFBoolean): CKA_P11K_IS_INVISIBLE.
nonisolated(unsafe) public let kSecAttrIsInvisible: CFString = "invi"
/// Whether a password is a placeholder for "no password" (CFBoolean): CKA_P11K_IS_NEGATIVE.
nonisolated(unsafe) public let kSecAttrIsNegative: CFString = "nega"
/// A generic password's application data (CFData): CKA_P11K_GENERIC.
nonisolated(unsafe) public let kSecAttrGeneric: CFString = "gena"

// MARK: Internet protocols (kSecAttrProtocol values: Apple's four-letter codes)

nonisolated(unsafe) public let kSecAttrProtocolFTP: CFString = "ftp "
nonisolated(unsafe) public let kSecAttrProtocolFTPAccount: CFString = "ftpa"
nonisolated(unsafe) public let kSecAttrProtocolHTTP: CFString = "http"
nonisolated(unsafe) public let kSecAttrProtocolIRC: CFString = "irc "
nonisolated(unsafe) public let kSecAttrProtocolNNTP: CFString = "nntp"
nonisolated(unsafe) public let kSecAttrProtocolPOP3: CFString = "pop3"
nonisolated(unsafe) public let kSecAttrProtocolSMTP: CFString = "smtp"
nonisolated(unsafe) public let kSecAttrProtocolSOCKS: CFString = "sox "
nonisolated(unsafe) public let kSecAttrProtocolIMAP: CFString = "imap"
nonisolated(unsafe) public let kSecAttrProtocolLDAP: CFString = "ldap"
nonisolated(unsafe) public let kSecAttrProtocolAppleTalk: CFString = "atlk"
nonisolated(unsafe) public let kSecAttrProtocolAFP: CFString = "afp "
nonisolated(unsafe) public let kSecAttrProtocolTelnet: CFString = "teln"
nonisolated(unsafe) public let kSecAttrProtocolSSH: CFString = "ssh "
nonisolated(unsafe) public let kSecAttrProtocolFTPS: CFString = "ftps"
nonisolated(unsafe) public let kSecAttrProtocolHTTPS: CFString = "htps"
nonisolated(unsafe) public let kSecAttrProtocolHTTPProxy: CFString = "htpx"
nonisolated(unsafe) public let kSecAttrProtocolHTTPSProxy: CFString = "htsx"
nonisolated(unsafe) public let kSecAttrProtocolFTPProxy: CFString = "ftpx"
nonisolated(unsafe) public let kSecAttrProtocolSMB: CFString = "smb "
nonisolated(unsafe) public let kSecAttrProtocolRTSP: CFString = "rtsp"
nonisolated(unsafe) public let kSecAttrProtocolRTSPProxy: CFString = "rtsx"
nonisolated(unsafe) public let kSecAttrProtocolDAAP: CFString = "daap"
nonisolated(unsafe) public let kSecAttrProtocolEPPC: CFString = "eppc"
nonisolated(unsafe) public let kSecAttrProtocolIPP: CFString = "ipp "
nonisolated(unsafe) public let kSecAttrProtocolNNTPS: CFString = "ntps"
nonisolated(unsafe) public let kSecAttrProtocolLDAPS: CFString = "ldps"
nonisolated(unsafe) public let kSecAttrProtocolTelnetS: CFString = "tels"
nonisolated(unsafe) public let kSecAttrProtocolIMAPS: CFString = "imps"
nonisolated(unsafe) public let kSecAttrProtocolIRCS: CFString = "ircs"
nonisolated(unsafe) public let kSecAttrProtocolPOP3S: CFString = "pops"

// MARK: Authentication types (kSecAttrAuthenticationType values)

nonisolated(unsafe) public let kSecAttrAuthenticationTypeNTLM: CFString = "ntlm"
nonisolated(unsafe) public let kSecAttrAuthenticationTypeMSN: CFString = "msna"
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDPA: CFString = "dpaa"
nonisolated(unsafe) public let kSecAttrAuthenticationTypeRPA: CFString = "rpaa"
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPBasic: CFString = "http"
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTTPDigest: CFString = "httd"
nonisolated(unsafe) public let kSecAttrAuthenticationTypeHTMLForm: CFString = "form"
nonisolated(unsafe) public let kSecAttrAuthenticationTypeDefault: CFString = "dflt"

// MARK: Use keys (how a call may authenticate)

/// Which keychain API to use (CFBoolean). There is one keychain here: accepted and ignored.
nonisolated(unsafe) public let kSecUseDataProtectionKeychain: CFString = "nleg"
/// Whether a call may ask the user (`kSecUseAuthenticationUIAllow`, `…Fail`, `…Skip`). There is
/// no prompt here: an item needing the PIN reads only with `kSecUseAuthenticationContext`;
/// without it the call fails with `errSecInteractionNotAllowed`, or with `…Skip` passes over
/// such items.
nonisolated(unsafe) public let kSecUseAuthenticationUI: CFString = "u_AuthUI"
nonisolated(unsafe) public let kSecUseAuthenticationUIAllow: CFString = "u_AuthUIA"
nonisolated(unsafe) public let kSecUseAuthenticationUIFail: CFString = "u_AuthUIF"
nonisolated(unsafe) public let kSecUseAuthenticationUISkip: CFString = "u_AuthUIS"
/// Apple's LAContext. Here: the user's PIN (CFString, or CFData), given for this one call to an
/// item whose access control needs presence. Never stored.
nonisolated(unsafe) public let kSecUseAuthenticationContext: CFString = "u_AuthCtx"
/// The text Apple shows when it asks the user (CFString). Accepted; there is no prompt.
nonisolated(unsafe) public let kSecUseOperationPrompt: CFString = "u_OpPrompt"
/// Deprecated by Apple for `kSecUseAuthenticationUI` (CFBoolean): true is `…Fail`.
nonisolated(unsafe) public let kSecUseNoAuthenticationUI: CFString = "u_NoAuthUI"

// MARK: Search

/// How many items `SecItemCopyMatching` returns: `kSecMatchLimitOne` (the default),
/// `kSecMatchLimitAll`, or a positive CFNumber. `SecItemUpdate` and `SecItemDelete` always
/// apply to every match and accept only `kSecMatchLimitAll`.
nonisolated(unsafe) public let kSecMatchLimit: CFString = "m_Limit"
/// One item: the result is the item itself, not an array.
nonisolated(unsafe) public let kSecMatchLimitOne: CFString = "m_LimitOne"
/// Every item: the result is an array, even of one item.
nonisolated(unsafe) public let kSecMatchLimitAll: CFString = "m_LimitAll"
/// Certificates and identities whose subject contains this text (CFString): a value of the
/// subject, or its one-line form. Case matters unless `kSecMatchCaseInsensitive` is true.
/// `SecItemCopyMatching` only.
nonisolated(unsafe) public let kSecMatchSubjectContains: CFString = "m_SubjectContains"
/// Certificates and identities whose subject starts with this text (CFString), as
/// `kSecMatchSubjectContains` looks at it. `SecItemCopyMatching` only.
nonisolated(unsafe) public let kSecMatchSubjectStartsWith: CFString = "m_SubjectStartsWith"
/// Certificates and identities whose subject ends with this text (CFString).
/// `SecItemCopyMatching` only.
nonisolated(unsafe) public let kSecMatchSubjectEndsWith: CFString = "m_SubjectEndsWith"
/// Certificates and identities whose subject is exactly this text (CFString): one of its
/// values, or its whole one-line form. `SecItemCopyMatching` only.
nonisolated(unsafe) public let kSecMatchSubjectWholeString: CFString = "m_SubjectWholeString"
/// Whether the subject search keys ignore case (CFBoolean; false by default, as on Apple).
nonisolated(unsafe) public let kSecMatchCaseInsensitive: CFString = "m_CaseInsensitive"
/// Certificates and identities with this e-mail address, or with none at all (CFString;
/// compared ignoring case). `SecItemCopyMatching` only.
nonisolated(unsafe) public let kSecMatchEmailAddressIfPresent: CFString = "m_EmailAddressIfPresent"
/// Certificates and identities whose chain has one of these issuers (CFArray of CFData, DER
/// X.500 names, as `URLProtectionSpace.distinguishedNames` gives them): the certificate's own
/// issuer or that of a CA certificate of the keychain it chains to by name.
/// `SecItemCopyMatching` only.
nonisolated(unsafe) public let kSecMatchIssuers: CFString = "m_Issuers"
/// Certificates and identities that satisfy this `SecPolicy` (anchoring aside, unless
/// `kSecMatchTrustedOnly`). `SecItemCopyMatching` only.
nonisolated(unsafe) public let kSecMatchPolicy: CFString = "m_Policy"
/// Only certificates and identities that evaluate as trusted (CFBoolean) under
/// `kSecMatchPolicy` (basic X.509 without it), with the keychain's trust settings and the
/// system anchors. `SecItemCopyMatching` only.
nonisolated(unsafe) public let kSecMatchTrustedOnly: CFString = "m_TrustedOnly"
/// Only these items (CFArray of `SecCertificate`, `SecIdentity` or persistent references).
/// `SecItemCopyMatching` and `SecItemDelete`.
nonisolated(unsafe) public let kSecMatchItemList: CFString = "m_ItemList"
/// Apple's deprecated spelling of `kSecMatchItemList`; taken as the same.
nonisolated(unsafe) public let kSecUseItemList: CFString = "u_ItemList"
/// Certificates valid on this date (CFDate, or NSNull for now). `SecItemCopyMatching` only.
nonisolated(unsafe) public let kSecMatchValidOnDate: CFString = "m_ValidOnDate"

// MARK: Return types

/// Return each item's data (CFBoolean): a certificate's DER, a generic password's secret, a
/// key's external representation (a private key's only when it is exportable), an
/// identity's certificate DER.
nonisolated(unsafe) public let kSecReturnData: CFString = "r_Data"
/// Return each item's attributes (CFBoolean): a dictionary of `kSecAttr…` keys.
nonisolated(unsafe) public let kSecReturnAttributes: CFString = "r_Attributes"
/// Return a reference to each item (CFBoolean): a `SecCertificate`, `SecKey` or
/// `SecIdentity`. Passwords have no reference type: as on Apple, their data is returned.
nonisolated(unsafe) public let kSecReturnRef: CFString = "r_Ref"
/// Return a persistent reference to each item (CFBoolean): CFData that finds the item again
/// through `kSecValuePersistentRef`, in any process, as long as it exists.
nonisolated(unsafe) public let kSecReturnPersistentRef: CFString = "r_PersistentRef"

// MARK: Values

/// An item's data (CFData): a certificate's DER, a generic password's secret.
nonisolated(unsafe) public let kSecValueData: CFString = "v_Data"
/// A reference to an item: a `SecCertificate`, `SecKey` or `SecIdentity`.
nonisolated(unsafe) public let kSecValueRef: CFString = "v_Ref"
/// A persistent reference to an item (CFData), as `kSecReturnPersistentRef` returned it.
nonisolated(unsafe) public let kSecValuePersistentRef: CFString = "v_PersistentRef"
