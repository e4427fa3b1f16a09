internal import KeychainCrypto

/// The parameter of a derivation mechanism, as plain values a face reads from its caller's
/// structure (v2.40 §2.3.16 CK_ECDH1_DERIVE_PARAMS; v3.0 §2.43 CK_HKDF_PARAMS).
public enum DerivationParameters: Sendable, Hashable {
    /// ECDH: `kdf` a CKD_* value, the KDF's shared data, and the peer's public value (an EC
    /// point, raw or DER-wrapped, or an X25519/X448 public key).
    case ecdh(kdf: UInt64, sharedData: [UInt8], publicData: [UInt8])
    /// HKDF: which steps run, `hash` a CKM_SHA* value, `saltType` a CKF_HKDF_SALT_* value with
    /// the salt bytes (CKF_HKDF_SALT_DATA) or salt key (CKF_HKDF_SALT_KEY), and the info.
    case hkdf(
        extract: Bool, expand: Bool, hash: UInt64, saltType: UInt64, salt: [UInt8], saltKey: ObjectReference?,
        info: [UInt8])

    /// The most shared data (ECDH's KDF input, HKDF's salt and info) one derivation takes.
    public static let maximumInput = 64 << 10

    /// CKF_HKDF_SALT_NULL, _DATA, _KEY (v3.0 §2.43.2).
    public static let hkdfSaltNull: UInt64 = 1
    public static let hkdfSaltData: UInt64 = 2
    public static let hkdfSaltKey: UInt64 = 4
}

/// A key derivation from one base key (v2.40 §5.14 C_DeriveKey), created by
/// ``Token/startDerivation(_:mechanism:parameters:context:)`` and run by
/// ``derive(template:context:)``, which stores the result sealed with its base key's history:
/// ECDH (CKM_ECDH1_DERIVE, _COFACTOR_DERIVE; X25519 and X448 keys, v3.0 §2.3.7) and HKDF
/// (CKM_HKDF_DERIVE, CKM_HKDF_DATA).
public final class DerivationOperation {
    fileprivate enum Method {
        case ecdh(AsymmetricKey, cofactor: Bool, kdf: DigestAlgorithm?, sharedData: [UInt8], peer: [UInt8])
        case hkdf(
            SecretBytes, mode: HKDFMode, digest: DigestAlgorithm, salt: SecretBytes, info: [UInt8],
            data: Bool,
            saltKey: AttributeSet?)
    }

    private let token: Token
    private let method: Method
    /// The session's kept contexts: an ECDH agreement with the same key and peer reuses its own.
    private let kept: KeptContexts?
    private let base: AttributeSet
    /// The base key's per-use PIN (an access control that needs presence).
    public let authentication: UseAuthentication

    fileprivate init(
        token: Token, method: Method, base: AttributeSet, authentication: UseAuthentication,
        kept: KeptContexts? = nil
    ) {
        self.token = token
        self.method = method
        self.kept = kept
        self.base = base
        self.authentication = authentication
    }

    /// Derives and stores the key (or, HKDF_DATA, the data object) the template describes,
    /// merged with the base key's CKA_DERIVE_TEMPLATE: its reference.
    public func derive(template given: AttributeSet, context: AccessContext) throws(CoreError)
        -> ObjectReference
    {
        let template = try Token.derivationTemplate(given, base: base)
        try authentication.spend("derivation")
        switch method {
        case .ecdh(let key, let cofactor, let kdf, let sharedData, let peer):
            let secret = try Self.agree(key, peer: peer, cofactor: cofactor, kept: kept)
            let value: SecretBytes
            if let kdf {
                let length = try Token.derivedKeyLength(
                    template, natural: kdf.length, maximum: SecretKeyKind.maximumGenericLength)
                do throws(CryptoError) {
                    value = try KeyDerivationFunction.x963(
                        secret, sharedInfo: sharedData, digest: kdf, length: length)
                } catch {
                    throw CoreError(.templateInconsistent, error.message)
                }
            } else {
                // CKD_NULL: the key is the leading bytes of the shared secret (its x-coordinate).
                let length = try Token.derivedKeyLength(
                    template, natural: secret.count, maximum: secret.count)
                value = Self.prefix(secret, length)
            }
            return try token.storeDerivedKey(value, template: template, base: base, context: context)
        case .hkdf(let key, let mode, let digest, let salt, let info, let isData, let saltKey):
            let expand = mode != .extractOnly
            // RFC 5869 §2.3: expansion gives up to 255 blocks; extraction one block.
            let maximum = expand ? 255 * digest.length : digest.length
            let length =
                isData
                ? try Token.derivedDataLength(template, natural: digest.length, maximum: maximum)
                : try Token.derivedKeyLength(template, natural: digest.length, maximum: maximum)
            let value: SecretBytes
            do throws(CryptoError) {
                var saltBytes = salt.copyBytes()
                defer { SecretBytes.wipe(&saltBytes) }
                let output = try KeyDerivationFunction.hkdf(
                    mode, digest: digest, key: key, salt: saltBytes, info: info,
                    length: expand ? length : digest.length)
                value = expand ? output : Self.prefix(output, length)
            } catch {
                throw CoreError(.mechanismParameterInvalid, error.message)
            }
            return isData
                ? try token.storeDerivedData(
                    value, template: template, derivedFrom: [base] + (saltKey.map { [$0] } ?? []),
                    context: context)
                : try token.storeDerivedKey(value, template: template, base: base, context: context)
        }
    }

    /// The raw shared secret of an ECDH operation, self-wiping, for a face that returns it
    /// (``sharedSecret(derivation:)``, ``ECIESAlgorithm/open(_:with:recipient:)``): nothing
    /// stored.
    func agreedSecret() throws(CoreError) -> SecretBytes {
        guard case .ecdh(let key, let cofactor, _, _, let peer) = method else {
            throw CoreError(.mechanismInvalid, "only ECDH agrees on a shared secret")
        }
        try authentication.spend("key agreement")
        return try Self.agree(key, peer: peer, cofactor: cofactor)
    }

    private static func agree(_ key: AsymmetricKey, peer: [UInt8], cofactor: Bool, kept: KeptContexts? = nil)
        throws(CoreError) -> SecretBytes
    {
        do throws(CryptoError) {
            let value = AsymmetricKey.unwrapECPoint(peer)
            let agreement: KeyAgreementContext
            if let idle = kept?.takeAgreement(for: key, peer: value, cofactor: cofactor) {
                agreement = idle
            } else {
                agreement = try KeyAgreementContext(key: key, peerPublicValue: value, cofactor: cofactor)
            }
            let secret = try agreement.derive()
            kept?.agreement = agreement
            return secret
        } catch {
            throw CoreError(
                error.code == .invalidInput ? .domainParametersInvalid : .keyTypeInconsistent, error.message)
        }
    }

    /// The first `count` bytes of `secret`, still self-wiping.
    private static func prefix(_ secret: SecretBytes, _ count: Int) -> SecretBytes {
        secret.withUnsafeBytes { bytes in
            SecretBytes(copying: UnsafeRawBufferPointer(rebasing: bytes.prefix(count)))
        }
    }
}

extension Token {
    /// Starts a derivation from the base key `reference` names, through the one key-use entry
    /// point for `.derive` (an HKDF salt key too). Parameter errors come before the base key
    /// is read.
    public func startDerivation(
        _ reference: ObjectReference, mechanism type: UInt64, parameters: DerivationParameters,
        context: AccessContext, kept: KeptContexts? = nil
    ) throws(CoreError) -> DerivationOperation {
        guard let registered = MechanismRegistry.mechanism(type), registered.functions.contains(.derive)
        else {
            throw CoreError(
                .mechanismInvalid, "mechanism \(PKCS11Names.mechanism(type)) derives no key on this token")
        }
        switch (registered.family, parameters) {
        case (.ecdh(let cofactor), .ecdh(let kdfType, let sharedData, let publicData)):
            let kdf = try Self.ecdhKDF(kdfType)
            if kdf == nil, !sharedData.isEmpty {
                throw CoreError(.mechanismParameterInvalid, "CKD_NULL takes no shared data")
            }
            guard !publicData.isEmpty else {
                throw CoreError(.mechanismParameterInvalid, "ECDH needs the peer's public value")
            }
            let key = try useKey(
                reference, for: .derive, keyTypes: registered.keyTypes, mechanism: type, context: context)
            return DerivationOperation(
                token: self,
                method: .ecdh(
                    key.key, cofactor: cofactor, kdf: kdf, sharedData: sharedData, peer: publicData),
                base: key.attributes,
                authentication: UseAuthentication(token: self, isRequired: key.needsPINForEachUse), kept: kept
            )
        case (
            .hkdf(let isData),
            .hkdf(let extract, let expand, let hash, let saltType, let saltData, let saltKey, let info)
        ):
            guard extract || expand else {
                throw CoreError(.mechanismParameterInvalid, "HKDF must extract, expand or both")
            }
            guard let digest = MechanismRegistry.hash(named: hash) else {
                throw CoreError(.mechanismParameterInvalid, "unsupported HKDF hash")
            }
            if !expand, !info.isEmpty {
                throw CoreError(.mechanismParameterInvalid, "HKDF info is only for the expand step")
            }
            var salt = SecretBytes([UInt8]())
            var saltKeyAttributes: AttributeSet?
            if extract {
                switch saltType {
                case DerivationParameters.hkdfSaltNull: break
                case DerivationParameters.hkdfSaltData: salt = SecretBytes(saltData)
                case DerivationParameters.hkdfSaltKey:
                    guard let saltKey else {
                        throw CoreError(.objectNotFound, "the HKDF salt key names no key")
                    }
                    let key = try useSecretKey(
                        saltKey, for: .derive, keyTypes: [.genericSecret], mechanism: type, context: context)
                    salt = key.value
                    saltKeyAttributes = key.attributes
                default:
                    throw CoreError(.mechanismParameterInvalid, "unsupported HKDF salt type")
                }
            } else if saltType != DerivationParameters.hkdfSaltNull && saltType != 0 {
                throw CoreError(.mechanismParameterInvalid, "an HKDF salt is only for the extract step")
            }
            let key = try useSecretKey(
                reference, for: .derive, keyTypes: registered.keyTypes, mechanism: type, context: context)
            let mode: HKDFMode = extract ? (expand ? .extractAndExpand : .extractOnly) : .expandOnly
            return DerivationOperation(
                token: self,
                method: .hkdf(
                    key.value, mode: mode, digest: digest, salt: salt, info: info, data: isData,
                    saltKey: saltKeyAttributes),
                base: key.attributes, authentication: UseAuthentication(token: self, isRequired: false))
        case (.ecdh, _):
            throw CoreError(.mechanismParameterInvalid, "ECDH needs CK_ECDH1_DERIVE_PARAMS")
        default:
            throw CoreError(.mechanismParameterInvalid, "HKDF needs CK_HKDF_PARAMS")
        }
    }

    /// The digest a CKD_* value names; nil for CKD_NULL (v2.40 §2.3.16).
    private static func ecdhKDF(_ kdf: UInt64) throws(CoreError) -> DigestAlgorithm? {
        switch kdf {
        case 1: return nil  // CKD_NULL
        case 2: return .sha1  // CKD_SHA1_KDF
        case 5: return .sha224  // CKD_SHA224_KDF
        case 6: return .sha256  // CKD_SHA256_KDF
        case 7: return .sha384  // CKD_SHA384_KDF
        case 8: return .sha512  // CKD_SHA512_KDF
        default:
            throw CoreError(.mechanismParameterInvalid, "unsupported ECDH key derivation function \(kdf)")
        }
    }
}
