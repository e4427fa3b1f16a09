import Testing

@testable import KeychainCrypto

@Suite struct SecretBytesTests {
    @Test("a secret buffer holds its bytes and never prints them")
    func holdsAndHides() {
        let secret = SecretBytes([0xde, 0xad, 0xbe, 0xef])
        #expect(secret.count == 4)
        #expect(secret.copyBytes() == [0xde, 0xad, 0xbe, 0xef])
        #expect(secret.description == "SecretBytes(4 bytes)")
        #expect(!"\(secret)".contains("de"))
        #expect(SecretBytes([]).isEmpty)
    }

    @Test("taking an array over wipes the caller's copy")
    func wipingInitialiserClearsTheSource() {
        var source: [UInt8] = [1, 2, 3, 4, 5]
        let secret = SecretBytes(wiping: &source)
        #expect(source == [0, 0, 0, 0, 0])
        #expect(secret.copyBytes() == [1, 2, 3, 4, 5])
    }

    @Test("a failing initialiser leaves no buffer behind and rethrows its error")
    func failingInitialiser() {
        #expect(throws: CryptoError.self) {
            try SecretBytes(count: 8) { (_) throws(CryptoError) in throw CryptoError(.failed, "no") }
        }
    }

    @Test("private key parts come out in self-wiping buffers equal to the plain forms")
    func keyPartsAsSecrets() throws {
        let rsa = try AsymmetricKey.generate(.rsa(bits: 2048))
        #expect(rsa.secretComponent("d")?.copyBytes() == rsa.component("d"))
        #expect(rsa.secretPKCS8?.copyBytes() == rsa.pkcs8)
        let pkcs8 = try #require(rsa.secretPKCS8)
        #expect(try AsymmetricKey(privateKeyDER: pkcs8).subjectPublicKeyInfo == rsa.subjectPublicKeyInfo)
        #expect(rsa.secretPrivateKeyRepresentation?.copyBytes() == rsa.privateKeyRepresentation)
        let ed = try AsymmetricKey.generate(.ed25519)
        #expect(ed.secretRawPrivateKey?.count == 32)
        #expect(ed.secretRawPrivateKey?.copyBytes() == ed.rawPrivateKey)
        let ec = try AsymmetricKey.generate(.ec(.p256))
        #expect(ec.secretPrivateKeyRepresentation?.count == 65 + 32)
        #expect(try SecureRandom.secret(32).count == 32)
    }
}
