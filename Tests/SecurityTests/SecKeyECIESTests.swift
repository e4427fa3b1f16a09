import Foundation
import Keychain
import Security
import Testing

/// Apple's ECIES through SecKeyCreateEncryptedData / SecKeyCreateDecryptedData: interoperation
/// with an independent implementation in both directions, for in-memory and stored keys,
/// Apple's own known ciphertexts, and the refusals.
@Suite("SecKey ECIES", .serialized)
struct SecKeyECIESTests {
    static let plaintext = Data("Apple's ECIES, on Linux".utf8)

    private func encrypt(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ data: Data) -> (Data?, NSError?) {
        var error: Unmanaged<CFError>?
        let result = SecKeyCreateEncryptedData(key, algorithm, data as CFData, &error)
        return (result as Data?, takeError(error))
    }

    private func decrypt(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ data: Data) -> (Data?, NSError?) {
        var error: Unmanaged<CFError>?
        let result = SecKeyCreateDecryptedData(key, algorithm, data as CFData, &error)
        return (result as Data?, takeError(error))
    }

    /// Messages the model made for `key`'s public key, one per algorithm.
    private func modelMessages(for key: SecKey, bits: Int) throws -> [(ECIESCase, Data)] {
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        let point = try externalHex(publicKey)
        let results = try AppleModel.run(
            ECIESCase.all.map { item in
                [
                    "op": "encrypt", "curve": curveNames[bits] ?? "", "public": point, "digest": item.digest,
                    "variableIV": item.variableIV, "plaintext": SecKeyECIESTests.plaintext.hex,
                ]
            })
        return zip(ECIESCase.all, results).map { ($0, Data(hex: $1["message"] ?? "")) }
    }

    @Test(
        "messages of the independent model decrypt with an in-memory private key", arguments: [256, 384, 521])
    func modelToInMemoryKey(bits: Int) throws {
        let key = try newECKey(bits: bits)
        for (item, message) in try modelMessages(for: key, bits: bits) {
            #expect(SecKeyIsAlgorithmSupported(key, .decrypt, item.algorithm))
            let (plaintext, error) = decrypt(key, item.algorithm, message)
            #expect(
                plaintext == SecKeyECIESTests.plaintext,
                "\(item.algorithm.rawValue): \(String(describing: error))")
        }
    }

    @Test(
        "messages of the independent model decrypt with a stored private key, through the keychain",
        arguments: [256, 521])
    func modelToStoredKey(bits: Int) throws {
        try withPINKeychain { _ in
            let key = try newECKey(bits: bits, permanent: true)
            for (item, message) in try modelMessages(for: key, bits: bits) {
                let (plaintext, error) = decrypt(key, item.algorithm, message)
                #expect(
                    plaintext == SecKeyECIESTests.plaintext,
                    "\(item.algorithm.rawValue): \(String(describing: error))")
            }
        }
    }

    @Test(
        "messages SecKeyCreateEncryptedData makes decrypt in the independent model",
        arguments: [256, 384, 521])
    func swiftToModel(bits: Int) throws {
        let curve = curveNames[bits] ?? ""
        let generated = try AppleModel.run([["op": "generate", "curve": curve]])[0]
        let publicKey = try ecKey(point: generated["public"] ?? "")
        #expect(!SecKeyIsAlgorithmSupported(publicKey, .decrypt, .eciesEncryptionStandardX963SHA256AESGCM))
        var operations: [[String: Any]] = []
        for item in ECIESCase.all {
            #expect(SecKeyIsAlgorithmSupported(publicKey, .encrypt, item.algorithm))
            let (message, error) = encrypt(publicKey, item.algorithm, SecKeyECIESTests.plaintext)
            let bytes = try #require(message, "\(item.algorithm.rawValue): \(String(describing: error))")
            #expect(bytes.count == 1 + 2 * ((bits + 7) / 8) + SecKeyECIESTests.plaintext.count + 16)
            operations.append([
                "op": "decrypt", "curve": curve, "private": generated["private"] ?? "", "digest": item.digest,
                "variableIV": item.variableIV, "message": bytes.hex,
            ])
        }
        for (item, result) in zip(ECIESCase.all, try AppleModel.run(operations)) {
            #expect(
                result["plaintext"] == SecKeyECIESTests.plaintext.hex, "\(item.algorithm.rawValue): \(result)"
            )
        }
    }

    /// Two of the known ciphertexts of Apple's regression test `si-44-seckey-ies.m`
    /// (`test_known_ciphertext`, apple-oss-distributions/Security): the private key as Apple's
    /// external representation (04 ‖ X ‖ Y ‖ K) and the message made from "KNOWN PLAINTEXT\0".
    static let appleVectors: [(SecKeyAlgorithm, key: String, message: String)] = [
        (
            .eciesEncryptionCofactorX963SHA256AESGCM,
            key:
                "BINzTFiGIp6G4fpmFCP/KHot+ek+PUYvYp69iT8lHdJNwRbJir1Zr4i73A0vdKoKMn3jdp/8oQ5WnSE+PsFruYahsHI2"
                + "tFyhPjGYEhUmFrwaA/2WQynh77dAqSiKhg0l3w==",
            message:
                "BE7IWFWccaIl7n7Kffg5Q+vkJMJFVsHP8C5C/APzW6gjUQynJGRoG4Vw4UEsFTi/yfUQYTSV7Vv18CXE/3IecGAILuLp"
                + "cDaSxSwzFqrwmqCcSqSRbYSat+8HuaKq19Cq4A=="
        ),
        (
            .eciesEncryptionCofactorX963SHA512AESGCM,
            key:
                "BAD56NOl02CAXGSBYKT9JMmMQNtYkaRjw/DP29GWe8X70zTNzTBRgQQzqtCmT2c10VRNxzR5bCAM47fR8HyK4OsV4wEe"
                + "s8IDR68JQC7+epF7cdx+m+EGhaHlB2N99MCEZx9NQni6/5LBMItVY7LSQUskKjqslG90vlIZZxn87EzbJ9MvHgFFgeZe"
                + "Uj9SXcbCu6/+ysgXAtldaGyFwXwzI6CrN84Pd72TR/6me1GZjm8pamJ0p507ntdISB5SBFcAQpNieDYxbg==",
            message:
                "BAABJeJ2D+Yy0aA1/FKoUF4eBR5kr3JnM8iXDEjIZ47EWixF1nde4ehg7iZpbihxv/rDl7jdJYOW9LqXdqoF/2JO7gCr"
                + "NSbqSkveG6UdsgfalnAd/tAYvz26Ct6vQiGSJJLvHcnss8thgQrOVQaf/NAoxgxIM0dxUmJE3B2EJxb5sKedzCje0Xtt"
                + "QQWvEW1t3Ni606AVAhZ3Psiud23qf/qgtJxK"
        ),
    ]

    @Test("Apple's known ciphertexts decrypt with the key in memory and with the key stored by SecItemAdd")
    func appleKnownCiphertexts() throws {
        let known = Data("KNOWN PLAINTEXT".utf8) + Data([0])
        try withPINKeychain { _ in
            for (algorithm, keyText, messageText) in SecKeyECIESTests.appleVectors {
                let keyData = try #require(Data(base64Encoded: keyText))
                let message = try #require(Data(base64Encoded: messageText))
                let attributes: [String: Any] = [
                    kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                    kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                ]
                var error: Unmanaged<CFError>?
                let key = try #require(
                    SecKeyCreateWithData(keyData as CFData, attributes as CFDictionary, &error))
                #expect(decrypt(key, algorithm, message).0 == known)

                let tag = Data((algorithm.rawValue as String).utf8)
                let add: [String: Any] = [
                    kSecClass as String: kSecClassKey, kSecValueRef as String: key,
                    kSecAttrApplicationTag as String: tag,
                ]
                #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
                var item: CFTypeRef?
                let query: [String: Any] = [
                    kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag,
                    kSecAttrKeyClass as String: kSecAttrKeyClassPrivate, kSecReturnRef as String: true,
                ]
                #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess)
                let stored = try #require(item as? SecKey)
                let (plaintext, failure) = decrypt(stored, algorithm, message)
                #expect(plaintext == known, "stored: \(String(describing: failure))")
            }
        }
    }

    @Test("a changed tag, ciphertext or point, and a truncated message, give nil and errSecParam")
    func tamperedMessages() throws {
        let key = try newECKey(bits: 256)
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        let algorithm = SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM
        let message = try #require(encrypt(publicKey, algorithm, SecKeyECIESTests.plaintext).0)
        #expect(decrypt(key, algorithm, message).0 == SecKeyECIESTests.plaintext)
        for index in [1, 64, 66, message.count - 17, message.count - 1] {
            var changed = message
            changed[index] ^= 0xff
            let (plaintext, error) = decrypt(key, algorithm, changed)
            #expect(plaintext == nil, "byte \(index)")
            #expect(error?.code == Int(errSecParam), "byte \(index)")
        }
        for length in [0, 10, 65, 80] {
            let (plaintext, error) = decrypt(key, algorithm, message.prefix(length))
            #expect(plaintext == nil)
            #expect(error?.code == Int(errSecParam))
        }
        // The legacy form of the same hash derives another IV: the tag fails.
        #expect(decrypt(key, .eciesEncryptionCofactorX963SHA256AESGCM, message).0 == nil)
    }

    @Test("ECIES with an RSA key, a private key encrypting or a public key decrypting is errSecParam")
    func unsupportedKeys() throws {
        let algorithm = SecKeyAlgorithm.eciesEncryptionStandardVariableIVX963SHA256AESGCM
        var error: Unmanaged<CFError>?
        let rsa = try #require(
            SecKeyCreateRandomKey([kSecAttrKeyType as String: kSecAttrKeyTypeRSA] as CFDictionary, &error))
        let rsaPublic = try #require(SecKeyCopyPublicKey(rsa))
        #expect(!SecKeyIsAlgorithmSupported(rsaPublic, .encrypt, algorithm))
        #expect(!SecKeyIsAlgorithmSupported(rsa, .decrypt, algorithm))
        #expect(encrypt(rsaPublic, algorithm, SecKeyECIESTests.plaintext).1?.code == Int(errSecParam))
        #expect(decrypt(rsa, algorithm, Data(count: 100)).1?.code == Int(errSecParam))
        let ec = try newECKey(bits: 256)
        let ecPublic = try #require(SecKeyCopyPublicKey(ec))
        #expect(!SecKeyIsAlgorithmSupported(ec, .encrypt, algorithm))
        #expect(!SecKeyIsAlgorithmSupported(ecPublic, .decrypt, algorithm))
        #expect(!SecKeyIsAlgorithmSupported(ec, .sign, algorithm))
        #expect(encrypt(ec, algorithm, SecKeyECIESTests.plaintext).1?.code == Int(errSecParam))
        let message = try #require(encrypt(ecPublic, algorithm, SecKeyECIESTests.plaintext).0)
        #expect(decrypt(ecPublic, algorithm, message).1?.code == Int(errSecParam))
        // An RSA algorithm is still refused for an EC key.
        #expect(
            encrypt(ecPublic, .rsaEncryptionOAEPSHA256, SecKeyECIESTests.plaintext).1?.code
                == Int(errSecParam))
    }

    @Test(
        "a stored key that may not derive does not decrypt; a locked keychain is errSecInteractionNotAllowed")
    func storedKeyRules() throws {
        try withPINKeychain { _ in
            let algorithm = SecKeyAlgorithm.eciesEncryptionStandardX963SHA256AESGCM
            let key = try newECKey(
                bits: 256, permanent: true,
                extra: [kSecPrivateKeyAttrs as String: [kSecAttrCanDerive as String: false]])
            let publicKey = try #require(SecKeyCopyPublicKey(key))
            let message = try #require(encrypt(publicKey, algorithm, SecKeyECIESTests.plaintext).0)
            let (plaintext, error) = decrypt(key, algorithm, message)
            #expect(plaintext == nil)
            #expect(error?.code == Int(errSecParam))

            let derives = try newECKey(bits: 256, permanent: true)
            let derivesPublic = try #require(SecKeyCopyPublicKey(derives))
            let forDerives = try #require(encrypt(derivesPublic, algorithm, SecKeyECIESTests.plaintext).0)
            #expect(SecKeychainLock(nil) == errSecSuccess)
            let (locked, lockedError) = decrypt(derives, algorithm, forDerives)
            #expect(locked == nil)
            #expect(lockedError?.code == Int(errSecInteractionNotAllowed))
            #expect(unlock(TestPIN.user) == errSecSuccess)
            #expect(decrypt(derives, algorithm, forDerives).0 == SecKeyECIESTests.plaintext)
        }
    }
}
