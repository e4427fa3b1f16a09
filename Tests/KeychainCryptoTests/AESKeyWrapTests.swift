import KeychainCrypto
import Testing

/// A key-wrap known answer: key-encryption key, key data and wrapped key in hex.
struct WrapVector: Sendable, CustomTestStringConvertible {
    let name: String
    let kek: String
    let key: String
    let wrapped: String
    let padded: Bool

    var testDescription: String { name }
}

private let kek128 = "000102030405060708090a0b0c0d0e0f"
private let kek192 = "000102030405060708090a0b0c0d0e0f1011121314151617"
private let kek256 = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
private let data128 = "00112233445566778899aabbccddeeff"
private let data192 = "00112233445566778899aabbccddeeff0001020304050607"
private let data256 = "00112233445566778899aabbccddeeff000102030405060708090a0b0c0d0e0f"
private let kek5649 = "5840df6e29b02af1ab493b705bf16ea1ae8338f4dcc176a8"

@Suite("AES key wrap")
struct AESKeyWrapTests {
    /// RFC 3394 §4.1–4.6 and RFC 5649 §6 (both examples).
    static let vectors: [WrapVector] = [
        WrapVector(
            name: "RFC 3394 4.1: 128-bit key under a 128-bit KEK", kek: kek128, key: data128,
            wrapped: "1fa68b0a8112b447aef34bd8fb5a7b829d3e862371d2cfe5", padded: false),
        WrapVector(
            name: "RFC 3394 4.2: 128-bit key under a 192-bit KEK", kek: kek192, key: data128,
            wrapped: "96778b25ae6ca435f92b5b97c050aed2468ab8a17ad84e5d", padded: false),
        WrapVector(
            name: "RFC 3394 4.3: 128-bit key under a 256-bit KEK", kek: kek256, key: data128,
            wrapped: "64e8c3f9ce0f5ba263e9777905818a2a93c8191e7d6e8ae7", padded: false),
        WrapVector(
            name: "RFC 3394 4.4: 192-bit key under a 192-bit KEK", kek: kek192, key: data192,
            wrapped: "031d33264e15d33268f24ec260743edce1c6c7ddee725a936ba814915c6762d2", padded: false),
        WrapVector(
            name: "RFC 3394 4.5: 192-bit key under a 256-bit KEK", kek: kek256, key: data192,
            wrapped: "a8f9bc1612c68b3ff6e6f4fbe30e71e4769c8b80a32cb8958cd5d17d6b254da1", padded: false),
        WrapVector(
            name: "RFC 3394 4.6: 256-bit key under a 256-bit KEK", kek: kek256, key: data256,
            wrapped: "28c9f404c4b810f4cbccb35cfb87f8263f5786e2d80ed326cbc7f0e71a99f43bfb988b9b7a02dd21",
            padded: false),
        WrapVector(
            name: "RFC 5649 §6: 20 octets", kek: kek5649, key: "c37b7e6492584340bed12207808941155068f738",
            wrapped: "138bdeaa9b8fa7fc61f97742e72248ee5ae6ae5360d1ae6a5f54f373fa543b6a", padded: true),
        WrapVector(
            name: "RFC 5649 §6: 7 octets", kek: kek5649, key: "466f7250617369",
            wrapped: "afbeb0f07dfbf5419200f2ccb50bb24f", padded: true),
    ]

    @Test("known answers wrap and unwrap as the RFCs give them", arguments: vectors)
    func knownAnswer(vector: WrapVector) throws {
        let kek = SecretBytes(try hexBytes(vector.kek))
        let key = SecretBytes(try hexBytes(vector.key))
        let wrapped = try hexBytes(vector.wrapped)
        #expect(try AESKeyWrap.wrap(key, key: kek, padded: vector.padded) == wrapped)
        #expect(try AESKeyWrap.unwrap(wrapped, key: kek, padded: vector.padded).isEqual(to: key))
    }

    @Test("unwrapping garbage, under another key or another IV fails with its own code")
    func garbage() throws {
        let kek = SecretBytes(try hexBytes(kek128))
        let other = SecretBytes(try hexBytes(kek256))
        for padded in [false, true] {
            let wrapped = try AESKeyWrap.wrap(SecretBytes(try hexBytes(data256)), key: kek, padded: padded)
            expectCryptoError(.authenticationFailed, "other key") {
                _ = try AESKeyWrap.unwrap(wrapped, key: other, padded: padded)
            }
            var altered = wrapped
            altered[3] ^= 0x80
            expectCryptoError(.authenticationFailed, "altered") {
                _ = try AESKeyWrap.unwrap(altered, key: kek, padded: padded)
            }
            expectCryptoError(.authenticationFailed, "zeros") {
                _ = try AESKeyWrap.unwrap([UInt8](repeating: 0, count: 40), key: kek, padded: padded)
            }
            let iv: [UInt8] = padded ? [1, 2, 3, 4] : [1, 2, 3, 4, 5, 6, 7, 8]
            let withIV = try AESKeyWrap.wrap(
                SecretBytes(try hexBytes(data256)), key: kek, padded: padded, iv: iv)
            #expect(withIV != wrapped)
            #expect(
                try AESKeyWrap.unwrap(withIV, key: kek, padded: padded, iv: iv).copyBytes()
                    == hexBytes(data256))
            expectCryptoError(.authenticationFailed, "default IV") {
                _ = try AESKeyWrap.unwrap(withIV, key: kek, padded: padded)
            }
        }
        // The RFC 5649 padding check: a 3394-wrapped key does not unwrap as 5649, nor back.
        let plain = try AESKeyWrap.wrap(SecretBytes(try hexBytes(data256)), key: kek, padded: false)
        expectCryptoError(.authenticationFailed) { _ = try AESKeyWrap.unwrap(plain, key: kek, padded: true) }
    }

    @Test("RFC 3394 wraps a key of any other length zero-padded to whole semiblocks (PKCS#11 v2.40 §2.14.3)")
    func zeroPadding() throws {
        let kek = SecretBytes(try hexBytes(kek128))
        for length in [9, 13, 15, 17, 23] {
            let key = [UInt8](repeating: 0xA5, count: length)
            let padded = key + [UInt8](repeating: 0, count: (8 - length % 8) % 8)
            let wrapped = try AESKeyWrap.wrap(SecretBytes(key), key: kek, padded: false)
            let explicit = try AESKeyWrap.wrap(SecretBytes(padded), key: kek, padded: false)
            #expect(wrapped == explicit, "\(length)")
            #expect(try AESKeyWrap.unwrap(wrapped, key: kek, padded: false).copyBytes() == padded)
        }
    }

    @Test("lengths no key wrap takes or makes are refused, zero length included")
    func badLengths() throws {
        let kek = SecretBytes(try hexBytes(kek128))
        // RFC 3394 wraps two semiblocks or more, after PKCS#11's zero padding (v2.40 §2.14.3).
        for length in [0, 1, 7, 8] {
            expectCryptoError(.invalidInput, "RFC 3394 wrap of \(length)") {
                _ = try AESKeyWrap.wrap(
                    SecretBytes([UInt8](repeating: 1, count: length)), key: kek, padded: false)
            }
        }
        expectCryptoError(.invalidInput) { _ = try AESKeyWrap.wrap(SecretBytes([]), key: kek, padded: true) }
        for length in [0, 8, 16, 25] {
            expectCryptoError(.invalidInput, "RFC 3394 unwrap of \(length)") {
                _ = try AESKeyWrap.unwrap([UInt8](repeating: 1, count: length), key: kek, padded: false)
            }
        }
        for length in [0, 8, 17] {
            expectCryptoError(.invalidInput, "RFC 5649 unwrap of \(length)") {
                _ = try AESKeyWrap.unwrap([UInt8](repeating: 1, count: length), key: kek, padded: true)
            }
        }
        expectCryptoError(.invalidInput, "KEK length") {
            _ = try AESKeyWrap.wrap(
                SecretBytes(try hexBytes(data128)), key: SecretBytes([1, 2, 3]), padded: false)
        }
        expectCryptoError(.invalidInput, "IV length") {
            _ = try AESKeyWrap.wrap(
                SecretBytes(try hexBytes(data128)), key: kek, padded: false, iv: [1, 2, 3, 4])
        }
        // One byte wraps with padding (RFC 5649 §4.1: a single 64-bit block, ECB-encrypted).
        let one = try AESKeyWrap.wrap(SecretBytes([0x42]), key: kek, padded: true)
        #expect(one.count == 16)
        #expect(try AESKeyWrap.unwrap(one, key: kek, padded: true).copyBytes() == [0x42])
    }
}
