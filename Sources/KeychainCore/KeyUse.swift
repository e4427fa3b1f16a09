public import KeychainCrypto

/// What a key is used for: the PKCS#11 usage attribute that must allow it, and which half of
/// a key pair does it.
public enum KeyUse: Sendable, Hashable {
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
    /// CKA_PRIVATE is TRUE: an operation with the key ends at logout.
    public let isPrivate: Bool
    /// The facts the use was checked on, and the store's change count when they were read
    /// (nil: read during a write): while the count stands, a later use of the same object may
    /// be checked on these facts without reading the key again (`MACOperation`'s restart).
    package let facts: KeyUseFacts
    package let changeCount: UInt64?
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
    /// CKA_PRIVATE is TRUE: an operation with the key ends at logout.
    public let isPrivate: Bool
    /// The facts the use was checked on, and the store's change count when they were read
    /// (nil: read during a write), as for a secret key (`UsableSecretKey`): a finished
    /// signature restarts on them (`SignatureOperation`).
    package let facts: KeyUseFacts
    package let changeCount: UInt64?
}

extension Token {
    /// The one "use a key" entry point of every face (ARCHITECTURE.md §6.7), for a key pair's halves:
    /// the mechanism must be one the configuration leaves on for `usage`
    /// (`checkMechanismPolicy`), the key object must be a key of the class the use needs, of
    /// one of `keyTypes` when the mechanism fixes them, with its usage attributes TRUE and
    /// `mechanism` among its allowed mechanisms (`checkUse`); a private key's secret opens
    /// only with a login. The caller enforces `needsPINForEachUse` by asking for the PIN
    /// before the operation runs.
    package func useKey(
        _ reference: ObjectReference, for usage: KeyUse, keyTypes: [KeyType]?, mechanism: UInt64?,
        context: AccessContext
    ) throws(CoreError) -> UsableKey {
        try checkMechanismPolicy(mechanism, for: usage)
        let loaded =
            usage.needsPrivateKey
            ? try privateKey(reference, context: context) : try publicKey(reference, context: context)
        try Token.checkUse(loaded.facts, for: usage, keyTypes: keyTypes, mechanism: mechanism)
        return UsableKey(
            key: loaded.key, attributes: loaded.attributes,
            needsPINForEachUse: Token.needsPINForEachUse(loaded.facts, for: usage),
            isPrivate: loaded.facts.isPrivate, facts: loaded.facts, changeCount: loaded.changeCount)
    }

    /// `useKey` for a mechanism that fixes one key type (or none, `nil`).
    package func useKey(
        _ reference: ObjectReference, for usage: KeyUse, keyType: KeyType? = nil, mechanism: UInt64?,
        context: AccessContext
    ) throws(CoreError) -> UsableKey {
        try useKey(
            reference, for: usage, keyTypes: keyType.map { [$0] }, mechanism: mechanism, context: context)
    }

    /// Whether `usage` of a key needs the user's PIN again: CKA_ALWAYS_AUTHENTICATE asks it for
    /// each signature and decryption (v2.40 §4.9); an Apple access control that needs presence
    /// (`.userPresence`, `.devicePasscode`, `.applicationPassword`) asks it for every use of the
    /// private key, unwrapping and derivation (ECDH, ECIES) included, as on Apple platforms.
    /// Read from the key's facts (`KeyUseFacts`), which a kept key carries.
    static func needsPINForEachUse(_ facts: KeyUseFacts, for usage: KeyUse) -> Bool {
        guard usage.needsPrivateKey else { return false }
        if facts.accessControlNeedsPIN { return true }
        return (usage == .sign || usage == .decrypt) && facts.alwaysAuthenticate
    }

    /// The same entry point for secret keys: the object must be a secret key of one of
    /// `keyTypes` (nil: any), pass `checkUse`, and its value opens only with a login.
    package func useSecretKey(
        _ reference: ObjectReference, for usage: KeyUse, keyTypes: [KeyType]?, mechanism: UInt64?,
        context: AccessContext
    ) throws(CoreError) -> UsableSecretKey {
        try checkMechanismPolicy(mechanism, for: usage)
        let loaded = try withState { (state) throws(CoreError) in
            try state.keptKey(
                reference, context: context, in: \.keys.secretKeys,
                source: { (stored) throws(CoreError) in
                    try Token.checkKeyClass(stored, is: [.secretKey])
                    guard let sealed = stored[.value] else {
                        throw CoreError(.objectNotFound, "the handle is not a secret key")
                    }
                    return sealed
                },
                parse: { (_, stored) throws(CoreError) in
                    guard let value = try state.opened(.value, of: stored) else {
                        throw CoreError(.storageCorrupt, "a secret key has no value")
                    }
                    return value
                })
        }
        guard let rawType = loaded.facts.keyType, let kind = SecretKeyKind(KeyType(rawValue: rawType)) else {
            throw CoreError(.keyTypeInconsistent, "the secret key is of a type the token does not use")
        }
        try Token.checkUse(loaded.facts, for: usage, keyTypes: keyTypes, mechanism: mechanism)
        return UsableSecretKey(
            value: loaded.key, kind: kind, attributes: loaded.attributes, isPrivate: loaded.facts.isPrivate,
            facts: loaded.facts, changeCount: loaded.changeCount)
    }

    /// `useSecretKey`'s answer for the key object `reference` names, given on the facts a caller
    /// kept from an earlier `useSecretKey` of it (a restarted MAC or AES operation) without
    /// reading or opening the key again: false when the store's change count is no longer
    /// `changeCount` (or there was none), and the caller uses the key through `useSecretKey`;
    /// true when the checks pass on the facts (the key's type, then `checkKeptKeyUse`); a
    /// refusal is thrown as `useSecretKey` would throw it. While the count stands, the object
    /// and so its facts are unchanged.
    func checkKeptSecretKeyUse(
        _ reference: ObjectReference, facts: KeyUseFacts, changeCount: UInt64?, for usage: KeyUse,
        keyTypes: [KeyType]?, mechanism: UInt64, context: AccessContext
    ) throws(CoreError) -> Bool {
        guard let changeCount else { return false }
        let current = try withState { (state) throws(CoreError) in try state.store(for: reference).changeCount
        }
        guard current == changeCount else { return false }
        guard let rawType = facts.keyType, SecretKeyKind(KeyType(rawValue: rawType)) != nil else {
            throw CoreError(.keyTypeInconsistent, "the secret key is of a type the token does not use")
        }
        try checkKeptKeyUse(facts, for: usage, keyTypes: keyTypes, mechanism: mechanism, context: context)
        return true
    }

    /// The checks of a use of a key object whose facts the caller kept from an earlier
    /// `useKey` or `useSecretKey`, while the store has not changed since (a restarted MAC or
    /// signature): the configuration's policy (the registry already allowed `mechanism` for
    /// `usage`), the login a private object needs, and `checkUse`. They answer as the entry
    /// point would with the key kept by the token (`TokenState.keptKey`), which checks no more
    /// while the store is unchanged. The caller also asks `needsPINForEachUse` of the facts.
    func checkKeptKeyUse(
        _ facts: KeyUseFacts, for usage: KeyUse, keyTypes: [KeyType]?, mechanism: UInt64,
        context: AccessContext
    ) throws(CoreError) {
        try checkConfiguration(mechanism, for: usage)
        guard context.canSee(privateObject: facts.isPrivate) else {
            throw CoreError(.objectNotFound, "the object is private: log in first")
        }
        try Token.checkUse(facts, for: usage, keyTypes: keyTypes, mechanism: mechanism)
    }

    /// The rules of every key use, in one place: the key's type fits the mechanism, its
    /// usage attributes are TRUE (a missing one counts as FALSE; `requiredAttributes`), and
    /// the mechanism is among its CKA_ALLOWED_MECHANISMS when it has a non-empty list (v3.0
    /// §4.7). A face that cannot name its mechanism (`nil`) may use only keys without such a
    /// list.
    static func checkUse(
        _ attributes: AttributeSet, for usage: KeyUse, keyTypes: [KeyType]?, mechanism: UInt64?
    ) throws(CoreError) {
        try checkUse(KeyUseFacts(attributes), for: usage, keyTypes: keyTypes, mechanism: mechanism)
    }

    /// `checkUse` on a key's facts as read from its attributes (a kept key keeps them).
    static func checkUse(
        _ facts: KeyUseFacts, for usage: KeyUse, keyTypes: [KeyType]?, mechanism: UInt64?
    ) throws(CoreError) {
        if let keyTypes, !keyTypes.contains(where: { facts.keyType == $0.rawValue }) {
            throw CoreError(.keyTypeInconsistent, "the key's type does not fit the mechanism")
        }
        if !facts.isTrue(usage.attribute) {
            throw notPermitted(usage, usage.attribute, mechanism: mechanism)
        }
        if mechanism == RSAMechanism.raw {
            for attribute in requiredAttributes(for: usage, mechanism: mechanism)
            where !facts.isTrue(attribute) {
                throw notPermitted(usage, attribute, mechanism: mechanism)
            }
        }
        guard let permitted = facts.allowedMechanisms else { return }
        guard let mechanism, permitted.contains(mechanism) else {
            throw CoreError(
                .mechanismInvalid, "the key's CKA_ALLOWED_MECHANISMS does not include this mechanism")
        }
    }

    /// The refusal of a use whose usage attribute `attribute` is not TRUE.
    private static func notPermitted(_ usage: KeyUse, _ attribute: AttributeType, mechanism: UInt64?)
        -> CoreError
    {
        CoreError(
            .keyFunctionNotPermitted,
            mechanism == RSAMechanism.raw && attribute != usage.attribute
                ? "raw RSA (CKM_RSA_X_509) with a private key decrypts and signs at once: "
                    + "the key needs \(attribute), which is false"
                : "the key may not \(usage) (its attribute \(attribute) is false)")
    }
}

extension Token {
    /// A private key's secret, to leave the token: only a key that is neither sensitive nor
    /// unextractable (v2.40 §4.9; the PKCS#11 face answers CKR_ATTRIBUTE_SENSITIVE otherwise).
    package func exportablePrivateKey(_ reference: ObjectReference, context: AccessContext)
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

/// The RSA mechanisms whose private-key operations `rsa-pkcs1-decryption` governs.
enum RSAMechanism {
    /// CKM_RSA_PKCS (v2.40 §2.1.6).
    static let pkcs1: UInt64 = 0x0001
    /// CKM_RSA_X_509, raw RSA (v2.40 §2.1.8).
    static let raw: UInt64 = 0x0003
}

extension Token {
    /// The usage attributes a use of `mechanism` needs. Raw RSA's private-key operation on a
    /// chosen input (RSADP and RSASP1 are one function, RFC 8017 §5.1.2, §5.2.1) is at once a
    /// decryption and a signature, whichever function asked for it: C_Sign(CKM_RSA_X_509)
    /// decrypts any ciphertext and C_Decrypt(CKM_RSA_X_509) signs any padded digest, so it
    /// needs CKA_DECRYPT and CKA_SIGN besides its own attribute.
    static func requiredAttributes(for usage: KeyUse, mechanism: UInt64?) -> [AttributeType] {
        guard mechanism == RSAMechanism.raw, usage.needsPrivateKey else { return [usage.attribute] }
        var required = [usage.attribute]
        for also in [AttributeType.decrypt, .sign] where !required.contains(also) { required.append(also) }
        return required
    }

    /// The uses of `mechanism` this token's configuration turns off. With
    /// `rsa-pkcs1-decryption = no` that is every RSA private-key path that can answer as a
    /// PKCS#1 v1.5 decryption oracle (Bleichenbacher, CRYPTO '98): CKM_RSA_PKCS decryption and
    /// unwrapping, and raw RSA's private operation whichever function asks for it
    /// (decryption, unwrapping, signing: raw RSA "signing" of a chosen input is its
    /// decryption). Encryption and verification, public operations, stay. The PKCS#11 face
    /// reports these in C_GetMechanismInfo; `useKey` refuses them.
    package func usesTurnedOff(for mechanism: UInt64) -> [KeyUse] {
        guard !configuration.allowsRSAPKCS1Decryption else { return [] }
        switch mechanism {
        case RSAMechanism.pkcs1: return [.decrypt, .unwrap]
        case RSAMechanism.raw: return [.decrypt, .unwrap, .sign]
        default: return []
        }
    }

    /// Refuses a use the configuration turned off (`usesTurnedOff`), before any key is read.
    func checkMechanismPolicy(_ mechanism: UInt64?, for usage: KeyUse) throws(CoreError) {
        guard let mechanism else { return }
        try MechanismRegistry.check(mechanism, for: MechanismFunctions(usage))
        try checkConfiguration(mechanism, for: usage)
    }

    /// `checkMechanismPolicy`'s second half, for a mechanism the registry already allowed for
    /// `usage`: the uses the configuration turns off.
    func checkConfiguration(_ mechanism: UInt64, for usage: KeyUse) throws(CoreError) {
        // Asked first, on every restarted MAC and signature: the list is made only when the
        // configuration turns something off.
        guard !configuration.allowsRSAPKCS1Decryption, usesTurnedOff(for: mechanism).contains(usage) else {
            return
        }
        throw CoreError(
            .mechanismInvalid,
            "\(PKCS11Names.mechanism(mechanism)) may not \(usage) here: the configuration turned off "
                + "every RSA private-key operation that can act as a PKCS#1 v1.5 decryption oracle "
                + "(rsa-pkcs1-decryption = no)")
    }

    /// The one answer for an object that is not the kind of key a use needs. A key of another
    /// class (a public key to sign, a secret key for RSA, an RSA key for AES) is the wrong type
    /// of key for the mechanism: `keyTypeInconsistent` (CKR_KEY_TYPE_INCONSISTENT, v2.40
    /// §5.1.6). An object that is no key at all (a certificate, a data object) names no key:
    /// `objectNotFound` (CKR_KEY_HANDLE_INVALID).
    static func checkKeyClass(_ stored: AttributeSet, is classes: [ObjectClass]) throws(CoreError) {
        let keyClasses = [ObjectClass.publicKey, .privateKey, .secretKey].map(\.rawValue)
        guard let actual = stored.ulong(.class), keyClasses.contains(actual) else {
            throw CoreError(.objectNotFound, "the handle names no key")
        }
        guard classes.contains(where: { $0.rawValue == actual }) else {
            throw CoreError(
                .keyTypeInconsistent,
                "the key is a \(PKCS11Names.objectClass(actual)); this use of the mechanism needs a "
                    + classes.map { PKCS11Names.objectClass($0.rawValue) }.joined(separator: " or "))
        }
    }
}
