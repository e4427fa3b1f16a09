import Testing

@testable import KeychainCrypto

/// `unwrapECPoint` asks OpenSSL's parser only when the value's DER length covers it exactly
/// (`hasWholeLength`): the check must never change an answer.
@Suite struct ECPointUnwrapTests {
    @Test("a value whose length bytes do not cover it exactly is never one DER OCTET STRING")
    func lengthCheckRefusesOnlyWhatTheParserRefuses() throws {
        var values: [[UInt8]] = []
        for _ in 0..<500 {
            values.append([0x04] + (try SecureRandom.bytes(64)))
            values.append([0x04] + (try SecureRandom.bytes(Int.random(in: 0...140))))
        }
        let point = try AsymmetricKey.generate(.ec(.p256)).publicPoint ?? []
        #expect(point.count == 65)
        values += [
            [0x04], [0x04, 0x00], [0x04, 0x80], [0x04, 0x81], [0x04, 0x89] + [UInt8](repeating: 0, count: 9),
            DEROctetString.encode(point) + [0],
        ]
        for value in values where !AsymmetricKey.hasWholeLength(value) {
            #expect(DEROctetString.decode(value) == nil, "\(value)")
        }
    }

    @Test("a point wrapped with its length in short, long or non-minimal long form is unwrapped as before")
    func everyLengthFormUnwraps() throws {
        let point = try AsymmetricKey.generate(.ec(.p256)).publicPoint ?? []
        #expect(point.count == 65)
        for wrapped in [
            [0x04, 0x41] + point, [0x04, 0x81, 0x41] + point, [0x04, 0x82, 0x00, 0x41] + point,
        ] {
            #expect(AsymmetricKey.hasWholeLength(wrapped))
            let parsed = DEROctetString.decode(wrapped)
            #expect(AsymmetricKey.unwrapECPoint(wrapped) == (parsed == nil ? wrapped : point))
        }
        #expect(AsymmetricKey.unwrapECPoint([0x04, 0x41] + point) == point)
        #expect(AsymmetricKey.unwrapECPoint(point) == point)
    }
}
