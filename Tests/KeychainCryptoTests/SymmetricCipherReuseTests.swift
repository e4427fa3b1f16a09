import KeychainCrypto
import Testing

// A SymmetricCipher that takes over an earlier one's keyed context (`reusing:`), and the
// single-part path that writes straight into a caller's buffer (`process(_:into:)`): the
// module's fast path for C_EncryptInit + C_Encrypt must give the standards' answers.

/// The whole operation in one update and `finish`.
private func runOnce(_ cipher: SymmetricCipher, _ input: [UInt8]) throws -> [UInt8] {
    let part = try input.withUnsafeBytes { try cipher.update($0) }
    return part + (try cipher.finish())
}

/// The same mode with another IV (for GCM also another IV length), so that an operation
/// that took over the context must have replaced every bit of the earlier one's state.
private func otherIV(_ mode: BlockCipherMode) -> BlockCipherMode {
    switch mode {
    case .ecb: .ecb
    case .cbc(let iv): .cbc(iv: iv.reversed())
    case .cbcPad(let iv): .cbcPad(iv: iv.reversed())
    case .ctr(let block, _): .ctr(counterBlock: block.reversed(), counterBits: 128)
    case .gcm(let iv, _, _): .gcm(iv: iv + [0x5a], additionalData: [1, 2, 3], tagLength: 16)
    }
}

@Suite("AES modes: a context taken over, output written in place")
struct SymmetricCipherReuseTests {
    @Test(
        "a cipher that takes over an earlier operation's context gives the known answer",
        arguments: SymmetricCipherTests.vectors)
    func reusedContext(vector: CipherVector) throws {
        let key = SecretBytes(try hexBytes(vector.key))
        let plaintext = try hexBytes(vector.plaintext)
        let ciphertext = try hexBytes(vector.ciphertext)
        for encrypting in [true, false] {
            let input = encrypting ? plaintext : ciphertext
            let earlier = try SymmetricCipher(key: key, mode: otherIV(vector.mode), encrypting: encrypting)
            _ = try? runOnce(earlier, input)
            let cipher = try SymmetricCipher(
                key: key, mode: vector.mode, encrypting: encrypting, reusing: earlier)
            #expect(try runOnce(cipher, input) == (encrypting ? ciphertext : plaintext))
            // The earlier operation gave its context away and can do nothing more.
            #expect(throws: CryptoError.self) { try earlier.finish() }
            // A third, taking over from the second, with an update cut in pieces.
            let third = try SymmetricCipher(
                key: key, mode: vector.mode, encrypting: encrypting, reusing: cipher)
            var output: [UInt8] = []
            for start in stride(from: 0, to: input.count, by: 7) {
                output += try input[start..<min(start + 7, input.count)].withUnsafeBytes {
                    try third.update($0)
                }
            }
            output += try third.finish()
            #expect(output == (encrypting ? ciphertext : plaintext))
        }
    }

    @Test(
        "a finished cipher restarted in place with the known answer's parameters gives the known answer",
        arguments: SymmetricCipherTests.vectors)
    func restartedInPlace(vector: CipherVector) throws {
        let key = SecretBytes(try hexBytes(vector.key))
        let plaintext = try hexBytes(vector.plaintext)
        let ciphertext = try hexBytes(vector.ciphertext)
        for encrypting in [true, false] {
            let input = encrypting ? plaintext : ciphertext
            let cipher = try SymmetricCipher(key: key, mode: otherIV(vector.mode), encrypting: encrypting)
            // Still running: not restarted, and it goes on as it was.
            #expect(try cipher.restart(vector.mode) == false)
            _ = try? runOnce(cipher, input)
            #expect(try cipher.restart(vector.mode))
            #expect(try runOnce(cipher, input) == (encrypting ? ciphertext : plaintext))
            // Again, the second time from a finished known answer.
            #expect(try cipher.restart(vector.mode))
            #expect(try runOnce(cipher, input) == (encrypting ? ciphertext : plaintext))
        }
    }

    @Test("a restart into another AES mode is refused and changes nothing; bad parameters end it")
    func restartRefused() throws {
        let key = SecretBytes(try hexBytes("2b7e151628aed2a6abf7158809cf4f3c"))
        let block = try hexBytes("6bc1bee22e409f96e93d7e117393172a")
        let encrypted = try hexBytes("3ad77bb40d7a3660a89ecaf32466ef97")
        let cipher = try SymmetricCipher(key: key, mode: .ecb, encrypting: true)
        #expect(try runOnce(cipher, block) == encrypted)
        #expect(try cipher.restart(.cbc(iv: block)) == false)
        #expect(try cipher.restart(.ecb))
        #expect(try runOnce(cipher, block) == encrypted)
        let gcm = try SymmetricCipher(
            key: key, mode: .gcm(iv: [UInt8](repeating: 1, count: 12), additionalData: [], tagLength: 16),
            encrypting: true)
        _ = try runOnce(gcm, block)
        #expect(throws: CryptoError.self) {
            try gcm.restart(.gcm(iv: [], additionalData: [], tagLength: 16))
        }
        #expect(throws: CryptoError.self) { try gcm.finish() }
    }

    @Test("a context of the other direction, another key object or an active operation is not taken over")
    func contextsNotTakenOver() throws {
        let key = SecretBytes(try hexBytes("2b7e151628aed2a6abf7158809cf4f3c"))
        let block = try hexBytes("6bc1bee22e409f96e93d7e117393172a")
        let encrypted = try hexBytes("3ad77bb40d7a3660a89ecaf32466ef97")
        // ECB decryption needs the inverse key schedule: an encryption's would decrypt wrong.
        let encryption = try SymmetricCipher(key: key, mode: .ecb, encrypting: true)
        #expect(try runOnce(encryption, block) == encrypted)
        let decryption = try SymmetricCipher(key: key, mode: .ecb, encrypting: false, reusing: encryption)
        #expect(try runOnce(decryption, encrypted) == block)
        // Another key object with other bytes: the earlier schedule is not used.
        let other = SecretBytes(try hexBytes("000102030405060708090a0b0c0d0e0f"))
        let withOther = try SymmetricCipher(key: other, mode: .ecb, encrypting: false, reusing: decryption)
        #expect(try runOnce(withOther, encrypted) != block)
        // An operation still running keeps its context.
        let running = try SymmetricCipher(key: key, mode: .cbc(iv: block), encrypting: true)
        let first = try block.withUnsafeBytes { try running.update($0) }
        let next = try SymmetricCipher(key: key, mode: .cbc(iv: block), encrypting: true, reusing: running)
        #expect(try runOnce(next, block) == first)
        #expect(try running.finish() == [])
    }

    @Test(
        "process writes into the caller's buffer what update and finish return",
        arguments: SymmetricCipherTests.vectors)
    func processIntoBuffer(vector: CipherVector) throws {
        let key = SecretBytes(try hexBytes(vector.key))
        let plaintext = try hexBytes(vector.plaintext)
        let ciphertext = try hexBytes(vector.ciphertext)
        for encrypting in [true, false] {
            let input = encrypting ? plaintext : ciphertext
            let cipher = try SymmetricCipher(key: key, mode: vector.mode, encrypting: encrypting)
            guard let length = cipher.directOutputLength(forInput: input.count) else {
                // Only decryption that must check a tag or padding first, or empty input.
                var isGCM = false
                if case .gcm = vector.mode { isGCM = true }
                var isPadded = false
                if case .cbcPad = vector.mode { isPadded = true }
                #expect(input.isEmpty || (!encrypting && (isGCM || isPadded)))
                continue
            }
            var output = [UInt8](repeating: 0xee, count: length + 5)
            let written = try input.withUnsafeBytes { source in
                try output.withUnsafeMutableBytes { try cipher.process(source, into: $0) }
            }
            #expect(written == length)
            #expect(Array(output.prefix(written)) == (encrypting ? ciphertext : plaintext))
            #expect(output.suffix(5).allSatisfy { $0 == 0xee })
            #expect(throws: CryptoError.self) { try cipher.finish() }
        }
    }

    @Test("process refuses what it cannot write directly, and wipes the buffer when it fails")
    func processRefusalsAndFailure() throws {
        let key = SecretBytes(try hexBytes("2b7e151628aed2a6abf7158809cf4f3c"))
        let blocks = [UInt8](repeating: 0x42, count: 32)
        let gcm = BlockCipherMode.gcm(iv: [UInt8](repeating: 1, count: 12), additionalData: [], tagLength: 16)
        #expect(
            try SymmetricCipher(key: key, mode: gcm, encrypting: false).directOutputLength(forInput: 32)
                == nil)
        let iv = [UInt8](repeating: 2, count: 16)
        #expect(
            try SymmetricCipher(key: key, mode: .cbcPad(iv: iv), encrypting: false).directOutputLength(
                forInput: 32)
                == nil)
        #expect(
            try SymmetricCipher(key: key, mode: .ecb, encrypting: true).directOutputLength(forInput: 17)
                == nil)
        #expect(
            try SymmetricCipher(key: key, mode: .cbcPad(iv: iv), encrypting: true).directOutputLength(
                forInput: 17)
                == 32)
        // A buffer too small is refused before anything is written.
        let small = try SymmetricCipher(key: key, mode: gcm, encrypting: true)
        var tooSmall = [UInt8](repeating: 0xee, count: 47)
        #expect(throws: CryptoError.self) {
            try blocks.withUnsafeBytes { source in
                try tooSmall.withUnsafeMutableBytes { try small.process(source, into: $0) }
            }
        }
        #expect(tooSmall.allSatisfy { $0 == 0xee })
        // A CTR counter with one block left cannot take two: the buffer is wiped.
        var counter = [UInt8](repeating: 0, count: 16)
        counter[15] = 1
        let ctr = try SymmetricCipher(
            key: key, mode: .ctr(counterBlock: counter, counterBits: 1), encrypting: true)
        var output = [UInt8](repeating: 0xee, count: 32)
        #expect(throws: CryptoError.self) {
            try blocks.withUnsafeBytes { source in
                try output.withUnsafeMutableBytes { try ctr.process(source, into: $0) }
            }
        }
        #expect(output.allSatisfy { $0 == 0 })
        #expect(throws: CryptoError.self) { try blocks.withUnsafeBytes { try ctr.update($0) } }
    }
}
