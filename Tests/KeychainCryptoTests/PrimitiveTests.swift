import KeychainCrypto
import Testing

/// A FIPS 180 known answer: an algorithm, a message and its digest in hex.
struct DigestVector: Sendable, CustomTestStringConvertible {
    let algorithm: DigestAlgorithm
    let message: String
    let digest: String

    var testDescription: String {
        "\(algorithm) of \"\(message.prefix(12))\(message.count > 12 ? "…" : "")\""
    }
}

private let abc = "abc"
private let twoBlocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"

@Suite("Digests")
struct DigestTests {
    /// FIPS 180-4 examples (NIST CSRC "Examples with Intermediate Values").
    static let vectors: [DigestVector] = [
        DigestVector(algorithm: .sha1, message: abc, digest: "a9993e364706816aba3e25717850c26c9cd0d89d"),
        DigestVector(algorithm: .sha1, message: "", digest: "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        DigestVector(
            algorithm: .sha1, message: twoBlocks, digest: "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        DigestVector(
            algorithm: .sha224, message: abc,
            digest: "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7"),
        DigestVector(
            algorithm: .sha224, message: "",
            digest: "d14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f"),
        DigestVector(
            algorithm: .sha224, message: twoBlocks,
            digest: "75388b16512776cc5dba5da1fd890150b0c6455cb4f58b1952522525"),
        DigestVector(
            algorithm: .sha256, message: abc,
            digest: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        DigestVector(
            algorithm: .sha256, message: "",
            digest: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        DigestVector(
            algorithm: .sha256, message: twoBlocks,
            digest: "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        DigestVector(
            algorithm: .sha384, message: abc,
            digest: "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed"
                + "8086072ba1e7cc2358baeca134c825a7"),
        DigestVector(
            algorithm: .sha384, message: "",
            digest: "38b060a751ac96384cd9327eb1b1e36a21fdb71114be07434c0cc7bf63f6e1da"
                + "274edebfe76f65fbd51ad2f14898b95b"),
        DigestVector(
            algorithm: .sha512, message: abc,
            digest: "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                + "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"),
        DigestVector(
            algorithm: .sha512, message: "",
            digest: "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
                + "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"),
    ]

    @Test("one-shot digests give the FIPS 180 known answers", arguments: vectors)
    func knownAnswers(_ vector: DigestVector) throws {
        let digest = vector.algorithm.hash(Array(vector.message.utf8))
        #expect(digest == (try hexBytes(vector.digest)))
        #expect(digest.count == vector.algorithm.length)
    }

    @Test(
        "multi-part digests give the FIPS 180 known answers, however the message is split", arguments: vectors
    )
    func multiPartKnownAnswers(_ vector: DigestVector) throws {
        let message = Array(vector.message.utf8)
        let expected = try hexBytes(vector.digest)
        for split in 0...message.count {
            let digest = try Digest(vector.algorithm)
            try digest.update(Array(message[..<split]))
            try message[split...].withUnsafeBytes { try digest.update($0) }
            #expect(try digest.finish() == expected, "split at \(split)")
        }
    }

    @Test("a million 'a' (FIPS 180's long message) digests to its known answer in one part or many")
    func millionA() throws {
        let message = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        let expected = try hexBytes("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        #expect(DigestAlgorithm.sha256.hash(message) == expected)
        let digest = try Digest(.sha256)
        var offset = 0
        var chunk = 1
        while offset < message.count {
            let end = min(message.count, offset + chunk)
            try digest.update(Array(message[offset..<end]))
            offset = end
            chunk = chunk * 3 + 1
        }
        #expect(try digest.finish() == expected)
    }

    @Test(
        "a multi-part digest equals the one-shot digest of the same bytes",
        arguments: DigestAlgorithm.allCases)
    func multiPartEqualsOneShot(_ algorithm: DigestAlgorithm) throws {
        let message = try SecureRandom.bytes(10_000)
        let digest = try Digest(algorithm)
        #expect(digest.algorithm == algorithm)
        for start in stride(from: 0, to: message.count, by: 777) {
            try digest.update(Array(message[start..<min(message.count, start + 777)]))
            try digest.update([])
        }
        let result = try digest.finish()
        #expect(result == algorithm.hash(message))
        #expect(result.count == algorithm.length)
    }

    @Test("hash takes any sequence of bytes")
    func hashTakesSequences() throws {
        let expected = try hexBytes("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(DigestAlgorithm.sha256.hash("abc".utf8) == expected)
        #expect(DigestAlgorithm.sha256.hash(Array("xabcx".utf8)[1..<4]) == expected)
    }

    @Test(
        "every algorithm has its output length",
        arguments: [
            (DigestAlgorithm.sha1, 20), (.sha224, 28), (.sha256, 32), (.sha384, 48), (.sha512, 64),
        ])
    func lengths(_ algorithm: DigestAlgorithm, length: Int) {
        #expect(algorithm.length == length)
        #expect(algorithm.hash([]).count == length)
    }
}

@Suite("Secure random bytes")
struct SecureRandomTests {
    @Test("bytes(count) returns exactly count bytes", arguments: [0, 1, 2, 31, 1 << 20, 3 << 20])
    func lengths(_ count: Int) throws {
        #expect(try SecureRandom.bytes(count).count == count)
    }

    @Test("a request larger than one slice is filled to the end")
    func largeRequestIsFilled() throws {
        // 3 MiB is three 1 MiB slices: an unfilled slice would stay all zero.
        let bytes = try SecureRandom.bytes(3 << 20)
        for slice in 0..<3 {
            let part = bytes[(slice << 20)..<((slice + 1) << 20)]
            #expect(part.contains { $0 != 0 }, "slice \(slice)")
            // Every byte value turns up in a mebibyte of random bytes.
            #expect(Set(part).count == 256, "slice \(slice)")
        }
        #expect(bytes.suffix(64).contains { $0 != 0 })
    }

    @Test("two calls give different bytes")
    func callsDiffer() throws {
        #expect(try SecureRandom.bytes(32) != SecureRandom.bytes(32))
        #expect(try SecureRandom.bytes(1 << 20) != SecureRandom.bytes(1 << 20))
    }

    @Test("fill writes the whole buffer, and an empty buffer is fine")
    func fill() throws {
        var buffer = [UInt8](repeating: 0, count: 4096)
        try buffer.withUnsafeMutableBytes { try SecureRandom.fill($0) }
        #expect(buffer.suffix(256).contains { $0 != 0 })
        var empty: [UInt8] = []
        try empty.withUnsafeMutableBytes { try SecureRandom.fill($0) }
        #expect(empty.isEmpty)
    }
}

@Suite("DER INTEGERs")
struct DERIntegerTests {
    /// DER INTEGERs and their content octets.
    static let integers: [Named<([UInt8], [UInt8])>] = [
        Named("zero", ([0x02, 0x01, 0x00], [0x00])),
        Named("one", ([0x02, 0x01, 0x01], [0x01])),
        Named("127", ([0x02, 0x01, 0x7F], [0x7F])),
        Named("128 needs a leading 00", ([0x02, 0x02, 0x00, 0x80], [0x00, 0x80])),
        Named("0x80AB", ([0x02, 0x03, 0x00, 0x80, 0xAB], [0x00, 0x80, 0xAB])),
        Named("-1", ([0x02, 0x01, 0xFF], [0xFF])),
        Named("-128", ([0x02, 0x01, 0x80], [0x80])),
        Named("-129", ([0x02, 0x02, 0xFF, 0x7F], [0xFF, 0x7F])),
        Named("a 20-byte serial", ([0x02, 0x14] + Array(1...20), Array(1...20))),
        Named(
            "a 200-byte integer (long-form length)",
            ([0x02, 0x81, 0xC8] + Array(repeating: 0x42, count: 200), Array(repeating: 0x42, count: 200))),
    ]

    @Test("content(of:) gives an INTEGER's content octets", arguments: integers)
    func content(_ integer: Named<([UInt8], [UInt8])>) {
        let (der, content) = integer.value
        #expect(DERInteger.content(of: der) == content)
    }

    @Test("encode(content:) gives back the DER INTEGER", arguments: integers)
    func encode(_ integer: Named<([UInt8], [UInt8])>) {
        let (der, content) = integer.value
        #expect(DERInteger.encode(content: content) == der)
    }

    @Test(
        "content(of:) refuses what is not exactly one DER INTEGER",
        arguments: [
            Named("nothing", []), Named("a tag alone", [0x02]), Named("no content", [0x02, 0x00]),
            Named("a length beyond the bytes", [0x02, 0x02, 0x01]),
            Named("a trailing byte", [0x02, 0x01, 0x05, 0x00]),
            Named("a leading 00 that is not needed", [0x02, 0x02, 0x00, 0x01]),
            Named("a leading FF that is not needed", [0x02, 0x02, 0xFF, 0x80]),
            Named("a long-form length that fits the short form", [0x02, 0x81, 0x01, 0x05]),
            Named("an OCTET STRING", [0x04, 0x01, 0x05]), Named("an ENUMERATED", [0x0A, 0x01, 0x05]),
        ] as [Named<[UInt8]>])
    func contentRefusesOtherBytes(_ bytes: Named<[UInt8]>) {
        #expect(DERInteger.content(of: bytes.value) == nil)
    }

    @Test(
        "encode(content:) refuses empty and non-minimal content",
        arguments: [
            [], [0x00, 0x01], [0x00, 0x00], [0xFF, 0x80], [0xFF, 0xFF],
        ] as [[UInt8]])
    func encodeRefusesNonMinimal(_ content: [UInt8]) {
        #expect(DERInteger.encode(content: content) == nil)
    }
}

@Suite("DER object identifiers")
struct ObjectIdentifierTests {
    @Test(
        "isValid accepts exactly one DER OBJECT IDENTIFIER",
        arguments: [
            Named("id-at-commonName (2.5.4.3)", ([0x06, 0x03, 0x55, 0x04, 0x03], true)),
            Named(
                "rsaEncryption", ([0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01], true)),
            Named("0.0", ([0x06, 0x01, 0x00], true)),
            Named("nothing", ([], false)),
            Named("no content", ([0x06, 0x00], false)),
            Named("a content cut short", ([0x06, 0x03, 0x55, 0x04], false)),
            Named("a trailing byte", ([0x06, 0x03, 0x55, 0x04, 0x03, 0x00], false)),
            Named("an unfinished arc", ([0x06, 0x01, 0x83], false)),
            Named("an arc with a leading 0x80", ([0x06, 0x03, 0x55, 0x80, 0x03], false)),
            Named("an OCTET STRING", ([0x04, 0x03, 0x55, 0x04, 0x03], false)),
            Named("a dotted string", (Array("2.5.4.3".utf8), false)),
        ] as [Named<([UInt8], Bool)>])
    func isValid(_ oid: Named<([UInt8], Bool)>) {
        let (der, valid) = oid.value
        #expect(DERObjectIdentifier.isValid(der) == valid)
    }
}
