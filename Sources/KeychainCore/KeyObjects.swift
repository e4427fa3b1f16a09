package import KeychainCrypto
internal import KeychainStorage

/// What key pair to generate (C_GenerateKeyPair's mechanism with its template parameters).
public enum KeyPairKind: Sendable, Equatable {
    case rsa(bits: Int)
    case ec(curveParameters: [UInt8])
    case ed25519(curveParameters: [UInt8])
    /// Ed448 (CKM_EC_EDWARDS_KEY_PAIR_GEN with id-Ed448, v3.0 §2.3.6).
    case ed448
    /// X25519 (CKM_EC_MONTGOMERY_KEY_PAIR_GEN with id-X25519, v3.0 §2.3.8).
    case x25519
    /// X448 (CKM_EC_MONTGOMERY_KEY_PAIR_GEN with id-X448, v3.0 §2.3.8).
    case x448
}

/// CKK_EC_MONTGOMERY (v3.0 §2.3.7): X25519 and X448 keys, for key agreement only.
extension KeyType {
    public static let ecMontgomery = KeyType(rawValue: 0x41)
}

extension KeyPairKind {
    /// RSA key sizes the token can generate and use; a token's configuration may raise the
    /// minimum (`rsa-minimum-bits`, ``TokenConfiguration/minimumRSABits``).
    public static let rsaBits = AsymmetricKey.rsaKeySizes

    /// The key pair a C_GenerateKeyPair mechanism and its templates ask for: the generation
    /// rules (v2.40 §2.1.4, §2.3.8; v3.0 §2.3.10) live here, once, for every face.
    public init(mechanism: UInt64, publicTemplate: AttributeSet, privateTemplate: AttributeSet)
        throws(CoreError)
    {
        _ = try MechanismRegistry.require(mechanism, for: .generateKeyPair)
        switch mechanism {
        case Token.rsaKeyPairMechanism:
            guard let bits = publicTemplate.ulong(.modulusBits) else {
                throw CoreError(.templateIncomplete, "RSA generation needs CKA_MODULUS_BITS")
            }
            guard let size = Int(exactly: bits), KeyPairKind.rsaBits.contains(size) else {
                throw CoreError(
                    .keySizeRange,
                    "RSA keys have \(KeyPairKind.rsaBits.lowerBound) to \(KeyPairKind.rsaBits.upperBound) bits"
                )
            }
            // Only F4: other exponents are refused rather than silently replaced.
            if let exponent = publicTemplate[.publicExponent],
                exponent.drop(while: { $0 == 0 }) != [0x01, 0x00, 0x01]
            {
                throw CoreError(.attributeValueInvalid, "only the public exponent 65537 is supported")
            }
            self = .rsa(bits: size)
        case Token.ecKeyPairMechanism:
            guard let parameters = publicTemplate[.ecParams] ?? privateTemplate[.ecParams] else {
                throw CoreError(.templateIncomplete, "EC generation needs CKA_EC_PARAMS")
            }
            guard EllipticCurve(parameters: parameters) != nil else {
                throw CoreError(.curveNotSupported, "only P-256, P-384 and P-521 are supported")
            }
            self = .ec(curveParameters: parameters)
        case Token.edwardsKeyPairMechanism:
            let parameters =
                publicTemplate[.ecParams] ?? privateTemplate[.ecParams] ?? Edwards25519.parameters
            // The OID id-Ed25519 / id-Ed448, or the PrintableString "edwards25519" /
            // "edwards448" of v3.0 §2.3.5.
            switch KeyAlgorithm(octetStringParameters: parameters) {
            case .ed25519: self = .ed25519(curveParameters: parameters)
            case .ed448: self = .ed448
            default: throw CoreError(.curveNotSupported, "only Ed25519 and Ed448 are supported")
            }
        case Token.montgomeryKeyPairMechanism:
            // v3.0 §2.3.8: CKA_EC_PARAMS names the curve, by OID (id-X25519, id-X448) or as
            // the PrintableString "curve25519" / "curve448" (§2.3.7).
            guard let parameters = publicTemplate[.ecParams] ?? privateTemplate[.ecParams] else {
                throw CoreError(.templateIncomplete, "Montgomery generation needs CKA_EC_PARAMS")
            }
            switch KeyAlgorithm(octetStringParameters: parameters) {
            case .x25519: self = .x25519
            case .x448: self = .x448
            default: throw CoreError(.curveNotSupported, "only X25519 and X448 are supported")
            }
        default:
            throw CoreError(
                .mechanismInvalid, "mechanism \(PKCS11Names.mechanism(mechanism)) generates no key pair")
        }
    }
}

/// A stored key pair's two objects.
package struct KeyPairReferences: Sendable {
    package var publicKey: ObjectReference
    package var privateKey: ObjectReference
}

/// Key pairs (PKCS#11 v2.40 §4.8–4.9, §2.1, §2.3; ARCHITECTURE.md §3.4, §6): generation, the attributes a
/// client reads, and the private key for signing. The private key's secret parts and its
/// PKCS#8 form are sealed under the token key like every private value.
extension Token {
    /// CKM_RSA_PKCS_KEY_PAIR_GEN, CKM_EC_KEY_PAIR_GEN, CKM_EC_EDWARDS_KEY_PAIR_GEN,
    /// CKM_EC_MONTGOMERY_KEY_PAIR_GEN.
    package static let rsaKeyPairMechanism = MechanismRegistry.keyPairGeneration(of: .rsa)
    package static let ecKeyPairMechanism = MechanismRegistry.keyPairGeneration(of: .ec)
    package static let edwardsKeyPairMechanism = MechanismRegistry.keyPairGeneration(of: .ecEdwards)
    package static let montgomeryKeyPairMechanism = MechanismRegistry.keyPairGeneration(of: .ecMontgomery)

    /// The RSA modulus sizes this token accepts: ``AsymmetricKey/rsaKeySizes`` with its
    /// minimum raised by `rsa-minimum-bits` (``TokenConfiguration/minimumRSABits``).
    package var rsaKeySizes: ClosedRange<Int> {
        let sizes = AsymmetricKey.rsaKeySizes
        return min(max(configuration.minimumRSABits, sizes.lowerBound), sizes.upperBound)...sizes.upperBound
    }

    /// Refuses an imported RSA key (C_CreateObject, SecItemAdd) below this token's
    /// `rsa-minimum-bits` with CKR_ATTRIBUTE_VALUE_INVALID, the code v2.40 §5.7 gives
    /// C_CreateObject for a value it will not take (KEY_SIZE_RANGE is not among them). Sizes
    /// outside ``AsymmetricKey/rsaKeySizes`` never got this far.
    func checkImportedKeySize(_ object: NewObject) throws(CoreError) {
        guard object.attributes.ulong(.keyType) == KeyType.rsa.rawValue,
            let info = object.attributes[.publicKeyInfo],
            // try?: the SPKI was just derived from a key OpenSSL parsed (NewObject); one that
            // did not parse again would already have been refused there, so nothing is lost.
            let key = try? AsymmetricKey(subjectPublicKeyInfo: info)
        else { return }
        let sizes = rsaKeySizes
        guard sizes.contains(key.bits) else {
            throw CoreError(
                .attributeValueInvalid,
                "RSA keys on this token have \(sizes.lowerBound) to \(sizes.upperBound) bits, not \(key.bits)"
            )
        }
    }

    /// Throws CKR_KEY_SIZE_RANGE's error unless `bits` is in ``rsaKeySizes``.
    func checkRSASize(_ bits: Int) throws(CoreError) {
        let sizes = rsaKeySizes
        guard sizes.contains(bits) else {
            throw CoreError(
                .keySizeRange,
                "RSA keys on this token have \(sizes.lowerBound) to \(sizes.upperBound) bits, not \(bits)")
        }
    }

    /// Generates a key pair and stores both halves in one transaction. The templates are
    /// checked against the key classes' rules; generation parameters (CKA_MODULUS_BITS,
    /// CKA_PUBLIC_EXPONENT, CKA_EC_PARAMS) are read by the caller into `kind`.
    package func generateKeyPair(
        _ kind: KeyPairKind, publicTemplate: AttributeSet, privateTemplate: AttributeSet,
        context: AccessContext
    ) throws(CoreError) -> KeyPairReferences {
        let algorithm: KeyAlgorithm
        let mechanism: UInt64
        switch kind {
        case .rsa(let bits):
            try checkRSASize(bits)
            algorithm = .rsa(bits: bits)
            mechanism = Token.rsaKeyPairMechanism
        case .ec(let parameters):
            guard let curve = EllipticCurve(parameters: parameters) else {
                throw CoreError(
                    .attributeValueInvalid, "CKA_EC_PARAMS names no supported curve (P-256, P-384, P-521)")
            }
            algorithm = .ec(curve)
            mechanism = Token.ecKeyPairMechanism
        case .ed25519:
            algorithm = .ed25519
            mechanism = Token.edwardsKeyPairMechanism
        case .ed448:
            algorithm = .ed448
            mechanism = Token.edwardsKeyPairMechanism
        case .x25519:
            algorithm = .x25519
            mechanism = Token.montgomeryKeyPairMechanism
        case .x448:
            algorithm = .x448
            mechanism = Token.montgomeryKeyPairMechanism
        }
        let key = try CoreError.mapping { try AsymmetricKey.generate(algorithm) }
        return try storeKeyPair(
            key, publicTemplate: publicTemplate, privateTemplate: privateTemplate,
            generatedBy: mechanism, context: context)
    }

    /// Stores an existing key pair (generated, or imported from PKCS#12 by the Swift API).
    package func storeKeyPair(
        _ key: AsymmetricKey, publicTemplate: AttributeSet, privateTemplate: AttributeSet,
        generatedBy mechanism: UInt64?, context: AccessContext
    ) throws(CoreError) -> KeyPairReferences {
        let objects = try keyPairObjects(
            key, publicTemplate: publicTemplate, privateTemplate: privateTemplate, generatedBy: mechanism,
            context: context)
        let references = try insertAll([objects.publicKey, objects.privateKey], context: context)
        return KeyPairReferences(publicKey: references[0], privateKey: references[1])
    }

    /// The two objects of a key pair, checked and filled, not yet stored.
    func keyPairObjects(
        _ key: AsymmetricKey, publicTemplate: AttributeSet, privateTemplate: AttributeSet,
        generatedBy mechanism: UInt64?, context: AccessContext
    ) throws(CoreError) -> (publicKey: NewObject, privateKey: NewObject) {
        guard let algorithm = key.algorithm, let pkcs8 = key.pkcs8 else {
            throw CoreError(
                .unsupported,
                "only RSA, EC P-256/384/521, Ed25519, Ed448, X25519 and X448 private keys can be stored")
        }
        if case .rsa(let bits) = algorithm { try checkRSASize(bits) }
        var publicKey = try Token.checked(publicTemplate, policy: .publicKey, context: context)
        var privateKey = try Token.checked(privateTemplate, policy: .privateKey, context: context)
        let id = publicTemplate[.id] ?? privateTemplate[.id] ?? key.publicKeyHash
        let label = publicTemplate[.label] ?? privateTemplate[.label] ?? []
        let shared: AttributeSet = [
            .local: [mechanism == nil ? 0 : 1],
            .keyGenMechanism: AttributeValue.encode(mechanism ?? UInt64.max),
            .publicKeyInfo: key.subjectPublicKeyInfo,
        ]
        publicKey.merge(shared) { _, derived in derived }
        privateKey.merge(shared) { _, derived in derived }
        publicKey[.class] = AttributeValue.encode(ObjectClass.publicKey.rawValue)
        privateKey[.class] = AttributeValue.encode(ObjectClass.privateKey.rawValue)
        publicKey[.id] = publicKey[.id] ?? id
        privateKey[.id] = privateKey[.id] ?? id
        publicKey[.label] = publicKey[.label] ?? label
        privateKey[.label] = privateKey[.label] ?? label
        // Private keys are private and sensitive unless the template says otherwise.
        privateKey[.private] = privateKey[.private] ?? [1]
        privateKey[.sensitive] = privateKey[.sensitive] ?? [1]
        privateKey[.extractable] = privateKey[.extractable] ?? [0]
        // A key made here starts its history from its own flags; an existing one (PKCS#12)
        // was outside the token before.
        ObjectPolicy.privateKey.settleHistory(
            &privateKey, after: mechanism == nil ? .create : .generate, before: nil)
        privateKey[.keyMaterial] = pkcs8
        switch algorithm {
        case .rsa:
            let type = AttributeValue.encode(KeyType.rsa.rawValue)
            publicKey[.keyType] = type
            privateKey[.keyType] = type
            let modulus = key.component("n") ?? []
            let exponent = key.component("e") ?? []
            publicKey[.modulus] = modulus
            publicKey[.modulusBits] = AttributeValue.encode(UInt64(key.bits))
            publicKey[.publicExponent] = exponent
            privateKey[.modulus] = modulus
            privateKey[.publicExponent] = exponent
            let parts: [(AttributeType, String)] = [
                (.privateExponent, "d"), (.prime1, "rsa-factor1"), (.prime2, "rsa-factor2"),
                (.exponent1, "rsa-exponent1"), (.exponent2, "rsa-exponent2"),
                (.coefficient, "rsa-coefficient1"),
            ]
            for (type, name) in parts { privateKey[type] = key.component(name) ?? [] }
        case .ec(let curve):
            let type = AttributeValue.encode(KeyType.ec.rawValue)
            publicKey[.keyType] = type
            privateKey[.keyType] = type
            publicKey[.ecParams] = curve.parameters
            privateKey[.ecParams] = curve.parameters
            publicKey[.ecPoint] = DEROctetString.encode(key.publicPoint ?? [])
            privateKey[.value] = key.component("priv") ?? []
        case .ed25519, .ed448, .x25519, .x448:
            // v3.0 §2.3.5–2.3.8: CKA_EC_POINT is the raw public value in a DER OCTET STRING,
            // CKA_VALUE the raw private value.
            let type = AttributeValue.encode(
                (algorithm.isMontgomery ? KeyType.ecMontgomery : .ecEdwards).rawValue)
            publicKey[.keyType] = type
            privateKey[.keyType] = type
            publicKey[.ecParams] = algorithm.curveParameters
            privateKey[.ecParams] = algorithm.curveParameters
            publicKey[.ecPoint] = DEROctetString.encode(key.publicPoint ?? [])
            privateKey[.value] = key.rawPrivateKey ?? []
        }
        KeyTypeUsages.settle(&publicKey)
        KeyTypeUsages.settle(&privateKey)
        for (policy, attributes) in [
            (ObjectPolicy.publicKey, publicKey), (ObjectPolicy.privateKey, privateKey),
        ] {
            var filled = attributes
            policy.fillDefaults(&filled)
            if policy.objectClass == .publicKey { publicKey = filled } else { privateKey = filled }
        }
        return (
            NewObject(attributes: publicKey, uniqueKey: nil),
            NewObject(attributes: privateKey, uniqueKey: nil)
        )
    }

    /// Checks a generation template with the one rule check (`ObjectPolicy.check`, as
    /// `.generate`: no key material, no attribute the token sets) and returns what the token
    /// copies onto the key: everything but the generation parameters, which the caller read
    /// into the key pair's kind, and the class and key type, which the token sets.
    private static func checked(_ template: AttributeSet, policy: ObjectPolicy, context: AccessContext)
        throws(CoreError) -> AttributeSet
    {
        try policy.check(template, .generate, asSecurityOfficer: context.securityOfficer)
        if template.ulong(.class).map({ $0 != policy.objectClass.rawValue }) == true {
            throw CoreError(.templateInconsistent, "CKA_CLASS contradicts the key's class")
        }
        return template.filter { type, _ in
            type != .class && type != .keyType
                && policy.specs[type]?.rules.contains(.generationParameter) != true
        }
    }

    /// The private key behind a private key object, for signing and decryption, with the
    /// object's public attributes (its sealed values are not opened), the facts every use
    /// checks, and the store's change count they were read at (`TokenState.keptKey`).
    ///
    /// Parsing PKCS#8 costs more than an ECDSA signature, and opening every sealed part
    /// costs as much again: parsed keys are kept by object together with the sealed bytes
    /// they came from, and reused while the stored bytes are unchanged. Only a change (or a
    /// first use) opens the key material.
    package func privateKey(_ reference: ObjectReference, context: AccessContext) throws(CoreError)
        -> (key: AsymmetricKey, attributes: AttributeSet, facts: KeyUseFacts, changeCount: UInt64?)
    {
        try withState { (state) throws(CoreError) in
            try state.keptKey(
                reference, context: context, in: \.keys.privateKeys,
                source: { (stored) throws(CoreError) in
                    try Token.checkKeyClass(stored, is: [.privateKey])
                    guard let sealed = stored[.keyMaterial] else {
                        throw CoreError(.objectNotFound, "the handle is not a private key")
                    }
                    return sealed
                },
                parse: { (_, stored) throws(CoreError) in
                    guard let material = try state.opened(.keyMaterial, of: stored) else {
                        throw CoreError(.storageCorrupt, "a private key has no key material")
                    }
                    return try CoreError.mapping { try AsymmetricKey(privateKeyDER: material) }
                })
        }
    }

    /// The public key behind a key object, for verification and encryption. A certificate
    /// is not a key (v2.40 §5.12): its handle is refused like any other non-key. Kept between
    /// calls like private keys (a SubjectPublicKeyInfo parse costs more than an ECDSA
    /// verification); the attributes returned never include sealed values.
    package func publicKey(_ reference: ObjectReference, context: AccessContext) throws(CoreError)
        -> (key: AsymmetricKey, attributes: AttributeSet, facts: KeyUseFacts, changeCount: UInt64?)
    {
        try withState { (state) throws(CoreError) in
            try state.keptKey(
                reference, context: context, in: \.keys.publicKeys,
                source: { (stored) throws(CoreError) in
                    try Token.checkKeyClass(stored, is: [.publicKey, .privateKey])
                    guard let info = stored[.publicKeyInfo], !info.isEmpty else {
                        throw CoreError(.objectNotFound, "the handle is not a key")
                    }
                    return info
                },
                parse: { (info, _) throws(CoreError) in
                    try CoreError.mapping { try AsymmetricKey(subjectPublicKeyInfo: info) }
                })
        }
    }

}

extension NewObject {
    /// A key object imported from its parts (C_CreateObject): OpenSSL rebuilds and checks the
    /// key, and the token derives what clients read (CKA_PUBLIC_KEY_INFO, CKA_ID, modulus
    /// size, the sealed PKCS#8). Imported keys were once outside the token: they are never
    /// "always sensitive", "never extractable" or "local".
    init(importingKey template: AttributeSet, policy: ObjectPolicy) throws(CoreError) {
        guard let rawType = template.ulong(.keyType) else {
            throw CoreError(.templateIncomplete, "template lacks CKA_KEY_TYPE")
        }
        let isPrivate = policy.objectClass == .privateKey
        func required(_ type: AttributeType) throws(CoreError) -> [UInt8] {
            guard let value = template[type], !value.isEmpty else {
                throw CoreError(.templateIncomplete, "template lacks required attribute \(type)")
            }
            return value
        }
        let components: KeyComponents
        switch KeyType(rawValue: rawType) {
        case .rsa:
            components =
                isPrivate
                ? .rsaPrivate(
                    modulus: try required(.modulus), publicExponent: try required(.publicExponent),
                    privateExponent: try required(.privateExponent), prime1: try required(.prime1),
                    prime2: try required(.prime2), exponent1: try required(.exponent1),
                    exponent2: try required(.exponent2), coefficient: try required(.coefficient))
                : .rsaPublic(modulus: try required(.modulus), publicExponent: try required(.publicExponent))
        case .ec:
            guard let curve = EllipticCurve(parameters: try required(.ecParams)) else {
                throw CoreError(
                    .attributeValueInvalid, "CKA_EC_PARAMS names no supported curve (P-256, P-384, P-521)")
            }
            if isPrivate {
                components = .ecPrivate(curve, scalar: try required(.value))
            } else {
                let point = try required(.ecPoint)
                components = .ecPublic(curve, point: DEROctetString.decode(point) ?? point)
            }
        case .ecEdwards, .ecMontgomery:
            // v3.0 §2.3.5 and §2.3.7: the curve by OID or PrintableString; CKA_EC_POINT raw or
            // in a DER OCTET STRING, CKA_VALUE raw.
            let isEdwards = KeyType(rawValue: rawType) == .ecEdwards
            let algorithm = KeyAlgorithm(octetStringParameters: try required(.ecParams))
            guard let algorithm, algorithm.isEdwards == isEdwards else {
                throw CoreError(
                    .attributeValueInvalid,
                    "CKA_EC_PARAMS names no supported curve (\(isEdwards ? "Ed25519, Ed448" : "X25519, X448"))"
                )
            }
            if isPrivate {
                let value = try required(.value)
                switch algorithm {
                case .ed448: components = .ed448Private(value)
                case .x25519: components = .x25519Private(value)
                case .x448: components = .x448Private(value)
                default: components = .ed25519Private(value)
                }
            } else {
                let point = AsymmetricKey.unwrapECPoint(try required(.ecPoint))
                switch algorithm {
                case .ed448: components = .ed448Public(point)
                case .x25519: components = .x25519Public(point)
                case .x448: components = .x448Public(point)
                default: components = .ed25519Public(point)
                }
            }
        default:
            throw CoreError(
                .attributeValueInvalid,
                "key type \(PKCS11Names.keyType(rawType)) is not RSA, EC, EC_EDWARDS or EC_MONTGOMERY")
        }
        let key: AsymmetricKey
        do {
            key = try AsymmetricKey(components: components)
        } catch {
            throw CoreError(.attributeValueInvalid, error.message)
        }
        var attributes = template
        if let given = template[.publicKeyInfo], given != key.subjectPublicKeyInfo {
            throw CoreError(.attributeValueInvalid, "CKA_PUBLIC_KEY_INFO contradicts the key")
        }
        attributes[.publicKeyInfo] = key.subjectPublicKeyInfo
        attributes[.id] = template[.id] ?? key.publicKeyHash
        attributes[.label] = template[.label] ?? []
        attributes[.local] = [0]
        attributes[.keyGenMechanism] = AttributeValue.encode(UInt64.max)
        if case .rsa = key.algorithm, !isPrivate {
            attributes[.modulusBits] = AttributeValue.encode(UInt64(key.bits))
        }
        if !isPrivate, template[.ecPoint] != nil {
            attributes[.ecPoint] = DEROctetString.encode(key.publicPoint ?? [])
        }
        if isPrivate {
            guard let pkcs8 = key.pkcs8 else {
                throw CoreError(.attributeValueInvalid, "the private key does not encode")
            }
            attributes[.keyMaterial] = pkcs8
            attributes[.private] = template[.private] ?? [1]
            attributes[.sensitive] = template[.sensitive] ?? [1]
            attributes[.extractable] = template[.extractable] ?? [0]
            policy.settleHistory(&attributes, after: .create, before: nil)
        }
        KeyTypeUsages.settle(&attributes)
        policy.fillDefaults(&attributes)
        self.init(attributes: attributes, uniqueKey: nil)
    }
}

extension TokenState {
    /// A parsed key of an object, kept in `cache` with the object's visible attributes (sealed
    /// values removed). Every C_SignInit and C_VerifyInit comes here: while the store's change
    /// count is the one the key was read at, nobody has written since, and no read is made.
    /// Otherwise the object is read again; `source` picks the bytes the key is parsed from,
    /// and `parse` runs only when they differ from the kept key's (a write elsewhere in the
    /// store costs no new parse: 380 µs for an EC private key in OpenSSL 3.0).
    /// Inlined so that each call site's literal key path becomes a direct access: a key path
    /// passed to a function that is not inlined is resolved at run time, and copies the
    /// `KeyCaches` it reads through (12 % of an HMAC C_SignInit + C_Sign).
    @inline(__always)
    func keptKey<Key>(
        _ reference: ObjectReference, context: AccessContext,
        in cache: ReferenceWritableKeyPath<TokenState, [ObjectReference: CachedKey<Key>]>,
        source: (AttributeSet) throws(CoreError) -> [UInt8],
        parse: (_ material: [UInt8], _ stored: AttributeSet) throws(CoreError) -> Key
    ) throws(CoreError) -> (key: Key, attributes: AttributeSet, facts: KeyUseFacts, changeCount: UInt64?) {
        let store = try store(for: reference)
        let before = store.changeCount
        let kept = self[keyPath: cache][reference]
        if let before, let kept, kept.changeCount == before {
            guard context.canSee(privateObject: kept.facts.isPrivate) else {
                throw CoreError(.objectNotFound, "the object is private: log in first")
            }
            return (kept.key, kept.attributes, kept.facts, before)
        }
        let stored = try loadStored(reference, context: context)
        let material = try source(stored)
        let visible = Token.concealed(stored)
        let key: Key
        if let kept, kept.material == material {
            key = kept.key
        } else {
            key = try parse(material, stored)
        }
        if self[keyPath: cache].count >= 256, kept == nil { self[keyPath: cache].removeAll() }
        // Kept for later calls only when no write began or ended during the read.
        let after = store.changeCount
        let facts = KeyUseFacts(visible)
        let changeCount = before == after ? before : nil
        self[keyPath: cache][reference] = CachedKey(
            material: material, key: key, attributes: visible, facts: facts, changeCount: changeCount)
        return (key, visible, facts, changeCount)
    }
}
