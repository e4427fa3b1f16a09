public import KeychainCrypto

/// What a key is used for: the PKCS#11 usage attribute that must allow it, and which half of
/// a key pair does it.
public enum KeyUse: Sendable, Equatable {
    case sign, verify, encrypt, decrypt, wrap, unwrap, derive

    /// The attribute that must be TRUE (v2.40 §4.8–4.10): a missing one counts as FALSE.
    public var attribute: AttributeType {
        switch self {
        case .sign: .sign
        case .verify: .verify
        case .encrypt: .encrypt
        case .decrypt: .decrypt
        case .wrap: .wrap
        case .unwrap: .unwrap
        case .derive: .derive
        }
    }

    /// True for uses of a key pair's private half.
    public var needsPrivateKey: Bool {
        switch self {
        case .sign, .decrypt, .unwrap, .derive: true
        case .verify, .encrypt, .wrap: false
        }
    }
}

/// A secret key ready for one use, from `Token.useSecretKey`.
public struct UsableSecretKey: Sendable {
    /// The key's value, opened once and kept while the object is unchanged and the user
    /// logged in (like a parsed private key).
    public let value: SecretBytes
    public let kind: SecretKeyKind
    /// The key object's attributes, without any sealed value.
    public let attributes: AttributeSet
}

/// A key ready for one use, from `Token.useKey`.
public struct UsableKey: @unchecked Sendable {
    // @unchecked: AsymmetricKey is an immutable wrapper of an OpenSSL key that OpenSSL lets
    // many threads use at once.
    public let key: AsymmetricKey
    /// The key object's attributes, without any sealed value.
    public let attributes: AttributeSet
    /// CKA_ALWAYS_AUTHENTICATE: the user must give the PIN again for each use (v2.40 §4.9).
    public let needsPINForEachUse: Bool
}

extension Token {
    /// The one "use a key" entry point of every face (DESIGN §7), for a key pair's halves:
    /// the key object must be a key of the class the use needs, of `keyType` when the
    /// mechanism fixes one, with its usage attribute TRUE and `mechanism` among its allowed
    /// mechanisms (`checkUse`); a private key's secret opens only with a login. The caller
    /// enforces `needsPINForEachUse` by asking for the PIN before the operation runs.
    public func useKey(
        _ reference: ObjectReference, for usage: KeyUse, keyType: KeyType? = nil, mechanism: UInt64?,
        context: AccessContext
    ) throws(CoreError) -> UsableKey {
        let loaded =
            usage.needsPrivateKey
            ? try privateKey(reference, context: context) : try publicKey(reference, context: context)
        try Token.checkUse(
            loaded.attributes, for: usage, keyTypes: keyType.map { [$0] }, mechanism: mechanism)
        return UsableKey(
            key: loaded.key, attributes: loaded.attributes,
            needsPINForEachUse: Token.needsPINForEachUse(loaded.attributes, for: usage))
    }

    /// Whether `usage` of a key needs the user's PIN again: CKA_ALWAYS_AUTHENTICATE asks it for
    /// each signature and decryption (v2.40 §4.9); an Apple access control that needs presence
    /// (`.userPresence`, `.devicePasscode`, `.applicationPassword`) asks it for every use of the
    /// private key, unwrapping and derivation (ECDH, ECIES) included, as on Apple platforms.
    static func needsPINForEachUse(_ attributes: AttributeSet, for usage: KeyUse) -> Bool {
        guard usage.needsPrivateKey else { return false }
        if AccessControl.needsPINForEachUse(attributes) { return true }
        return (usage == .sign || usage == .decrypt) && attributes.bool(.alwaysAuthenticate) == true
    }

    /// The same entry point for secret keys: the object must be a secret key of one of
    /// `keyTypes` (nil: any), pass `checkUse`, and its value opens only with a login.
    public func useSecretKey(
        _ reference: ObjectReference, for usage: KeyUse, keyTypes: [KeyType]?, mechanism: UInt64?,
        context: AccessContext
    ) throws(CoreError) -> UsableSecretKey {
        let loaded = try lock.withLock { () throws(CoreError) in
            try keptKey(
                reference, context: context, in: \.secretKeyCache,
                source: { (stored) throws(CoreError) in
                    guard stored.ulong(.class) == ObjectClass.secretKey.rawValue, let sealed = stored[.value]
                    else { throw CoreError(.objectNotFound, "the handle is not a secret key") }
                    return sealed
                },
                parse: { (_, stored) throws(CoreError) in
                    guard let value = try opened(.value, of: stored) else {
                        throw CoreError(.storageCorrupt, "a secret key has no value")
                    }
                    return value
                })
        }
        guard let rawType = loaded.attributes.ulong(.keyType),
            let kind = SecretKeyKind(KeyType(rawValue: rawType))
        else { throw CoreError(.objectNotFound, "the handle is not a secret key") }
        try Token.checkUse(loaded.attributes, for: usage, keyTypes: keyTypes, mechanism: mechanism)
        return UsableSecretKey(value: loaded.key, kind: kind, attributes: loaded.attributes)
    }

    /// The rules of every key use, in one place: the key's type fits the mechanism, its
    /// usage attribute is TRUE (a missing one counts as FALSE), and the mechanism is among
    /// its CKA_ALLOWED_MECHANISMS when it has a non-empty list (v3.0 §4.7). A face that
    /// cannot name its mechanism (`nil`) may use only keys without such a list.
    static func checkUse(
        _ attributes: AttributeSet, for usage: KeyUse, keyTypes: [KeyType]?, mechanism: UInt64?
    ) throws(CoreError) {
        if let keyTypes, !keyTypes.contains(where: { attributes.ulong(.keyType) == $0.rawValue }) {
            throw CoreError(.keyTypeInconsistent, "the key's type does not fit the mechanism")
        }
        guard attributes.bool(usage.attribute) == true else {
            throw CoreError(
                .keyFunctionNotPermitted,
                "the key may not \(usage) (its attribute \(usage.attribute) is false)")
        }
        guard let allowed = attributes[.allowedMechanisms], !allowed.isEmpty else { return }
        let permitted = stride(from: 0, to: allowed.count, by: 8).compactMap { start in
            AttributeValue.ulong(Array(allowed[start..<min(start + 8, allowed.count)]))
        }
        guard let mechanism, permitted.contains(mechanism) else {
            throw CoreError(
                .mechanismInvalid, "the key's CKA_ALLOWED_MECHANISMS does not include this mechanism")
        }
    }
}

extension Token {
    /// A private key's secret, to leave the token: only a key that is neither sensitive nor
    /// unextractable (v2.40 §4.9; the PKCS#11 face answers CKR_ATTRIBUTE_SENSITIVE otherwise).
    public func exportablePrivateKey(_ reference: ObjectReference, context: AccessContext)
        throws(CoreError) -> AsymmetricKey
    {
        let loaded = try privateKey(reference, context: context)
        guard Token.sensitiveTypes(of: loaded.attributes).isEmpty else {
            throw CoreError(
                .attributeSensitive, "the private key is not exportable: its secret never leaves the keychain"
            )
        }
        return loaded.key
    }
}

extension Token {
    /// PKCS#1 v1.5 decryption (CKM_RSA_PKCS, Apple's rsaEncryptionPKCS1), unless the
    /// configuration turned it off (`rsa-pkcs1-decryption = no`): its padding invites
    /// Bleichenbacher-style oracles, which implicit rejection answers but a site that needs no
    /// such decryption may rather not offer at all. Both faces ask here before decrypting.
    public func checkPKCS1Decryption() throws(CoreError) {
        guard configuration.allowsRSAPKCS1Decryption else {
            throw CoreError(
                .mechanismInvalid,
                "PKCS#1 v1.5 decryption is turned off by the configuration (rsa-pkcs1-decryption = no)")
        }
    }
}
