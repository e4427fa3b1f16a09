public import Foundation
internal import Keychain

// SecKey: asymmetric keys, stored in the keychain or held in memory, and what they do
// (Apple's SecKey.h). Signatures, encryption and the external representations follow Apple's
// formats: ECDSA signatures are DER, RSA keys PKCS#1, EC keys ANSI X9.63.

/// An asymmetric key, as Apple's `SecKeyRef`: either a key item of the keychain (from
/// `SecItemCopyMatching`, or `SecKeyCreateRandomKey` with `kSecAttrIsPermanent`), or a key
/// held in this process's memory only (a non-permanent new key, `SecKeyCopyPublicKey`,
/// `SecCertificateCopyKey`, `SecKeyCreateWithData`).
///
/// A stored private key is used through the keychain each time, so it needs the keychain
/// unlocked (`SecKeychainUnlock`) and follows the item's rules, as a PKCS#11 application
/// would. A key found with `kSecUseAuthenticationContext` (the user PIN here, Apple's
/// LAContext there) keeps it and presents it for each use that its access control asks the
/// PIN for; the core checks it every time and counts a wrong one.
public final class SecKey: Hashable, Sendable, CustomStringConvertible {
    enum Storage: Sendable {
        /// A key item of a keychain.
        case item(Keychain, KeyItem)
        /// A public key in memory.
        case publicKey(PublicKey)
        /// A private key in memory.
        case privateKey(PrivateKey)
        /// A symmetric key item of a keychain (CKO_SECRET_KEY, kSecAttrKeyClassSymmetric):
        /// found, described and deleted here; the `Keychain` API uses it.
        case secretKeyItem(Keychain, SecretKeyItem)
    }

    let storage: Storage
    /// The PIN the key was found with, for the uses that need it; nil without one.
    let authentication: AuthenticationContext?

    init(_ storage: Storage, authentication: AuthenticationContext? = nil) {
        self.storage = storage
        self.authentication = authentication
    }

    /// Runs a use of the key with the PIN it keeps (nil: none, and a key that needs one for
    /// each use fails with errSecInteractionNotAllowed, as Apple's without UI).
    func withPIN<T>(_ body: ([UInt8]?) throws(KeychainError) -> T) throws(KeychainError) -> T {
        try Security.withPIN(authentication, body)
    }

    /// The key's public half; nil for a symmetric key.
    var publicKey: PublicKey? {
        switch storage {
        case .item(_, let item): item.publicKey
        case .publicKey(let key): key
        case .privateKey(let key): key.publicKey
        case .secretKeyItem: nil
        }
    }

    /// True for a private key.
    var isPrivate: Bool {
        switch storage {
        case .item(_, let item): item.keyClass == .private
        case .publicKey, .secretKeyItem: false
        case .privateKey: true
        }
    }

    /// The asymmetric key's type and size; nil for a symmetric key.
    var algorithm: KeyAlgorithm? { publicKey?.algorithm }

    /// A symmetric key item's persistent reference: what identifies it.
    private var secretKeyReference: [UInt8]? {
        if case .secretKeyItem(_, let item) = storage { return item.persistentReference }
        return nil
    }

    /// Keys are equal when they are the same half of the same key pair (Apple's `CFEqual`
    /// compares the key data), or the same symmetric key item.
    public static func == (lhs: SecKey, rhs: SecKey) -> Bool {
        lhs.isPrivate == rhs.isPrivate && lhs.publicKey == rhs.publicKey
            && lhs.secretKeyReference == rhs.secretKeyReference
    }

    /// Hashes the public key and the class (a symmetric key: its item's reference).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(publicKey)
        hasher.combine(isPrivate)
        hasher.combine(secretKeyReference)
    }

    /// Like Apple's: the key type, class and size.
    public var description: String {
        if case .secretKeyItem(_, let item) = storage {
            return "<SecKeyRef algorithm id: \(item.type), key size: \(item.sizeInBits) bits, stored>"
        }
        let type = algorithm.map { keyTypeName($0.type) } ?? "?"
        return "<SecKeyRef key type: \(type)\(isPrivate ? "PrivateKey" : "PublicKey"), "
            + "block size: \(algorithm?.sizeInBits ?? 0) bits\(isStored ? ", stored" : "")>"
    }

    private var isStored: Bool {
        if case .item = storage { return true }
        return false
    }
}

/// The type identifier of keys, for comparison with `CFGetTypeID`.
public func SecKeyGetTypeID() -> CFTypeID { TypeIdentifier.key }

private func keyTypeName(_ type: KeyType) -> String {
    switch type {
    case .rsa: "RSA"
    case .ellipticCurve: "ECSECPrimeRandom"
    case .ed25519: "Ed25519"
    }
}

// MARK: - Algorithms

/// A cryptographic algorithm for `SecKeyCreateSignature` and its siblings, with Apple's
/// names and values (`.rsaSignatureMessagePKCS1v15SHA256`, `.ecdsaSignatureMessageX962SHA256`,
/// `.rsaEncryptionOAEPSHA256`…).
public struct SecKeyAlgorithm: RawRepresentable, Hashable, Sendable {
    /// Apple's identifier, e.g. `algid:sign:RSA:message-PKCS1v15:SHA256`.
    public var rawValue: CFString { name as NSString }
    /// The identifier as a Swift string: NSString is not Sendable on Linux.
    let name: String

    /// Wraps an identifier.
    public init(rawValue: CFString) { name = rawValue as String }

    init(name: String) { self.name = name }

    public static let rsaSignatureRaw = SecKeyAlgorithm(rawValue: "algid:sign:RSA:raw")
    public static let rsaSignatureDigestPKCS1v15Raw = SecKeyAlgorithm(
        rawValue: "algid:sign:RSA:digest-PKCS1v15")
    public static let rsaSignatureDigestPKCS1v15SHA1 = rsa("digest-PKCS1v15:SHA1")
    public static let rsaSignatureDigestPKCS1v15SHA224 = rsa("digest-PKCS1v15:SHA224")
    public static let rsaSignatureDigestPKCS1v15SHA256 = rsa("digest-PKCS1v15:SHA256")
    public static let rsaSignatureDigestPKCS1v15SHA384 = rsa("digest-PKCS1v15:SHA384")
    public static let rsaSignatureDigestPKCS1v15SHA512 = rsa("digest-PKCS1v15:SHA512")
    public static let rsaSignatureMessagePKCS1v15SHA1 = rsa("message-PKCS1v15:SHA1")
    public static let rsaSignatureMessagePKCS1v15SHA224 = rsa("message-PKCS1v15:SHA224")
    public static let rsaSignatureMessagePKCS1v15SHA256 = rsa("message-PKCS1v15:SHA256")
    public static let rsaSignatureMessagePKCS1v15SHA384 = rsa("message-PKCS1v15:SHA384")
    public static let rsaSignatureMessagePKCS1v15SHA512 = rsa("message-PKCS1v15:SHA512")
    public static let rsaSignatureDigestPSSSHA1 = rsa("digest-PSS:SHA1:SHA1:20")
    public static let rsaSignatureDigestPSSSHA256 = rsa("digest-PSS:SHA256:SHA256:32")
    public static let rsaSignatureDigestPSSSHA384 = rsa("digest-PSS:SHA384:SHA384:48")
    public static let rsaSignatureDigestPSSSHA512 = rsa("digest-PSS:SHA512:SHA512:64")
    public static let rsaSignatureMessagePSSSHA1 = rsa("message-PSS:SHA1:SHA1:20")
    public static let rsaSignatureMessagePSSSHA256 = rsa("message-PSS:SHA256:SHA256:32")
    public static let rsaSignatureMessagePSSSHA384 = rsa("message-PSS:SHA384:SHA384:48")
    public static let rsaSignatureMessagePSSSHA512 = rsa("message-PSS:SHA512:SHA512:64")
    public static let ecdsaSignatureDigestX962 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:digest-X962")
    public static let ecdsaSignatureDigestX962SHA1 = ecdsa("digest-X962:SHA1")
    public static let ecdsaSignatureDigestX962SHA224 = ecdsa("digest-X962:SHA224")
    public static let ecdsaSignatureDigestX962SHA256 = ecdsa("digest-X962:SHA256")
    public static let ecdsaSignatureDigestX962SHA384 = ecdsa("digest-X962:SHA384")
    public static let ecdsaSignatureDigestX962SHA512 = ecdsa("digest-X962:SHA512")
    public static let ecdsaSignatureMessageX962SHA1 = ecdsa("message-X962:SHA1")
    public static let ecdsaSignatureMessageX962SHA224 = ecdsa("message-X962:SHA224")
    public static let ecdsaSignatureMessageX962SHA256 = ecdsa("message-X962:SHA256")
    public static let ecdsaSignatureMessageX962SHA384 = ecdsa("message-X962:SHA384")
    public static let ecdsaSignatureMessageX962SHA512 = ecdsa("message-X962:SHA512")
    /// Pure Ed25519 (RFC 8032) over the message. Not Apple's: a p11keychain addition for the
    /// Ed25519 keys PKCS#11 makes.
    public static let ed25519SignatureMessage = SecKeyAlgorithm(rawValue: "p11keychain:sign:Ed25519:message")
    public static let rsaEncryptionRaw = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:raw")
    public static let rsaEncryptionPKCS1 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:PKCS1")
    public static let rsaEncryptionOAEPSHA1 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA1")
    public static let rsaEncryptionOAEPSHA224 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA224")
    public static let rsaEncryptionOAEPSHA256 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA256")
    public static let rsaEncryptionOAEPSHA384 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA384")
    public static let rsaEncryptionOAEPSHA512 = SecKeyAlgorithm(rawValue: "algid:encrypt:RSA:OAEP:SHA512")

    private static func rsa(_ suffix: String) -> SecKeyAlgorithm {
        SecKeyAlgorithm(name: "algid:sign:RSA:" + suffix)
    }

    private static func ecdsa(_ suffix: String) -> SecKeyAlgorithm {
        SecKeyAlgorithm(name: "algid:sign:ECDSA:" + suffix)
    }

    /// The signature algorithm this names, or nil.
    var signature: SignatureAlgorithm? { SecKeyAlgorithm.signatures[self] }

    /// The encryption algorithm this names, or nil.
    var encryption: EncryptionAlgorithm? { SecKeyAlgorithm.encryptions[self] }

    private static let signatures: [SecKeyAlgorithm: SignatureAlgorithm] = [
        .rsaSignatureDigestPKCS1v15Raw: .rsaPKCS1v15Raw,
        .rsaSignatureDigestPKCS1v15SHA1: .rsaPKCS1v15Digest(.sha1),
        .rsaSignatureDigestPKCS1v15SHA224: .rsaPKCS1v15Digest(.sha224),
        .rsaSignatureDigestPKCS1v15SHA256: .rsaPKCS1v15Digest(.sha256),
        .rsaSignatureDigestPKCS1v15SHA384: .rsaPKCS1v15Digest(.sha384),
        .rsaSignatureDigestPKCS1v15SHA512: .rsaPKCS1v15Digest(.sha512),
        .rsaSignatureMessagePKCS1v15SHA1: .rsaPKCS1v15(.sha1),
        .rsaSignatureMessagePKCS1v15SHA224: .rsaPKCS1v15(.sha224),
        .rsaSignatureMessagePKCS1v15SHA256: .rsaPKCS1v15(.sha256),
        .rsaSignatureMessagePKCS1v15SHA384: .rsaPKCS1v15(.sha384),
        .rsaSignatureMessagePKCS1v15SHA512: .rsaPKCS1v15(.sha512),
        .rsaSignatureDigestPSSSHA1: .rsaPSSDigest(.sha1),
        .rsaSignatureDigestPSSSHA256: .rsaPSSDigest(.sha256),
        .rsaSignatureDigestPSSSHA384: .rsaPSSDigest(.sha384),
        .rsaSignatureDigestPSSSHA512: .rsaPSSDigest(.sha512),
        .rsaSignatureMessagePSSSHA1: .rsaPSS(.sha1),
        .rsaSignatureMessagePSSSHA256: .rsaPSS(.sha256),
        .rsaSignatureMessagePSSSHA384: .rsaPSS(.sha384),
        .rsaSignatureMessagePSSSHA512: .rsaPSS(.sha512),
        .ecdsaSignatureDigestX962: .ecdsaDigest(nil),
        .ecdsaSignatureDigestX962SHA1: .ecdsaDigest(.sha1),
        .ecdsaSignatureDigestX962SHA224: .ecdsaDigest(.sha224),
        .ecdsaSignatureDigestX962SHA256: .ecdsaDigest(.sha256),
        .ecdsaSignatureDigestX962SHA384: .ecdsaDigest(.sha384),
        .ecdsaSignatureDigestX962SHA512: .ecdsaDigest(.sha512),
        .ecdsaSignatureMessageX962SHA1: .ecdsa(.sha1),
        .ecdsaSignatureMessageX962SHA224: .ecdsa(.sha224),
        .ecdsaSignatureMessageX962SHA256: .ecdsa(.sha256),
        .ecdsaSignatureMessageX962SHA384: .ecdsa(.sha384),
        .ecdsaSignatureMessageX962SHA512: .ecdsa(.sha512),
        .ed25519SignatureMessage: .ed25519,
    ]

    private static let encryptions: [SecKeyAlgorithm: EncryptionAlgorithm] = [
        .rsaEncryptionPKCS1: .rsaPKCS1,
        .rsaEncryptionOAEPSHA1: .rsaOAEP(.sha1),
        .rsaEncryptionOAEPSHA224: .rsaOAEP(.sha224),
        .rsaEncryptionOAEPSHA256: .rsaOAEP(.sha256),
        .rsaEncryptionOAEPSHA384: .rsaOAEP(.sha384),
        .rsaEncryptionOAEPSHA512: .rsaOAEP(.sha512),
    ]
}

/// What a key is asked to do (`SecKeyIsAlgorithmSupported`).
public enum SecKeyOperationType: Int, Sendable {
    case sign = 0
    case verify = 1
    case encrypt = 2
    case decrypt = 3
    case keyExchange = 4
}

// MARK: - Creating keys

/// Generates a key pair and returns its private key.
///
/// `parameters` holds `kSecAttrKeyType` (`kSecAttrKeyTypeRSA`, `kSecAttrKeyTypeECSECPrimeRandom`
/// or `kSecAttrKeyTypeEd25519`) and `kSecAttrKeySizeInBits` (RSA 2048–4096, default 2048; EC
/// 256, 384 or 521, default 256), and optionally `kSecAttrLabel`, `kSecAttrApplicationTag`,
/// `kSecAttrApplicationLabel`, `kSecAttrIsPermanent`, `kSecAttrIsExtractable`,
/// `kSecAttrIsSensitive` and `kSecAttrCan…`, at the top level or per half in
/// `kSecPrivateKeyAttrs` / `kSecPublicKeyAttrs` (which win). With `kSecAttrIsPermanent`
/// true, both halves are stored in the default keychain (which must be unlocked), where
/// PKCS#11 applications see them at once; otherwise the key lives in memory only.
///
/// - Parameter error: Receives a `CFError` (domain `NSOSStatusErrorDomain`, code the
///   `OSStatus`) when the call fails: `errSecParam` for bad parameters,
///   `errSecInteractionNotAllowed` when a permanent key cannot be stored because the keychain
///   is locked, `errSecUnimplemented` for `kSecAttrTokenID` (no Secure Enclave here).
/// - Returns: The private key, or nil on failure.
@discardableResult
public func SecKeyCreateRandomKey(
    _ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
)
    -> SecKey?
{
    keyOperation(error) { () throws(KeychainError) in
        let request = try NewKeyRequest(swiftDictionary(parameters))
        guard request.isPermanent else {
            return SecKey(.privateKey(try PrivateKey.generate(request.algorithm)))
        }
        let keychain = try Keychain()
        let pair = try keychain.generateKeyPair(
            request.algorithm, privateKey: request.privateAttributes, publicKey: request.publicAttributes)
        return SecKey(.item(keychain, pair.privateKey))
    }
}

/// Creates a key in memory from Apple's external representation: `kSecAttrKeyType` and
/// `kSecAttrKeyClass` say what `keyData` is (PKCS#1 for RSA; X9.63 04 ‖ X ‖ Y, with ‖ K for a
/// private key, for EC). Nothing is stored: add the key with `SecItemAdd` to keep it.
///
/// - Returns: The key, or nil with `error` set (`errSecParam` for missing or unknown
///   attributes, `errSecDecode` for data that is not such a key).
public func SecKeyCreateWithData(
    _ keyData: CFData, _ attributes: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecKey? {
    keyOperation(error) { () throws(KeychainError) in
        let attributes = try swiftDictionary(attributes)
        guard let typeName = attributes[kSecAttrKeyType] else {
            throw KeychainError(.parameter, "SecKeyCreateWithData needs kSecAttrKeyType")
        }
        let type = try keyType(typeName)
        guard let classValue = attributes[kSecAttrKeyClass] else {
            throw KeychainError(.parameter, "SecKeyCreateWithData needs kSecAttrKeyClass")
        }
        let bytes = Array(keyData as Data)
        switch try keyClass(classValue) {
        case .public: return SecKey(.publicKey(try PublicKey(externalRepresentation: bytes, type: type)))
        case .private: return SecKey(.privateKey(try PrivateKey(externalRepresentation: bytes, type: type)))
        }
    }
}

/// The public key of a key pair (of a public key, the key itself), in memory.
public func SecKeyCopyPublicKey(_ key: SecKey) -> SecKey? {
    if case .publicKey = key.storage { return key }
    return key.publicKey.map { SecKey(.publicKey($0)) }
}

/// Apple's external representation of a key: PKCS#1 RSAPublicKey / RSAPrivateKey DER for
/// RSA; 04 ‖ X ‖ Y (public) or 04 ‖ X ‖ Y ‖ K (private) for EC; 32 raw bytes for Ed25519.
///
/// A stored private key is returned only when it is extractable and not sensitive
/// (`kSecAttrIsExtractable`, `kSecAttrIsSensitive`; CKA_EXTRACTABLE, CKA_SENSITIVE) and the
/// keychain is unlocked; otherwise `error` gets `errSecInteractionNotAllowed`.
public func SecKeyCopyExternalRepresentation(
    _ key: SecKey, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
)
    -> CFData?
{
    dataOperation(error) { () throws(KeychainError) in Data(try externalRepresentation(of: key)) }
}

func externalRepresentation(of key: SecKey) throws(KeychainError) -> [UInt8] {
    switch key.storage {
    case .publicKey(let publicKey): return publicKey.externalRepresentation
    case .privateKey(let privateKey): return privateKey.externalRepresentation
    case .item(let keychain, let item):
        guard item.keyClass == .private else { return item.publicKey.externalRepresentation }
        return try keychain.exportPrivateKey(item).externalRepresentation
    case .secretKeyItem: throw symmetricKeyValueWithheld
    }
}

/// The key's attributes, keyed as `SecItemCopyMatching` returns them: class, type, size,
/// labels, tag, usage flags, permanence; a public key's data as `kSecValueData`.
public func SecKeyCopyAttributes(_ key: SecKey) -> CFDictionary? {
    switch key.storage {
    case .item(_, let item): return keyAttributes(of: item) as NSDictionary
    case .secretKeyItem(_, let item):
        return secretKeyAttributes(of: item) as NSDictionary
    case .publicKey, .privateKey:
        guard let publicKey = key.publicKey else { return nil }
        let algorithm = publicKey.algorithm
        var attributes: [String: Any] = [
            kSecClass as String: kSecClassKey,
            kSecAttrKeyClass as String: key.isPrivate ? kSecAttrKeyClassPrivate : kSecAttrKeyClassPublic,
            kSecAttrKeyType as String: keyTypeConstant(algorithm.type),
            kSecAttrKeySizeInBits as String: algorithm.sizeInBits,
            kSecAttrEffectiveKeySize as String: algorithm.sizeInBits,
            kSecAttrApplicationLabel as String: Data(publicKey.publicKeyHash),
            kSecAttrIsPermanent as String: false,
            kSecAttrCanSign as String: key.isPrivate,
            kSecAttrCanDecrypt as String: key.isPrivate && algorithm.type == .rsa,
            kSecAttrCanVerify as String: !key.isPrivate,
            kSecAttrCanEncrypt as String: !key.isPrivate && algorithm.type == .rsa,
        ]
        if !key.isPrivate { attributes[kSecValueData] = Data(publicKey.externalRepresentation) }
        return attributes as NSDictionary
    }
}

/// A stored key item's attributes, keyed as Apple's, with the common ones (`pdmn`, `sync`,
/// the dates…); a public key's data as `kSecValueData`.
func keyAttributes(of item: KeyItem) -> [String: Any] {
    var attributes = storedKeyAttributes(
        of: item, keyClass: item.keyClass == .private ? kSecAttrKeyClassPrivate : kSecAttrKeyClassPublic,
        keyType: keyTypeConstant(item.algorithm.type))
    if item.keyClass == .public { attributes[kSecValueData] = Data(item.publicKey.externalRepresentation) }
    return attributes
}

/// What every stored key item returns, keyed as Apple's, over the common attributes (`pdmn`,
/// `sync`, the dates…): class, type, size, labels, tag, usage flags, sensitivity.
func storedKeyAttributes(of item: some StoredKeyItem, keyClass: CFString, keyType: String) -> [String: Any] {
    var attributes = returnedItemAttributes(item.attributes)
    attributes.merge([
        kSecClass as String: kSecClassKey,
        kSecAttrKeyClass as String: keyClass,
        kSecAttrKeyType as String: keyType,
        kSecAttrKeySizeInBits as String: item.sizeInBits,
        kSecAttrEffectiveKeySize as String: item.sizeInBits,
        kSecAttrLabel as String: returned(item.label, .label, item.attributes),
        kSecAttrApplicationLabel as String: Data(item.applicationLabel),
        kSecAttrIsPermanent as String: true,
        kSecAttrIsSensitive as String: item.isSensitive,
        kSecAttrIsExtractable as String: item.isExtractable,
        kSecAttrCanSign as String: item.usage.contains(.sign),
        kSecAttrCanVerify as String: item.usage.contains(.verify),
        kSecAttrCanEncrypt as String: item.usage.contains(.encrypt),
        kSecAttrCanDecrypt as String: item.usage.contains(.decrypt),
        kSecAttrCanDerive as String: item.usage.contains(.derive),
        kSecAttrCanWrap as String: item.usage.contains(.wrap),
        kSecAttrCanUnwrap as String: item.usage.contains(.unwrap),
    ]) { _, own in own }
    if let tag = item.applicationTag {
        attributes[kSecAttrApplicationTag] = returned(tag, .applicationTag, item.attributes)
    }
    return attributes
}

/// The block size of a key in bytes: an RSA modulus's length (the size of a signature or
/// ciphertext), an EC field element's.
public func SecKeyGetBlockSize(_ key: SecKey) -> Int {
    if case .secretKeyItem(_, let item) = key.storage {
        return item.type == .aes ? 16 : (item.sizeInBits + 7) / 8
    }
    return ((key.algorithm?.sizeInBits ?? 0) + 7) / 8
}

// MARK: - Using keys

/// Whether `key` can do `operation` with `algorithm`: the algorithm fits the key's type, and
/// the operation its class (a private key signs, decrypts and runs key exchanges, a public
/// key verifies and encrypts).
public func SecKeyIsAlgorithmSupported(
    _ key: SecKey, _ operation: SecKeyOperationType, _ algorithm: SecKeyAlgorithm
)
    -> Bool
{
    if algorithm.ecies != nil { return supportsECIES(key, operation) }
    switch operation {
    case .sign, .verify:
        guard let signature = algorithm.signature else { return false }
        return signature.keyType == key.algorithm?.type && key.isPrivate == (operation == .sign)
    case .encrypt, .decrypt:
        guard algorithm.encryption != nil else { return false }
        return key.algorithm?.type == .rsa && key.isPrivate == (operation == .decrypt)
    case .keyExchange:
        return supportsKeyExchange(key, algorithm)
    }
}

/// Signs `dataToSign` (a message, or a digest for the `…Digest…` algorithms) with a private
/// key. A stored key needs the keychain unlocked.
///
/// - Returns: The signature (DER for ECDSA), or nil with `error` set: `errSecParam` when the
///   key is not a private key of the algorithm's type or a digest has the wrong length,
///   `errSecInteractionNotAllowed` when the keychain is locked.
public func SecKeyCreateSignature(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ dataToSign: CFData,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    dataOperation(error) { () throws(KeychainError) in
        let signatureAlgorithm = try supported(algorithm, for: key, .sign, algorithm.signature)
        let data = Array(dataToSign as Data)
        switch key.storage {
        case .item(let keychain, let item):
            return try key.withPIN { pin throws(KeychainError) in
                Data(try keychain.sign(data, with: item, algorithm: signatureAlgorithm, pin: pin))
            }
        case .privateKey(let privateKey):
            return Data(try privateKey.signature(for: data, algorithm: signatureAlgorithm))
        case .publicKey, .secretKeyItem: throw KeychainError(.parameter, "only a private key can sign")
        }
    }
}

/// Checks `signature` of `signedData` with a public key.
///
/// - Returns: True when it verifies. False otherwise, with `error` set to `errSecVerifyFailed`
///   for a wrong signature or `errSecParam` when the key does not fit the algorithm.
public func SecKeyVerifySignature(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ signedData: CFData, _ signature: CFData,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> Bool {
    let verified = keyOperation(error) { () throws(KeychainError) -> Bool? in
        let signatureAlgorithm = try supported(algorithm, for: key, .verify, algorithm.signature)
        guard
            try publicHalf(of: key).isValidSignature(
                Array(signature as Data), for: Array(signedData as Data), algorithm: signatureAlgorithm)
        else { throw KeychainError(.init(rawValue: errSecVerifyFailed), "the signature does not verify") }
        return true
    }
    return verified ?? false
}

/// Encrypts `plaintext` with an RSA public key, or with an EC public key and one of Apple's
/// ECIES algorithms (`.eciesEncryptionCofactorVariableIVX963SHA256AESGCM`…; see
/// SecKeyECIES.swift).
///
/// - Returns: The ciphertext, or nil with `error` set (`errSecParam` for a key that does not
///   fit the algorithm, or plaintext too long for the key and padding).
public func SecKeyCreateEncryptedData(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ plaintext: CFData,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    dataOperation(error) { () throws(KeychainError) in
        if let ecies = algorithm.ecies {
            return Data(try eciesEncrypt(key, algorithm, ecies, Array(plaintext as Data)))
        }
        let encryption = try supported(algorithm, for: key, .encrypt, algorithm.encryption)
        return Data(try publicHalf(of: key).encrypt(Array(plaintext as Data), algorithm: encryption))
    }
}

/// Decrypts `ciphertext` with an RSA private key, or an ECIES message with an EC private key
/// (a stored one through the keychain's key agreement, which needs CKA_DERIVE). A stored key
/// needs the keychain unlocked.
///
/// - Returns: The plaintext, or nil with `error` set (`errSecParam` for a key that does not fit
///   the algorithm or ciphertext that does not decrypt, such as an ECIES message whose tag
///   does not verify, as Apple's; `errSecInteractionNotAllowed` when the keychain is locked).
public func SecKeyCreateDecryptedData(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ ciphertext: CFData,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    dataOperation(error) { () throws(KeychainError) in
        if let ecies = algorithm.ecies {
            return Data(try eciesDecrypt(key, algorithm, ecies, Array(ciphertext as Data)))
        }
        let encryption = try supported(algorithm, for: key, .decrypt, algorithm.encryption)
        let data = Array(ciphertext as Data)
        switch key.storage {
        case .item(let keychain, let item):
            return try key.withPIN { pin throws(KeychainError) in
                Data(try keychain.decrypt(data, with: item, algorithm: encryption, pin: pin))
            }
        case .privateKey(let privateKey): return Data(try privateKey.decrypt(data, algorithm: encryption))
        case .publicKey, .secretKeyItem: throw KeychainError(.parameter, "only a private key can decrypt")
        }
    }
}

/// The typed algorithm for an operation, or errSecParam saying why the key cannot do it.
private func supported<Algorithm>(
    _ algorithm: SecKeyAlgorithm, for key: SecKey, _ operation: SecKeyOperationType, _ typed: Algorithm?
) throws(KeychainError) -> Algorithm {
    guard let typed else {
        throw KeychainError(.parameter, "algorithm \(algorithm.rawValue) is not supported for this operation")
    }
    guard SecKeyIsAlgorithmSupported(key, operation, algorithm) else {
        let half = key.isPrivate ? "private" : "public"
        throw KeychainError(
            .parameter,
            "algorithm \(algorithm.rawValue) is not supported by a "
                + "\(key.algorithm.map { keyTypeName($0.type) } ?? "symmetric") \(half) key "
                + "for this operation")
    }
    return typed
}

/// The public key of an asymmetric key, or errSecParam for a symmetric one.
func publicHalf(of key: SecKey) throws(KeychainError) -> PublicKey {
    guard let publicKey = key.publicKey else {
        throw KeychainError(.parameter, "a symmetric key has no public key: use it through the Keychain API")
    }
    return publicKey
}

/// Runs a key function that makes bytes: CFData, or nil with the error recorded and handed to
/// `error`.
func dataOperation(
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?, _ body: () throws(KeychainError) -> Data?
) -> CFData? {
    keyOperation(error, body).map { $0 as NSData }
}

/// Runs a key function: a result, or nil with the error recorded and handed to `error`.
func keyOperation<T>(
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?, _ body: () throws(KeychainError) -> T?
) -> T? {
    error?.pointee = nil
    do {
        return try body()
    } catch let failure {
        LastError.record(failure, into: error)
        return nil
    }
}

// MARK: - Attribute values

/// The `kSecAttrKeyType` constant of a key type.
func keyTypeConstant(_ type: KeyType) -> String {
    switch type {
    case .rsa: kSecAttrKeyTypeRSA as String
    case .ellipticCurve: kSecAttrKeyTypeECSECPrimeRandom as String
    case .ed25519: kSecAttrKeyTypeEd25519 as String
    }
}

/// The key type a `kSecAttrKeyType` value names (a CFString constant, or its number).
func keyType(_ value: Any) throws(KeychainError) -> KeyType {
    let name = (value as? String) ?? (value as? Int).map(String.init)
    switch name {
    case kSecAttrKeyTypeRSA: return .rsa
    case kSecAttrKeyTypeECSECPrimeRandom: return .ellipticCurve
    case kSecAttrKeyTypeEd25519: return .ed25519
    default:
        throw KeychainError(
            .parameter,
            "kSecAttrKeyType must be kSecAttrKeyTypeRSA, kSecAttrKeyTypeECSECPrimeRandom or "
                + "kSecAttrKeyTypeEd25519"
        )
    }
}

/// The key class a `kSecAttrKeyClass` value names.
func keyClass(_ value: Any) throws(KeychainError) -> KeyClass {
    let name = (value as? String) ?? (value as? Int).map(String.init)
    switch name {
    case kSecAttrKeyClassPublic: return .public
    case kSecAttrKeyClassPrivate: return .private
    default:
        throw KeychainError(
            .parameter, "kSecAttrKeyClass must be kSecAttrKeyClassPublic or kSecAttrKeyClassPrivate")
    }
}
