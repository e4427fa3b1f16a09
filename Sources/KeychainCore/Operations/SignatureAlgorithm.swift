internal import KeychainCrypto

/// A signature as Apple's `SecKeyAlgorithm` constants name them, and the registry mechanism
/// each amounts to: the Swift faces sign and verify through the same ``SignatureOperation``
/// as C_Sign, with that mechanism, so a key's CKA_ALLOWED_MECHANISMS reads the same on both.
/// `Keychain.SignatureAlgorithm` is this type.
///
/// "Message" algorithms hash the data; "digest" ones take the hash the caller computed.
/// RSA-PSS uses MGF1 with the same hash and a salt as long as the hash, as Apple's does.
/// ECDSA signatures are DER (X9.62 ECDSA-Sig-Value), as Apple and OpenSSL write them.
public enum SignatureAlgorithm: Hashable, Sendable {
    /// RSASSA-PKCS1-v1_5 over the message: CKM_SHA*_RSA_PKCS.
    case rsaPKCS1v15(HashAlgorithm)
    /// RSASSA-PKCS1-v1_5 over a digest: CKM_RSA_PKCS over the digest's DigestInfo.
    case rsaPKCS1v15Digest(HashAlgorithm)
    /// PKCS#1 v1.5 padding of the data as given, typically a DigestInfo: CKM_RSA_PKCS.
    case rsaPKCS1v15Raw
    /// RSASSA-PSS over the message: CKM_SHA*_RSA_PKCS_PSS.
    case rsaPSS(HashAlgorithm)
    /// RSASSA-PSS over a digest: CKM_RSA_PKCS_PSS.
    case rsaPSSDigest(HashAlgorithm)
    /// ECDSA over the message: CKM_ECDSA_SHA*.
    case ecdsa(HashAlgorithm)
    /// ECDSA over a digest (nil: of any length): CKM_ECDSA.
    case ecdsaDigest(HashAlgorithm?)
    /// Pure Ed25519 over the message (RFC 8032): CKM_EDDSA.
    case ed25519

    /// The type of key that makes and checks these signatures.
    public var keyType: AsymmetricKeyType {
        switch self {
        case .rsaPKCS1v15, .rsaPKCS1v15Digest, .rsaPKCS1v15Raw, .rsaPSS, .rsaPSSDigest: .rsa
        case .ecdsa, .ecdsaDigest: .ellipticCurve
        case .ed25519: .ed25519
        }
    }

    /// The registry mechanism and its parameters: CKM_RSA_PKCS, CKM_RSA_PKCS_PSS, CKM_ECDSA,
    /// CKM_EDDSA, and the hashing mechanisms of each hash.
    var mechanism: (type: UInt64, parameters: SignatureParameters) {
        func pss(_ digest: HashAlgorithm) -> SignatureParameters {
            .pss(hash: digest.mechanism, mgf: digest.mgf1, saltLength: digest.length)
        }
        func registered(_ family: MechanismFamily, hashing digest: HashAlgorithm? = nil) -> UInt64 {
            MechanismRegistry.type(of: family, digest: digest?.crypto)
        }
        switch self {
        case .rsaPKCS1v15(let digest): return (registered(.rsaPKCS1, hashing: digest), .none)
        case .rsaPKCS1v15Digest, .rsaPKCS1v15Raw: return (registered(.rsaPKCS1), .none)
        case .rsaPSS(let digest): return (registered(.rsaPSS, hashing: digest), pss(digest))
        case .rsaPSSDigest(let digest): return (registered(.rsaPSS), pss(digest))
        case .ecdsa(let digest): return (registered(.ecdsa, hashing: digest), .none)
        case .ecdsaDigest: return (registered(.ecdsa), .none)
        case .ed25519: return (registered(.eddsa), .none)
        }
    }

    /// The length of the digest a "digest" algorithm signs; nil for one that takes any input.
    var digestLength: Int? {
        switch self {
        case .rsaPKCS1v15Digest(let digest), .rsaPSSDigest(let digest): digest.length
        case .ecdsaDigest(let digest): digest?.length
        case .rsaPKCS1v15, .rsaPKCS1v15Raw, .rsaPSS, .ecdsa, .ed25519: nil
        }
    }

    /// Checks a digest's length for a "digest" algorithm.
    func checkInput(_ data: [UInt8]) throws(CoreError) {
        if let digestLength, data.count != digestLength {
            throw CoreError(
                .dataLengthRange,
                "a digest algorithm signs a \(digestLength)-byte digest, not \(data.count) bytes")
        }
    }

    /// The mechanism checked for `function`, for ``Token/signatureOperation(_:_:for:context:kept:)``.
    public func checked(for function: MechanismFunctions) throws(CoreError) -> SignatureMechanism {
        if case .rsaPKCS1v15Digest(let digest) = self {
            return try SignatureMechanism(pkcs1DigestOf: digest.crypto, for: function)
        }
        let (type, parameters) = mechanism
        return try SignatureMechanism(type, parameters, for: function)
    }

    /// Signs `data` with a key held in memory (no keychain item), the same way as a stored one.
    package func sign(_ data: [UInt8], with material: KeyMaterial) throws(CoreError) -> [UInt8] {
        let key = material.key
        let mechanism = try checked(for: .sign)
        try checkKeyType(key, mechanism)
        let operation = try SignatureOperation(
            key: key, mechanism, authentication: nil, usesPrivateObject: false, kept: nil)
        return try sign(data, with: operation)
    }

    /// Signs `data` with an operation started for this algorithm; ECDSA signatures come back DER.
    public func sign(_ data: [UInt8], with operation: SignatureOperation) throws(CoreError) -> [UInt8] {
        try checkInput(data)
        let signature = try operation.sign(prepared: try operation.prepared(message: data))
        guard case .ec = operation.key.algorithm else { return signature }
        guard let der = operation.key.ecdsaSignatureDER(fromRaw: signature) else {
            throw CoreError(.operationFailed, "the ECDSA signature does not encode")
        }
        return der
    }

    /// Whether `signature` (DER for ECDSA) is `key`'s signature of `data`: false for a wrong or
    /// malformed one; throws only when the algorithm does not fit the key or the data.
    package func verify(_ signature: [UInt8], for data: [UInt8], with material: KeyMaterial)
        throws(CoreError) -> Bool
    {
        let key = material.key
        let mechanism = try checked(for: .verify)
        try checkKeyType(key, mechanism)
        let operation = try SignatureOperation(
            key: key, mechanism, authentication: nil, usesPrivateObject: false, kept: nil)
        try checkInput(data)
        var encoded = signature
        if case .ec = key.algorithm {
            guard let raw = key.ecdsaSignatureRaw(fromDER: signature) else { return false }
            encoded = raw
        }
        guard encoded.count == operation.signatureLength else { return false }
        return try operation.isValid(encoded, try operation.prepared(message: data))
    }

    /// The key fits the mechanism: `keyTypeInconsistent` otherwise.
    private func checkKeyType(_ key: AsymmetricKey, _ mechanism: SignatureMechanism) throws(CoreError) {
        let type: KeyType? =
            switch key.algorithm {
            case .rsa: .rsa
            case .ec: .ec
            case .ed25519, .ed448: .ecEdwards
            case .x25519, .x448, nil: nil
            }
        guard type == mechanism.keyType else {
            throw CoreError(
                .keyTypeInconsistent,
                "this signature algorithm needs \(Self.name(mechanism.keyType)), not \(type.map(Self.name) ?? "this key")"
            )
        }
    }

    /// "an EC key", as Apple's algorithms name key types.
    private static func name(_ type: KeyType) -> String {
        switch type {
        case .rsa: "an RSA key"
        case .ec: "an EC key"
        case .ecEdwards: "an Ed25519 key"
        default: "a \(PKCS11Names.keyType(type.rawValue))"
        }
    }

    /// Starts a signature (`.sign`) or verification (`.verify`) of this algorithm with the
    /// stored key `reference` names, through ``Token/signatureOperation(_:_:for:context:kept:)``.
    package func operation(
        on token: Token, _ reference: ObjectReference, for usage: KeyUse, context: AccessContext
    ) throws(CoreError) -> SignatureOperation {
        let mechanism = try checked(for: MechanismFunctions(usage))
        do throws(CoreError) {
            return try token.signatureOperation(reference, mechanism, for: usage, context: context)
        } catch  where error.code == .keyTypeInconsistent {
            throw CoreError(
                .keyTypeInconsistent,
                "this signature algorithm needs \(Self.name(mechanism.keyType)): \(error.message)")
        }
    }
}

extension HashAlgorithm {
    /// The CKM_SHA* value of this hash in the registry.
    var mechanism: UInt64 { MechanismRegistry.type(of: .digest, digest: crypto) }

    /// The CKG_MGF1_* value of MGF1 with this hash.
    var mgf1: UInt64 {
        [UInt64](1...5).first { MechanismRegistry.hash(mgf1: $0) == crypto } ?? 0
    }
}
