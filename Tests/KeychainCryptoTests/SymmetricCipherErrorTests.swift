import KeychainCrypto
import Testing

private let key128: [UInt8] = Array(0..<16)
private let iv16: [UInt8] = Array(100..<116)
private let iv12: [UInt8] = Array(100..<112)

/// Feeds `input` in one update and returns update's output and finish's, or throws.
private func oneShot(_ cipher: SymmetricCipher, _ input: [UInt8]) throws -> [UInt8] {
    let part = try input.withUnsafeBytes { try cipher.update($0) }
    return part + (try cipher.finish())
}

@Suite("AES modes: bad input")
struct SymmetricCipherErrorTests {
    @Test("keys that are not 16, 24 or 32 bytes are refused", arguments: [0, 1, 15, 17, 23, 31, 33, 64])
    func wrongKeyLength(length: Int) {
        expectCryptoError(.invalidInput) {
            _ = try SymmetricCipher(
                key: SecretBytes([UInt8](repeating: 7, count: length)), mode: .ecb, encrypting: true)
        }
    }

    @Test("IVs, counter blocks, counter widths and tag lengths out of range are refused")
    func wrongParameters() {
        let bad: [BlockCipherMode] = [
            .cbc(iv: []), .cbc(iv: Array(iv16.prefix(15))), .cbcPad(iv: iv16 + [0]),
            .ctr(counterBlock: Array(iv16.prefix(8)), counterBits: 32),
            .ctr(counterBlock: iv16, counterBits: 0),
            .ctr(counterBlock: iv16, counterBits: 129), .ctr(counterBlock: iv16, counterBits: -1),
            .gcm(iv: [], additionalData: [], tagLength: 16),
            .gcm(iv: iv12, additionalData: [], tagLength: 11),
            .gcm(iv: iv12, additionalData: [], tagLength: 17),
            .gcm(iv: iv12, additionalData: [], tagLength: -16),
            .gcm(iv: [UInt8](repeating: 1, count: 257), additionalData: [], tagLength: 16),
        ]
        for mode in bad {
            expectCryptoError(.invalidInput, "\(mode)") {
                _ = try SymmetricCipher(key: SecretBytes(key128), mode: mode, encrypting: true)
            }
        }
    }

    @Test("ECB and CBC input that is not whole blocks fails at finish with a data-length error")
    func partialBlock() throws {
        for mode in [BlockCipherMode.ecb, .cbc(iv: iv16)] {
            for encrypting in [true, false] {
                for length in [1, 15, 17, 31] {
                    let cipher = try SymmetricCipher(
                        key: SecretBytes(key128), mode: mode, encrypting: encrypting)
                    expectCryptoError(.invalidInput, "\(mode) \(length)") {
                        _ = try oneShot(cipher, [UInt8](repeating: 0, count: length))
                    }
                }
            }
        }
        // CBC-PAD ciphertext must be whole blocks too, and at least one.
        for length in [0, 1, 15, 17] {
            let cipher = try SymmetricCipher(
                key: SecretBytes(key128), mode: .cbcPad(iv: iv16), encrypting: false)
            expectCryptoError(.invalidInput, "CBC-PAD \(length)") {
                _ = try oneShot(cipher, [UInt8](repeating: 0, count: length))
            }
        }
    }

    @Test("CBC-PAD decryption of bad padding fails with its own code")
    func badPadding() throws {
        // A block whose last plaintext byte is 0 (never valid PKCS#7): ECB-encrypt a zero block
        // and XOR the IV back in, so that CBC decryption yields it.
        let ecb = try SymmetricCipher(key: SecretBytes(key128), mode: .cbc(iv: iv16), encrypting: true)
        let ciphertext = try oneShot(ecb, [UInt8](repeating: 0, count: 16))
        let cipher = try SymmetricCipher(key: SecretBytes(key128), mode: .cbcPad(iv: iv16), encrypting: false)
        expectCryptoError(.invalidPadding) { _ = try oneShot(cipher, ciphertext) }
        // Altering the last ciphertext block of a good message breaks its padding too (almost
        // always; this one is checked).
        var good = try oneShot(
            SymmetricCipher(key: SecretBytes(key128), mode: .cbcPad(iv: iv16), encrypting: true),
            Array(0..<20))
        good[good.count - 1] ^= 0x55
        let second = try SymmetricCipher(key: SecretBytes(key128), mode: .cbcPad(iv: iv16), encrypting: false)
        expectCryptoError(.invalidPadding) { _ = try oneShot(second, good) }
    }

    @Test("a GCM tag that does not verify releases no plaintext, nor does tampered AAD")
    func gcmTagMismatch() throws {
        let mode = BlockCipherMode.gcm(iv: iv12, additionalData: [9, 9, 9], tagLength: 16)
        let plaintext = [UInt8](repeating: 0x42, count: 40)
        let sealed = try oneShot(
            SymmetricCipher(key: SecretBytes(key128), mode: mode, encrypting: true), plaintext)
        for index in [0, 39, 40, 55] {
            var altered = sealed
            altered[index] ^= 1
            let cipher = try SymmetricCipher(key: SecretBytes(key128), mode: mode, encrypting: false)
            let part = try altered.withUnsafeBytes { try cipher.update($0) }
            #expect(part.isEmpty, "GCM decryption releases nothing before the tag is checked")
            expectCryptoError(.authenticationFailed, "byte \(index)") { _ = try cipher.finish() }
        }
        let otherAAD = BlockCipherMode.gcm(iv: iv12, additionalData: [9, 9, 8], tagLength: 16)
        let cipher = try SymmetricCipher(key: SecretBytes(key128), mode: otherAAD, encrypting: false)
        expectCryptoError(.authenticationFailed) { _ = try oneShot(cipher, sealed) }
        // Shorter than the tag: a length error, not a tag mismatch.
        let short = try SymmetricCipher(key: SecretBytes(key128), mode: mode, encrypting: false)
        expectCryptoError(.invalidInput) { _ = try oneShot(short, Array(sealed.prefix(15))) }
    }

    @Test("a cipher that failed refuses every later call, as does one that finished")
    func noReuseAfterError() throws {
        let cipher = try SymmetricCipher(key: SecretBytes(key128), mode: .ecb, encrypting: true)
        expectCryptoError(.invalidInput) { _ = try oneShot(cipher, [1, 2, 3]) }
        expectCryptoError(.failed) {
            _ = try [UInt8](repeating: 0, count: 16).withUnsafeBytes { try cipher.update($0) }
        }
        expectCryptoError(.failed) { _ = try cipher.finish() }
        let done = try SymmetricCipher(key: SecretBytes(key128), mode: .ecb, encrypting: true)
        _ = try oneShot(done, [UInt8](repeating: 0, count: 16))
        expectCryptoError(.failed) { _ = try done.finish() }
    }

    @Test("CTR refuses input that would wrap the counter within its counter bits")
    func counterWrap() throws {
        // Low byte 0xFE with an 8-bit counter: blocks FE and FF may be used, no third.
        var block = iv16
        block[15] = 0xFE
        let mode = BlockCipherMode.ctr(counterBlock: block, counterBits: 8)
        let ok = try SymmetricCipher(key: SecretBytes(key128), mode: mode, encrypting: true)
        #expect(try oneShot(ok, [UInt8](repeating: 0, count: 32)).count == 32)
        let over = try SymmetricCipher(key: SecretBytes(key128), mode: mode, encrypting: true)
        _ = try [UInt8](repeating: 0, count: 31).withUnsafeBytes { try over.update($0) }
        expectCryptoError(.invalidInput) {
            _ = try [UInt8](repeating: 0, count: 2).withUnsafeBytes { try over.update($0) }
        }
        // A 64-bit counter whose low 64 bits are all ones: one block left.
        let full = [UInt8](repeating: 0, count: 8) + [UInt8](repeating: 0xFF, count: 8)
        let wide = try SymmetricCipher(
            key: SecretBytes(key128), mode: .ctr(counterBlock: full, counterBits: 64), encrypting: true)
        expectCryptoError(.invalidInput) { _ = try oneShot(wide, [UInt8](repeating: 0, count: 17)) }
        // A 72-bit counter with the same block has 2^8 - 1 more rounds of 2^64: no limit in practice.
        let wider = try SymmetricCipher(
            key: SecretBytes(key128), mode: .ctr(counterBlock: full, counterBits: 72), encrypting: true)
        #expect(try oneShot(wider, [UInt8](repeating: 0, count: 64)).count == 64)
        // The counter blocks used before the wrap are the ones the spec names: block FF is ECB(FF…).
        let ecb = try SymmetricCipher(key: SecretBytes(key128), mode: .ecb, encrypting: true)
        var ffBlock = block
        ffBlock[15] = 0xFF
        let keystream = try oneShot(ecb, block + ffBlock)
        let ctr = try SymmetricCipher(key: SecretBytes(key128), mode: mode, encrypting: true)
        #expect(try oneShot(ctr, [UInt8](repeating: 0, count: 32)) == keystream)
    }

    @Test("a GCM IV longer than OpenSSL takes is invalid input; 128 bytes still work")
    func longGCMIV() throws {
        let mode = BlockCipherMode.gcm(
            iv: [UInt8](repeating: 3, count: 128), additionalData: [], tagLength: 16)
        let sealed = try oneShot(
            SymmetricCipher(key: SecretBytes(key128), mode: mode, encrypting: true), [1, 2])
        #expect(
            try oneShot(SymmetricCipher(key: SecretBytes(key128), mode: mode, encrypting: false), sealed) == [
                1, 2,
            ])
        #expect(BlockCipherMode.gcmIVLengths == 1...128)
        expectCryptoError(.invalidInput) {
            _ = try SymmetricCipher(
                key: SecretBytes(key128),
                mode: .gcm(iv: [UInt8](repeating: 1, count: 200), additionalData: [], tagLength: 16),
                encrypting: true)
        }
    }
}
