import Testing

@testable import KeychainCrypto

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct SealingContextTests {
    let key = SecretBytes([UInt8](repeating: 9, count: 32))

    @Test("boxes of a kept sealing context open with SecretBox.open, one after another, any length")
    func boxesOpenWithSecretBox() throws {
        let sealer = try SealingContext(key: key)
        for length in [32, 1000, 0, 1, 16, 32] {
            let plaintext = [UInt8]((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            let associatedData: [UInt8] = [UInt8(truncatingIfNeeded: length), 0xA5]
            let box = try sealer.seal(SecretBytes(plaintext), associatedData: associatedData)
            #expect(box.count == 12 + length + 16)
            #expect(
                try SecretBox.open(box, key: key, associatedData: associatedData).copyBytes() == plaintext)
        }
    }

    @Test("a kept context's box does not open with other associated data, another key, or a flipped bit")
    func tamperingIsDetected() throws {
        let sealer = try SealingContext(key: key)
        let box = try sealer.seal(SecretBytes(Array("secret".utf8)), associatedData: [1])
        #expect(throws: CryptoError.self) { try SecretBox.open(box, key: key, associatedData: [2]) }
        #expect(throws: CryptoError.self) {
            try SecretBox.open(box, key: SecretBytes([UInt8](repeating: 8, count: 32)), associatedData: [1])
        }
        var flipped = box
        flipped[13] ^= 0x01
        #expect(throws: CryptoError.self) { try SecretBox.open(flipped, key: key, associatedData: [1]) }
    }

    @Test("each seal takes the next nonce: the same first 4 bytes, the last 8 counting up by one")
    func noncesCountUp() throws {
        let sealer = try SealingContext(key: key)
        let boxes = try (0..<3).map { _ in try sealer.seal(SecretBytes([1, 2, 3]), associatedData: []) }
        let nonces = boxes.map { Array($0.prefix(12)) }
        #expect(Set(nonces).count == 3)
        for (earlier, later) in zip(nonces, nonces.dropFirst()) {
            #expect(earlier.prefix(4) == later.prefix(4))
            var next = earlier
            SealingContext.increment(&next)
            #expect(next == later)
        }
        // Two contexts of one key start at unrelated (random) nonces.
        let other = try SealingContext(key: key).seal(SecretBytes([1, 2, 3]), associatedData: [])
        #expect(!nonces.contains(Array(other.prefix(12))))
    }

    @Test("the nonce counter carries across bytes and wraps within its last 8 bytes")
    func counterCarriesAndWraps() {
        var nonce: [UInt8] = [1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0xFF]
        SealingContext.increment(&nonce)
        #expect(nonce == [1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 1, 0])
        var last: [UInt8] = [1, 2, 3, 4] + [UInt8](repeating: 0xFF, count: 8)
        SealingContext.increment(&last)
        #expect(last == [1, 2, 3, 4] + [UInt8](repeating: 0, count: 8))
    }

    @Test("a sealing context refuses a key that is not 32 bytes")
    func wrongKeyLengthIsRefused() {
        #expect(throws: CryptoError.self) {
            try SealingContext(key: SecretBytes([UInt8](repeating: 1, count: 16)))
        }
    }

    @Test("a forked child seals under nonces of its own, not the ones its parent seals under next")
    func forkedChildDrawsItsOwnNonces() throws {
        let sealer = try SealingContext(key: key)
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        // What the child does, done once here first: a child of this many-threaded process
        // must not need a lock another thread held at the fork (the Swift runtime's metadata
        // cache, OpenSSL's fetches).
        let warm = try sealer.seal(SecretBytes([1]), associatedData: [])
        _ = warm.withUnsafeBufferPointer { $0.count }
        let child = fork()
        if child == 0 {
            // The child: one seal, its nonce down the pipe, and out. Should it hang anyway,
            // the alarm (unblocked: test threads block it) ends it and the test fails.
            var alarmOnly = sigset_t()
            sigemptyset(&alarmOnly)
            sigaddset(&alarmOnly, SIGALRM)
            pthread_sigmask(SIG_UNBLOCK, &alarmOnly, nil)
            alarm(10)
            var status: Int32 = 1
            if let box = try? sealer.seal(SecretBytes([2]), associatedData: []),
                box.withUnsafeBufferPointer({ write(ends[1], $0.baseAddress, 12) }) == 12
            {
                status = 0
            }
            _exit(status)
        }
        close(ends[1])
        defer { close(ends[0]) }
        try #require(child > 0)
        let parentNonce = Array(try sealer.seal(SecretBytes([2]), associatedData: []).prefix(12))
        var childNonce = [UInt8](repeating: 0, count: 12)
        let count = read(ends[0], &childNonce, 12)
        var status: Int32 = -1
        waitpid(child, &status, 0)
        #expect(status == 0)
        #expect(count == 12)
        #expect(childNonce != parentNonce)
    }
}
