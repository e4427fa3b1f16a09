import KeychainCrypto
import Testing

@Suite("Secret key check values")
struct SecretKeyCheckValueTests {
    @Test("an AES key's check value is the first 3 bytes of its encryption of a zero block")
    func aes() throws {
        // AES-128 and AES-256 of the zero block under the zero key (FIPS 197 known answers:
        // 66e94bd4… and dc95c078…).
        #expect(
            try SecretKeyCheckValue.aes(SecretBytes([UInt8](repeating: 0, count: 16))) == [0x66, 0xe9, 0x4b])
        #expect(
            try SecretKeyCheckValue.aes(SecretBytes([UInt8](repeating: 0, count: 32))) == [0xdc, 0x95, 0xc0])
        // SP 800-38A's key: the ECB mode agrees.
        let key = try hexBytes("2b7e151628aed2a6abf7158809cf4f3c")
        let cipher = try SymmetricCipher(key: SecretBytes(key), mode: .ecb, encrypting: true)
        let block = try [UInt8](repeating: 0, count: 16).withUnsafeBytes { try cipher.update($0) }
        #expect(try SecretKeyCheckValue.aes(SecretBytes(key)) == Array(block.prefix(3)))
        expectCryptoError(.invalidInput) { _ = try SecretKeyCheckValue.aes(SecretBytes([1, 2, 3])) }
    }

    @Test("a generic secret's check value is the first 3 bytes of SHA-1 of the key")
    func sha1() {
        #expect(SecretKeyCheckValue.sha1(SecretBytes(Array("abc".utf8))) == [0xa9, 0x99, 0x3e])
        #expect(SecretKeyCheckValue.sha1(SecretBytes([])) == [0xda, 0x39, 0xa3])
    }
}

@Suite("Random seeding")
struct RandomSeedTests {
    @Test(
        "mixing caller bytes into the generator succeeds for empty, short and long seeds, and draws continue")
    func mix() throws {
        try [UInt8]().withUnsafeBytes { try SecureRandom.mix($0) }
        try [UInt8](repeating: 0xAB, count: 32).withUnsafeBytes { try SecureRandom.mix($0) }
        try [UInt8](repeating: 0xCD, count: (1 << 16) + 1).withUnsafeBytes { try SecureRandom.mix($0) }
        let first = try SecureRandom.bytes(32)
        // The same seed again does not make the generator repeat: it adds to the entropy.
        try [UInt8](repeating: 0xAB, count: 32).withUnsafeBytes { try SecureRandom.mix($0) }
        let second = try SecureRandom.bytes(32)
        #expect(first != second)
        #expect(first != [UInt8](repeating: 0, count: 32))
    }
}
