import Foundation
import Testing

@testable import KeychainCrypto

/// Raw RSA (CKM_RSA_X_509, v2.40 §2.1.8): no padding, the input left-padded with zeros to the
/// modulus length, checked against `openssl pkeyutl -pkeyopt rsa_padding_mode:none`.
@Suite struct RawRSATests {
    @Test("a raw RSA signature is the private operation on the zero-padded input, as openssl computes it")
    func signatureAgreesWithOpenSSL() throws {
        try withTemporaryDirectory { directory in
            let key = try AsymmetricKey.generate(.rsa(bits: 2048))
            let input = Array("short input, padded on the left".utf8)
            let signature = try key.signHash(input, scheme: .rsaRaw)
            #expect(signature.count == 256)
            try Data(key.pkcs8 ?? []).write(to: URL(fileURLWithPath: directory.file("private.der")))
            try Data([UInt8](repeating: 0, count: 256 - input.count) + input).write(
                to: URL(fileURLWithPath: directory.file("padded")))
            // The private operation without padding: pkeyutl -sign insists on a digest-sized
            // input, and -decrypt computes the same m^d mod n.
            try OpenSSL.run(
                [
                    "pkeyutl", "-decrypt", "-inkey", "private.der", "-keyform", "DER", "-pkeyopt",
                    "rsa_padding_mode:none", "-in", "padded", "-out", "theirs",
                ], in: directory)
            let theirs = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file("theirs"))))
            #expect(theirs == signature)
            let publicKey = try key.publicKey()
            #expect(try publicKey.verifyHash(signature, input: input, scheme: .rsaRaw))
            // The padded input is the same message: leading zeros are the padding.
            #expect(try publicKey.verifyHash(signature, input: [0, 0] + input, scheme: .rsaRaw))
            var tampered = signature
            tampered[100] ^= 1
            #expect(try !publicKey.verifyHash(tampered, input: input, scheme: .rsaRaw))
            #expect(try !publicKey.verifyHash(signature, input: input + [0], scheme: .rsaRaw))
            #expect(try !publicKey.verifyHash(Array(signature.dropFirst()), input: input, scheme: .rsaRaw))
        }
    }

    @Test("raw RSA encryption and decryption are inverse, and agree with openssl in both directions")
    func encryptionAgreesWithOpenSSL() throws {
        try withTemporaryDirectory { directory in
            let key = try AsymmetricKey.generate(.rsa(bits: 2048))
            let message = Array("raw message".utf8)
            let ciphertext = try key.publicKey().encrypt(message, padding: .raw)
            #expect(ciphertext.count == 256)
            let plaintext = try key.decrypt(ciphertext, padding: .raw)
            // The result is m itself, one modulus long: the zeros in front are part of it.
            #expect(plaintext == [UInt8](repeating: 0, count: 256 - message.count) + message)
            try Data(key.pkcs8 ?? []).write(to: URL(fileURLWithPath: directory.file("private.der")))
            try Data(key.subjectPublicKeyInfo).write(to: URL(fileURLWithPath: directory.file("public.der")))
            try Data(ciphertext).write(to: URL(fileURLWithPath: directory.file("ours.bin")))
            try OpenSSL.run(
                [
                    "pkeyutl", "-decrypt", "-inkey", "private.der", "-keyform", "DER", "-pkeyopt",
                    "rsa_padding_mode:none", "-in", "ours.bin", "-out", "ours.plain",
                ], in: directory)
            #expect(
                try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file("ours.plain")))) == plaintext
            )
            try Data(plaintext).write(to: URL(fileURLWithPath: directory.file("padded")))
            try OpenSSL.run(
                [
                    "pkeyutl", "-encrypt", "-pubin", "-inkey", "public.der", "-keyform", "DER", "-pkeyopt",
                    "rsa_padding_mode:none", "-in", "padded", "-out", "theirs.bin",
                ], in: directory)
            let theirs = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file("theirs.bin"))))
            // Raw RSA is deterministic.
            #expect(theirs == ciphertext)
        }
    }

    @Test("raw RSA refuses input longer than the modulus, or not below it")
    func tooLongInput() throws {
        let key = try AsymmetricKey.generate(.rsa(bits: 2048))
        let tooLong = [UInt8](repeating: 1, count: 257)
        #expect(throws: CryptoError.self) { try key.signHash(tooLong, scheme: .rsaRaw) }
        #expect(throws: CryptoError.self) { try key.encrypt(tooLong, padding: .raw) }
        #expect(throws: CryptoError.self) { try key.decrypt(tooLong, padding: .raw) }
        // All ones is above any 2048-bit modulus.
        let aboveModulus = [UInt8](repeating: 0xFF, count: 256)
        #expect(throws: CryptoError.self) { try key.signHash(aboveModulus, scheme: .rsaRaw) }
        #expect(throws: CryptoError.self) { try key.encrypt(aboveModulus, padding: .raw) }
        #expect(try !key.verifyHash(aboveModulus, input: [1], scheme: .rsaRaw))
    }
}
