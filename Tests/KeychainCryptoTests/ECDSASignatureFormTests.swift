import Testing

@testable import KeychainCrypto

/// OpenSSL's DER ECDSA-Sig-Value to PKCS#11's r ‖ s (`writeRawECDSA`): each integer lands
/// right-aligned in its half whatever its encoded length, and only a SEQUENCE of two
/// non-negative INTEGERs that fit the curve, with nothing after it, is read.
@Suite("ECDSA signatures from DER to r ‖ s")
struct ECDSASignatureFormTests {
    /// r ‖ s with r and s each `width` bytes: short values (leading zero bytes, which DER
    /// drops), values whose top bit is set (which DER prefixes with a zero byte), and others.
    private static func samples(width: Int) -> [[UInt8]] {
        let one = [UInt8](repeating: 0, count: width - 1) + [1]
        let high = [0x80] + [UInt8](repeating: 0, count: width - 1)
        let full = [UInt8](repeating: 0xFF, count: width)
        let short = [UInt8](repeating: 0, count: 2) + [UInt8](repeating: 0x7F, count: width - 2)
        let mixed = (0..<width).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        return [one + full, high + one, full + short, short + high, mixed + mixed.reversed()]
    }

    @Test(
        "every r ‖ s OpenSSL encodes comes back as it was, on every curve",
        arguments: [EllipticCurve.p256, .p384, .p521])
    func roundTrip(_ curve: EllipticCurve) throws {
        let key = try AsymmetricKey.generate(.ec(curve))
        let width = key.ecdsaComponentLength
        for raw in Self.samples(width: width) {
            let der = try #require(key.ecdsaSignatureDER(fromRaw: raw))
            #expect(try key.rawECDSA(fromDER: der) == raw)
            #expect(key.ecdsaSignatureRaw(fromDER: der) == raw)
        }
        let signature = try key.sign([1, 2, 3], scheme: .ecdsa(.sha256))
        let der = try #require(key.ecdsaSignatureDER(fromRaw: signature))
        #expect(try key.rawECDSA(fromDER: der) == signature)
    }

    @Test(
        "a DER that is not one SEQUENCE of two non-negative INTEGERs fitting the curve is refused",
        arguments: [
            [0x30, 0x06, 0x02, 0x01, 0x80, 0x02, 0x01, 0x01],  // r negative
            [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01, 0x00],  // a byte after the SEQUENCE
            [0x30, 0x05, 0x02, 0x01, 0x01, 0x02, 0x00],  // s empty
            [0x30, 0x06, 0x02, 0x01, 0x01, 0x04, 0x01, 0x01],  // s an OCTET STRING
            [0x31, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01],  // a SET
            [0x30, 0x80, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01, 0x00, 0x00],  // indefinite length
            [0x30, 0x03, 0x02, 0x01, 0x01],  // s missing
            [0x30, 0x07, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01],  // the SEQUENCE longer than the input
        ] as [[UInt8]])
    func malformedRefused(_ der: [UInt8]) throws {
        let key = try AsymmetricKey.generate(.ec(.p256))
        #expect(throws: CryptoError.self) { _ = try key.rawECDSA(fromDER: der) }
        #expect(key.ecdsaSignatureRaw(fromDER: der) == nil)
    }

    @Test("an integer wider than the curve, or not in DER's shortest form, is refused")
    func widthAndFormChecked() throws {
        let key = try AsymmetricKey.generate(.ec(.p256))
        let wide = [UInt8](repeating: 0x11, count: 33)
        let tooWide: [UInt8] = [0x30, 0x26, 0x02, 0x21] + wide + [0x02, 0x01, 0x01]
        #expect(throws: CryptoError.self) { _ = try key.rawECDSA(fromDER: tooWide) }
        let padded: [UInt8] = [0x30, 0x08, 0x02, 0x03, 0x00, 0x00, 0x05, 0x02, 0x01, 0x07]
        #expect(throws: CryptoError.self) { _ = try key.rawECDSA(fromDER: padded) }
        let shortest: [UInt8] = [0x30, 0x06, 0x02, 0x01, 0x05, 0x02, 0x01, 0x07]
        let raw = try key.rawECDSA(fromDER: shortest)
        #expect(raw == [UInt8](repeating: 0, count: 31) + [5] + [UInt8](repeating: 0, count: 31) + [7])
    }
}
