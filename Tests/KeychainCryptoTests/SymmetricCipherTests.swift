import KeychainCrypto
import Testing

/// A known answer for one AES mode: key, mode, plaintext and ciphertext in hex (for GCM the
/// ciphertext is followed by the tag).
struct CipherVector: Sendable, CustomTestStringConvertible {
    let name: String
    let key: String
    let mode: BlockCipherMode
    let plaintext: String
    let ciphertext: String

    var testDescription: String { name }
}

/// The four plaintext blocks of NIST SP 800-38A Appendix F.
private let sp80038aPlaintext =
    "6bc1bee22e409f96e93d7e117393172a" + "ae2d8a571e03ac9c9eb76fac45af8e51"
    + "30c81c46a35ce411e5fbc1191a0a52ef" + "f69f2445df4f9b17ad2b417be66c3710"
private let aes128Key = "2b7e151628aed2a6abf7158809cf4f3c"
private let aes256Key = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4"
private let cbcIV = "000102030405060708090a0b0c0d0e0f"
private let ctrBlock = "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"

private func bytes(_ hex: String) -> [UInt8] { (try? hexBytes(hex)) ?? [] }

/// Runs a whole operation, the input fed in `pieces` (sizes, cycled; empty: one update).
func runCipher(
    key: [UInt8], mode: BlockCipherMode, encrypting: Bool, input: [UInt8], pieces: [Int] = []
) throws -> [UInt8] {
    let cipher = try SymmetricCipher(key: SecretBytes(key), mode: mode, encrypting: encrypting)
    var output: [UInt8] = []
    var offset = 0
    var index = 0
    repeat {
        let size = pieces.isEmpty ? input.count : min(pieces[index % pieces.count], input.count - offset)
        let expected = cipher.updateOutputLength(forInput: size)
        let part = try input[offset..<offset + size].withUnsafeBytes { try cipher.update($0) }
        #expect(
            part.count == expected,
            "updateOutputLength(\(size)) said \(expected), update returned \(part.count)")
        output += part
        offset += size
        index += 1
    } while offset < input.count
    let finishLength = cipher.finishOutputLength()
    let exact = cipher.finishLengthIsExact
    let last = try cipher.finish()
    if exact {
        #expect(last.count == finishLength)
    } else {
        #expect(last.count <= finishLength)
    }
    return output + last
}

@Suite("AES modes")
struct SymmetricCipherTests {
    /// NIST SP 800-38A F.1.1, F.1.5 (ECB), F.2.1, F.2.5 (CBC), F.5.1, F.5.5 (CTR); the GCM
    /// specification's test cases 2, 3, 4 and 6 (McGrew and Viega, "The Galois/Counter Mode
    /// of Operation", Appendix B), 4 also with a tag truncated to 12 bytes.
    static let vectors: [CipherVector] = [
        CipherVector(
            name: "AES-128-ECB (SP 800-38A F.1.1)", key: aes128Key, mode: .ecb, plaintext: sp80038aPlaintext,
            ciphertext: "3ad77bb40d7a3660a89ecaf32466ef97" + "f5d3d58503b9699de785895a96fdbaaf"
                + "43b1cd7f598ece23881b00e3ed030688" + "7b0c785e27e8ad3f8223207104725dd4"),
        CipherVector(
            name: "AES-256-ECB (SP 800-38A F.1.5)", key: aes256Key, mode: .ecb, plaintext: sp80038aPlaintext,
            ciphertext: "f3eed1bdb5d2a03c064b5a7e3db181f8" + "591ccb10d410ed26dc5ba74a31362870"
                + "b6ed21b99ca6f4f9f153e7b1beafed1d" + "23304b7a39f9f3ff067d8d8f9e24ecc7"),
        CipherVector(
            name: "AES-128-CBC (SP 800-38A F.2.1)", key: aes128Key, mode: .cbc(iv: bytes(cbcIV)),
            plaintext: sp80038aPlaintext,
            ciphertext: "7649abac8119b246cee98e9b12e9197d" + "5086cb9b507219ee95db113a917678b2"
                + "73bed6b8e3c1743b7116e69e22229516" + "3ff1caa1681fac09120eca307586e1a7"),
        CipherVector(
            name: "AES-256-CBC (SP 800-38A F.2.5)", key: aes256Key, mode: .cbc(iv: bytes(cbcIV)),
            plaintext: sp80038aPlaintext,
            ciphertext: "f58c4c04d6e5f1ba779eabfb5f7bfbd6" + "9cfc4e967edb808d679f777bc6702c7d"
                + "39f23369a9d9bacfa530e26304231461" + "b2eb05e2c39be9fcda6c19078c6a9d1b"),
        CipherVector(
            name: "AES-128-CTR (SP 800-38A F.5.1)", key: aes128Key,
            mode: .ctr(counterBlock: bytes(ctrBlock), counterBits: 128), plaintext: sp80038aPlaintext,
            ciphertext: "874d6191b620e3261bef6864990db6ce" + "9806f66b7970fdff8617187bb9fffdff"
                + "5ae4df3edbd5d35e5b4f09020db03eab" + "1e031dda2fbe03d1792170a0f3009cee"),
        CipherVector(
            name: "AES-256-CTR (SP 800-38A F.5.5)", key: aes256Key,
            mode: .ctr(counterBlock: bytes(ctrBlock), counterBits: 128), plaintext: sp80038aPlaintext,
            ciphertext: "601ec313775789a5b7a7f504bbf3d228" + "f443e3ca4d62b59aca84e990cacaf5c5"
                + "2b0930daa23de94ce87017ba2d84988d" + "dfc9c58db67aada613c2dd08457941a6"),
        CipherVector(
            name: "AES-128-GCM, empty AAD (GCM test case 2)", key: "00000000000000000000000000000000",
            mode: .gcm(iv: bytes("000000000000000000000000"), additionalData: [], tagLength: 16),
            plaintext: "00000000000000000000000000000000",
            ciphertext: "0388dace60b6a392f328c2b971b2fe78" + "ab6e47d42cec13bdf53a67b21257bddf"),
        CipherVector(
            name: "AES-128-GCM, empty plaintext and AAD (GCM test case 1)",
            key: "00000000000000000000000000000000",
            mode: .gcm(iv: bytes("000000000000000000000000"), additionalData: [], tagLength: 16),
            plaintext: "", ciphertext: "58e2fccefa7e3061367f1d57a4e7455a"),
        CipherVector(
            name: "AES-128-GCM, 96-bit IV (GCM test case 3)", key: "feffe9928665731c6d6a8f9467308308",
            mode: .gcm(iv: bytes("cafebabefacedbaddecaf888"), additionalData: [], tagLength: 16),
            plaintext: "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
                + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
            ciphertext: "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
                + "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985"
                + "4d5c2af327cd64a62cf35abd2ba6fab4"),
        CipherVector(
            name: "AES-128-GCM with AAD (GCM test case 4)", key: "feffe9928665731c6d6a8f9467308308",
            mode: .gcm(iv: bytes("cafebabefacedbaddecaf888"), additionalData: bytes(gcmAAD), tagLength: 16),
            plaintext: gcmPlaintext60,
            ciphertext: "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
                + "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091"
                + "5bc94fbc3221a5db94fae95ae7121a47"),
        CipherVector(
            name: "AES-128-GCM with AAD and a 12-byte tag (GCM test case 4, truncated)",
            key: "feffe9928665731c6d6a8f9467308308",
            mode: .gcm(iv: bytes("cafebabefacedbaddecaf888"), additionalData: bytes(gcmAAD), tagLength: 12),
            plaintext: gcmPlaintext60,
            ciphertext: "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
                + "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091" + "5bc94fbc3221a5db94fae95a"),
        CipherVector(
            name: "AES-128-GCM with a 60-byte IV (GCM test case 6)", key: "feffe9928665731c6d6a8f9467308308",
            mode: .gcm(
                iv: bytes(
                    "9313225df88406e555909c5aff5269aa6a7a9538534f7da1e4c303d2a318a728"
                        + "c3c0c95156809539fcf0e2429a6b525416aedbf5a0de6a57a637b39b"),
                additionalData: bytes(gcmAAD), tagLength: 16),
            plaintext: gcmPlaintext60,
            ciphertext: "8ce24998625615b603a033aca13fb894be9112a5c3a211a8ba262a3cca7e2ca7"
                + "01e4a9a4fba43c90ccdcb281d48c7c6fd62875d2aca417034c34aee5"
                + "619cc5aefffe0bfa462af43c1699d050"),
    ]

    @Test("known answers encrypt and decrypt as the standards give them", arguments: vectors)
    func knownAnswer(vector: CipherVector) throws {
        let key = try hexBytes(vector.key)
        let plaintext = try hexBytes(vector.plaintext)
        let ciphertext = try hexBytes(vector.ciphertext)
        #expect(try runCipher(key: key, mode: vector.mode, encrypting: true, input: plaintext) == ciphertext)
        #expect(try runCipher(key: key, mode: vector.mode, encrypting: false, input: ciphertext) == plaintext)
    }

    @Test("multi-part in odd-sized pieces agrees with single-part", arguments: vectors)
    func multiPart(vector: CipherVector) throws {
        let key = try hexBytes(vector.key)
        let plaintext = try hexBytes(vector.plaintext)
        let ciphertext = try hexBytes(vector.ciphertext)
        for pieces in [[1], [7], [15], [17], [1, 7, 15, 17, 0]] {
            #expect(
                try runCipher(key: key, mode: vector.mode, encrypting: true, input: plaintext, pieces: pieces)
                    == ciphertext, "pieces \(pieces)")
            #expect(
                try runCipher(
                    key: key, mode: vector.mode, encrypting: false, input: ciphertext, pieces: pieces)
                    == plaintext, "pieces \(pieces)")
        }
    }

    @Test("CBC-PAD pads to whole blocks and decrypts back, whatever the length and the pieces")
    func cbcPadRoundTrip() throws {
        let key = try hexBytes(aes256Key)
        let mode = BlockCipherMode.cbcPad(iv: try hexBytes(cbcIV))
        let message = Array((0..<70).map { UInt8($0) })
        for length in [0, 1, 15, 16, 17, 32, 70] {
            let plaintext = Array(message.prefix(length))
            let ciphertext = try runCipher(key: key, mode: mode, encrypting: true, input: plaintext)
            #expect(ciphertext.count == (length / 16 + 1) * 16)
            // The first blocks are plain CBC (SP 800-38A F.2.5 when the input is its plaintext).
            for pieces in [[], [1], [7], [15], [17]] {
                #expect(
                    try runCipher(key: key, mode: mode, encrypting: false, input: ciphertext, pieces: pieces)
                        == plaintext, "length \(length), pieces \(pieces)")
                #expect(
                    try runCipher(key: key, mode: mode, encrypting: true, input: plaintext, pieces: pieces)
                        == ciphertext, "length \(length), pieces \(pieces)")
            }
        }
        let standard = try runCipher(
            key: key, mode: mode, encrypting: true, input: try hexBytes(sp80038aPlaintext))
        #expect(
            Array(standard.prefix(64))
                == (try hexBytes(
                    "f58c4c04d6e5f1ba779eabfb5f7bfbd6" + "9cfc4e967edb808d679f777bc6702c7d"
                        + "39f23369a9d9bacfa530e26304231461" + "b2eb05e2c39be9fcda6c19078c6a9d1b")))
        #expect(standard.count == 80)
    }

    @Test("zero-length input works in every mode")
    func zeroLength() throws {
        let key = try hexBytes(aes128Key)
        let iv = try hexBytes(cbcIV)
        for mode in [BlockCipherMode.ecb, .cbc(iv: iv), .ctr(counterBlock: iv, counterBits: 32)] {
            #expect(try runCipher(key: key, mode: mode, encrypting: true, input: []) == [])
            #expect(try runCipher(key: key, mode: mode, encrypting: false, input: []) == [])
        }
        // GCM with empty plaintext (and empty or some AAD): the tag alone, which decrypts to nothing.
        for additionalData: [UInt8] in [[], [1, 2, 3]] {
            let gcm = BlockCipherMode.gcm(
                iv: Array(iv.prefix(12)), additionalData: additionalData, tagLength: 16)
            let tag = try runCipher(key: key, mode: gcm, encrypting: true, input: [])
            #expect(tag.count == 16)
            #expect(try runCipher(key: key, mode: gcm, encrypting: false, input: tag) == [])
        }
    }
}

private let gcmAAD = "feedfacedeadbeeffeedfacedeadbeefabaddad2"
private let gcmPlaintext60 =
    "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
    + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
