/// How an AES key encrypts, as the typed Swift API names it: the PKCS#11 mechanisms
/// CKM_AES_ECB, _CBC, _CBC_PAD, _CTR, _GCM with their parameters.
///
///     let iv = try Keychain.randomBytes(12)
///     let sealed = try keychain.encrypt(message, with: key, using: .aesGCM(iv: iv))
///     let opened = try keychain.decrypt(sealed, with: key, using: .aesGCM(iv: iv))
public enum AESCipherMode: Hashable, Sendable {
    /// ECB (NIST SP 800-38A §6.1): whole 16-byte blocks, no IV. Only for single blocks
    /// (key check values, key wrapping of one block); equal blocks encrypt equally.
    case aesECB
    /// CBC with a 16-byte IV and no padding: whole 16-byte blocks (SP 800-38A §6.2).
    case aesCBC(iv: [UInt8])
    /// CBC with a 16-byte IV and PKCS#7 padding (CKM_AES_CBC_PAD): any length.
    case aesCBCPad(iv: [UInt8])
    /// CTR (SP 800-38A §6.5): the 16-byte initial counter block, whose last `counterBits`
    /// bits count; a message that would wrap the counter is refused.
    case aesCTR(counterBlock: [UInt8], counterBits: Int = 128)
    /// GCM (SP 800-38D): an IV (12 bytes is the usual and fastest; never reuse one with the
    /// same key), authenticated additional data, and a tag of 12 to 16 bytes. Encryption gives
    /// ciphertext ‖ tag, as PKCS#11 does; decryption takes the same and releases no plaintext
    /// unless the tag verifies.
    case aesGCM(iv: [UInt8], additionalData: [UInt8] = [], tagLength: Int = 16)

    /// The PKCS#11 mechanism (v2.40 §2.10; v3.0 §2.15), for the key's allowed mechanisms.
    public var mechanism: UInt64 {
        switch self {
        case .aesECB: 0x1081
        case .aesCBC: 0x1082
        case .aesCBCPad: 0x1085
        case .aesCTR: 0x1086
        case .aesGCM: 0x1087
        }
    }

    /// The mechanism's parameter.
    public var parameters: CipherParameters {
        switch self {
        case .aesECB: .none
        case .aesCBC(let iv), .aesCBCPad(let iv): .bytes(iv)
        case .aesCTR(let block, let bits): .ctr(counterBlock: block, counterBits: bits)
        case .aesGCM(let iv, let additionalData, let tagLength):
            // A length whose bits overflow is no tag length: the core refuses -1.
            .gcm(
                iv: iv, additionalData: additionalData,
                tagBits: tagLength.multipliedReportingOverflow(by: 8).overflow ? -1 : tagLength * 8)
        }
    }
}

/// How a key is wrapped under an AES key: RFC 3394 or RFC 5649 (with padding).
public enum AESKeyWrapMode: Hashable, Sendable {
    /// AES key wrap (RFC 3394, CKM_AES_KEY_WRAP): keys of a multiple of 8 bytes, at least 16.
    case aesKeyWrap
    /// AES key wrap with padding (RFC 5649, CKM_AES_KEY_WRAP_KWP): a key of any length,
    /// e.g. a private key's PKCS#8.
    case aesKeyWrapPadded

    /// The PKCS#11 mechanism (v3.0 §2.14.3–2.14.4).
    public var mechanism: UInt64 {
        MechanismRegistry.type(of: .aesKeyWrap(padded: self == .aesKeyWrapPadded))
    }
}

/// How an RSA key encrypts, as Apple's `rsaEncryptionPKCS1` and `rsaEncryptionOAEPSHA256`…
/// name it (`Keychain.EncryptionAlgorithm` is this type).
public enum RSAEncryptionAlgorithm: Hashable, Sendable {
    /// RSAES-PKCS1-v1_5 (`rsaEncryptionPKCS1`, CKM_RSA_PKCS).
    case rsaPKCS1
    /// RSAES-OAEP with MGF1 of the same hash and no label (`rsaEncryptionOAEPSHA256`…,
    /// CKM_RSA_PKCS_OAEP).
    case rsaOAEP(HashAlgorithm)

    /// The PKCS#11 mechanism (CKM_RSA_PKCS, CKM_RSA_PKCS_OAEP) and its parameter, for the
    /// core's operation (whose key-use check also reads the key's allowed mechanisms).
    public var mechanism: (type: UInt64, parameters: CipherParameters) {
        switch self {
        case .rsaPKCS1: (MechanismRegistry.type(of: .rsaPKCS1), .none)
        // CKZ_DATA_SPECIFIED with an empty label.
        case .rsaOAEP(let digest):
            (
                MechanismRegistry.type(of: .rsaOAEP),
                .oaep(hash: digest.mechanism, mgf: digest.mgf1, source: 1, label: [])
            )
        }
    }

    /// Checks that a key of `type` encrypts: only RSA keys do
    /// (``CoreError/Code/keyTypeInconsistent``).
    package func check(_ type: AsymmetricKeyType) throws(CoreError) {
        guard type == .rsa else {
            throw CoreError(.keyTypeInconsistent, "only RSA keys encrypt and decrypt, not \(type) keys")
        }
    }
}

extension DerivationParameters {
    /// CKM_ECDH1_DERIVE or CKM_ECDH1_COFACTOR_DERIVE (v2.40 §2.3.16).
    public static func ecdhMechanism(cofactor: Bool) -> UInt64 {
        MechanismRegistry.type(of: .ecdh(cofactor: cofactor))
    }

    /// The parameter of a raw key agreement with `peer` (an EC point): CKD_NULL, no shared data.
    public static func agreement(with peer: [UInt8]) -> DerivationParameters {
        .ecdh(kdf: 1, sharedData: [], publicData: peer)
    }
}
