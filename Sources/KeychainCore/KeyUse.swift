public import KeychainCrypto

/// What a key is used for: the PKCS#11 usage attribute that must allow it, and which half of
/// a key pair does it.
public enum KeyUse: Sendable, Equatable {
    case sign, verify, encrypt, decrypt

    /// The attribute that must be TRUE (v2.40 §4.8–4.9): a missing one counts as FALSE.
    public var attribute: AttributeType {
        switch self {
        case .sign: .sign
        case .verify: .verify
        case .encrypt: .encrypt
        case .decrypt: .decrypt
        }
    }

    /// True for uses of the private half.
    public var needsPrivateKey: Bool { self == .sign || self == .decrypt }
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
    /// The one "use a key" entry point of every face (DESIGN §7): the key object must be a
    /// key of the class the use needs, of `keyType` when the mechanism fixes one, and its
    /// usage attribute must be TRUE; a private key's secret opens only with a login. The
    /// caller enforces `needsPINForEachUse` by asking for the PIN before the operation runs.
    public func useKey(
        _ reference: ObjectReference, for usage: KeyUse, keyType: KeyType? = nil, context: AccessContext
    ) throws(CoreError) -> UsableKey {
        let loaded =
            usage.needsPrivateKey
            ? try privateKey(reference, context: context) : try publicKey(reference, context: context)
        if let keyType, loaded.attributes.ulong(.keyType) != keyType.rawValue {
            throw CoreError(.keyTypeInconsistent, "the key's type does not fit the mechanism")
        }
        guard loaded.attributes.bool(usage.attribute) == true else {
            throw CoreError(
                .keyFunctionNotPermitted,
                "the key may not \(usage) (its attribute \(usage.attribute) is false)")
        }
        return UsableKey(
            key: loaded.key, attributes: loaded.attributes,
            needsPINForEachUse: usage.needsPrivateKey && loaded.attributes.bool(.alwaysAuthenticate) == true)
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
