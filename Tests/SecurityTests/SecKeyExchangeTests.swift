import Foundation
import Keychain
import Security
import Testing

/// SecKeyCopyKeyExchangeResult: ECDH agreeing with `openssl pkeyutl -derive` and with the
/// independent model's X9.63 KDF, for in-memory and stored private keys, and the refusals.
@Suite("SecKey key exchange", .serialized)
struct SecKeyExchangeTests {
    private func exchange(
        _ privateKey: SecKey, _ algorithm: SecKeyAlgorithm, _ publicKey: SecKey,
        _ parameters: [String: Any] = [:]
    ) -> (Data?, NSError?) {
        var error: Unmanaged<CFError>?
        let result = SecKeyCopyKeyExchangeResult(
            privateKey, algorithm, publicKey, parameters as CFDictionary, &error)
        return (result as Data?, takeError(error))
    }

    /// A PEM file of a public key, for openssl.
    private func writePublicKeyPEM(_ key: SecKey, to path: String) throws {
        let publicKey = try PublicKey(
            externalRepresentation: [UInt8](Data(hex: try externalHex(key))), type: .ellipticCurve)
        try Data(publicKey.subjectPublicKeyInfo).write(to: URL(fileURLWithPath: path + ".der"))
        try openssl(["pkey", "-pubin", "-inform", "DER", "-in", path + ".der", "-out", path])
    }

    @Test(
        "the Standard exchange of a stored key and openssl's key equals openssl pkeyutl -derive",
        arguments: [256, 384, 521])
    func standardAgainstOpenSSL(bits: Int) throws {
        try withPINKeychain { directory in
            let key = try newECKey(bits: bits, permanent: true)
            #expect(SecKeyIsAlgorithmSupported(key, .keyExchange, .ecdhKeyExchangeStandard))
            let curve = curveNames[bits] ?? ""
            let theirs = directory + "/theirs.pem"
            try openssl([
                "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:\(curve)", "-out", theirs,
            ])
            let theirsPublic = directory + "/theirs-public.der"
            try openssl(["pkey", "-in", theirs, "-pubout", "-outform", "DER", "-out", theirsPublic])
            let spki = try Data(contentsOf: URL(fileURLWithPath: theirsPublic))
            let peer = try ecKey(point: spki.suffix(1 + 2 * ((bits + 7) / 8)).hex)
            let ours = directory + "/ours-public.pem"
            try writePublicKeyPEM(try #require(SecKeyCopyPublicKey(key)), to: ours)
            let secretPath = directory + "/secret.bin"
            try openssl(["pkeyutl", "-derive", "-inkey", theirs, "-peerkey", ours, "-out", secretPath])
            let expected = try Data(contentsOf: URL(fileURLWithPath: secretPath))
            #expect(expected.count == (bits + 7) / 8)
            let (standard, error) = exchange(key, .ecdhKeyExchangeStandard, peer)
            #expect(standard == expected, "\(String(describing: error))")
            #expect(
                exchange(key, .ecdhKeyExchangeCofactor, peer).0 == expected, "cofactor 1: the same secret")
            // RequestedSize means nothing to the raw forms, as on Apple platforms.
            let sized = exchange(
                key, .ecdhKeyExchangeStandard, peer,
                [SecKeyKeyExchangeParameter.requestedSize.rawValue as String: 16])
            #expect(sized.0 == expected)
        }
    }

    static let x963Algorithms: [(SecKeyAlgorithm, String)] = [
        (.ecdhKeyExchangeStandardX963SHA1, "sha1"), (.ecdhKeyExchangeStandardX963SHA224, "sha224"),
        (.ecdhKeyExchangeStandardX963SHA256, "sha256"), (.ecdhKeyExchangeStandardX963SHA384, "sha384"),
        (.ecdhKeyExchangeStandardX963SHA512, "sha512"), (.ecdhKeyExchangeCofactorX963SHA1, "sha1"),
        (.ecdhKeyExchangeCofactorX963SHA224, "sha224"), (.ecdhKeyExchangeCofactorX963SHA256, "sha256"),
        (.ecdhKeyExchangeCofactorX963SHA384, "sha384"), (.ecdhKeyExchangeCofactorX963SHA512, "sha512"),
    ]

    /// Checks every X9.63 form of `key` against the model, with SharedInfo and RequestedSize 32.
    private func checkX963(_ key: SecKey, bits: Int) throws {
        let curve = curveNames[bits] ?? ""
        let peer = try AppleModel.run([["op": "generate", "curve": curve]])[0]
        let peerKey = try ecKey(point: peer["public"] ?? "")
        let ours = try externalHex(try #require(SecKeyCopyPublicKey(key)))
        let sharedInfo = Data("p11keychain key exchange".utf8)
        let parameters: [String: Any] = [
            SecKeyKeyExchangeParameter.requestedSize.rawValue as String: 32,
            SecKeyKeyExchangeParameter.sharedInfo.rawValue as String: sharedInfo,
        ]
        let expected = try AppleModel.run(
            SecKeyExchangeTests.x963Algorithms.map { _, digest in
                [
                    "op": "exchange", "curve": curve, "private": peer["private"] ?? "", "peer": ours,
                    "digest": digest, "sharedInfo": sharedInfo.hex, "size": 32,
                ]
            })
        for ((algorithm, _), result) in zip(SecKeyExchangeTests.x963Algorithms, expected) {
            #expect(SecKeyIsAlgorithmSupported(key, .keyExchange, algorithm))
            let (secret, error) = exchange(key, algorithm, peerKey, parameters)
            #expect(secret?.count == 32)
            #expect(secret?.hex == result["secret"], "\(algorithm.rawValue): \(String(describing: error))")
        }
    }

    @Test(
        "the X9.63 forms with SharedInfo and RequestedSize 32 equal the independent model, key in memory",
        arguments: [256, 384, 521])
    func x963InMemory(bits: Int) throws {
        try checkX963(try newECKey(bits: bits), bits: bits)
    }

    @Test("the X9.63 forms equal the independent model with a stored key, through the keychain")
    func x963Stored() throws {
        try withPINKeychain { _ in try checkX963(try newECKey(bits: 256, permanent: true), bits: 256) }
    }

    @Test(
        "the C names of the parameters are Apple's strings, and the key exchange algorithms Apple's identifiers"
    )
    func names() {
        #expect(kSecKeyKeyExchangeParameterRequestedSize == "requestedSize")
        #expect(kSecKeyKeyExchangeParameterSharedInfo == "sharedInfo")
        #expect(
            SecKeyAlgorithm.ecdhKeyExchangeCofactorX963SHA256.rawValue
                == "algid:keyexchange:ECDHC:KDFX963:SHA256")
        #expect(
            SecKeyAlgorithm.eciesEncryptionCofactorVariableIVX963SHA256AESGCM.rawValue
                == "algid:encrypt:ECIES:ECDHC:KDFX963:SHA256:AESGCM-KDFIV")
    }

    @Test("an X9.63 form without RequestedSize, or with a SharedInfo that is not data, is errSecParam")
    func x963Parameters() throws {
        let key = try newECKey(bits: 256)
        let peer = try #require(SecKeyCopyPublicKey(try newECKey(bits: 256)))
        let (missing, error) = exchange(key, .ecdhKeyExchangeStandardX963SHA256, peer)
        #expect(missing == nil)
        #expect(error?.code == Int(errSecParam))
        #expect(error?.localizedDescription.contains("RequestedSize") == true)
        let badInfo = exchange(
            key, .ecdhKeyExchangeStandardX963SHA256, peer,
            [
                kSecKeyKeyExchangeParameterRequestedSize as String: 32,
                kSecKeyKeyExchangeParameterSharedInfo as String: "text",
            ])
        #expect(badInfo.0 == nil)
        #expect(badInfo.1?.code == Int(errSecParam))
        for size in [0, -1, 1 << 30] {
            let result = exchange(
                key, .ecdhKeyExchangeStandardX963SHA256, peer,
                [kSecKeyKeyExchangeParameterRequestedSize as String: size])
            #expect(result.0 == nil, "size \(size)")
            #expect(result.1?.code == Int(errSecParam))
        }
    }

    @Test(
        "a peer key of another curve, an RSA key, a public key as the private side, or a non-exchange algorithm is errSecParam"
    )
    func refusals() throws {
        let key = try newECKey(bits: 256)
        let otherCurve = try #require(SecKeyCopyPublicKey(try newECKey(bits: 384)))
        let (secret, error) = exchange(key, .ecdhKeyExchangeStandard, otherCurve)
        #expect(secret == nil)
        #expect(error?.code == Int(errSecParam))
        var failure: Unmanaged<CFError>?
        let rsa = try #require(
            SecKeyCreateRandomKey([kSecAttrKeyType as String: kSecAttrKeyTypeRSA] as CFDictionary, &failure))
        let rsaPublic = try #require(SecKeyCopyPublicKey(rsa))
        #expect(!SecKeyIsAlgorithmSupported(rsa, .keyExchange, .ecdhKeyExchangeStandard))
        #expect(exchange(rsa, .ecdhKeyExchangeStandard, rsaPublic).1?.code == Int(errSecParam))
        #expect(exchange(key, .ecdhKeyExchangeStandard, rsaPublic).1?.code == Int(errSecParam))
        let publicKey = try #require(SecKeyCopyPublicKey(key))
        #expect(!SecKeyIsAlgorithmSupported(publicKey, .keyExchange, .ecdhKeyExchangeStandard))
        #expect(exchange(publicKey, .ecdhKeyExchangeStandard, publicKey).1?.code == Int(errSecParam))
        #expect(!SecKeyIsAlgorithmSupported(key, .keyExchange, .ecdsaSignatureMessageX962SHA256))
        #expect(exchange(key, .ecdsaSignatureMessageX962SHA256, publicKey).1?.code == Int(errSecParam))
    }

    @Test(
        "a stored key made by SecKeyCreateRandomKey may derive; one made with kSecAttrCanDerive false is refused"
    )
    func storedKeyDeriveFlag() throws {
        try withPINKeychain { _ in
            let key = try newECKey(bits: 256, permanent: true)
            let attributes = try #require(SecKeyCopyAttributes(key))
            #expect(attributes[kSecAttrCanDerive as String] as? Bool == true)
            let peer = try #require(SecKeyCopyPublicKey(try newECKey(bits: 256)))
            #expect(exchange(key, .ecdhKeyExchangeStandard, peer).0?.count == 32)

            let refusing = try newECKey(
                bits: 256, permanent: true,
                extra: [kSecPrivateKeyAttrs as String: [kSecAttrCanDerive as String: false]])
            let (secret, error) = exchange(refusing, .ecdhKeyExchangeStandard, peer)
            #expect(secret == nil)
            #expect(error?.code == Int(errSecParam))
            #expect(SecKeychainLock(nil) == errSecSuccess)
            #expect(exchange(key, .ecdhKeyExchangeStandard, peer).1?.code == Int(errSecInteractionNotAllowed))
            #expect(unlock(TestPIN.user) == errSecSuccess)
        }
    }

    @Test(
        "a stored key's CKA_ALLOWED_MECHANISMS rules: ECDH1-DERIVE allows the standard forms, not the cofactor ones"
    )
    func allowedMechanisms() throws {
        try withPINKeychain { directory in
            for (label, allowed) in [("ecdh only", "ECDH1-DERIVE"), ("ecdsa only", "ECDSA")] {
                let made = try pkcs11Tool(
                    [
                        "--keypairgen", "--key-type", "EC:prime256v1", "--label", label, "--usage-derive",
                        "--allowed-mechanisms", allowed,
                    ], keychainDirectory: directory)
                #expect(made.status == 0, "\(made.error)")
            }
            func key(_ label: String) throws -> SecKey {
                var item: CFTypeRef?
                let query: [String: Any] = [
                    kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                    kSecAttrLabel as String: label, kSecReturnRef as String: true,
                ]
                #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess)
                return try #require(item as? SecKey)
            }
            let peer = try #require(SecKeyCopyPublicKey(try newECKey(bits: 256)))
            let size: [String: Any] = [kSecKeyKeyExchangeParameterRequestedSize as String: 16]
            let ecdh = try key("ecdh only")
            #expect(exchange(ecdh, .ecdhKeyExchangeStandard, peer).0?.count == 32)
            #expect(exchange(ecdh, .ecdhKeyExchangeStandardX963SHA256, peer, size).0?.count == 16)
            #expect(exchange(ecdh, .ecdhKeyExchangeCofactor, peer).1?.code == Int(errSecParam))
            let ecdsa = try key("ecdsa only")
            #expect(exchange(ecdsa, .ecdhKeyExchangeStandard, peer).1?.code == Int(errSecParam))
            let ecdsaPublic = try #require(SecKeyCopyPublicKey(ecdsa))
            let message = try #require(
                SecKeyCreateEncryptedData(
                    ecdsaPublic, .eciesEncryptionStandardX963SHA256AESGCM, Data("m".utf8) as CFData, nil))
            #expect(
                SecKeyCreateDecryptedData(ecdsa, .eciesEncryptionStandardX963SHA256AESGCM, message, nil)
                    == nil)
        }
    }
}
