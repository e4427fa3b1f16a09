import KeychainCrypto
import Testing

@testable import KeychainCore

/// A session keeps the OpenSSL contexts of its last verification and ECDH agreement
/// (`KeptContexts`); a kept one answers exactly as a fresh one, and only for its own key, scheme
/// and peer.
@Suite("Contexts a session keeps between operations")
struct KeptContextTests {
    @Test("a kept agreement derives each time the secret a fresh one derives, and serves only its own peer")
    func agreementIsReusedOnlyForItsPeer() throws {
        let key = try AsymmetricKey.generate(.ec(.p256))
        let peer = try #require(try AsymmetricKey.generate(.ec(.p256)).publicPoint)
        let other = try #require(try AsymmetricKey.generate(.ec(.p256)).publicPoint)
        let agreement = try KeyAgreementContext(key: key, peerPublicValue: peer, cofactor: false)
        let expected = try key.sharedSecret(withPeerPublicValue: peer).copyBytes()
        #expect(try agreement.derive().copyBytes() == expected)
        #expect(try agreement.derive().copyBytes() == expected)
        #expect(try key.sharedSecret(withPeerPublicValue: other).copyBytes() != expected)

        let kept = KeptContexts()
        kept.agreement = agreement
        #expect(kept.takeAgreement(for: key, peer: other, cofactor: false) == nil)
        #expect(kept.agreement == nil, "a context that does not fit is dropped")
        kept.agreement = agreement
        #expect(kept.takeAgreement(for: key, peer: peer, cofactor: true) == nil)
        kept.agreement = agreement
        let otherKey = try AsymmetricKey.generate(.ec(.p256))
        #expect(kept.takeAgreement(for: otherKey, peer: peer, cofactor: false) == nil)
        kept.agreement = agreement
        #expect(kept.takeAgreement(for: key, peer: peer, cofactor: false) === agreement)
        kept.agreement = agreement
        kept.removeAll()
        #expect(kept.agreement == nil)
    }

    @Test(
        "a kept verifier accepts a valid signature after refusing an altered one, and serves only its key and scheme",
        arguments: [
            (KeyAlgorithm.ec(.p256), SignatureScheme.ecdsa(.sha256)),
            (KeyAlgorithm.rsa(bits: 2048), SignatureScheme.rsaPKCS1(.sha256)),
        ])
    func verifierIsReused(_ algorithm: KeyAlgorithm, _ scheme: SignatureScheme) throws {
        let key = try AsymmetricKey.generate(algorithm)
        let hash = DigestAlgorithm.sha256.hash([1, 2, 3])
        let signature = try key.signHash(hash, scheme: scheme)
        let verifier = try SigningContext(key: key, scheme: scheme, verifying: true)
        #expect(try verifier.verify(signature, hash: hash))
        var altered = signature
        altered[altered.count - 1] ^= 1
        #expect(try !verifier.verify(altered, hash: hash))
        #expect(try verifier.verify(signature, hash: hash))
        #expect(throws: CryptoError.self) { _ = try verifier.sign(hash: hash) }

        let kept = KeptContexts()
        kept.verifier = verifier
        #expect(kept.verifier(for: key, scheme) === verifier)
        #expect(kept.verifier(for: key, .ecdsa(.sha384)) == nil)
        #expect(kept.verifier(for: try AsymmetricKey.generate(algorithm), scheme) == nil)
    }
}
