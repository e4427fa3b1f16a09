public import Foundation
internal import Keychain

// SecKeyCopyKeyExchangeResult: ECDH with Apple's algorithms and parameters (SecKey.h,
// "kSecKeyAlgorithmECDHKeyExchange…").

/// A key of `SecKeyCopyKeyExchangeResult`'s parameters, as Apple's Swift names them
/// (`SecKeyKeyExchangeParameter.requestedSize.rawValue`).
public struct SecKeyKeyExchangeParameter: RawRepresentable, Hashable, Sendable {
    /// The dictionary key.
    public var rawValue: CFString { name as NSString }
    /// The key as a Swift string: NSString is not Sendable on Linux.
    let name: String

    /// Wraps a dictionary key.
    public init(rawValue: CFString) { name = rawValue as String }

    /// The number of bytes the X9.63 forms derive (CFNumber). Required by them; the Standard
    /// and Cofactor forms return the whole raw secret and ignore it, as Apple's do.
    public static let requestedSize = SecKeyKeyExchangeParameter(rawValue: "requestedSize")
    /// The X9.63 KDF's SharedInfo (CFData); none by default.
    public static let sharedInfo = SecKeyKeyExchangeParameter(rawValue: "sharedInfo")
}

/// `SecKeyKeyExchangeParameter.requestedSize`'s key, under its C name.
nonisolated(unsafe) public let kSecKeyKeyExchangeParameterRequestedSize: CFString = SecKeyKeyExchangeParameter
    .requestedSize
    .rawValue
/// `SecKeyKeyExchangeParameter.sharedInfo`'s key, under its C name.
nonisolated(unsafe) public let kSecKeyKeyExchangeParameterSharedInfo: CFString = SecKeyKeyExchangeParameter
    .sharedInfo.rawValue

extension SecKeyAlgorithm {
    /// ECDH (SEC 1 §3.3.1): the raw shared secret, the x-coordinate as wide as the field.
    public static let ecdhKeyExchangeStandard = SecKeyAlgorithm(rawValue: "algid:keyexchange:ECDH")
    /// ECDH through the ANSI X9.63 KDF with SHA-1.
    public static let ecdhKeyExchangeStandardX963SHA1 = exchange("ECDH:KDFX963:SHA1")
    /// ECDH through the ANSI X9.63 KDF with SHA-224.
    public static let ecdhKeyExchangeStandardX963SHA224 = exchange("ECDH:KDFX963:SHA224")
    /// ECDH through the ANSI X9.63 KDF with SHA-256.
    public static let ecdhKeyExchangeStandardX963SHA256 = exchange("ECDH:KDFX963:SHA256")
    /// ECDH through the ANSI X9.63 KDF with SHA-384.
    public static let ecdhKeyExchangeStandardX963SHA384 = exchange("ECDH:KDFX963:SHA384")
    /// ECDH through the ANSI X9.63 KDF with SHA-512.
    public static let ecdhKeyExchangeStandardX963SHA512 = exchange("ECDH:KDFX963:SHA512")
    /// Cofactor ECDH (SEC 1 §3.3.2): the raw shared secret.
    public static let ecdhKeyExchangeCofactor = SecKeyAlgorithm(rawValue: "algid:keyexchange:ECDHC")
    /// Cofactor ECDH through the ANSI X9.63 KDF with SHA-1.
    public static let ecdhKeyExchangeCofactorX963SHA1 = exchange("ECDHC:KDFX963:SHA1")
    /// Cofactor ECDH through the ANSI X9.63 KDF with SHA-224.
    public static let ecdhKeyExchangeCofactorX963SHA224 = exchange("ECDHC:KDFX963:SHA224")
    /// Cofactor ECDH through the ANSI X9.63 KDF with SHA-256.
    public static let ecdhKeyExchangeCofactorX963SHA256 = exchange("ECDHC:KDFX963:SHA256")
    /// Cofactor ECDH through the ANSI X9.63 KDF with SHA-384.
    public static let ecdhKeyExchangeCofactorX963SHA384 = exchange("ECDHC:KDFX963:SHA384")
    /// Cofactor ECDH through the ANSI X9.63 KDF with SHA-512.
    public static let ecdhKeyExchangeCofactorX963SHA512 = exchange("ECDHC:KDFX963:SHA512")

    private static func exchange(_ suffix: String) -> SecKeyAlgorithm {
        SecKeyAlgorithm(name: "algid:keyexchange:" + suffix)
    }

    /// The key exchange this names: cofactor or not, and the X9.63 KDF's hash (nil: raw).
    var keyExchange: (cofactor: Bool, digest: DigestAlgorithm?)? { SecKeyAlgorithm.keyExchanges[self] }

    private static let keyExchanges: [SecKeyAlgorithm: (cofactor: Bool, digest: DigestAlgorithm?)] = [
        .ecdhKeyExchangeStandard: (false, nil),
        .ecdhKeyExchangeStandardX963SHA1: (false, .sha1),
        .ecdhKeyExchangeStandardX963SHA224: (false, .sha224),
        .ecdhKeyExchangeStandardX963SHA256: (false, .sha256),
        .ecdhKeyExchangeStandardX963SHA384: (false, .sha384),
        .ecdhKeyExchangeStandardX963SHA512: (false, .sha512),
        .ecdhKeyExchangeCofactor: (true, nil),
        .ecdhKeyExchangeCofactorX963SHA1: (true, .sha1),
        .ecdhKeyExchangeCofactorX963SHA224: (true, .sha224),
        .ecdhKeyExchangeCofactorX963SHA256: (true, .sha256),
        .ecdhKeyExchangeCofactorX963SHA384: (true, .sha384),
        .ecdhKeyExchangeCofactorX963SHA512: (true, .sha512),
    ]
}

/// Whether `key` can run the key exchange `algorithm`: an EC private key, stored or in
/// memory (`SecKeyIsAlgorithmSupported` with `.keyExchange`).
func supportsKeyExchange(_ key: SecKey, _ algorithm: SecKeyAlgorithm) -> Bool {
    algorithm.keyExchange != nil && key.isPrivate && key.algorithm?.type == .ellipticCurve
}

/// The result of a Diffie-Hellman key exchange between `privateKey` (EC, stored or in memory)
/// and the peer's `publicKey`, as Apple's: the raw shared secret for
/// `.ecdhKeyExchangeStandard` / `.ecdhKeyExchangeCofactor`; for the `…X963SHA…` forms the
/// ANSI X9.63 KDF of it with `kSecKeyKeyExchangeParameterSharedInfo`, giving
/// `kSecKeyKeyExchangeParameterRequestedSize` bytes.
///
/// A stored private key agrees through the keychain (unlocked), as PKCS#11's C_DeriveKey with
/// CKM_ECDH1_DERIVE does: it must allow derivation (`kSecAttrCanDerive`, CKA_DERIVE).
///
/// - Returns: The bytes, or nil with `error` set: `errSecParam` for a key or algorithm that
///   does not fit, a peer key on another curve, or the X963 forms without a RequestedSize;
///   `errSecInteractionNotAllowed` when the keychain is locked.
public func SecKeyCopyKeyExchangeResult(
    _ privateKey: SecKey, _ algorithm: SecKeyAlgorithm, _ publicKey: SecKey, _ parameters: CFDictionary,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    dataOperation(error) { () throws(KeychainError) in
        let parameters = try swiftDictionary(parameters)
        guard let exchange = algorithm.keyExchange, supportsKeyExchange(privateKey, algorithm) else {
            throw KeychainError(
                .parameter, "\(algorithm.rawValue): algorithm not supported by the key (an EC private key)")
        }
        let derivation = try exchange.digest.map { digest throws(KeychainError) in
            try x963Derivation(digest, parameters)
        }
        guard let peer = publicKey.publicKey, peer.type == .ellipticCurve,
            peer.sizeInBits == privateKey.algorithm?.sizeInBits
        else {
            throw KeychainError(.parameter, "the peer's public key is not a key of the private key's curve")
        }
        switch privateKey.storage {
        case .item(let keychain, let item):
            return try privateKey.withPIN { pin throws(KeychainError) in
                Data(
                    try keychain.sharedSecret(
                        privateKey: item, with: peer, cofactor: exchange.cofactor, derivation: derivation,
                        pin: pin))
            }
        case .privateKey(let key):
            return Data(try key.sharedSecret(with: peer, cofactor: exchange.cofactor, derivation: derivation))
        case .publicKey, .secretKeyItem:
            throw KeychainError(.parameter, "only a private key can run a key exchange")
        }
    }
}

/// The X9.63 forms' parameters, checked as Apple checks them.
private func x963Derivation(_ digest: DigestAlgorithm, _ parameters: ItemDictionary) throws(KeychainError)
    -> SharedSecretDerivation
{
    guard let sizeValue = parameters[kSecKeyKeyExchangeParameterRequestedSize] else {
        throw KeychainError(.parameter, "kSecKeyKeyExchangeParameterRequestedSize is missing")
    }
    let size = try integer(sizeValue, "kSecKeyKeyExchangeParameterRequestedSize")
    var sharedInfo: [UInt8] = []
    if let value = parameters[kSecKeyKeyExchangeParameterSharedInfo] {
        guard let data = value as? Data else {
            throw KeychainError(.parameter, "kSecKeyKeyExchangeParameterSharedInfo must be CFData")
        }
        sharedInfo = Array(data)
    }
    return .x963(digest, sharedInfo: sharedInfo, length: size)
}
