import Testing

@testable import KeychainCrypto

/// A kept signing context hashes messages with its own digest context and writes ECDSA
/// signatures straight from OpenSSL's DER into r ‖ s; every signature it makes must be what a
/// fresh context makes of the hash, message after message.
@Suite("A kept signing context, message after message")
struct KeptSigningContextTests {
    /// Signs `message` (hashed by the context) into a fresh buffer.
    private func sign(_ context: SigningContext, message: [UInt8]) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: context.signatureLength)
        let written = try message.withUnsafeBytes { message in
            try output.withUnsafeMutableBytes { output in
                try context.sign(message, hashing: true, into: output)
            }
        }
        #expect(written == context.signatureLength)
        return Array(output.prefix(written))
    }

    @Test(
        "a kept signer's signature of each message verifies as a signature of the message's hash",
        arguments: [
            (KeyAlgorithm.ec(.p256), SignatureScheme.ecdsa(.sha256)),
            (KeyAlgorithm.ec(.p521), SignatureScheme.ecdsa(.sha512)),
            (KeyAlgorithm.rsa(bits: 2048), SignatureScheme.rsaPKCS1(.sha256)),
        ])
    func keptSignerSignsEachMessage(_ algorithm: KeyAlgorithm, _ scheme: SignatureScheme) throws {
        let key = try AsymmetricKey.generate(algorithm)
        let signer = try SigningContext(key: key, scheme: scheme)
        let verifier = try SigningContext(key: key, scheme: scheme, verifying: true)
        let digest = try #require(scheme.messageDigest)
        // The empty message, a short one, one longer than any block, then a short one again.
        for message in [[], [1, 2, 3], [UInt8](repeating: 7, count: 1000), [9]] as [[UInt8]] {
            let signature = try sign(signer, message: message)
            #expect(try key.verifyHash(signature, input: digest.hash(message), scheme: scheme))
            let valid = try signature.withUnsafeBytes { signature in
                try message.withUnsafeBytes { message in
                    try verifier.verify(signature, message, hashing: true)
                }
            }
            #expect(valid)
        }
    }

    @Test(
        "an ECDSA signer's r ‖ s, through the EC_KEY and through EVP_PKEY_sign's DER, verifies for any input length",
        arguments: [EllipticCurve.p256, .p384, .p521], [true, false])
    func ecdsaSignerWritesRawSignatures(_ curve: EllipticCurve, _ throughECKey: Bool) throws {
        let key = try AsymmetricKey.generate(.ec(curve))
        let signer = try SigningContext(
            key: key, scheme: .ecdsa(nil), verifying: false, throughECKey: throughECKey)
        #expect(signer.signatureLength == 2 * key.ecdsaComponentLength)
        // P-521's integers are 66 bytes wide and their first byte is at most 1, so every one
        // of its signatures is left-padded; of the others about one in 128 is. Inputs shorter
        // and longer than the curve (CKM_ECDSA takes any length, and the longest are cut to
        // the curve's order), and the empty one.
        var signatures = Set<[UInt8]>()
        for round in 0..<40 {
            for length in [0, 20, 32, 48, 66, 100] {
                let input = [UInt8](repeating: UInt8(truncatingIfNeeded: round &+ length), count: length)
                let signature = try signer.sign(hash: input)
                #expect(signature.count == signer.signatureLength)
                #expect(try key.verifyHash(signature, input: input, scheme: .ecdsa(nil)))
                signatures.insert(signature)
            }
        }
        // A fresh nonce each time: no two signatures are alike, also of the same input.
        let again = try signer.sign(hash: [1, 2, 3])
        let andAgain = try signer.sign(hash: [1, 2, 3])
        #expect(!signatures.contains(again) && again != andAgain)
        #expect(signatures.count == 240)
        var wrong = try signer.sign(hash: [7])
        wrong[wrong.count - 1] ^= 1
        #expect(try !key.verifyHash(wrong, input: [7], scheme: .ecdsa(nil)))
    }

    @Test("a kept verifier refuses a signature of another message, then accepts the right one")
    func keptVerifierHashesEachMessage() throws {
        let key = try AsymmetricKey.generate(.rsa(bits: 2048))
        let scheme = SignatureScheme.rsaPKCS1(.sha256)
        let verifier = try SigningContext(key: key, scheme: scheme, verifying: true)
        let signature = try key.sign([1, 2, 3], scheme: scheme)
        func verifies(_ message: [UInt8]) throws -> Bool {
            try signature.withUnsafeBytes { signature in
                try message.withUnsafeBytes { message in
                    try verifier.verify(signature, message, hashing: true)
                }
            }
        }
        #expect(try !verifies([1, 2, 4]))
        #expect(try verifies([1, 2, 3]))
        #expect(try !verifies([]))
        #expect(try verifies([1, 2, 3]))
    }

    @Test(
        "a kept digest hashes each message alone, as the one-shot digest does",
        arguments: DigestAlgorithm.allCases)
    func keptDigestStartsOver(_ algorithm: DigestAlgorithm) throws {
        let digest = try Digest(algorithm)
        try digest.update([UInt8]([5, 5, 5]))  // an unfinished message the next hash must not include
        var output = [UInt8](repeating: 0, count: Int(64))
        for message in [[1, 2, 3], [], [UInt8](repeating: 1, count: 300)] as [[UInt8]] {
            let length = try message.withUnsafeBytes { message in
                try output.withUnsafeMutableBytes { output in try digest.hash(message, into: output) }
            }
            #expect(Array(output.prefix(length)) == algorithm.hash(message))
        }
        var short = [UInt8](repeating: 0, count: algorithm.length - 1)
        #expect(throws: CryptoError.self) {
            _ = try short.withUnsafeMutableBytes { output in
                try digest.hash(UnsafeRawBufferPointer(start: nil, count: 0), into: output)
            }
        }
    }

    @Test("DER to r ‖ s writes each signature whole, and a DER that does not parse is refused")
    func ecdsaConversion() throws {
        let key = try AsymmetricKey.generate(.ec(.p256))
        for message in [[1], [2], [3]] as [[UInt8]] {
            let raw = try key.sign(message, scheme: .ecdsa(.sha256))
            let der = try #require(key.ecdsaSignatureDER(fromRaw: raw))
            #expect(try key.rawECDSA(fromDER: der) == raw)
        }
        #expect(throws: CryptoError.self) { _ = try key.rawECDSA(fromDER: [0x30, 0x03, 0x02, 0x01]) }
        #expect(throws: CryptoError.self) { _ = try key.rawECDSA(fromDER: []) }
    }
}
