import Testing

@testable import KeychainCrypto

@Suite struct SecretBoxTests {
    let key = [UInt8](repeating: 7, count: 32)

    @Test("a sealed value opens with its key and associated data", arguments: [0, 1, 16, 1000])
    func roundTrip(length: Int) throws {
        let plaintext = [UInt8](repeating: 0xAB, count: length)
        let box = try SecretBox.seal(plaintext, key: key, associatedData: [1, 2, 3])
        #expect(box.count == 12 + length + 16)
        #expect(try SecretBox.open(box, key: key, associatedData: [1, 2, 3]) == plaintext)
    }

    @Test("a sealed value does not open with other associated data, another key, or a flipped bit")
    func tamperingIsDetected() throws {
        let box = try SecretBox.seal(Array("secret".utf8), key: key, associatedData: [1])
        #expect(throws: CryptoError.self) { try SecretBox.open(box, key: key, associatedData: [2]) }
        #expect(throws: CryptoError.self) {
            try SecretBox.open(box, key: [UInt8](repeating: 8, count: 32), associatedData: [1])
        }
        var flipped = box
        flipped[13] ^= 0x01
        #expect(throws: CryptoError.self) { try SecretBox.open(flipped, key: key, associatedData: [1]) }
        #expect(throws: CryptoError.self) { try SecretBox.open([1, 2, 3], key: key, associatedData: [1]) }
    }

    @Test("two seals of the same value differ (fresh nonce)")
    func noncesAreFresh() throws {
        let first = try SecretBox.seal([1, 2, 3], key: key, associatedData: [])
        let second = try SecretBox.seal([1, 2, 3], key: key, associatedData: [])
        #expect(first != second)
    }

    @Test("PBKDF2-HMAC-SHA256 matches RFC 7914's test vector")
    func pbkdf2KnownAnswer() throws {
        // RFC 7914 §11: P="passwd", S="salt", c=1, dkLen=64.
        let derived = try PasswordKeyDerivation.derive(
            password: Array("passwd".utf8), salt: Array("salt".utf8), iterations: 1, length: 64)
        let expected =
            "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
            + "49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"
        #expect(
            derived.map {
                String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16)
            }.joined() == expected)
    }
}
