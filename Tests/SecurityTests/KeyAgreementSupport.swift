import Foundation
import Security
import Testing

/// The independent model of Apple's ECIES and ECDH (`Tests/Fixtures/apple_ecies.py`, Python's
/// `cryptography` package): what the Swift results must interoperate with.
enum AppleModel {
    static let script = Fixture.directory.appendingPathComponent("apple_ecies.py").path

    /// Runs the model on `operations` (see the script's documentation) and returns one result
    /// per operation, hex strings by name. A missing interpreter or a failing script fails the
    /// test: these checks must not pass by not running.
    static func run(_ operations: [[String: Any]]) throws -> [[String: String]] {
        let request = try JSONSerialization.data(withJSONObject: ["operations": operations])
        let result = try runProgram("/usr/bin/python3", [script], input: request)
        guard result.status == 0 else {
            throw FixtureError(message: "apple_ecies.py failed: \(result.error)")
        }
        let response = try JSONSerialization.jsonObject(with: Data(result.outputBytes))
        guard let results = (response as? [String: Any])?["results"] as? [[String: String]],
            results.count == operations.count
        else { throw FixtureError(message: "apple_ecies.py gave no result per operation") }
        return results
    }
}

/// An ECIES algorithm with what the model needs to know of it.
struct ECIESCase: Sendable, CustomTestStringConvertible {
    let algorithm: SecKeyAlgorithm
    let digest: String
    let variableIV: Bool

    var testDescription: String { algorithm.rawValue as String }

    /// Every ECIES algorithm of Apple's SecKey.h (the VariableIV forms have no SHA-1).
    static let all: [ECIESCase] = [
        ECIESCase(algorithm: .eciesEncryptionStandardX963SHA1AESGCM, digest: "sha1", variableIV: false),
        ECIESCase(algorithm: .eciesEncryptionStandardX963SHA224AESGCM, digest: "sha224", variableIV: false),
        ECIESCase(algorithm: .eciesEncryptionStandardX963SHA256AESGCM, digest: "sha256", variableIV: false),
        ECIESCase(algorithm: .eciesEncryptionStandardX963SHA384AESGCM, digest: "sha384", variableIV: false),
        ECIESCase(algorithm: .eciesEncryptionStandardX963SHA512AESGCM, digest: "sha512", variableIV: false),
        ECIESCase(algorithm: .eciesEncryptionCofactorX963SHA1AESGCM, digest: "sha1", variableIV: false),
        ECIESCase(algorithm: .eciesEncryptionCofactorX963SHA224AESGCM, digest: "sha224", variableIV: false),
        ECIESCase(algorithm: .eciesEncryptionCofactorX963SHA256AESGCM, digest: "sha256", variableIV: false),
        ECIESCase(algorithm: .eciesEncryptionCofactorX963SHA384AESGCM, digest: "sha384", variableIV: false),
        ECIESCase(algorithm: .eciesEncryptionCofactorX963SHA512AESGCM, digest: "sha512", variableIV: false),
        ECIESCase(
            algorithm: .eciesEncryptionStandardVariableIVX963SHA224AESGCM, digest: "sha224", variableIV: true),
        ECIESCase(
            algorithm: .eciesEncryptionStandardVariableIVX963SHA256AESGCM, digest: "sha256", variableIV: true),
        ECIESCase(
            algorithm: .eciesEncryptionStandardVariableIVX963SHA384AESGCM, digest: "sha384", variableIV: true),
        ECIESCase(
            algorithm: .eciesEncryptionStandardVariableIVX963SHA512AESGCM, digest: "sha512", variableIV: true),
        ECIESCase(
            algorithm: .eciesEncryptionCofactorVariableIVX963SHA224AESGCM, digest: "sha224", variableIV: true),
        ECIESCase(
            algorithm: .eciesEncryptionCofactorVariableIVX963SHA256AESGCM, digest: "sha256", variableIV: true),
        ECIESCase(
            algorithm: .eciesEncryptionCofactorVariableIVX963SHA384AESGCM, digest: "sha384", variableIV: true),
        ECIESCase(
            algorithm: .eciesEncryptionCofactorVariableIVX963SHA512AESGCM, digest: "sha512", variableIV: true),
    ]
}

/// The NIST curves by size, as the model names them.
let curveNames = [256: "P-256", 384: "P-384", 521: "P-521"]

/// A new EC private key: in memory, or stored (permanent) in the default keychain.
func newECKey(bits: Int, permanent: Bool = false, extra: [String: Any] = [:]) throws -> SecKey {
    var attributes: [String: Any] = [
        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits as String: bits,
    ]
    if permanent { attributes[kSecAttrIsPermanent as String] = true }
    attributes.merge(extra) { $1 }
    var error: Unmanaged<CFError>?
    guard let key = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else {
        throw takeError(error) ?? FixtureError(message: "SecKeyCreateRandomKey failed")
    }
    return key
}

/// A key's X9.63 external representation, as hex.
func externalHex(_ key: SecKey) throws -> String {
    var error: Unmanaged<CFError>?
    guard let data = SecKeyCopyExternalRepresentation(key, &error) else {
        throw takeError(error) ?? FixtureError(message: "no external representation")
    }
    return (data as Data).hex
}

/// An EC key in memory from hex: a public point, or (with `scalar`) the private key.
func ecKey(point: String, scalar: String? = nil) throws -> SecKey {
    let bytes = Data(hex: point + (scalar ?? ""))
    let attributes: [String: Any] = [
        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
        kSecAttrKeyClass as String: scalar == nil ? kSecAttrKeyClassPublic : kSecAttrKeyClassPrivate,
    ]
    var error: Unmanaged<CFError>?
    guard let key = SecKeyCreateWithData(bytes as CFData, attributes as CFDictionary, &error) else {
        throw takeError(error) ?? FixtureError(message: "SecKeyCreateWithData failed")
    }
    return key
}

extension Data {
    /// Bytes from hex digits (pairs; anything else is skipped).
    init(hex: String) {
        var bytes: [UInt8] = []
        var digits = hex.makeIterator()
        while let high = digits.next(), let low = digits.next() {
            if let byte = UInt8(String([high, low]), radix: 16) { bytes.append(byte) }
        }
        self.init(bytes)
    }
}
