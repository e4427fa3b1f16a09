import Foundation
import Security
import Testing

@Suite("Apple's snippets: ECIES and key exchange")
struct KeyAgreementSnippetsTests {
    @Test("an EC key pair encrypts and decrypts with ECIES as Apple's documentation does it")
    func eciesRoundTrip() throws {
        let privateKey = try makeEphemeralKey()
        let publicKey = try #require(SecKeyCopyPublicKey(privateKey))
        let message = Data("a message for the key's holder".utf8)
        let cipherText = try encryptForKey(message, publicKey: publicKey)
        #expect(cipherText.count == 65 + message.count + 16)
        #expect(try decryptWithKey(cipherText, privateKey: privateKey) == message)
        #expect(throws: (any Error).self) { try decryptWithKey(cipherText, privateKey: publicKey) }
    }

    @Test("two parties' key exchanges with the same SharedInfo agree on the same 32 bytes")
    func keyExchangeAgrees() throws {
        let alice = try makeEphemeralKey()
        let bob = try makeEphemeralKey()
        let alicePublic = try #require(SecKeyCopyPublicKey(alice))
        let bobPublic = try #require(SecKeyCopyPublicKey(bob))
        let info = Data("session 1".utf8)
        let ours = try agreeOnKey(privateKey: alice, peerPublicKey: bobPublic, sharedInfo: info)
        #expect(ours.count == 32)
        #expect(try agreeOnKey(privateKey: bob, peerPublicKey: alicePublic, sharedInfo: info) == ours)
        #expect(
            try agreeOnKey(privateKey: bob, peerPublicKey: alicePublic, sharedInfo: Data("2".utf8)) != ours)
    }
}
