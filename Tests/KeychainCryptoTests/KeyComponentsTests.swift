import Testing

@testable import KeychainCrypto

/// Keys rebuilt from the parts a PKCS#11 template carries.
@Suite struct KeyComponentsTests {
    @Test("an RSA key rebuilt from its parts is the same key")
    func rsaRoundTrip() throws {
        let key = try AsymmetricKey.generate(.rsa(bits: 2048))
        func part(_ name: String) throws -> [UInt8] { try #require(key.component(name)) }
        let rebuilt = try AsymmetricKey(
            components: .rsaPrivate(
                modulus: try part("n"), publicExponent: try part("e"), privateExponent: try part("d"),
                prime1: try part("rsa-factor1"), prime2: try part("rsa-factor2"),
                exponent1: try part("rsa-exponent1"),
                exponent2: try part("rsa-exponent2"), coefficient: try part("rsa-coefficient1")))
        #expect(rebuilt.subjectPublicKeyInfo == key.subjectPublicKeyInfo)
        let publicOnly = try AsymmetricKey(
            components: .rsaPublic(modulus: try part("n"), publicExponent: try part("e")))
        #expect(publicOnly.subjectPublicKeyInfo == key.subjectPublicKeyInfo)
        let signature = try rebuilt.sign([1, 2, 3], scheme: .rsaPKCS1(.sha256))
        #expect(try publicOnly.verify(signature, message: [1, 2, 3], scheme: .rsaPKCS1(.sha256)))
    }

    @Test("an EC key rebuilt from its scalar has the same public point", arguments: EllipticCurve.allCases)
    func ecRoundTrip(curve: EllipticCurve) throws {
        let key = try AsymmetricKey.generate(.ec(curve))
        let rebuilt = try AsymmetricKey(
            components: .ecPrivate(curve, scalar: try #require(key.component("priv"))))
        #expect(rebuilt.subjectPublicKeyInfo == key.subjectPublicKeyInfo)
        let publicOnly = try AsymmetricKey(components: .ecPublic(curve, point: try #require(key.publicPoint)))
        #expect(publicOnly.subjectPublicKeyInfo == key.subjectPublicKeyInfo)
    }

    @Test("an Ed25519 key rebuilt from its raw bytes is the same key")
    func ed25519RoundTrip() throws {
        let key = try AsymmetricKey.generate(.ed25519)
        let rebuilt = try AsymmetricKey(components: .ed25519Private(try #require(key.rawPrivateKey)))
        #expect(rebuilt.subjectPublicKeyInfo == key.subjectPublicKeyInfo)
    }

    @Test("parts that do not make a key are refused")
    func inconsistentParts() throws {
        #expect(throws: CryptoError.self) { try AsymmetricKey(components: .ecPrivate(.p256, scalar: [])) }
        #expect(throws: CryptoError.self) {
            try AsymmetricKey(components: .ecPublic(.p256, point: [0x04] + [UInt8](repeating: 1, count: 64)))
        }
        #expect(throws: CryptoError.self) { try AsymmetricKey(components: .ed25519Private([1, 2, 3])) }
    }
}
