import Foundation
import Testing

@testable import KeychainCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// RSA keys outside what the token's mechanism information advertises (1024…8192 bits) are
/// refused at import and parse, before any check whose cost grows with the size
/// (16,384-bit public keys imported at 3–10 s of CPU each).
@Suite struct KeySizeTests {
    /// A DER element: tag, minimal length, contents.
    static func der(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var length: [UInt8] = []
        if content.count < 0x80 {
            length = [UInt8(content.count)]
        } else {
            var rest = content.count
            var octets: [UInt8] = []
            while rest > 0 {
                octets.insert(UInt8(rest & 0xff), at: 0)
                rest >>= 8
            }
            length = [0x80 | UInt8(octets.count)] + octets
        }
        return [tag] + length + content
    }

    /// An odd modulus of exactly `bits` bits (not a real one: nothing here may factor it).
    static func modulus(bits: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0xa5, count: bits / 8)
        bytes[0] = 0xc0
        bytes[bytes.count - 1] |= 1
        return bytes
    }

    static func rsaPublicKey(bits: Int) -> [UInt8] {
        der(0x30, der(0x02, [0] + modulus(bits: bits)) + der(0x02, [1, 0, 1]))
    }

    static func subjectPublicKeyInfo(bits: Int) -> [UInt8] {
        let algorithm = der(
            0x30, der(0x06, [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01]) + [0x05, 0x00])
        return der(0x30, algorithm + der(0x03, [0] + rsaPublicKey(bits: bits)))
    }

    static func seconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    @Test("the accepted RSA sizes are the mechanism information's 1024…8192 bits")
    func advertisedBounds() {
        #expect(AsymmetricKey.rsaKeySizes == 1024...8192)
        #expect(AsymmetricKey.minimumRSABits == 1024)
        #expect(AsymmetricKey.maximumRSABits == 8192)
    }

    @Test(
        "RSA public keys outside 1024…8192 bits are refused at once, whatever form they come in",
        arguments: [512, 1016, 8200, 16384])
    func publicKeysOutOfRangeAreRefused(bits: Int) throws {
        let started = Self.seconds()
        let fromInfo = #expect(throws: CryptoError.self) {
            try AsymmetricKey(subjectPublicKeyInfo: Self.subjectPublicKeyInfo(bits: bits))
        }
        #expect(fromInfo?.code == .unsupported)
        #expect(throws: CryptoError.self) { try AsymmetricKey(rsaPublicKey: Self.rsaPublicKey(bits: bits)) }
        let fromParts = #expect(throws: CryptoError.self) {
            try AsymmetricKey(
                components: .rsaPublic(modulus: Self.modulus(bits: bits), publicExponent: [1, 0, 1]))
        }
        #expect(fromParts?.code == .unsupported)
        let fromPrivateParts = #expect(throws: CryptoError.self) {
            let part = [UInt8](repeating: 3, count: bits / 16)
            _ = try AsymmetricKey(
                components: .rsaPrivate(
                    modulus: Self.modulus(bits: bits), publicExponent: [1, 0, 1],
                    privateExponent: Self.modulus(bits: bits),
                    prime1: part, prime2: part, exponent1: part, exponent2: part, coefficient: part))
        }
        #expect(fromPrivateParts?.code == .unsupported)
        #expect(Self.seconds() - started < 1)
    }

    @Test("RSA public keys of 1024 to 8192 bits parse", arguments: [1024, 2048, 4096, 8192])
    func publicKeysInRangeParse(bits: Int) throws {
        let key = try AsymmetricKey(subjectPublicKeyInfo: Self.subjectPublicKeyInfo(bits: bits))
        #expect(key.algorithm == .rsa(bits: bits))
        #expect(try AsymmetricKey(rsaPublicKey: Self.rsaPublicKey(bits: bits)).bits == bits)
    }

    @Test("a 768-bit RSA private key is refused at import")
    func smallPrivateKeyIsRefused() throws {
        try withTemporaryDirectory { directory in
            try OpenSSL.run(
                [
                    "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:768", "-outform", "DER",
                    "-out",
                    "small.der",
                ], in: directory)
            let der = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file("small.der"))))
            let error = #expect(throws: CryptoError.self) { try AsymmetricKey(privateKeyDER: der) }
            #expect(error?.code == .unsupported)
        }
    }
}
