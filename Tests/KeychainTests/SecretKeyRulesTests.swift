import Foundation
import Keychain
import KeychainCore
import Testing

/// Secret keys made by the other face (the PKCS#11 module, here its core on another
/// connection) are used by the typed API under the same rules, and no face writes a key
/// byte in clear.
@Suite("Secret keys obey the core's rules")
struct SecretKeyRulesTests {
    /// A secret key stored through the core on the keychain's store, as C_CreateObject
    /// would store it, with `extra` attributes.
    private func makeKey(
        in directory: TemporaryDirectory, label: String, value: [UInt8], _ extra: AttributeSet
    ) throws {
        let token = Token(
            configuration: TokenConfiguration(name: "other", path: directory.path + "/test.sqlite3"))
        try token.logIn(.user, pin: Array(TestPIN.user.utf8))
        defer { token.logOut() }
        var template: AttributeSet = [
            .class: AttributeValue.encode(ObjectClass.secretKey.rawValue),
            .keyType: AttributeValue.encode(KeychainCore.KeyType.aes.rawValue), .token: [1], .private: [1],
            .value: value, .label: Array(label.utf8),
        ]
        template.merge(extra) { $1 }
        _ = try token.createObject(template, context: AccessContext(readWrite: true, userLoggedIn: true))
    }

    @Test("a key whose CKA_ALLOWED_MECHANISMS lists only AES-GCM encrypts with GCM and refuses CBC-PAD")
    func allowedMechanismsAreObeyed() throws {
        try withPINKeychain { keychain, directory in
            try makeKey(
                in: directory, label: "gcm only", value: SecretKeyVectors.gcmKey,
                [.allowedMechanisms: AttributeValue.encode(0x1087)])
            let key = try #require(try keychain.firstSecretKey(matching: SecretKeyQuery(label: "gcm only")))
            let gcm = CipherAlgorithm.aesGCM(
                iv: SecretKeyVectors.gcmIV, additionalData: SecretKeyVectors.gcmAAD)
            #expect(
                try keychain.encrypt(SecretKeyVectors.gcmPlaintext, with: key, using: gcm)
                    == SecretKeyVectors.gcmCiphertext + SecretKeyVectors.gcmTag)
            do throws(KeychainError) {
                _ = try keychain.encrypt(
                    [1], with: key, using: .aesCBCPad(iv: [UInt8](repeating: 0, count: 16)))
                Issue.record("a GCM-only key encrypted with CBC-PAD")
            } catch {
                #expect(error.code == .parameter)
                #expect(error.message.contains("CKA_ALLOWED_MECHANISMS"))
            }
            #expect(throws: KeychainError.self, "CMAC is not on the list either") {
                try keychain.authenticationCode(for: [1], with: key)
            }
        }
    }

    @Test("a key made with CKA_ENCRYPT false by the other face is refused for encryption, and still decrypts")
    func usageFlagsAreObeyed() throws {
        try withPINKeychain { keychain, directory in
            try makeKey(in: directory, label: "decrypt only", value: SecretKeyVectors.gcmKey, [.encrypt: [0]])
            let key = try #require(
                try keychain.firstSecretKey(matching: SecretKeyQuery(label: "decrypt only")))
            #expect(key.usage.contains(.decrypt) && !key.usage.contains(.encrypt))
            let gcm = CipherAlgorithm.aesGCM(
                iv: SecretKeyVectors.gcmIV, additionalData: SecretKeyVectors.gcmAAD)
            do throws(KeychainError) {
                _ = try keychain.encrypt([1], with: key, using: gcm)
                Issue.record("a key with CKA_ENCRYPT false encrypted")
            } catch {
                #expect(error.message.contains("may not encrypt"))
            }
            let sealed = SecretKeyVectors.gcmCiphertext + SecretKeyVectors.gcmTag
            #expect(try keychain.decrypt(sealed, with: key, using: gcm) == SecretKeyVectors.gcmPlaintext)
        }
    }

    @Test("the store's files hold no byte of an imported, generated-and-wrapped or unwrapped key")
    func noKeyByteInClear() throws {
        try withPINKeychain { keychain, directory in
            let aes = try Keychain.randomBytes(32)
            let hmac = try Keychain.randomBytes(48)
            let wrapping = try keychain.importSecretKey(
                SecretKeyVectors.gcmKey, type: .aes, label: "wrapping", usage: [.wrap, .unwrap])
            let imported = try keychain.importSecretKey(aes, type: .aes, label: "imported", extractable: true)
            _ = try keychain.importSecretKey(hmac, type: .hmac(.sha384), label: "mac")
            let wrapped = try keychain.wrap(imported, with: wrapping)
            try keychain.delete(imported)
            let restored = try keychain.unwrapSecretKey(
                wrapped, with: wrapping, type: .aes, label: "restored")
            #expect(restored.checkValue.count == 3)
            for secret in [aes, hmac, SecretKeyVectors.gcmKey] {
                #expect(storeFiles(in: directory, containing: secret).isEmpty, "a key byte in clear")
            }
            keychain.lock()
            for secret in [aes, hmac, SecretKeyVectors.gcmKey] {
                #expect(storeFiles(in: directory, containing: secret).isEmpty, "a key byte in clear")
            }
        }
    }

    /// The files of the store (`test.sqlite3` and its `-wal`, `-shm`, `-changes`) that hold
    /// `secret`, or its first or last 12 bytes (in case it was stored cut or re-encoded).
    private func storeFiles(in directory: TemporaryDirectory, containing secret: [UInt8]) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        let pieces = [secret, Array(secret.prefix(12)), Array(secret.suffix(12))]
        return names.filter { $0.hasPrefix("test.sqlite3") }.filter { name in
            let bytes = Array(FileManager.default.contents(atPath: directory.path + "/" + name) ?? Data())
            return pieces.contains { piece in Self.occurs(piece, in: bytes) }
        }
    }

    private static func occurs(_ needle: [UInt8], in haystack: [UInt8]) -> Bool {
        guard let first = needle.first, needle.count <= haystack.count else { return needle.isEmpty }
        var index = 0
        while index <= haystack.count - needle.count {
            if haystack[index] == first, haystack[index..<index + needle.count].elementsEqual(needle) {
                return true
            }
            index += 1
        }
        return false
    }
}
