import KeychainCore
import Testing

/// The core's operations on keys held in memory (the typed API's `PublicKey` and `PrivateKey`)
/// agree with its operations on stored keys: one algorithm vocabulary, one set of mechanisms.
@Suite("Operations on keys in memory, beside stored keys")
struct MemoryKeyOperationTests {
    /// Stores `key` as a token key pair that signs, verifies and derives.
    private func store(_ key: KeyMaterial, in token: Token) throws -> KeyPairReferences {
        try token.storeKeyPair(
            key, publicTemplate: [.token: yes, .verify: yes],
            privateTemplate: [.token: yes, .private: yes, .sign: yes, .derive: yes], context: Contexts.user)
    }

    @Test("an Ed25519 key in memory signs, and the same key stored verifies through the token's operation")
    func memorySignsStoredVerifies() throws {
        try withToken { token, _ in
            try logInUser(token)
            let key = try KeyMaterial.generate(.ed25519)
            let pair = try store(key, in: token)
            let message = bytes("signed in memory")
            let signature = try key.signature(for: message, algorithm: .ed25519)
            let verifier = try SignatureAlgorithm.ed25519.operation(
                on: token, pair.publicKey, for: .verify, context: Contexts.user)
            try message.withUnsafeBytes { data in try verifier.verify(signature, of: data) }
            var altered = signature
            altered[0] ^= 1
            let second = try SignatureAlgorithm.ed25519.operation(
                on: token, pair.publicKey, for: .verify, context: Contexts.user)
            expectKeychainError(.signatureInvalid) {
                try message.withUnsafeBytes { data in try second.verify(altered, of: data) }
            }
        }
    }

    @Test(
        "a stored P-256 key signs through the token, and its public key in memory verifies the DER signature")
    func storedSignsMemoryVerifies() throws {
        try withToken { token, _ in
            try logInUser(token)
            let key = try KeyMaterial.generate(.p256)
            let pair = try store(key, in: token)
            let message = bytes("signed in the store")
            let algorithm = SignatureAlgorithm.ecdsa(.sha256)
            let signer = try algorithm.operation(
                on: token, pair.privateKey, for: .sign, context: Contexts.user)
            let signature = try algorithm.sign(message, with: signer)
            let publicKey = try key.publicKey()
            #expect(try publicKey.isValidSignature(signature, for: message, algorithm: algorithm))
            #expect(
                try !publicKey.isValidSignature(
                    signature, for: bytes("another message"), algorithm: algorithm))
            expectKeychainError(.keyTypeInconsistent, containing: "an RSA key") {
                _ = try publicKey.isValidSignature(signature, for: message, algorithm: .rsaPSS(.sha256))
            }
        }
    }

    @Test("an RSA key in memory encrypts with OAEP and decrypts; an EC key is refused as not RSA")
    func rsaEncryptionInMemory() throws {
        let key = try KeyMaterial.generate(.rsa(bits: 2048))
        let plaintext = bytes("a session key")
        let ciphertext = try key.publicKey().encrypt(plaintext, algorithm: .rsaOAEP(.sha256))
        #expect(ciphertext.count == 256)
        #expect(try key.decrypt(ciphertext, algorithm: .rsaOAEP(.sha256)) == plaintext)
        let ec = try KeyMaterial.generate(.p256)
        expectKeychainError(.keyTypeInconsistent, containing: "only RSA keys") {
            _ = try ec.encrypt(plaintext, algorithm: .rsaPKCS1)
        }
    }

    @Test("the X9.63 KDF gives the NIST CAVS SHA-256 vectors, and refuses a length out of range")
    func x963Vectors() throws {
        let short = SharedSecretDerivation.x963(.sha256, sharedInfo: [], length: 16)
        #expect(
            try short.derive(hexBytes("96c05619d56c328ab95fe84b18264b08725b85e33fd34f08"))
                == hexBytes("443024c3dae66b95e6f5670601558f71"))
        let long = SharedSecretDerivation.x963(
            .sha256, sharedInfo: try hexBytes("75eef81aa3041e33b80971203d2c0c52"), length: 128)
        let expected = try hexBytes(
            "c498af77161cc59f2962b9a713e2b215152d139766ce34a776df11866a69bf2e"
                + "52a13d9c7c6fc878c50c5ea0bc7b00e0da2447cfd874f6cf92f30d0097111485"
                + "500c90c3af8b487872d04685d14c8d1dc8d7fa08beb0ce0ababc11f0bd496269"
                + "142d43525a78e5bc79a17f59676a5706dc54d54d4d1f0bd7e386128ec26afc21")
        #expect(try long.derive(hexBytes("22518b10e70f2a3f243810ae3254139efbee04aa57c7af7d")) == expected)
        expectKeychainError(.invalidArgument, containing: "gives 1 to") {
            _ = try SharedSecretDerivation.x963(.sha256, sharedInfo: [], length: 0).derive([1, 2, 3])
        }
    }

    @Test("ECDH in memory and through a stored key's derivation agree, raw and through the X9.63 KDF")
    func agreementInMemoryAndStored() throws {
        try withToken { token, _ in
            try logInUser(token)
            let stored = try KeyMaterial.generate(.p384)
            let pair = try store(stored, in: token)
            let peer = try KeyMaterial.generate(.p384)
            let kdf = SharedSecretDerivation.x963(.sha256, sharedInfo: bytes("info"), length: 32)
            let agreement = try token.startDerivation(
                pair.privateKey, mechanism: DerivationParameters.ecdhMechanism(cofactor: false),
                parameters: .agreement(with: try peer.publicKey().agreementPoint()), context: Contexts.user)
            let fromStore = try agreement.sharedSecret(derivation: kdf)
            let inMemory = try peer.sharedSecret(
                with: try stored.publicKey(), cofactor: false, derivation: kdf)
            #expect(fromStore == inMemory)
            let raw = try peer.sharedSecret(with: try stored.publicKey(), cofactor: false, derivation: nil)
            #expect(raw.count == 48)
            #expect(try kdf.derive(raw) == inMemory)
            expectKeychainError(.keyTypeInconsistent, containing: "needs an EC key") {
                _ = try KeyMaterial.generate(.ed25519).sharedSecret(
                    with: try stored.publicKey(), cofactor: false, derivation: nil)
            }
        }
    }

    @Test(
        "ECIES: encrypted in memory to a stored key, opened through the stored key's agreement and in memory")
    func eciesRoundTrip() throws {
        try withToken { token, _ in
            try logInUser(token)
            let key = try KeyMaterial.generate(.p256)
            let pair = try store(key, in: token)
            let algorithm = ECIESAlgorithm(digest: .sha256)
            let plaintext = bytes("for the keychain's key only")
            let message = try algorithm.encrypt(plaintext, to: try key.publicKey())
            #expect(message.count == 65 + plaintext.count + 16)
            let recipient = try key.supportedAlgorithm()
            let ephemeral = try algorithm.ephemeralKey(of: message, recipient: recipient)
            let agreement = try token.startDerivation(
                pair.privateKey, mechanism: DerivationParameters.ecdhMechanism(cofactor: algorithm.cofactor),
                parameters: .agreement(with: try ephemeral.agreementPoint()), context: Contexts.user)
            #expect(try algorithm.open(message, with: agreement, recipient: recipient) == plaintext)
            #expect(try algorithm.decrypt(message, with: key) == plaintext)
            var altered = message
            altered[altered.count - 1] ^= 1
            expectKeychainError(.invalidArgument) { _ = try algorithm.decrypt(altered, with: key) }
            expectKeychainError(.invalidArgument, containing: "at least") {
                _ = try algorithm.ephemeralKey(of: Array(message.prefix(40)), recipient: recipient)
            }
        }
    }
}
