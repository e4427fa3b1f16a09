// Keychain item keys and values, with the string values Apple's Security framework uses, so
// that dictionaries print and compare as they do there.

// MARK: Item classes

/// The key of an item's class: one of the `kSecClass…` values. Required by every `SecItem…`
/// call unless `kSecValueRef` implies it.
nonisolated(unsafe) public let kSecClass: CFString = "class"
/// Certificates: PKCS#11 CKO_CERTIFICATE objects of type CKC_X_509 (DESIGN §5).
nonisolated(unsafe) public let kSecClassCertificate: CFString = "cert"
/// Keys: PKCS#11 CKO_PUBLIC_KEY and CKO_PRIVATE_KEY objects (DESIGN §5). Private keys are
/// found only while the keychain is unlocked (`SecKeychainUnlock`).
nonisolated(unsafe) public let kSecClassKey: CFString = "keys"
/// Identities: a certificate and the private key with the same application label (CKA_ID),
/// joined when searched for; nothing stores the pair as such. Needs the keychain unlocked.
nonisolated(unsafe) public let kSecClassIdentity: CFString = "idnt"
/// Generic passwords: private PKCS#11 data objects (CKO_DATA, CKA_PRIVATE=TRUE), the service
/// as CKA_APPLICATION, the account as vendor attribute 0x80504B10, the secret as CKA_VALUE
/// (encrypted at rest). Need the keychain unlocked.
nonisolated(unsafe) public let kSecClassGenericPassword: CFString = "genp"
/// Internet passwords. Not implemented: `SecItem…` calls return `errSecUnimplemented`.
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
/// A generic password's account (CFString): vendor attribute 0x80504B10.
nonisolated(unsafe) public let kSecAttrAccount: CFString = "acct"

// MARK: Search

/// How many items `SecItemCopyMatching` returns: `kSecMatchLimitOne` (the default),
/// `kSecMatchLimitAll`, or a positive CFNumber. `SecItemUpdate` and `SecItemDelete` always
/// apply to every match and accept only `kSecMatchLimitAll`.
nonisolated(unsafe) public let kSecMatchLimit: CFString = "m_Limit"
/// One item: the result is the item itself, not an array.
nonisolated(unsafe) public let kSecMatchLimitOne: CFString = "m_LimitOne"
/// Every item: the result is an array, even of one item.
nonisolated(unsafe) public let kSecMatchLimitAll: CFString = "m_LimitAll"
/// Certificates whose subject contains this text, ignoring case (CFString).
/// `SecItemCopyMatching` only.
nonisolated(unsafe) public let kSecMatchSubjectContains: CFString = "m_SubjectContains"
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
/// `SecIdentity`. Generic passwords have no reference type: asking for one is `errSecParam`.
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
