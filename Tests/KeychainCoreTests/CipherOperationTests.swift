import Foundation
import KeychainCore
import Testing

/// The core performs encryption, key wrapping and derivation itself: the operations
/// every face uses, with their parameter checks before any key is read.
@Suite("Cipher, key-wrap and derivation operations in the core")
struct CipherOperationTests {
    static let secretClass = AttributeValue.encode(ObjectClass.secretKey.rawValue)

    /// A token AES key of 32 bytes with the given extra attributes.
    static func aesKey(_ token: Token, _ extra: AttributeSet = [:]) throws -> ObjectReference {
        try token.createObject(
            [
                .class: secretClass, .keyType: AttributeValue.encode(KeyType.aes.rawValue),
                .value: [UInt8](repeating: 7, count: 32), .encrypt: yes, .decrypt: yes,
            ].merging(extra) { $1 }, context: Contexts.user)
    }

    static let gcm = AESCipherMode.aesGCM(iv: [UInt8](repeating: 1, count: 12), additionalData: [9])

    @Test("AES-GCM encrypts and decrypts through the core; an altered tag releases nothing")
    func gcmRoundTrip() throws {
        try withToken { token, _ in
            try logInUser(token)
            let key = try Self.aesKey(token)
            let message = [UInt8](repeating: 0x42, count: 100)
            let sealed = try token.startCipher(
                key, mechanism: Self.gcm.mechanism, parameters: Self.gcm.parameters, encrypting: true,
                context: Contexts.user
            ).run(message)
            #expect(sealed.count == message.count + 16)
            let opened = try token.startCipher(
                key, mechanism: Self.gcm.mechanism, parameters: Self.gcm.parameters, encrypting: false,
                context: Contexts.user
            ).run(sealed)
            #expect(opened == message)
            var altered = sealed
            altered[altered.count - 1] ^= 1
            expectKeychainError(.encryptedDataInvalid) {
                _ = try token.startCipher(
                    key, mechanism: Self.gcm.mechanism, parameters: Self.gcm.parameters, encrypting: false,
                    context: Contexts.user
                ).run(altered)
            }
        }
    }

    @Test("an operation that takes over the previous one's keyed context encrypts as a fresh one does")
    func reusedContextEncryptsAlike() throws {
        try withToken { token, _ in
            try logInUser(token)
            let key = try Self.aesKey(token)
            let first = try token.startCipher(
                key, mechanism: Self.gcm.mechanism, parameters: Self.gcm.parameters, encrypting: true,
                context: Contexts.user)
            _ = try first.run([1, 2, 3])
            let other = AESCipherMode.aesGCM(iv: [UInt8](repeating: 2, count: 12))
            let reusing = try token.startCipher(
                key, mechanism: other.mechanism, parameters: other.parameters, encrypting: true,
                context: Contexts.user, reusing: first)
            let fresh = try token.startCipher(
                key, mechanism: other.mechanism, parameters: other.parameters, encrypting: true,
                context: Contexts.user)
            #expect(try reusing.run([4, 5, 6, 7]) == fresh.run([4, 5, 6, 7]))
        }
    }

    @Test("a malformed parameter is refused before the key is read")
    func parametersBeforeKey() throws {
        try withToken { token, _ in
            try logInUser(token)
            let missing = try Self.aesKey(token)
            try token.destroyObject(missing, context: Contexts.user)
            for parameters: CipherParameters in [
                .gcm(iv: [], additionalData: [], tagBits: 128),
                .gcm(iv: [1], additionalData: [], tagBits: 100),
                .bytes([1, 2, 3]),
            ] {
                expectKeychainError(.mechanismParameterInvalid) {
                    _ = try token.startCipher(
                        missing, mechanism: Self.gcm.mechanism, parameters: parameters, encrypting: true,
                        context: Contexts.user)
                }
            }
            expectKeychainError(.mechanismInvalid) {
                _ = try token.startCipher(
                    missing, mechanism: 0x108A, parameters: .none, encrypting: true, context: Contexts.user)
            }
        }
    }

    @Test("unwrapping stores the key in the same call, under the unwrapping key's rules")
    func unwrapStores() throws {
        try withToken { token, _ in
            try logInUser(token)
            let wrapping = try Self.aesKey(token, [.wrap: yes, .unwrap: yes])
            let inner = try token.createObject(
                [
                    .class: Self.secretClass, .keyType: AttributeValue.encode(KeyType.genericSecret.rawValue),
                    .value: [UInt8](repeating: 3, count: 20), .extractable: yes,
                ], context: Contexts.user)
            let padded = AESKeyWrapMode.aesKeyWrapPadded
            let wrapped = try token.startKeyWrap(
                wrapping, mechanism: padded.mechanism, parameters: .none, unwrapping: false,
                context: Contexts.user
            ).wrap(inner, context: Contexts.user)
            let unwrapping = try token.startKeyWrap(
                wrapping, mechanism: padded.mechanism, parameters: .none, unwrapping: true,
                context: Contexts.user)
            let stored = try unwrapping.unwrap(
                wrapped,
                template: [
                    .class: Self.secretClass, .keyType: AttributeValue.encode(KeyType.genericSecret.rawValue),
                    .sensitive: [0], .extractable: yes,
                ], context: Contexts.user)
            let attributes = try token.attributes(of: stored, context: Contexts.user)
            #expect(attributes[.value] == [UInt8](repeating: 3, count: 20))
            var altered = wrapped
            altered[0] ^= 1
            expectKeychainError(.wrappedKeyInvalid) {
                _ = try unwrapping.unwrap(
                    altered, template: [.class: Self.secretClass], context: Contexts.user)
            }
        }
    }

    @Test("HKDF derives and stores a key whose length the template names")
    func hkdfDerives() throws {
        try withToken { token, _ in
            try logInUser(token)
            let base = try token.createObject(
                [
                    .class: Self.secretClass, .keyType: AttributeValue.encode(KeyType.genericSecret.rawValue),
                    .value: [UInt8](repeating: 5, count: 32), .derive: yes,
                ], context: Contexts.user)
            let derivation = try token.startDerivation(
                base, mechanism: 0x402A,  // CKM_HKDF_DERIVE
                parameters: .hkdf(
                    extract: true, expand: true, hash: 0x250, saltType: DerivationParameters.hkdfSaltData,
                    salt: [1, 2], saltKey: nil, info: [3]),
                context: Contexts.user)
            let key = try derivation.derive(
                template: [
                    .class: Self.secretClass, .keyType: AttributeValue.encode(KeyType.genericSecret.rawValue),
                    .valueLength: ulong(40), .sensitive: [0], .extractable: yes,
                ], context: Contexts.user)
            let attributes = try token.attributes(of: key, context: Contexts.user)
            #expect(attributes[.value]?.count == 40)
            expectKeychainError(.mechanismParameterInvalid) {
                _ = try token.startDerivation(
                    base, mechanism: 0x402A,
                    parameters: .hkdf(
                        extract: false, expand: false, hash: 0x250, saltType: 0, salt: [], saltKey: nil,
                        info: []),
                    context: Contexts.user)
            }
        }
    }
}
