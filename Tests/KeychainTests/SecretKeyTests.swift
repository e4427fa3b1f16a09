import Foundation
import Keychain
import KeychainCore
import Testing

/// Known answers the secret-key tests check against.
enum SecretKeyVectors {
    /// NIST SP 800-38D / the GCM specification (McGrew–Viega), test case 4: AES-128.
    static let gcmKey = hex("feffe9928665731c6d6a8f9467308308")
    static let gcmIV = hex("cafebabefacedbaddecaf888")
    static let gcmAAD = hex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
    static let gcmPlaintext = hex(
        "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
            + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")
    static let gcmCiphertext = hex(
        "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
            + "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091")
    static let gcmTag = hex("5bc94fbc3221a5db94fae95ae7121a47")
    /// The GCM key's check value: AES-ECB of a zero block, first three bytes (PKCS#11 v3.0 §4.10).
    static let gcmKeyCheckValue = hex("b83b53")

    /// RFC 4493 §4, example 2: AES-128-CMAC of one block.
    static let cmacKey = hex("2b7e151628aed2a6abf7158809cf4f3c")
    static let cmacMessage = hex("6bc1bee22e409f96e93d7e117393172a")
    static let cmac = hex("070a16b46b4d4144f79bdd9dd04a287c")

    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16) ?? 0)
            index = next
        }
        return bytes
    }
}

/// The typed API over secret keys: generation, import, finding, deleting,
/// and the operations, each through the core's one key-use check.
@Suite("Secret keys")
struct SecretKeyTests {
    @Test("a generated AES key is found by label and by ID, with its size and check value, until deleted")
    func generateFindDelete() throws {
        try withPINKeychain { keychain, _ in
            let key = try keychain.generateSecretKey(.aes256, label: "data key")
            #expect(key.type == .aes)
            #expect(key.sizeInBits == 256)
            #expect(key.isSensitive && !key.isExtractable)
            #expect(key.checkValue.count == 3)
            #expect(key.applicationLabel.count == 16, "a random ID by default")
            #expect(key.usage == [.encrypt, .decrypt, .sign, .verify], "the token's default usage")
            #expect(try keychain.secretKeys(matching: SecretKeyQuery(label: "data key")) == [key])
            #expect(
                try keychain.firstSecretKey(matching: SecretKeyQuery(applicationLabel: key.applicationLabel))
                    == key)
            #expect(try keychain.secretKeys(matching: SecretKeyQuery(type: .hmac(.sha256))).isEmpty)
            #expect(try keychain.keys().isEmpty, "a secret key is no key pair half")
            try keychain.delete(key)
            #expect(try keychain.secretKeys().isEmpty)
            #expect(throws: KeychainError(.itemNotFound, "the secret key \"data key\" no longer exists")) {
                try keychain.delete(key)
            }
        }
    }

    @Test(
        "each kind and size of key is generated with the size asked for",
        arguments: [
            (SecretKeyAlgorithm.aes128, 128), (.aes192, 192), (.hmac(.sha1), 160), (.hmac(.sha512), 512),
            (.hmac(.sha256, bits: 128), 128), (.generic(bits: 48), 48),
        ])
    func sizes(algorithm: SecretKeyAlgorithm, bits: Int) throws {
        try withPINKeychain { keychain, _ in
            let key = try keychain.generateSecretKey(algorithm, label: "\(algorithm)")
            #expect(key.algorithm == SecretKeyAlgorithm(type: algorithm.type, sizeInBits: bits))
            #expect(
                try keychain.secretKeys(matching: SecretKeyQuery(type: algorithm.type, sizeInBits: bits)) == [
                    key
                ])
        }
    }

    @Test("sizes a type does not have, and a locked keychain, are refused before anything is stored")
    func refusals() throws {
        try withPINKeychain(unlocked: false) { keychain, _ in
            #expect(throws: KeychainError.self) { try keychain.generateSecretKey(.aes(bits: 512)) }
            do throws(KeychainError) {
                try keychain.generateSecretKey(.aes(bits: 100))
                Issue.record("AES-100 was generated")
            } catch {
                #expect(error.code == .parameter)
                #expect(error.message == "AES keys have 128, 192 or 256 bits, not 100")
            }
            do throws(KeychainError) {
                try keychain.generateSecretKey(.aes256)
                Issue.record("a locked keychain stored a secret key")
            } catch {
                #expect(error.code == .interactionNotAllowed)
            }
            do throws(KeychainError) {
                try keychain.importSecretKey([1, 2, 3], type: .aes)
                Issue.record("a 3-byte AES key was imported")
            } catch {
                #expect(error.code == .parameter)
            }
            try keychain.unlock(pin: TestPIN.user)
            #expect(try keychain.secretKeys().isEmpty)
            #expect(throws: KeychainError.self) { try Keychain.randomBytes(Int.max) }
            #expect(throws: KeychainError.self) { try Keychain.randomBytes(-1) }
            #expect(try Keychain.randomBytes(12).count == 12)
        }
    }

    @Test("an imported key encrypts the NIST SP 800-38D AES-GCM test case and has its check value")
    func gcmKnownAnswer() throws {
        try withPINKeychain { keychain, _ in
            let key = try keychain.importSecretKey(SecretKeyVectors.gcmKey, type: .aes, label: "nist")
            #expect(key.checkValue == SecretKeyVectors.gcmKeyCheckValue)
            let algorithm = CipherAlgorithm.aesGCM(
                iv: SecretKeyVectors.gcmIV, additionalData: SecretKeyVectors.gcmAAD)
            let sealed = try keychain.encrypt(SecretKeyVectors.gcmPlaintext, with: key, using: algorithm)
            #expect(sealed == SecretKeyVectors.gcmCiphertext + SecretKeyVectors.gcmTag)
            #expect(
                try keychain.decrypt(sealed, with: key, using: algorithm) == SecretKeyVectors.gcmPlaintext)

            var altered = sealed
            altered[0] ^= 1
            do throws(KeychainError) {
                _ = try keychain.decrypt(altered, with: key, using: algorithm)
                Issue.record("altered ciphertext decrypted")
            } catch {
                #expect(error.code == .decode)
                #expect(error.message.contains("tag does not verify"))
            }
            let otherAAD = CipherAlgorithm.aesGCM(iv: SecretKeyVectors.gcmIV, additionalData: [1])
            #expect(throws: KeychainError.self) { try keychain.decrypt(sealed, with: key, using: otherAAD) }
        }
    }

    @Test(
        "AES-CBC-PAD, CBC, CTR, ECB and GCM round-trip through a generated key",
        arguments: [
            CipherAlgorithm.aesCBCPad(iv: Array(repeating: 7, count: 16)),
            .aesCBC(iv: Array(repeating: 9, count: 16)),
            .aesCTR(counterBlock: Array(repeating: 0, count: 16)),
            .aesCTR(counterBlock: Array(repeating: 0xFF, count: 12) + [0, 0, 0, 0], counterBits: 32),
            .aesECB,
            .aesGCM(iv: Array(repeating: 1, count: 12), additionalData: Array("header".utf8), tagLength: 12),
        ])
    func roundTrips(algorithm: CipherAlgorithm) throws {
        try withPINKeychain { keychain, _ in
            let key = try keychain.generateSecretKey(.aes256, label: "round trip")
            let blocks: Bool
            switch algorithm {
            case .aesCBC, .aesECB: blocks = true
            default: blocks = false
            }
            let message = Array(
                (blocks ? "sixteen byte blk" + "and another one." : "a message of any length").utf8)
            let encrypted = try keychain.encrypt(message, with: key, using: algorithm)
            #expect(encrypted != message)
            #expect(try keychain.decrypt(encrypted, with: key, using: algorithm) == message)
        }
    }

    @Test("CBC-PAD ciphertext with bad padding is a decode error, and a 5-byte CBC message a parameter error")
    func badCiphertext() throws {
        try withPINKeychain { keychain, _ in
            let key = try keychain.importSecretKey(SecretKeyVectors.gcmKey, type: .aes)
            let iv = [UInt8](repeating: 0, count: 16)
            do throws(KeychainError) {
                // A zero block under this key decrypts to bytes that are no PKCS#7 padding.
                let garbage = try keychain.encrypt(
                    [UInt8](repeating: 0x11, count: 16), with: key, using: .aesCBC(iv: iv))
                _ = try keychain.decrypt(garbage, with: key, using: .aesCBCPad(iv: iv))
                Issue.record("bad padding decrypted")
            } catch {
                #expect(error.code == .decode)
            }
            do throws(KeychainError) {
                _ = try keychain.encrypt([1, 2, 3, 4, 5], with: key, using: .aesCBC(iv: iv))
                Issue.record("a partial block encrypted with CBC")
            } catch {
                #expect(error.code == .parameter)
            }
        }
    }

    @Test(
        "IVs, counters and tag lengths a mode does not take are parameter errors, and an HMAC key does not encrypt"
    )
    func badParameters() throws {
        try withPINKeychain { keychain, _ in
            let key = try keychain.generateSecretKey(.aes128)
            let block = [UInt8](repeating: 0, count: 16)
            let cases: [CipherAlgorithm] = [
                .aesCBC(iv: [1, 2, 3]), .aesCBCPad(iv: []), .aesCTR(counterBlock: block, counterBits: 0),
                .aesCTR(counterBlock: block, counterBits: -1), .aesCTR(counterBlock: block, counterBits: 129),
                .aesCTR(counterBlock: [0]), .aesGCM(iv: []), .aesGCM(iv: block, tagLength: 8),
                .aesGCM(iv: block, tagLength: Int.max), .aesGCM(iv: [UInt8](repeating: 0, count: 300)),
            ]
            for algorithm in cases {
                do throws(KeychainError) {
                    _ = try keychain.encrypt(block, with: key, using: algorithm)
                    Issue.record("\(algorithm) encrypted")
                } catch {
                    #expect(
                        error.code == .parameter || error.code == .unimplemented, "\(algorithm): \(error)")
                }
            }
            let mac = try keychain.generateSecretKey(.hmac(.sha256))
            do throws(KeychainError) {
                _ = try keychain.encrypt(block, with: mac, using: .aesECB)
                Issue.record("an HMAC key encrypted")
            } catch {
                #expect(error.code == .parameter)
            }
        }
    }

    @Test("an HMAC-SHA256 key computes the RFC 4231 test case 2 code, and checks it")
    func hmacKnownAnswer() throws {
        try withPINKeychain { keychain, _ in
            let key = try keychain.importSecretKey(Array("Jefe".utf8), type: .hmac(.sha256), label: "rfc4231")
            let data = Array("what do ya want for nothing?".utf8)
            let expected = SecretKeyVectors.hex(
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
            #expect(try keychain.authenticationCode(for: data, with: key) == expected)
            #expect(try keychain.isValidAuthenticationCode(expected, for: data, with: key))
            var wrong = expected
            wrong[31] ^= 0x80
            #expect(try !keychain.isValidAuthenticationCode(wrong, for: data, with: key))
            #expect(try !keychain.isValidAuthenticationCode(Array(expected.prefix(16)), for: data, with: key))
            #expect(throws: KeychainError.self, "an HMAC-SHA256 key is not an HMAC-SHA1 key") {
                try keychain.authenticationCode(for: data, with: key, using: .hmac(.sha1))
            }

            let generic = try keychain.importSecretKey(Array("Jefe".utf8), type: .generic)
            #expect(
                try keychain.authenticationCode(for: data, with: generic, using: .hmac(.sha256)) == expected)
            #expect(throws: KeychainError.self, "a generic secret needs its hash named") {
                try keychain.authenticationCode(for: data, with: generic)
            }
        }
    }

    @Test("an AES key computes the RFC 4493 AES-CMAC example")
    func cmacKnownAnswer() throws {
        try withPINKeychain { keychain, _ in
            let key = try keychain.importSecretKey(SecretKeyVectors.cmacKey, type: .aes)
            let code = try keychain.authenticationCode(for: SecretKeyVectors.cmacMessage, with: key)
            #expect(code == SecretKeyVectors.cmac)
            #expect(
                try keychain.isValidAuthenticationCode(code, for: SecretKeyVectors.cmacMessage, with: key))
        }
    }

    @Test(
        "a wrapped key unwraps into a key with the same check value that decrypts what the original encrypted",
        arguments: [KeyWrapAlgorithm.aesKeyWrapPadded, .aesKeyWrap])
    func wrapRoundTrip(algorithm: KeyWrapAlgorithm) throws {
        try withPINKeychain { keychain, _ in
            let wrapping = try keychain.generateSecretKey(.aes256, label: "backup", usage: [.wrap, .unwrap])
            let original = try keychain.generateSecretKey(.aes128, label: "data", extractable: true)
            let iv = [UInt8](repeating: 3, count: 12)
            let sealed = try keychain.encrypt(Array("keep this".utf8), with: original, using: .aesGCM(iv: iv))
            let wrapped = try keychain.wrap(original, with: wrapping, using: algorithm)
            #expect(wrapped.count == 24, "16 key bytes and the 8-byte integrity block")
            let restored = try keychain.unwrapSecretKey(
                wrapped, with: wrapping, type: .aes, using: algorithm, label: "restored")
            #expect(restored.checkValue == original.checkValue)
            #expect(restored.label == "restored")
            #expect(restored.persistentReference != original.persistentReference)
            #expect(
                try keychain.decrypt(sealed, with: restored, using: .aesGCM(iv: iv))
                    == Array("keep this".utf8))

            var altered = wrapped
            altered[5] ^= 1
            do throws(KeychainError) {
                try keychain.unwrapSecretKey(altered, with: wrapping, type: .aes, using: algorithm)
                Issue.record("altered wrapped bytes unwrapped")
            } catch {
                #expect(error.code == .decode)
            }
            #expect(try keychain.secretKeys().count == 3, "nothing was stored for the altered bytes")
        }
    }

    @Test("a key that is not extractable, or a wrapping key without the wrap usage, refuses to wrap")
    func wrapRefusals() throws {
        try withPINKeychain { keychain, _ in
            let wrapping = try keychain.generateSecretKey(.aes256, label: "backup", usage: [.wrap, .unwrap])
            let fixed = try keychain.generateSecretKey(.aes256, label: "stays")
            do throws(KeychainError) {
                _ = try keychain.wrap(fixed, with: wrapping)
                Issue.record("a non-extractable key was wrapped")
            } catch {
                #expect(error.code == .interactionNotAllowed)
                #expect(error.message.contains("not extractable"))
            }
            let plain = try keychain.generateSecretKey(.aes256, label: "no wrap usage")
            let movable = try keychain.generateSecretKey(.aes256, label: "movable", extractable: true)
            do throws(KeychainError) {
                _ = try keychain.wrap(movable, with: plain)
                Issue.record("a key without CKA_WRAP wrapped")
            } catch {
                #expect(error.code == .parameter)
                #expect(error.message.contains("may not wrap"))
            }
        }
    }

    @Test("a private key is wrapped as PKCS#8 under AES-KWP")
    func privateKeyWrap() throws {
        try withPINKeychain { keychain, _ in
            let wrapping = try keychain.importSecretKey(
                SecretKeyVectors.gcmKey, type: .aes, usage: [.wrap, .unwrap])
            let pair = try keychain.generateKeyPair(.p256, label: "movable pair", exportable: true)
            let wrapped = try keychain.wrap(pair.privateKey, with: wrapping)
            let unwrapped = try unwrapKWP(wrapped, key: SecretKeyVectors.gcmKey)
            let key = try PrivateKey(derEncoded: unwrapped)
            #expect(key.publicKey == pair.privateKey.publicKey)

            let fixed = try keychain.generateKeyPair(.p256, label: "fixed pair")
            #expect(throws: KeychainError.self) { try keychain.wrap(fixed.privateKey, with: wrapping) }
            #expect(throws: KeychainError.self) { try keychain.wrap(fixed.publicKey, with: wrapping) }
        }
    }

    @Test("a wrapped private key unwraps into a key that signs for the original public key")
    func privateKeyUnwrap() throws {
        try withPINKeychain { keychain, _ in
            let wrapping = try keychain.generateSecretKey(.aes256, usage: [.wrap, .unwrap])
            let pair = try keychain.generateKeyPair(.p256, label: "original", exportable: true)
            let wrapped = try keychain.wrap(pair.privateKey, with: wrapping)
            try keychain.delete(pair.privateKey)
            let restored = try keychain.unwrapPrivateKey(wrapped, with: wrapping, label: "restored")
            #expect(restored.keyClass == .private && restored.label == "restored")
            #expect(restored.publicKey == pair.publicKey.publicKey)
            #expect(restored.isSensitive && !restored.isExtractable, "not extractable by default")
            let again = try keychain.unwrapPrivateKey(
                wrapped, with: wrapping, label: "again", extractable: true)
            #expect(again.isSensitive && again.isExtractable && !again.isExportable)
            #expect(try keychain.wrap(again, with: wrapping).count == wrapped.count)
            try keychain.delete(again)
            let message = Array("signed by the restored key".utf8)
            let signature = try keychain.sign(message, with: restored, algorithm: .ecdsa(.sha256))
            #expect(
                try pair.publicKey.publicKey.isValidSignature(
                    signature, for: message, algorithm: .ecdsa(.sha256)))

            let secret = try keychain.generateSecretKey(.aes128, extractable: true)
            let notPKCS8 = try keychain.wrap(secret, with: wrapping)
            #expect(throws: KeychainError.self, "AES key bytes are no private key") {
                try keychain.unwrapPrivateKey(notPKCS8, with: wrapping)
            }
            #expect(try keychain.keys(matching: KeyQuery(keyClass: .private)).count == 1)
        }
    }

    /// RFC 5649 unwrapping by openssl's command line (`-id-aes128-wrap-pad`, the RFC's initial value), a second
    /// implementation of the key wrap.
    private func unwrapKWP(_ wrapped: [UInt8], key: [UInt8]) throws -> [UInt8] {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let input = directory.path + "/wrapped"
        let output = directory.path + "/unwrapped"
        try Data(wrapped).write(to: URL(fileURLWithPath: input))
        try openssl([
            "enc", "-d", "-id-aes128-wrap-pad", "-K", key.hex, "-iv", "A65959A6", "-in", input, "-out",
            output,
        ])
        return Array(try Data(contentsOf: URL(fileURLWithPath: output)))
    }
}
