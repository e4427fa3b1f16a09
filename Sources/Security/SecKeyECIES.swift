internal import Keychain

// Apple's ECIES algorithms of SecKeyCreateEncryptedData / SecKeyCreateDecryptedData (SecKey.h,
// "kSecKeyAlgorithmECIESEncryption…"). The construction and wire format are described on
// KeychainCrypto's `ECIES`; messages interoperate with Apple's in both directions.

extension SecKeyAlgorithm {
    /// Legacy ECIES: ECDH, X9.63 KDF with SHA-1, AES-GCM with an all-zero IV.
    public static let eciesEncryptionStandardX963SHA1AESGCM = ecies("ECDH:KDFX963:SHA1:AESGCM")
    /// Legacy ECIES: ECDH, X9.63 KDF with SHA-224, AES-GCM with an all-zero IV.
    public static let eciesEncryptionStandardX963SHA224AESGCM = ecies("ECDH:KDFX963:SHA224:AESGCM")
    /// Legacy ECIES: ECDH, X9.63 KDF with SHA-256, AES-GCM with an all-zero IV.
    public static let eciesEncryptionStandardX963SHA256AESGCM = ecies("ECDH:KDFX963:SHA256:AESGCM")
    /// Legacy ECIES: ECDH, X9.63 KDF with SHA-384, AES-GCM with an all-zero IV.
    public static let eciesEncryptionStandardX963SHA384AESGCM = ecies("ECDH:KDFX963:SHA384:AESGCM")
    /// Legacy ECIES: ECDH, X9.63 KDF with SHA-512, AES-GCM with an all-zero IV.
    public static let eciesEncryptionStandardX963SHA512AESGCM = ecies("ECDH:KDFX963:SHA512:AESGCM")
    /// Legacy ECIES with cofactor ECDH and SHA-1.
    public static let eciesEncryptionCofactorX963SHA1AESGCM = ecies("ECDHC:KDFX963:SHA1:AESGCM")
    /// Legacy ECIES with cofactor ECDH and SHA-224.
    public static let eciesEncryptionCofactorX963SHA224AESGCM = ecies("ECDHC:KDFX963:SHA224:AESGCM")
    /// Legacy ECIES with cofactor ECDH and SHA-256.
    public static let eciesEncryptionCofactorX963SHA256AESGCM = ecies("ECDHC:KDFX963:SHA256:AESGCM")
    /// Legacy ECIES with cofactor ECDH and SHA-384.
    public static let eciesEncryptionCofactorX963SHA384AESGCM = ecies("ECDHC:KDFX963:SHA384:AESGCM")
    /// Legacy ECIES with cofactor ECDH and SHA-512.
    public static let eciesEncryptionCofactorX963SHA512AESGCM = ecies("ECDHC:KDFX963:SHA512:AESGCM")
    /// ECIES: ECDH, X9.63 KDF with SHA-224 giving the AES key and the GCM IV.
    public static let eciesEncryptionStandardVariableIVX963SHA224AESGCM = ecies(
        "ECDH:KDFX963:SHA224:AESGCM-KDFIV")
    /// ECIES: ECDH, X9.63 KDF with SHA-256 giving the AES key and the GCM IV.
    public static let eciesEncryptionStandardVariableIVX963SHA256AESGCM = ecies(
        "ECDH:KDFX963:SHA256:AESGCM-KDFIV")
    /// ECIES: ECDH, X9.63 KDF with SHA-384 giving the AES key and the GCM IV.
    public static let eciesEncryptionStandardVariableIVX963SHA384AESGCM = ecies(
        "ECDH:KDFX963:SHA384:AESGCM-KDFIV")
    /// ECIES: ECDH, X9.63 KDF with SHA-512 giving the AES key and the GCM IV.
    public static let eciesEncryptionStandardVariableIVX963SHA512AESGCM = ecies(
        "ECDH:KDFX963:SHA512:AESGCM-KDFIV")
    /// ECIES with cofactor ECDH, X9.63 KDF with SHA-224 giving the AES key and the GCM IV.
    public static let eciesEncryptionCofactorVariableIVX963SHA224AESGCM = ecies(
        "ECDHC:KDFX963:SHA224:AESGCM-KDFIV")
    /// ECIES with cofactor ECDH, X9.63 KDF with SHA-256 giving the AES key and the GCM IV
    /// (the Secure Enclave's usual choice on Apple platforms).
    public static let eciesEncryptionCofactorVariableIVX963SHA256AESGCM = ecies(
        "ECDHC:KDFX963:SHA256:AESGCM-KDFIV")
    /// ECIES with cofactor ECDH, X9.63 KDF with SHA-384 giving the AES key and the GCM IV.
    public static let eciesEncryptionCofactorVariableIVX963SHA384AESGCM = ecies(
        "ECDHC:KDFX963:SHA384:AESGCM-KDFIV")
    /// ECIES with cofactor ECDH, X9.63 KDF with SHA-512 giving the AES key and the GCM IV.
    public static let eciesEncryptionCofactorVariableIVX963SHA512AESGCM = ecies(
        "ECDHC:KDFX963:SHA512:AESGCM-KDFIV")

    private static func ecies(_ suffix: String) -> SecKeyAlgorithm {
        SecKeyAlgorithm(name: "algid:encrypt:ECIES:" + suffix)
    }

    /// The ECIES algorithm this names, or nil. (Apple has no VariableIV form with SHA-1.)
    var ecies: ECIESAlgorithm? { SecKeyAlgorithm.eciesAlgorithms[self] }

    private static let eciesAlgorithms: [SecKeyAlgorithm: ECIESAlgorithm] = {
        var table: [SecKeyAlgorithm: ECIESAlgorithm] = [:]
        let legacy: [(SecKeyAlgorithm, SecKeyAlgorithm, DigestAlgorithm)] = [
            (.eciesEncryptionStandardX963SHA1AESGCM, .eciesEncryptionCofactorX963SHA1AESGCM, .sha1),
            (.eciesEncryptionStandardX963SHA224AESGCM, .eciesEncryptionCofactorX963SHA224AESGCM, .sha224),
            (.eciesEncryptionStandardX963SHA256AESGCM, .eciesEncryptionCofactorX963SHA256AESGCM, .sha256),
            (.eciesEncryptionStandardX963SHA384AESGCM, .eciesEncryptionCofactorX963SHA384AESGCM, .sha384),
            (.eciesEncryptionStandardX963SHA512AESGCM, .eciesEncryptionCofactorX963SHA512AESGCM, .sha512),
        ]
        let variable: [(SecKeyAlgorithm, SecKeyAlgorithm, DigestAlgorithm)] = [
            (
                .eciesEncryptionStandardVariableIVX963SHA224AESGCM,
                .eciesEncryptionCofactorVariableIVX963SHA224AESGCM, .sha224
            ),
            (
                .eciesEncryptionStandardVariableIVX963SHA256AESGCM,
                .eciesEncryptionCofactorVariableIVX963SHA256AESGCM, .sha256
            ),
            (
                .eciesEncryptionStandardVariableIVX963SHA384AESGCM,
                .eciesEncryptionCofactorVariableIVX963SHA384AESGCM, .sha384
            ),
            (
                .eciesEncryptionStandardVariableIVX963SHA512AESGCM,
                .eciesEncryptionCofactorVariableIVX963SHA512AESGCM, .sha512
            ),
        ]
        for (forms, variableIV) in [(legacy, false), (variable, true)] {
            for (standard, cofactor, digest) in forms {
                table[standard] = ECIESAlgorithm(digest: digest, cofactor: false, variableIV: variableIV)
                table[cofactor] = ECIESAlgorithm(digest: digest, cofactor: true, variableIV: variableIV)
            }
        }
        return table
    }()
}

/// Whether `key` does ECIES `operation`: an EC public key encrypts, an EC private key
/// decrypts (Apple's `SecKeyIsAlgorithmSupported`).
func supportsECIES(_ key: SecKey, _ operation: SecKeyOperationType) -> Bool {
    guard key.algorithm?.type == .ellipticCurve else { return false }
    switch operation {
    case .encrypt: return !key.isPrivate
    case .decrypt: return key.isPrivate
    case .sign, .verify, .keyExchange: return false
    }
}

/// SecKeyCreateEncryptedData with an ECIES algorithm: in software, with the public key alone.
func eciesEncrypt(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ ecies: ECIESAlgorithm, _ plaintext: [UInt8])
    throws(KeychainError) -> [UInt8]
{
    guard supportsECIES(key, .encrypt) else { throw unsupported(algorithm, key) }
    return try publicHalf(of: key).encrypt(plaintext, algorithm: ecies)
}

/// SecKeyCreateDecryptedData with an ECIES algorithm: a stored key's key agreement runs in
/// the keychain (CKA_DERIVE), an in-memory key's in software.
func eciesDecrypt(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ ecies: ECIESAlgorithm, _ message: [UInt8])
    throws(KeychainError) -> [UInt8]
{
    guard supportsECIES(key, .decrypt) else { throw unsupported(algorithm, key) }
    switch key.storage {
    case .item(let keychain, let item):
        return try key.withPIN { pin throws(KeychainError) in
            try keychain.decrypt(message, with: item, algorithm: ecies, pin: pin)
        }
    case .privateKey(let privateKey): return try privateKey.decrypt(message, algorithm: ecies)
    case .publicKey, .secretKeyItem: throw unsupported(algorithm, key)
    }
}

/// Apple's error for an algorithm the key does not do: errSecParam.
private func unsupported(_ algorithm: SecKeyAlgorithm, _ key: SecKey) -> KeychainError {
    KeychainError(
        .parameter,
        "\(algorithm.rawValue): algorithm not supported by the key (ECIES encrypts with an EC public key "
            + "and decrypts with an EC private key)")
}
