import Testing

@testable import KeychainCrypto

/// Key generation, signatures and encryption through OpenSSL, as the token's mechanisms use
/// them.
@Suite struct AsymmetricKeyTests {
    static let algorithms: [KeyAlgorithm] = [.rsa(bits: 2048), .ec(.p256), .ec(.p384), .ec(.p521), .ed25519]

    @Test("a generated key reports its algorithm and size", arguments: algorithms)
    func generatedKeyDescribesItself(algorithm: KeyAlgorithm) throws {
        let key = try AsymmetricKey.generate(algorithm)
        #expect(key.algorithm == algorithm)
        #expect(key.hasPrivateKey)
        #expect(!key.subjectPublicKeyInfo.isEmpty)
        #expect(key.publicKeyHash.count == 20)
        let publicKey = try key.publicKey()
        #expect(!publicKey.hasPrivateKey)
        #expect(publicKey.publicKeyHash == key.publicKeyHash)
    }

    static let schemes: [(KeyAlgorithm, SignatureScheme)] = [
        (.rsa(bits: 2048), .rsaPKCS1(.sha256)),
        (.rsa(bits: 2048), .rsaPKCS1(.sha1)),
        (.rsa(bits: 2048), .rsaPSS(digest: .sha256, hash: .sha256, mgf1: .sha256, saltLength: 32)),
        (.rsa(bits: 2048), .rsaPSS(digest: .sha512, hash: .sha512, mgf1: .sha512, saltLength: 64)),
        (.ec(.p256), .ecdsa(.sha256)),
        (.ec(.p384), .ecdsa(.sha384)),
        (.ec(.p521), .ecdsa(.sha512)),
        (.ec(.p256), .ecdsa(nil)),
        (.ed25519, .ed25519),
    ]

    @Test("a signature verifies, and fails once the message changes", arguments: schemes)
    func signatureRoundTrip(algorithm: KeyAlgorithm, scheme: SignatureScheme) throws {
        let key = try AsymmetricKey.generate(algorithm)
        let message = Array("the quick brown fox".utf8)
        let input = scheme == .ecdsa(nil) ? DigestAlgorithm.sha256.hash(message) : message
        let signature = try key.sign(input, scheme: scheme)
        let publicKey = try key.publicKey()
        #expect(try publicKey.verify(signature, message: input, scheme: scheme))
        var tampered = input
        tampered[0] ^= 1
        #expect(try !publicKey.verify(signature, message: tampered, scheme: scheme))
        if case .ecdsa = scheme {
            // PKCS#11's r ‖ s form: twice the field size.
            #expect(signature.count == 2 * ((key.bits + 7) / 8))
        }
    }

    @Test(
        "a signing context signs again and again, each signature valid, beside contexts of other schemes",
        arguments: [KeyAlgorithm.rsa(bits: 2048), .ec(.p256)])
    func signingContextIsReusable(algorithm: KeyAlgorithm) throws {
        let key = try AsymmetricKey.generate(algorithm)
        let publicKey = try key.publicKey()
        let schemes: [SignatureScheme] =
            algorithm == .ec(.p256)
            ? [.ecdsa(.sha256), .ecdsa(nil)]
            : [
                .rsaPKCS1(.sha256), .rsaPSS(digest: .sha256, hash: .sha256, mgf1: .sha256, saltLength: 32),
                .rsaPKCS1(nil),
            ]
        let contexts = try schemes.map { try SigningContext(key: key, scheme: $0) }
        for round in 0..<3 {
            for (scheme, context) in zip(schemes, contexts) {
                let message = Array("message \(round)".utf8)
                let digest = DigestAlgorithm.sha256.hash(message)
                // A raw PKCS#1 signature signs a DigestInfo; the other raw schemes a digest.
                let input = scheme == .rsaPKCS1(nil) ? Self.sha256DigestInfoPrefix + digest : digest
                let signature = try context.sign(hash: input)
                #expect(
                    try publicKey.verifyHash(signature, input: input, scheme: scheme),
                    "\(scheme), round \(round)")
                #expect(
                    !(try publicKey.verifyHash(signature, input: Array(input.reversed()), scheme: scheme)))
            }
        }
        #expect(throws: CryptoError.self) { try SigningContext(key: publicKey, scheme: schemes[0]) }
    }

    /// The DER prefix of a DigestInfo for SHA-256 (RFC 8017 §9.2, note 1).
    static let sha256DigestInfoPrefix: [UInt8] = [
        0x30, 0x31, 0x30, 0x0D, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00,
        0x04, 0x20,
    ]

    @Test("a raw PKCS#1 signature over a DigestInfo equals the hashing mechanism's")
    func rawPKCS1MatchesHashed() throws {
        let key = try AsymmetricKey.generate(.rsa(bits: 2048))
        let message = Array("abc".utf8)
        // DigestInfo prefix for SHA-256 (RFC 8017 §9.2 note 1).
        let prefix: [UInt8] = [
            0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05,
            0x00, 0x04, 0x20,
        ]
        let raw = try key.sign(prefix + DigestAlgorithm.sha256.hash(message), scheme: .rsaPKCS1(nil))
        let hashed = try key.sign(message, scheme: .rsaPKCS1(.sha256))
        #expect(raw == hashed)
    }

    @Test("RSA encryption round-trips with PKCS#1 and OAEP, label included")
    func encryptionRoundTrip() throws {
        let key = try AsymmetricKey.generate(.rsa(bits: 2048))
        let secret = Array("attack at dawn".utf8)
        for padding in [
            EncryptionPadding.pkcs1, .oaep(hash: .sha256, mgf1: .sha256, label: []),
            .oaep(hash: .sha1, mgf1: .sha1, label: Array("label".utf8)),
        ] {
            let ciphertext = try key.publicKey().encrypt(secret, padding: padding)
            #expect(try key.decrypt(ciphertext, padding: padding) == secret)
        }
        let ciphertext = try key.encrypt(secret, padding: .oaep(hash: .sha256, mgf1: .sha256, label: [1]))
        #expect(throws: CryptoError.self) {
            try key.decrypt(ciphertext, padding: .oaep(hash: .sha256, mgf1: .sha256, label: [2]))
        }
    }

    @Test("PKCS#8 export re-imports as the same key", arguments: algorithms)
    func pkcs8RoundTrip(algorithm: KeyAlgorithm) throws {
        let key = try AsymmetricKey.generate(algorithm)
        let der = try #require(key.pkcs8)
        let again = try AsymmetricKey(privateKeyDER: der)
        #expect(again.subjectPublicKeyInfo == key.subjectPublicKeyInfo)
    }

    @Test("key components are exposed for the attributes clients read")
    func components() throws {
        let rsa = try AsymmetricKey.generate(.rsa(bits: 2048))
        #expect(rsa.component("n")?.count == 256)
        #expect(rsa.component("e") == [0x01, 0x00, 0x01])
        let ec = try AsymmetricKey.generate(.ec(.p256))
        #expect(ec.publicPoint?.count == 65)
        #expect(ec.publicPoint?.first == 0x04)
        let ed = try AsymmetricKey.generate(.ed25519)
        #expect(ed.publicPoint?.count == 32)
        #expect(EllipticCurve(parameters: EllipticCurve.p384.parameters) == .p384)
        #expect(
            EllipticCurve.p256.parameters == [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07])
    }

    @Test("bad key DER and weak RSA sizes are refused")
    func badInput() {
        #expect(throws: CryptoError.self) {
            try AsymmetricKey(privateKeyDER: [0x30, 0x03, 0x02, 0x01, 0x00])
        }
        #expect(throws: CryptoError.self) { try AsymmetricKey(subjectPublicKeyInfo: []) }
        #expect(throws: CryptoError.self) { try AsymmetricKey.generate(.rsa(bits: 1023)) }
        #expect(throws: CryptoError.self) { try AsymmetricKey.generate(.rsa(bits: 8200)) }
    }
}
