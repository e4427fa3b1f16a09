// Keychain item keys and values, with the string values Apple's Security framework uses, so
// that dictionaries print and compare as they do there.

// MARK: Item classes

/// The key of an item's class: one of the `kSecClass…` values. Required by every `SecItem…`
/// call unless `kSecValueRef` implies it.
public let kSecClass: CFString = "class"
/// Certificates: PKCS#11 CKO_CERTIFICATE objects of type CKC_X_509 (DESIGN §5).
public let kSecClassCertificate: CFString = "cert"
/// Keys: PKCS#11 CKO_PUBLIC_KEY and CKO_PRIVATE_KEY objects (DESIGN §5). Private keys are
/// found only while the keychain is unlocked (`SecKeychainUnlock`).
public let kSecClassKey: CFString = "keys"
/// Identities: a certificate and the private key with the same application label (CKA_ID),
/// joined when searched for; nothing stores the pair as such. Needs the keychain unlocked.
public let kSecClassIdentity: CFString = "idnt"
/// Generic passwords: private PKCS#11 data objects (CKO_DATA, CKA_PRIVATE=TRUE), the service
/// as CKA_APPLICATION, the account as vendor attribute 0x80504B10, the secret as CKA_VALUE
/// (encrypted at rest). Need the keychain unlocked.
public let kSecClassGenericPassword: CFString = "genp"
/// Internet passwords: private PKCS#11 data objects like generic passwords, marked
/// CKA_P11K_ITEM_CLASS = "inet", the server as CKA_APPLICATION (README table). Unique by
/// server, account, protocol, port, path, authentication type and security domain (with the
/// access group and synchronizable flag). Need the keychain unlocked.
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

// MARK: Key attributes

/// A key's class (CFString): `kSecAttrKeyClassPublic` or `kSecAttrKeyClassPrivate`.
public let kSecAttrKeyClass: CFString = "kcls"
/// The public half of a key pair (CKO_PUBLIC_KEY).
public let kSecAttrKeyClassPublic: CFString = "0"
/// The private half of a key pair (CKO_PRIVATE_KEY).
public let kSecAttrKeyClassPrivate: CFString = "1"
/// Symmetric keys (CKO_SECRET_KEY): AES, HMAC and generic secret keys, made by the `Keychain`
/// API or any PKCS#11 application. `SecItemAdd` stores one from its value (`kSecValueData`,
/// with `kSecAttrKeyTypeAES`…), `SecItemCopyMatching` finds them (attributes, references,
/// persistent references) and `SecItemDelete` deletes them; the `Keychain` API uses them.
public let kSecAttrKeyClassSymmetric: CFString = "2"
/// A key's type (CFString): `kSecAttrKeyTypeRSA`, `kSecAttrKeyTypeECSECPrimeRandom` or
/// `kSecAttrKeyTypeEd25519`; for symmetric keys `kSecAttrKeyTypeAES`, `kSecAttrKeyTypeHMAC…`
/// or `kSecAttrKeyTypeGenericSecret`.
public let kSecAttrKeyType: CFString = "type"
/// RSA keys (CKK_RSA), 2048 to 4096 bits.
public let kSecAttrKeyTypeRSA: CFString = "42"
/// EC keys on P-256, P-384 or P-521 (CKK_EC).
public let kSecAttrKeyTypeECSECPrimeRandom: CFString = "73"
/// EC keys: the older name of `kSecAttrKeyTypeECSECPrimeRandom`, with the same value.
public let kSecAttrKeyTypeEC: CFString = "73"
/// Ed25519 keys (CKK_EC_EDWARDS). Not Apple's (its SecKey has no Ed25519): a p11keychain
/// addition, so that Ed25519 keys made through PKCS#11 can be found and used here.
public let kSecAttrKeyTypeEd25519: CFString = "p11keychain.ed25519"
/// AES keys (CKK_AES), 128, 192 or 256 bits: macOS's constant (CSSM_ALGID_AES), with its value.
public let kSecAttrKeyTypeAES: CFString = "2147483649"
/// Generic secret keys (CKK_GENERIC_SECRET). Not Apple's (its SecItem.h names no such type): a
/// p11keychain addition, as are the HMAC key types below.
public let kSecAttrKeyTypeGenericSecret: CFString = "p11keychain.generic-secret"
/// HMAC-SHA-1 keys (CKK_SHA_1_HMAC). A p11keychain addition.
public let kSecAttrKeyTypeHMACSHA1: CFString = "p11keychain.hmac-sha1"
/// HMAC-SHA-224 keys (CKK_SHA224_HMAC). A p11keychain addition.
public let kSecAttrKeyTypeHMACSHA224: CFString = "p11keychain.hmac-sha224"
/// HMAC-SHA-256 keys (CKK_SHA256_HMAC). A p11keychain addition.
public let kSecAttrKeyTypeHMACSHA256: CFString = "p11keychain.hmac-sha256"
/// HMAC-SHA-384 keys (CKK_SHA384_HMAC). A p11keychain addition.
public let kSecAttrKeyTypeHMACSHA384: CFString = "p11keychain.hmac-sha384"
/// HMAC-SHA-512 keys (CKK_SHA512_HMAC). A p11keychain addition.
public let kSecAttrKeyTypeHMACSHA512: CFString = "p11keychain.hmac-sha512"
/// A key's size in bits (CFNumber): the RSA modulus, the EC curve (256, 384, 521).
public let kSecAttrKeySizeInBits: CFString = "bsiz"
/// A key's effective size in bits (CFNumber): the same as `kSecAttrKeySizeInBits` here.
public let kSecAttrEffectiveKeySize: CFString = "esiz"
/// A key's application label (CFData): CKA_ID, by default the SHA-1 of the public key, shared
/// by the pair and the certificates issued for it.
public let kSecAttrApplicationLabel: CFString = "klbl"
/// A key's application tag (CFData, or a CFString as its UTF-8): PKCS#11 vendor attribute
/// 0x80504B11, indexed. The usual way to find a key again.
public let kSecAttrApplicationTag: CFString = "atag"
/// Whether a key is stored in the keychain (CFBoolean). `SecKeyCreateRandomKey` keeps a
/// key with `false` (the default) in memory only; stored items are always permanent.
public let kSecAttrIsPermanent: CFString = "perm"
/// Whether a private key's secret is never revealed (CFBoolean; CKA_SENSITIVE). Default for
/// new keys, as Apple's: false.
public let kSecAttrIsSensitive: CFString = "sens"
/// Whether a private key may leave the keychain (CFBoolean; CKA_EXTRACTABLE). Default for
/// new keys, as Apple's: true. `SecKeyCopyExternalRepresentation` returns a stored private
/// key only when it is extractable and not sensitive.
public let kSecAttrIsExtractable: CFString = "extr"
/// Whether the key may encrypt (CFBoolean; CKA_ENCRYPT).
public let kSecAttrCanEncrypt: CFString = "encr"
/// Whether the key may decrypt (CFBoolean; CKA_DECRYPT).
public let kSecAttrCanDecrypt: CFString = "decr"
/// Whether the key may derive keys (CFBoolean; CKA_DERIVE).
public let kSecAttrCanDerive: CFString = "drve"
/// Whether the key may sign (CFBoolean; CKA_SIGN).
public let kSecAttrCanSign: CFString = "sign"
/// Whether the key may verify (CFBoolean; CKA_VERIFY).
public let kSecAttrCanVerify: CFString = "vrfy"
/// Whether the key may wrap keys (CFBoolean; CKA_WRAP).
public let kSecAttrCanWrap: CFString = "wrap"
/// Whether the key may unwrap keys (CFBoolean; CKA_UNWRAP).
public let kSecAttrCanUnwrap: CFString = "unwp"
/// Attributes of the private key `SecKeyCreateRandomKey` makes (a dictionary).
public let kSecPrivateKeyAttrs: CFString = "private"
/// Attributes of the public key `SecKeyCreateRandomKey` makes (a dictionary).
public let kSecPublicKeyAttrs: CFString = "public"
/// A hardware token for a new key (Apple's Secure Enclave). There is none:
/// `SecKeyCreateRandomKey` with it fails with `errSecUnimplemented`.
public let kSecAttrTokenID: CFString = "tkid"
/// Apple's Secure Enclave token ID.
public let kSecAttrTokenIDSecureEnclave: CFString = "com.apple.setoken"

// MARK: Password attributes

/// A generic password's service (CFString): CKA_APPLICATION. With the account, it identifies
/// the item: a second item with the same pair is `errSecDuplicateItem`.
public let kSecAttrService: CFString = "svce"
/// A password's account (CFString, or CFData holding UTF-8): vendor attribute 0x80504B10.
public let kSecAttrAccount: CFString = "acct"
/// An internet password's server (CFString): CKA_APPLICATION, as a generic password's service.
public let kSecAttrServer: CFString = "srvr"
/// An internet password's security domain, e.g. an HTTP realm (CFString): CKA_P11K_SECURITY_DOMAIN.
public let kSecAttrSecurityDomain: CFString = "sdmn"
/// An internet password's protocol (one of the `kSecAttrProtocol…` values): CKA_P11K_PROTOCOL.
public let kSecAttrProtocol: CFString = "ptcl"
/// An internet password's authentication type (a `kSecAttrAuthenticationType…` value):
/// CKA_P11K_AUTHENTICATION_TYPE.
public let kSecAttrAuthenticationType: CFString = "atyp"
/// An internet password's port (CFNumber): CKA_P11K_PORT.
public let kSecAttrPort: CFString = "port"
/// An internet password's path (CFString): CKA_P11K_PATH.
public let kSecAttrPath: CFString = "path"

// MARK: Attributes every item has (README "Apple keychain attributes on Linux")

/// When the item may be read (one of the `kSecAttrAccessible…` values; default
/// `kSecAttrAccessibleWhenUnlocked`): CKA_P11K_ACCESSIBLE. Stored and matched; on Linux every
/// value means "while the keychain is unlocked".
public let kSecAttrAccessible: CFString = "pdmn"
/// Readable while the keychain is unlocked (Apple's default).
public let kSecAttrAccessibleWhenUnlocked: CFString = "ak"
/// Readable after the first unlock (stored as such; here: while unlocked).
public let kSecAttrAccessibleAfterFirstUnlock: CFString = "ck"
/// Always readable (deprecated by Apple; stored as such; here: while unlocked).
public let kSecAttrAccessibleAlways: CFString = "dk"
/// As `kSecAttrAccessibleWhenUnlocked`, never migrated to another device.
public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = "aku"
/// As `kSecAttrAccessibleAfterFirstUnlock`, never migrated to another device.
public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
/// As `kSecAttrAccessibleAlways`, never migrated to another device.
public let kSecAttrAccessibleAlwaysThisDeviceOnly: CFString = "dku"
/// Only while a device passcode is set (stored as such; here: while unlocked).
public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString = "akpu"
/// The item's access group (CFString): CKA_P11K_ACCESS_GROUP. Stored and matched; no
/// entitlement restricts it on Linux.
public let kSecAttrAccessGroup: CFString = "agrp"
/// Whether the item is synchronised through iCloud (CFBoolean; default false):
/// CKA_P11K_SYNCHRONIZABLE. Stored and matched; nothing leaves the machine. A query without it
/// matches only items that are not synchronizable; `kSecAttrSynchronizableAny` matches both.
public let kSecAttrSynchronizable: CFString = "sync"
/// In a query, as the value of `kSecAttrSynchronizable`: synchronizable or not.
public let kSecAttrSynchronizableAny: CFString = "syna"
/// The item's access control (a `SecAccessControl`): its protection is the item's
/// `kSecAttrAccessible`, its flags CKA_P11K_ACCESS_CONTROL. Set when the item is added.
public let kSecAttrAccessControl: CFString = "accc"
/// When the item was stored (CFDate, read-only): CKA_P11K_CREATION_DATE, set by the keychain.
public let kSecAttrCreationDate: CFString = "cdat"
/// When the item last changed (CFDate, read-only): CKA_P11K_MODIFICATION_DATE.
public let kSecAttrModificationDate: CFString = "mdat"
/// A password's description (CFString): CKA_P11K_DESCRIPTION.
public let kSecAttrDescription: CFString = "desc"
/// A password's comment (CFString): CKA_P11K_COMMENT.
public let kSecAttrComment: CFString = "icmt"
/// A password's creator (CFNumber, a FourCharCode): CKA_P11K_CREATOR.
public let kSecAttrCreator: CFString = "crtr"
/// A password's type (CFNumber, a FourCharCode): CKA_P11K_TYPE. (Apple's key spelled the same
/// as `kSecAttrKeyType`; on a password it is this one.)
public let kSecAttrType: CFString = "type"
/// Whether a password is hidden from keychain browsers (CFBoolean): CKA_P11K_IS_INVISIBLE.
public let kSecAttrIsInvisible: CFString = "invi"
/// Whether a password is a placeholder for "no password" (CFBoolean): CKA_P11K_IS_NEGATIVE.
public let kSecAttrIsNegative: CFString = "nega"
/// A generic password's application data (CFData): CKA_P11K_GENERIC.
public let kSecAttrGeneric: CFString = "gena"

// MARK: Internet protocols (kSecAttrProtocol values: Apple's four-letter codes)

public let kSecAttrProtocolFTP: CFString = "ftp "
public let kSecAttrProtocolFTPAccount: CFString = "ftpa"
public let kSecAttrProtocolHTTP: CFString = "http"
public let kSecAttrProtocolIRC: CFString = "irc "
public let kSecAttrProtocolNNTP: CFString = "nntp"
public let kSecAttrProtocolPOP3: CFString = "pop3"
public let kSecAttrProtocolSMTP: CFString = "smtp"
public let kSecAttrProtocolSOCKS: CFString = "sox "
public let kSecAttrProtocolIMAP: CFString = "imap"
public let kSecAttrProtocolLDAP: CFString = "ldap"
public let kSecAttrProtocolAppleTalk: CFString = "atlk"
public let kSecAttrProtocolAFP: CFString = "afp "
public let kSecAttrProtocolTelnet: CFString = "teln"
public let kSecAttrProtocolSSH: CFString = "ssh "
public let kSecAttrProtocolFTPS: CFString = "ftps"
public let kSecAttrProtocolHTTPS: CFString = "htps"
public let kSecAttrProtocolHTTPProxy: CFString = "htpx"
public let kSecAttrProtocolHTTPSProxy: CFString = "htsx"
public let kSecAttrProtocolFTPProxy: CFString = "ftpx"
public let kSecAttrProtocolSMB: CFString = "smb "
public let kSecAttrProtocolRTSP: CFString = "rtsp"
public let kSecAttrProtocolRTSPProxy: CFString = "rtsx"
public let kSecAttrProtocolDAAP: CFString = "daap"
public let kSecAttrProtocolEPPC: CFString = "eppc"
public let kSecAttrProtocolIPP: CFString = "ipp "
public let kSecAttrProtocolNNTPS: CFString = "ntps"
public let kSecAttrProtocolLDAPS: CFString = "ldps"
public let kSecAttrProtocolTelnetS: CFString = "tels"
public let kSecAttrProtocolIMAPS: CFString = "imps"
public let kSecAttrProtocolIRCS: CFString = "ircs"
public let kSecAttrProtocolPOP3S: CFString = "pops"

// MARK: Authentication types (kSecAttrAuthenticationType values)

public let kSecAttrAuthenticationTypeNTLM: CFString = "ntlm"
public let kSecAttrAuthenticationTypeMSN: CFString = "msna"
public let kSecAttrAuthenticationTypeDPA: CFString = "dpaa"
public let kSecAttrAuthenticationTypeRPA: CFString = "rpaa"
public let kSecAttrAuthenticationTypeHTTPBasic: CFString = "http"
public let kSecAttrAuthenticationTypeHTTPDigest: CFString = "httd"
public let kSecAttrAuthenticationTypeHTMLForm: CFString = "form"
public let kSecAttrAuthenticationTypeDefault: CFString = "dflt"

// MARK: Use keys (how a call may authenticate)

/// Which keychain API to use (CFBoolean). There is one keychain here: accepted and ignored.
public let kSecUseDataProtectionKeychain: CFString = "nleg"
/// Whether a call may ask the user (`kSecUseAuthenticationUIAllow`, `…Fail`, `…Skip`). There is
/// no prompt here: an item needing the PIN reads only with `kSecUseAuthenticationContext`;
/// without it the call fails with `errSecInteractionNotAllowed`, or with `…Skip` passes over
/// such items.
public let kSecUseAuthenticationUI: CFString = "u_AuthUI"
public let kSecUseAuthenticationUIAllow: CFString = "u_AuthUIA"
public let kSecUseAuthenticationUIFail: CFString = "u_AuthUIF"
public let kSecUseAuthenticationUISkip: CFString = "u_AuthUIS"
/// Apple's LAContext. Here: the user's PIN (CFString, or CFData), given for this one call to an
/// item whose access control needs presence. Never stored.
public let kSecUseAuthenticationContext: CFString = "u_AuthCtx"
/// The text Apple shows when it asks the user (CFString). Accepted; there is no prompt.
public let kSecUseOperationPrompt: CFString = "u_OpPrompt"
/// Deprecated by Apple for `kSecUseAuthenticationUI` (CFBoolean): true is `…Fail`.
public let kSecUseNoAuthenticationUI: CFString = "u_NoAuthUI"

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

/// Return each item's data (CFBoolean): a certificate's DER, a generic password's secret, a
/// key's external representation (a private key's only when it is exportable), an
/// identity's certificate DER.
public let kSecReturnData: CFString = "r_Data"
/// Return each item's attributes (CFBoolean): a dictionary of `kSecAttr…` keys.
public let kSecReturnAttributes: CFString = "r_Attributes"
/// Return a reference to each item (CFBoolean): a `SecCertificate`, `SecKey` or
/// `SecIdentity`. Passwords have no reference type: as on Apple, their data is returned.
public let kSecReturnRef: CFString = "r_Ref"
/// Return a persistent reference to each item (CFBoolean): CFData that finds the item again
/// through `kSecValuePersistentRef`, in any process, as long as it exists.
public let kSecReturnPersistentRef: CFString = "r_PersistentRef"

// MARK: Values

/// An item's data (CFData): a certificate's DER, a generic password's secret.
public let kSecValueData: CFString = "v_Data"
/// A reference to an item: a `SecCertificate`, `SecKey` or `SecIdentity`.
public let kSecValueRef: CFString = "v_Ref"
/// A persistent reference to an item (CFData), as `kSecReturnPersistentRef` returned it.
public let kSecValuePersistentRef: CFString = "v_PersistentRef"
