package import KeychainCrypto
internal import Synchronization

/// Every mechanism this token implements, in the order C_GetMechanismList reports them. A
/// mechanism added here is listed, described by C_GetMechanismInfo, named in the trace and on
/// the command line, and checked at every `*Init`, with no other edit.
public enum MechanismRegistry {
    /// The registry, in C_GetMechanismList's order.
    public static let all: [Mechanism] = digests + rsa + ellipticCurves + secretKeys + macs

    /// The mechanism of a CKM_* value; nil for one this token does not implement.
    public static func mechanism(_ type: UInt64) -> Mechanism? { index(of: type).map { sorted[$0] } }

    /// Where `type` is in `sorted`: the last answer when it is that mechanism again (a host
    /// asks for the same one call after call), else a binary search. Every *Init looks its
    /// mechanism up, and hashing the key cost more than the ~6 comparisons.
    private static func index(of type: UInt64) -> Int? {
        types.withUnsafeBufferPointer { types in
            let last = lastIndex.load(ordering: .relaxed)
            if last < types.count, types[last] == type { return last }
            var low = 0
            var high = types.count
            while low < high {
                let middle = low + (high - low) / 2
                if types[middle] < type { low = middle + 1 } else { high = middle }
            }
            guard low < types.count, types[low] == type else { return nil }
            lastIndex.store(low, ordering: .relaxed)
            return low
        }
    }

    /// `index(of:)`'s last answer. Only a hint: any index is checked against the type before
    /// it is used, so threads racing here cost a search, never a wrong mechanism.
    private static let lastIndex = Atomic<Int>(0)

    /// `sorted`'s CKM_* values, in its order: the search reads these contiguous integers
    /// instead of copying mechanisms.
    private static let types: [UInt64] = sorted.map(\.type)

    /// The registry by CKM_* value, ascending; a value listed twice keeps its first entry.
    private static let sorted: [Mechanism] = Dictionary(
        all.map { ($0.type, $0) }, uniquingKeysWith: { first, _ in first }
    ).values.sorted { $0.type < $1.type }

    /// The mechanism of `type` if it may perform `function`: CKR_MECHANISM_INVALID's error for
    /// one this token does not implement or whose flags do not include the function (an
    /// `*Init` consults the flags C_GetMechanismInfo reports, v2.40 §5.10 ff.).
    public static func require(_ type: UInt64, for function: MechanismFunctions) throws(CoreError)
        -> Mechanism
    {
        sorted[try checkedIndex(type, for: function)]
    }

    /// `require`'s check alone, for a caller that needs no copy of the mechanism.
    package static func check(_ type: UInt64, for function: MechanismFunctions) throws(CoreError) {
        _ = try checkedIndex(type, for: function)
    }

    private static func checkedIndex(_ type: UInt64, for function: MechanismFunctions) throws(CoreError)
        -> Int
    {
        guard let index = index(of: type) else {
            throw CoreError(.mechanismInvalid, "mechanism \(PKCS11Names.mechanism(type)) is not supported")
        }
        guard sorted[index].functions.isSuperset(of: function) else {
            throw CoreError(.mechanismInvalid, "mechanism \(sorted[index].name) cannot \(function.names)")
        }
        return index
    }

    /// The hash a digest mechanism's value names (CKM_SHA256 in a PSS, OAEP or HKDF
    /// parameter's hash field); nil for any other value.
    package static func hash(named type: UInt64) -> DigestAlgorithm? {
        guard let mechanism = mechanism(type), mechanism.functions == .digest else { return nil }
        return mechanism.digest
    }

    /// The CKM_* value of the mechanism of `family` that hashes with `digest` (nil: the one
    /// that hashes nothing), so that code names mechanisms by what they are rather than by
    /// number. A pair the table does not hold gives a value it does not know, which every
    /// `*Init` refuses as not supported.
    package static func type(of family: MechanismFamily, digest: DigestAlgorithm? = nil) -> UInt64 {
        all.first { $0.family == family && $0.digest == digest }?.type ?? unregistered
    }

    /// The CKM_* value of the key pair generation mechanism of keys of `keyType`.
    package static func keyPairGeneration(of keyType: KeyType) -> UInt64 {
        all.first { $0.family == .keyPairGeneration && $0.keyTypes.contains(keyType) }?.type ?? unregistered
    }

    /// CK_UNAVAILABLE_INFORMATION: no mechanism has this value.
    private static let unregistered = UInt64.max

    // MARK: The table

    /// Key sizes: RSA modulus bits, EC field bits, secret key bytes.
    private static let rsaBits = KeyPairKind.rsaBits
    private static let aesBytes = 16...32
    private static let genericBytes = 1...SecretKeyKind.maximumGenericLength

    /// CKM_SHA_1, CKM_SHA224, CKM_SHA256, CKM_SHA384, CKM_SHA512 (v2.40 §2.16–2.19).
    private static let digests: [Mechanism] = zip(hashes, [0x220, 0x255, 0x250, 0x260, 0x270]).map {
        Mechanism($1, .digest, .digest, digest: $0)
    }

    /// The hashes, in the order of every family's list of mechanism values below.
    private static let hashes: [DigestAlgorithm] = [.sha1, .sha224, .sha256, .sha384, .sha512]

    /// RSA (v2.40 §2.1): key pair generation, PKCS #1 v1.5, OAEP, PSS, raw RSA, and the hashing
    /// PKCS #1 v1.5 and PSS signatures.
    private static let rsa: [Mechanism] = {
        let signing: MechanismFunctions = [.sign, .verify]
        func key(
            _ type: UInt64, _ family: MechanismFamily, _ functions: MechanismFunctions,
            _ parameter: ParameterLayout = .none, digest: DigestAlgorithm? = nil
        ) -> Mechanism {
            Mechanism(
                type, family, functions, keyTypes: [.rsa], keySizes: rsaBits, parameter: parameter,
                digest: digest)
        }
        let hashedPKCS1: [UInt64] = [0x06, 0x46, 0x40, 0x41, 0x42]
        let hashedPSS: [UInt64] = [0x0E, 0x47, 0x43, 0x44, 0x45]
        let unhashed: [Mechanism] = [
            key(0x00, .keyPairGeneration, .generateKeyPair),  // CKM_RSA_PKCS_KEY_PAIR_GEN
            key(0x01, .rsaPKCS1, signing.union([.encrypt, .decrypt])),  // CKM_RSA_PKCS
            key(0x09, .rsaOAEP, [.encrypt, .decrypt, .wrap, .unwrap], .oaep),  // CKM_RSA_PKCS_OAEP
            key(0x0D, .rsaPSS, signing, .pss),  // CKM_RSA_PKCS_PSS
            key(0x03, .rsaRaw, signing.union([.encrypt, .decrypt])),  // CKM_RSA_X_509 (raw RSA, §2.1.8)
        ]
        let hashing: [Mechanism] = zip(hashes, hashedPKCS1).map { key($1, .rsaPKCS1, signing, digest: $0) }
        let hashingPSS: [Mechanism] = zip(hashes, hashedPSS).map {
            key($1, .rsaPSS, signing, .pss, digest: $0)
        }
        return unhashed + hashing + hashingPSS
    }()

    /// ECDSA (v2.40 §2.3), Ed25519/Ed448 (v3.0 §2.3.14) and X25519/X448 key generation
    /// (v3.0 §2.3.8): key sizes are the curves' field sizes.
    private static let ellipticCurves: [Mechanism] = {
        let signing: MechanismFunctions = [.sign, .verify]
        let hashedECDSA: [UInt64] = [0x1042, 0x1043, 0x1044, 0x1045, 0x1046]
        func ecdsa(_ type: UInt64, _ digest: DigestAlgorithm?) -> Mechanism {
            Mechanism(
                type, .ecdsa, signing, keyTypes: [.ec], keySizes: 256...521, namedCurves: true, digest: digest
            )
        }
        let generation = Mechanism(
            0x1040, .keyPairGeneration, .generateKeyPair, keyTypes: [.ec], keySizes: 256...521,
            namedCurves: true)
        let hashing: [Mechanism] = zip(hashes, hashedECDSA).map { ecdsa($1, $0) }
        let edwardsAndMontgomery: [Mechanism] = [
            Mechanism(
                0x1055, .keyPairGeneration, .generateKeyPair, keyTypes: [.ecEdwards], keySizes: 255...448),
            Mechanism(
                0x1057, .eddsa, signing, keyTypes: [.ecEdwards], keySizes: 255...448,
                parameter: .optionalEdDSA),
            Mechanism(
                0x1056, .keyPairGeneration, .generateKeyPair, keyTypes: [.ecMontgomery],
                keySizes: 255...448),
        ]
        return [generation, ecdsa(0x1041, nil)] + hashing + edwardsAndMontgomery
    }()

    /// AES (v2.40 §2.10, §2.14; v3.0 §2.14 key wrap), generic secrets (§2.34), ECDH (§2.3.9,
    /// P-256…P-521 and X25519/X448 by CKM_ECDH1_DERIVE) and HKDF (v3.0 §2.43).
    private static let secretKeys: [Mechanism] = {
        let crypt: MechanismFunctions = [.encrypt, .decrypt]
        let wrap: MechanismFunctions = [.wrap, .unwrap]
        func aes(
            _ type: UInt64, _ family: MechanismFamily, _ functions: MechanismFunctions,
            _ parameter: ParameterLayout
        ) -> Mechanism {
            Mechanism(type, family, functions, keyTypes: [.aes], keySizes: aesBytes, parameter: parameter)
        }
        // HKDF derives from a generic secret (v3.0 §2.43.1); this token makes no CKK_HKDF keys.
        func hkdf(_ type: UInt64, data: Bool) -> Mechanism {
            Mechanism(
                type, .hkdf(data: data), .derive, keyTypes: [.genericSecret], keySizes: genericBytes,
                parameter: .hkdf)
        }
        return [
            aes(0x1080, .keyGeneration, .generate, .none),  // CKM_AES_KEY_GEN
            Mechanism(  // CKM_GENERIC_SECRET_KEY_GEN
                0x0350, .keyGeneration, .generate, keyTypes: [.genericSecret], keySizes: genericBytes),
            aes(0x1081, .aesECB, crypt, .none),  // CKM_AES_ECB
            aes(0x1082, .aesCBC, crypt, .bytes(16)),  // CKM_AES_CBC
            aes(0x1085, .aesCBCPad, crypt, .bytes(16)),  // CKM_AES_CBC_PAD
            aes(0x1086, .aesCTR, crypt, .ctr),  // CKM_AES_CTR
            aes(0x1087, .aesGCM, crypt, .gcm),  // CKM_AES_GCM
            aes(0x2109, .aesKeyWrap(padded: false), wrap, .optionalBytes(8)),  // CKM_AES_KEY_WRAP
            // KWP before PAD: `type(of:)` answers the first, and RFC 5649 is v3.0's KWP.
            aes(0x210B, .aesKeyWrap(padded: true), wrap, .optionalBytes(4)),  // CKM_AES_KEY_WRAP_KWP
            aes(0x210A, .aesKeyWrap(padded: true), wrap, .optionalBytes(4)),  // CKM_AES_KEY_WRAP_PAD
            Mechanism(  // CKM_ECDH1_DERIVE
                0x1050, .ecdh(cofactor: false), .derive, keyTypes: [.ec, .ecMontgomery], keySizes: 255...521,
                namedCurves: true, parameter: .ecdh1),
            Mechanism(  // CKM_ECDH1_COFACTOR_DERIVE
                0x1051, .ecdh(cofactor: true), .derive, keyTypes: [.ec], keySizes: 256...521,
                namedCurves: true,
                parameter: .ecdh1),
            hkdf(0x402A, data: false),  // CKM_HKDF_DERIVE
            hkdf(0x402B, data: true),  // CKM_HKDF_DATA
        ]
    }()

    /// HMAC (v2.40 §2.20–2.24) with a generic secret or an HMAC key of its hash, and AES-CMAC
    /// (v3.0 §2.15), each also as a *_GENERAL mechanism of a chosen length.
    private static let macs: [Mechanism] = {
        let hmacKeyTypes: [KeyType] = [.sha1HMAC, .sha224HMAC, .sha256HMAC, .sha384HMAC, .sha512HMAC]
        let hmacs: [UInt64] = [0x221, 0x256, 0x251, 0x261, 0x271]
        var table: [Mechanism] = []
        for (index, plain) in hmacs.enumerated() {
            // Each *_HMAC_GENERAL mechanism follows its *_HMAC one.
            for (type, general) in [(plain, false), (plain + 1, true)] {
                table.append(
                    Mechanism(
                        type, .mac(general: general), [.sign, .verify],
                        keyTypes: [.genericSecret, hmacKeyTypes[index]],
                        keySizes: genericBytes, parameter: general ? .macLength : .none, digest: hashes[index]
                    ))
            }
        }
        for (type, general) in [(UInt64(0x108A), false), (0x108B, true)] {  // CKM_AES_CMAC, _GENERAL
            table.append(
                Mechanism(
                    type, .mac(general: general), [.sign, .verify], keyTypes: [.aes], keySizes: aesBytes,
                    parameter: general ? .macLength : .none))
        }
        return table.sorted { $0.type < $1.type }
    }()
}
