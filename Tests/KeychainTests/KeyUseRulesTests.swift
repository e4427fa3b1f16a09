import Foundation
import Keychain
import KeychainCore
import Testing

/// The Swift face uses keys through the core's one key-use check, as the PKCS#11 face does:
/// keys made by another face with CKA_SIGN or CKA_DECRYPT false, or CKA_ALWAYS_AUTHENTICATE,
/// are refused here the same way.
@Suite("Keys made by the other face are used by the same rules")
struct KeyUseRulesTests {
    static let p256: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]

    /// A key pair made through the core on the keychain's store, as the PKCS#11 module would
    /// (another process: its own connection), with `privateTemplate`'s flags.
    private func makeKey(
        in directory: TemporaryDirectory, label: String, rsa: Bool = false, _ privateTemplate: AttributeSet
    ) throws {
        let token = Token(
            configuration: TokenConfiguration(name: "other", path: directory.path + "/test.sqlite3"))
        try token.logIn(.user, pin: Array(TestPIN.user.utf8))
        defer { token.logOut() }
        var template: AttributeSet = [.token: [1], .private: [1], .label: Array(label.utf8)]
        template.merge(privateTemplate) { $1 }
        _ = try token.generateKeyPair(
            rsa ? .rsa(bits: 2048) : .ec(curveParameters: Self.p256),
            publicTemplate: [.token: [1], .label: Array(label.utf8)], privateTemplate: template,
            context: AccessContext(readWrite: true, userLoggedIn: true))
    }

    private func privateKey(_ keychain: Keychain, _ label: String) throws -> KeyItem {
        let keys = try keychain.keys(matching: KeyQuery(keyClass: .private, label: label))
        return try #require(keys.first)
    }

    @Test("a key whose CKA_SIGN or CKA_DECRYPT is false is refused")
    func usageFlagsAreObeyed() throws {
        try withPINKeychain { keychain, directory in
            try makeKey(in: directory, label: "no-sign", [.sign: [0]])
            try makeKey(in: directory, label: "no-decrypt", rsa: true, [.decrypt: [0]])
            #expect(throws: KeychainError.self) {
                _ = try keychain.sign(
                    Array("m".utf8), with: try privateKey(keychain, "no-sign"), algorithm: .ecdsa(.sha256))
            }
            let rsa = try privateKey(keychain, "no-decrypt")
            do throws(KeychainError) {
                _ = try keychain.decrypt([UInt8](repeating: 1, count: 256), with: rsa, algorithm: .rsaPKCS1)
                Issue.record("a key with CKA_DECRYPT false decrypted")
            } catch {
                #expect(error.code == .parameter)
                #expect(error.message.contains("may not decrypt"))
            }
        }
    }

    @Test("a key that needs the PIN for each use is refused without it, and signs with it")
    func alwaysAuthenticateNeedsAFreshPIN() throws {
        try withPINKeychain { keychain, directory in
            try makeKey(in: directory, label: "always", [.alwaysAuthenticate: [1]])
            let key = try privateKey(keychain, "always")
            let message = Array("message".utf8)
            do throws(KeychainError) {
                _ = try keychain.sign(message, with: key, algorithm: .ecdsa(.sha256))
                Issue.record("an always-authenticate key signed without a PIN")
            } catch {
                #expect(error.code == .interactionNotAllowed)
            }
            do throws(KeychainError) {
                _ = try keychain.sign(message, with: key, algorithm: .ecdsa(.sha256), pin: Array("0000".utf8))
                Issue.record("an always-authenticate key signed with a wrong PIN")
            } catch {
                #expect(error.code == .authFailed)
            }
            let signature = try keychain.sign(
                message, with: key, algorithm: .ecdsa(.sha256), pin: Array(TestPIN.user.utf8))
            #expect(!signature.isEmpty)
        }
    }
}
