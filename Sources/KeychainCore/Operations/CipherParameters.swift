internal import KeychainCrypto

/// The parameter of an encryption, decryption or key-wrap mechanism, as plain values: a face
/// reads its caller's structure into one of these by the mechanism's ``ParameterLayout``
/// (bounding what it copies), and the core checks the values and turns them into what the
/// cryptographic layer takes.
public enum CipherParameters: Sendable, Hashable {
    /// No parameter (CKM_RSA_PKCS, CKM_RSA_X_509, CKM_AES_ECB; a key wrap without an
    /// initial value).
    case none
    /// CK_RSA_PKCS_OAEP_PARAMS: `hash` a CKM_SHA* value, `mgf` a CKG_MGF1_* value, `source` a
    /// CKZ_* value, and the label it names.
    case oaep(hash: UInt64, mgf: UInt64, source: UInt64, label: [UInt8])
    /// An IV (AES-CBC, CBC-PAD), or an AES key wrap's initial value.
    case bytes([UInt8])
    /// CK_AES_CTR_PARAMS: the counter block and how many of its low bits count.
    case ctr(counterBlock: [UInt8], counterBits: Int)
    /// CK_GCM_PARAMS: the IV, the additional data, the tag length in bits.
    case gcm(iv: [UInt8], additionalData: [UInt8], tagBits: Int)

    /// The GCM IV lengths in bytes this token takes: PKCS#11 allows up to 256 (v2.40 §2.12),
    /// OpenSSL 3.0 at most 128.
    public static let gcmIVLengths = BlockCipherMode.gcmIVLengths
    /// The GCM tag lengths in bytes (the spec's 96–128 bits, in whole bytes).
    public static let gcmTagLengths = BlockCipherMode.gcmTagLengths
    /// The most additional data one GCM operation takes: a bound on what a caller's number
    /// can make a face copy (the cipher itself takes far more).
    public static let maximumGCMAdditionalData = 1 << 20
    /// The longest OAEP label taken.
    public static let maximumOAEPLabel = 65536
    /// The widest CTR counter: the whole block.
    public static let maximumCounterBits = 128

    /// The RSA padding of an RSA mechanism: PKCS #1 v1.5, raw RSA, or OAEP with checked
    /// hashes (v2.40 §2.1.8 raw RSA: `rsa-pkcs1-decryption = no` turns its private
    /// operation off as well, `Token.usesTurnedOff`).
    func padding(for mechanism: Mechanism) throws(CoreError) -> EncryptionPadding {
        switch (mechanism.family, self) {
        case (.rsaPKCS1, _): return .pkcs1
        case (.rsaRaw, _): return .raw
        case (.rsaOAEP, .oaep(let hash, let mgf, let source, let label)):
            guard let hash = MechanismRegistry.hash(named: hash), let mgf1 = MechanismRegistry.mgf1Hash(mgf)
            else { throw CoreError(.mechanismParameterInvalid, "unsupported OAEP hash or MGF") }
            // CKZ_DATA_SPECIFIED (v2.40 §2.1.7) is the only label source.
            guard label.isEmpty || source == 1 else {
                throw CoreError(.mechanismParameterInvalid, "OAEP label is malformed")
            }
            return .oaep(hash: hash, mgf1: mgf1, label: label)
        case (.rsaOAEP, _):
            throw CoreError(.mechanismParameterInvalid, "OAEP needs CK_RSA_PKCS_OAEP_PARAMS")
        default:
            throw CoreError(.mechanismInvalid, "mechanism \(mechanism.name) is no RSA encryption")
        }
    }

    /// The AES mode of an AES cipher mechanism, its values checked against what the cipher
    /// takes; nil for a mechanism that is no AES cipher.
    func mode(for mechanism: Mechanism) throws(CoreError) -> BlockCipherMode? {
        func iv() throws(CoreError) -> [UInt8] {
            guard case .bytes(let iv) = self, iv.count == 16 else {
                throw CoreError(.mechanismParameterInvalid, "mechanism \(mechanism.name) needs a 16-byte IV")
            }
            return iv
        }
        switch mechanism.family {
        case .aesECB:
            guard self == .none else {
                throw CoreError(.mechanismParameterInvalid, "AES-ECB takes no parameter")
            }
            return .ecb
        case .aesCBC: return .cbc(iv: try iv())
        case .aesCBCPad: return .cbcPad(iv: try iv())
        case .aesCTR:
            guard case .ctr(let block, let bits) = self, block.count == 16 else {
                throw CoreError(.mechanismParameterInvalid, "AES-CTR needs CK_AES_CTR_PARAMS")
            }
            guard (1...Self.maximumCounterBits).contains(bits) else {
                throw CoreError(.mechanismParameterInvalid, "the CTR counter has 1 to 128 bits, not \(bits)")
            }
            return .ctr(counterBlock: block, counterBits: bits)
        case .aesGCM:
            guard case .gcm(let iv, let additionalData, let tagBits) = self else {
                throw CoreError(.mechanismParameterInvalid, "AES-GCM needs CK_GCM_PARAMS")
            }
            let ivLengths = Self.gcmIVLengths
            guard ivLengths.contains(iv.count) else {
                throw CoreError(
                    .mechanismParameterInvalid,
                    "the GCM IV has \(ivLengths.lowerBound) to \(ivLengths.upperBound) bytes here, not \(iv.count)"
                )
            }
            let tagLengths = Self.gcmTagLengths
            guard tagBits % 8 == 0, tagLengths.contains(tagBits / 8) else {
                throw CoreError(
                    .mechanismParameterInvalid,
                    "the GCM tag has \(tagLengths.lowerBound * 8) to \(tagLengths.upperBound * 8) bits, "
                        + "in whole bytes")
            }
            guard additionalData.count <= Self.maximumGCMAdditionalData else {
                throw CoreError(.mechanismParameterInvalid, "the GCM additional data is too long")
            }
            return .gcm(iv: iv, additionalData: additionalData, tagLength: tagBits / 8)
        default:
            return nil
        }
    }

    /// An AES key wrap's initial value: none, or exactly `length` bytes.
    func initialValue(length: Int) throws(CoreError) -> [UInt8]? {
        switch self {
        case .none: return nil
        case .bytes(let value) where value.count == length: return value
        default:
            throw CoreError(.mechanismParameterInvalid, "the key wrap initial value has \(length) bytes")
        }
    }
}

extension MechanismRegistry {
    /// The hash a CKG_MGF1_* value names (v2.40 §2.1.7 table 3); nil for any other value.
    static func mgf1Hash(_ type: UInt64) -> DigestAlgorithm? {
        switch type {
        case 1: .sha1
        case 5: .sha224
        case 2: .sha256
        case 3: .sha384
        case 4: .sha512
        default: nil
        }
    }
}
