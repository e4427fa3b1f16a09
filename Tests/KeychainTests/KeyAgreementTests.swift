import Foundation
import Keychain
import Testing

/// The typed key agreement API: ECDH of stored and in-memory keys agreeing with each other,
/// ECIES between them, and the rules a stored key's use follows.
@Suite("Key agreement and ECIES through the Keychain API")
struct KeyAgreementTests {
    @Test("a stored key and an in-memory key agree on one secret, raw and through the X9.63 KDF")
    func storedAndInMemoryAgree() throws {
        try withPINKeychain { keychain, _ in
            let stored = try keychain.generateKeyPair(.p384, label: "agreeing")
            #expect(stored.privateKey.usage.contains(.derive), "EC keys made by the faces may derive")
            let peer = try PrivateKey.generate(.p384)
            let raw = try keychain.sharedSecret(privateKey: stored.privateKey, with: peer.publicKey)
            #expect(raw.count == 48)
            #expect(try peer.sharedSecret(with: stored.publicKey.publicKey) == raw)
            let derivation = SharedSecretDerivation.x963(.sha384, sharedInfo: Array("info".utf8), length: 40)
            let derived = try keychain.sharedSecret(
                privateKey: stored.privateKey, with: peer.publicKey, cofactor: true, derivation: derivation)
            #expect(derived.count == 40)
            #expect(
                try peer.sharedSecret(with: stored.publicKey.publicKey, derivation: derivation) == derived)
            #expect(derived != Array(raw.prefix(40)))
        }
    }

    @Test("an ECIES message for a stored key's public key decrypts with it, and with no other key")
    func eciesToStoredKey() throws {
        try withPINKeychain { keychain, _ in
            let stored = try keychain.generateKeyPair(.p256, label: "recipient")
            let algorithm = ECIESAlgorithm(digest: .sha256, cofactor: true)
            let message = try stored.publicKey.publicKey.encrypt(
                Array("to the keychain".utf8), algorithm: algorithm)
            #expect(
                try keychain.decrypt(message, with: stored.privateKey, algorithm: algorithm)
                    == Array("to the keychain".utf8))
            let other = try PrivateKey.generate(.p256)
            #expect(throws: KeychainError.self) { try other.decrypt(message, algorithm: algorithm) }
            #expect(throws: KeychainError.self) {
                try keychain.decrypt(message, with: stored.publicKey, algorithm: algorithm)
            }
        }
    }

    @Test("an RSA or Ed25519 key, a peer of another curve, or a derivation length of 0 is errSecParam")
    func refusals() throws {
        try withPINKeychain { keychain, _ in
            let ec = try keychain.generateKeyPair(.p256)
            let rsa = try keychain.generateKeyPair(.rsa(bits: 2048))
            let peer = try PrivateKey.generate(.p256)
            expectParameterError {
                _ = try keychain.sharedSecret(privateKey: rsa.privateKey, with: peer.publicKey)
            }
            expectParameterError {
                _ = try keychain.sharedSecret(
                    privateKey: ec.privateKey, with: try PrivateKey.generate(.p521).publicKey)
            }
            expectParameterError {
                _ = try keychain.sharedSecret(
                    privateKey: ec.privateKey, with: peer.publicKey,
                    derivation: .x963(.sha256, sharedInfo: [], length: 0))
            }
            expectParameterError { _ = try PrivateKey.generate(.ed25519).sharedSecret(with: peer.publicKey) }
            expectParameterError {
                _ = try rsa.publicKey.publicKey.encrypt([1], algorithm: ECIESAlgorithm(digest: .sha256))
            }
        }
    }
}

/// Expects `body` to throw a KeychainError with code `.parameter` (errSecParam).
private func expectParameterError(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("accepted", sourceLocation: sourceLocation)
    } catch let error as KeychainError {
        #expect(error.code == .parameter, "\(error.message)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
    }
}
