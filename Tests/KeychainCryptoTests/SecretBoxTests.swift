import Testing

@testable import KeychainCrypto

#if canImport(Glibc)
    import Glibc
#endif

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
        // RFC 7914 §11: P="Password", S="NaCl", c=80000, dkLen=64.
        let derived = try PasswordKeyDerivation.derive(
            password: Array("Password".utf8), salt: Array("NaCl".utf8), iterations: 80_000, length: 64)
        let expected =
            "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56"
            + "a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d"
        #expect(hex(derived) == expected)
        let secret = try PasswordKeyDerivation.derive(
            password: SecretBytes(Array("Password".utf8)), salt: Array("NaCl".utf8), iterations: 80_000,
            length: 64)
        #expect(hex(secret.copyBytes()) == expected)
    }

    @Test(
        "a stored iteration count outside the accepted range is refused with an error, never a trap or a long run",
        arguments: [0, 1, 999, 10_000_001, Int(Int32.max), 1 << 31, Int(UInt32.max), Int.max, -1, Int.min])
    func iterationCountIsBounded(iterations: Int) throws {
        let started = clock_gettime_seconds()
        let error = #expect(throws: CryptoError.self) {
            try PasswordKeyDerivation.derive(
                password: Array("1234".utf8), salt: [1, 2, 3], iterations: iterations, length: 32)
        }
        #expect(error?.code == .invalidInput)
        #expect(clock_gettime_seconds() - started < 1)
    }

    @Test("derived key lengths outside 1…1024 are refused", arguments: [0, -1, 1025, Int.max])
    func derivedLengthIsBounded(length: Int) throws {
        #expect(throws: CryptoError.self) {
            try PasswordKeyDerivation.derive(password: [1], salt: [1], iterations: 1_000, length: length)
        }
    }

    @Test("a tag that does not verify is reported as a wrong key, a malformed box as invalid input")
    func openTellsAWrongKeyFromOtherFailures() throws {
        let box = try SecretBox.seal(Array("secret".utf8), key: key, associatedData: [1])
        let wrongKey = #expect(throws: CryptoError.self) {
            try SecretBox.open(box, key: [UInt8](repeating: 8, count: 32), associatedData: [1])
        }
        #expect(wrongKey?.code == .wrongPassword)
        let otherData = #expect(throws: CryptoError.self) {
            try SecretBox.open(box, key: key, associatedData: [2])
        }
        #expect(otherData?.code == .wrongPassword)
        var flipped = box
        flipped[flipped.count - 1] ^= 0x80
        let tampered = #expect(throws: CryptoError.self) {
            try SecretBox.open(flipped, key: key, associatedData: [1])
        }
        #expect(tampered?.code == .wrongPassword)
        let short = #expect(throws: CryptoError.self) {
            try SecretBox.open([1, 2, 3], key: key, associatedData: [1])
        }
        #expect(short?.code == .invalidInput)
        let badKey = #expect(throws: CryptoError.self) {
            try SecretBox.open(box, key: [1], associatedData: [1])
        }
        #expect(badKey?.code == .invalidInput)
    }

    @Test("the self-wiping forms seal and open like the array forms")
    func secretBytesRoundTrip() throws {
        let secretKey = SecretBytes(key)
        let box = try SecretBox.seal(
            SecretBytes(Array("token key".utf8)), key: secretKey, associatedData: [5])
        #expect(try SecretBox.open(box, key: key, associatedData: [5]) == Array("token key".utf8))
        let opened = try SecretBox.open(box, key: secretKey, associatedData: [5])
        #expect(opened.copyBytes() == Array("token key".utf8))
        #expect(opened.isEqual(to: SecretBytes(Array("token key".utf8))))
        #expect(!opened.isEqual(to: SecretBytes(Array("token kez".utf8))))
    }

    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
            .joined()
    }

    private func clock_gettime_seconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
