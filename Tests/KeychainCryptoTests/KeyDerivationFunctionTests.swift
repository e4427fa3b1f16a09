import KeychainCrypto
import Testing

/// An RFC 5869 Appendix A test case (HKDF-SHA256).
struct HKDFVector: Sendable, CustomTestStringConvertible {
    let name: String
    let ikm: [UInt8]
    let salt: [UInt8]
    let info: [UInt8]
    let prk: String
    let okm: String

    var testDescription: String { name }
}

private func range(_ bounds: ClosedRange<UInt8>) -> [UInt8] { Array(bounds) }

@Suite("Key derivation functions")
struct KeyDerivationFunctionTests {
    static let vectors: [HKDFVector] = [
        HKDFVector(
            name: "RFC 5869 A.1", ikm: [UInt8](repeating: 0x0b, count: 22), salt: range(0x00...0x0c),
            info: range(0xf0...0xf9),
            prk: "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5",
            okm: "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"),
        HKDFVector(
            name: "RFC 5869 A.2 (long inputs)", ikm: range(0x00...0x4f), salt: range(0x60...0xaf),
            info: range(0xb0...0xff),
            prk: "06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244",
            okm: "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c"
                + "59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71"
                + "cc30c58179ec3e87c14c01d5c1f3434f1d87"),
        HKDFVector(
            name: "RFC 5869 A.3 (empty salt and info)", ikm: [UInt8](repeating: 0x0b, count: 22), salt: [],
            info: [],
            prk: "19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04",
            okm: "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8"),
    ]

    @Test("HKDF-SHA256 extract, expand and both give RFC 5869's answers", arguments: vectors)
    func hkdf(vector: HKDFVector) throws {
        let prk = try hexBytes(vector.prk)
        let okm = try hexBytes(vector.okm)
        let ikm = SecretBytes(vector.ikm)
        let both = try KeyDerivationFunction.hkdf(
            .extractAndExpand, digest: .sha256, key: ikm, salt: vector.salt, info: vector.info,
            length: okm.count)
        #expect(both.copyBytes() == okm)
        let extracted = try KeyDerivationFunction.hkdf(
            .extractOnly, digest: .sha256, key: ikm, salt: vector.salt, info: vector.info, length: 32)
        #expect(extracted.copyBytes() == prk)
        let expanded = try KeyDerivationFunction.hkdf(
            .expandOnly, digest: .sha256, key: SecretBytes(prk), salt: [], info: vector.info,
            length: okm.count)
        #expect(expanded.copyBytes() == okm)
        // A shorter output is a prefix (RFC 5869 §2.3: the first L octets of T).
        let short = try KeyDerivationFunction.hkdf(
            .extractAndExpand, digest: .sha256, key: ikm, salt: vector.salt, info: vector.info, length: 5)
        #expect(short.copyBytes() == Array(okm.prefix(5)))
    }

    @Test("HKDF refuses lengths beyond 255 digests, zero, negative, and over-long info")
    func hkdfBounds() throws {
        let key = SecretBytes([1, 2, 3])
        for (digest, length) in [
            (DigestAlgorithm.sha256, 255 * 32 + 1), (.sha1, 255 * 20 + 1), (.sha256, 0), (.sha256, -1),
        ] {
            expectCryptoError(.invalidInput, "\(digest) \(length)") {
                _ = try KeyDerivationFunction.hkdf(
                    .extractAndExpand, digest: digest, key: key, salt: [], info: [], length: length)
            }
        }
        expectCryptoError(.invalidInput) {
            _ = try KeyDerivationFunction.hkdf(
                .extractOnly, digest: .sha256, key: key, salt: [], info: [], length: 33)
        }
        expectCryptoError(.invalidInput) {
            _ = try KeyDerivationFunction.hkdf(
                .extractAndExpand, digest: .sha256, key: key, salt: [],
                info: [UInt8](repeating: 0, count: 1025),
                length: 32)
        }
        // The largest length works.
        let longest = try KeyDerivationFunction.hkdf(
            .extractAndExpand, digest: .sha512, key: key, salt: [], info: [], length: 255 * 64)
        #expect(longest.count == 255 * 64)
    }

    @Test("HKDF of an empty key is RFC 5869's construction over HMAC")
    func hkdfEmptyKey() throws {
        let salt: [UInt8] = [5, 6, 7]
        let info: [UInt8] = [9]
        let prk = try runMAC(.hmac(.sha256), key: salt, message: [])
        let okm = try runMAC(.hmac(.sha256), key: prk, message: info + [1])
        let derived = try KeyDerivationFunction.hkdf(
            .extractAndExpand, digest: .sha256, key: SecretBytes([]), salt: salt, info: info, length: 32)
        #expect(derived.copyBytes() == okm)
    }

    @Test(
        "the X9.63 KDF is SEC 1's construction: SHA(Z ‖ counter ‖ SharedInfo) blocks",
        arguments: DigestAlgorithm.allCases)
    func x963Definition(digest: DigestAlgorithm) throws {
        let secret: [UInt8] = Array(0..<24)
        let sharedInfo: [UInt8] = [0xde, 0xad, 0xbe, 0xef]
        let length = digest.length * 2 + 5
        var expected: [UInt8] = []
        var counter: UInt32 = 1
        while expected.count < length {
            let counterBytes = withUnsafeBytes(of: counter.bigEndian) { Array($0) }
            expected += digest.hash(secret + counterBytes + sharedInfo)
            counter += 1
        }
        let derived = try KeyDerivationFunction.x963(
            SecretBytes(secret), sharedInfo: sharedInfo, digest: digest, length: length)
        #expect(derived.copyBytes() == Array(expected.prefix(length)))
    }

    @Test("the X9.63 KDF agrees with the openssl command line")
    func x963OpenSSL() throws {
        let secret: [UInt8] = Array(100..<132)
        let sharedInfo: [UInt8] = Array(1...9)
        let derived = try KeyDerivationFunction.x963(
            SecretBytes(secret), sharedInfo: sharedInfo, digest: .sha256, length: 40)
        let hex = { (bytes: [UInt8]) in bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }
        let output = try withTemporaryDirectory { directory in
            try OpenSSL.run(
                [
                    "kdf", "-keylen", "40", "-kdfopt", "digest:SHA256", "-kdfopt", "hexsecret:" + hex(secret),
                    "-kdfopt", "hexinfo:" + hex(sharedInfo), "X963KDF",
                ], in: directory)
        }
        #expect(derived.copyBytes() == (try hexBytes(output.trimmingCharacters(in: .whitespacesAndNewlines))))
    }

    @Test("the X9.63 KDF refuses an empty secret and lengths out of range; empty shared info works")
    func x963Bounds() throws {
        for length in [0, -5, KeyDerivationFunction.maximumX963Length + 1] {
            expectCryptoError(.invalidInput, "\(length)") {
                _ = try KeyDerivationFunction.x963(
                    SecretBytes([1]), sharedInfo: [], digest: .sha256, length: length)
            }
        }
        expectCryptoError(.invalidInput) {
            _ = try KeyDerivationFunction.x963(SecretBytes([]), sharedInfo: [], digest: .sha256, length: 16)
        }
        let plain = try KeyDerivationFunction.x963(
            SecretBytes([7, 7]), sharedInfo: [], digest: .sha1, length: 3)
        #expect(plain.copyBytes() == Array(DigestAlgorithm.sha1.hash([7, 7, 0, 0, 0, 1]).prefix(3)))
    }
}
