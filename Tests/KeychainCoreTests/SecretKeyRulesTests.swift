import Foundation
import KeychainCore
import KeychainCrypto
import Testing

/// The core's rules for secret keys, on the paths the module and the Swift faces
/// share: the one rule check for generate, unwrap and derive templates, the history a key
/// keeps, and the one key-use check with CKA_ALLOWED_MECHANISMS.
@Suite("Secret key rules held once in the core")
struct SecretKeyRulesTests {
    static let aes = AttributeValue.encode(KeyType.aes.rawValue)
    static let secretClass = AttributeValue.encode(ObjectClass.secretKey.rawValue)

    @Test("generation, unwrapping and derivation templates may not give the value or what the token sets")
    func templatesAreChecked() throws {
        try withToken { token, _ in
            try logInUser(token)
            let kind = try #require(SecretKeyKind(.aes))
            for template: AttributeSet in [
                [.value: [UInt8](repeating: 1, count: 16)], [.local: [1]], [.alwaysSensitive: [1]],
                [.keyGenMechanism: ulong(0)],
            ] {
                expectKeychainError(.attributeReadOnly) {
                    _ = try token.generateSecretKey(
                        kind, mechanism: SecretKeyKind.aesKeyGeneration,
                        template: template.merging([.valueLength: ulong(16)]) { $1 }, context: Contexts.user)
                }
                expectKeychainError(.attributeReadOnly) {
                    _ = try token.storeUnwrappedKey(
                        SecretBytes([UInt8](repeating: 2, count: 16)),
                        template: template.merging([.class: Self.secretClass, .keyType: Self.aes]) { $1 },
                        unwrappingKey: [:], context: Contexts.user)
                }
            }
        }
    }

    @Test("a generated key is always sensitive; an unwrapped one never; a derived one as its base")
    func historyFollowsTheWayAKeyCameToBe() throws {
        try withToken { token, _ in
            try logInUser(token)
            let kind = try #require(SecretKeyKind(.genericSecret))
            let generated = try token.generateSecretKey(
                kind, mechanism: SecretKeyKind.genericSecretKeyGeneration,
                template: [.valueLength: ulong(32), .derive: yes], context: Contexts.user)
            var attributes = try token.attributes(of: generated, context: Contexts.user)
            #expect(attributes.bool(.alwaysSensitive) == true && attributes.bool(.neverExtractable) == true)
            let unwrapped = try token.storeUnwrappedKey(
                SecretBytes([UInt8](repeating: 3, count: 16)),
                template: [.class: Self.secretClass, .keyType: Self.aes], unwrappingKey: [:],
                context: Contexts.user)
            attributes = try token.attributes(of: unwrapped, context: Contexts.user)
            #expect(attributes.bool(.alwaysSensitive) == false && attributes.bool(.neverExtractable) == false)
            let base = try token.attributes(of: generated, context: Contexts.user)
            let derived = try token.storeDerivedKey(
                SecretBytes([UInt8](repeating: 4, count: 32)), template: [:], base: base,
                context: Contexts.user)
            attributes = try token.attributes(of: derived, context: Contexts.user)
            #expect(attributes.bool(.alwaysSensitive) == true, "sensitive like its always-sensitive base")
            let readable = try token.storeDerivedKey(
                SecretBytes([UInt8](repeating: 5, count: 32)),
                template: [.sensitive: [0], .extractable: yes],
                base: base, context: Contexts.user)
            attributes = try token.attributes(of: readable, context: Contexts.user)
            #expect(attributes.bool(.alwaysSensitive) == false && attributes.bool(.neverExtractable) == false)
            #expect(attributes[.value] == [UInt8](repeating: 5, count: 32))
        }
    }

    @Test("the key-use check obeys CKA_ALLOWED_MECHANISMS, and a face that names no mechanism is refused")
    func allowedMechanisms() throws {
        try withToken { token, _ in
            try logInUser(token)
            let allowed = ulong(0x1087)  // CKM_AES_GCM
            let key = try token.createObject(
                [
                    .class: Self.secretClass, .keyType: Self.aes, .value: [UInt8](repeating: 6, count: 32),
                    .allowedMechanisms: allowed,
                ], context: Contexts.user)
            _ = try token.useSecretKey(
                key, for: .encrypt, keyTypes: [.aes], mechanism: 0x1087, context: Contexts.user)
            expectKeychainError(.mechanismInvalid) {
                _ = try token.useSecretKey(
                    key, for: .encrypt, keyTypes: [.aes], mechanism: 0x1082, context: Contexts.user)
            }
            expectKeychainError(.mechanismInvalid) {
                _ = try token.useSecretKey(
                    key, for: .encrypt, keyTypes: [.aes], mechanism: nil, context: Contexts.user)
            }
            // CKA_WRAP is not set: AES key wrap is refused on the key's account.
            expectKeychainError(.keyFunctionNotPermitted) {
                _ = try token.useSecretKey(
                    key, for: .wrap, keyTypes: [.aes], mechanism: 0x2109, context: Contexts.user)
            }
            // GCM wraps nothing on this token (the registry's flags): refused before the key.
            expectKeychainError(.mechanismInvalid) {
                _ = try token.useSecretKey(
                    key, for: .wrap, keyTypes: [.aes], mechanism: 0x1087, context: Contexts.user)
            }
            expectKeychainError(.attributeReadOnly) {
                try token.updateObject(key, with: [.allowedMechanisms: ulong(0x1082)], context: Contexts.user)
            }
        }
    }
}
