import Foundation
import Keychain
import Security
import Testing

/// kSecAttrKeyClassSymmetric: the token's secret keys (CKO_SECRET_KEY), made by the typed
/// `Keychain` API or by a PKCS#11 application, found and deleted through SecItem.
@Suite("Symmetric key items through SecItem", .serialized)
struct SymmetricKeyItemTests {
    private func copy(_ query: [String: Any]) -> (OSStatus, CFTypeRef?) {
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        return (status, result)
    }

    private let symmetric: [String: Any] = [
        kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassSymmetric,
    ]

    @Test("secret keys of the Keychain API are found with their attributes, by class, label, tag and type")
    func foundWithAttributes() throws {
        try withPINKeychain { _ in
            let keychain = try Keychain()
            let tag = Array("com.example.backup".utf8)
            try keychain.generateSecretKey(
                SecretKeyAlgorithm(type: .aes, sizeInBits: 256), label: "backup key", applicationTag: tag)
            try keychain.importSecretKey(
                [UInt8](repeating: 0x0b, count: 32), type: .hmac(.sha256), label: "mac key")

            let (status, result) = copy(
                symmetric.merging([
                    kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true,
                ]) { $1 })
            #expect(status == errSecSuccess)
            let items = try #require(result as? [[String: Any]])
            #expect(items.count == 2)
            let aes = try #require(items.first { $0[kSecAttrLabel as String] as? String == "backup key" })
            #expect(aes[kSecAttrKeyClass as String] as? String == kSecAttrKeyClassSymmetric as String)
            #expect(aes[kSecAttrKeyType as String] as? String == kSecAttrKeyTypeAES as String)
            #expect(aes[kSecAttrKeySizeInBits as String] as? Int == 256)
            #expect(aes[kSecAttrApplicationTag as String] as? Data == Data(tag))
            #expect((aes[kSecAttrApplicationLabel as String] as? Data)?.isEmpty == false)
            #expect(aes[kSecAttrIsPermanent as String] as? Bool == true)
            let mac = try #require(items.first { $0[kSecAttrLabel as String] as? String == "mac key" })
            #expect(mac[kSecAttrKeyType as String] as? String == kSecAttrKeyTypeHMACSHA256 as String)

            let byTag = copy(
                symmetric.merging([
                    kSecAttrApplicationTag as String: Data(tag), kSecReturnAttributes as String: true,
                ]) { $1 })
            #expect((byTag.1 as? [String: Any])?[kSecAttrLabel as String] as? String == "backup key")
            let byType = copy([
                kSecClass as String: kSecClassKey, kSecAttrKeyType as String: kSecAttrKeyTypeHMACSHA256,
                kSecReturnAttributes as String: true,
            ])
            #expect((byType.1 as? [String: Any])?[kSecAttrLabel as String] as? String == "mac key")
            #expect(
                copy(symmetric.merging([kSecAttrKeySizeInBits as String: 128]) { $1 }).0 == errSecItemNotFound
            )
        }
    }

    @Test(
        "kSecReturnRef gives a SecKey that SecItemDelete deletes; kSecValuePersistentRef finds it again first"
    )
    func referenceDeletes() throws {
        try withPINKeychain { _ in
            let keychain = try Keychain()
            try keychain.generateSecretKey(SecretKeyAlgorithm(type: .aes, sizeInBits: 128), label: "one")
            try keychain.generateSecretKey(SecretKeyAlgorithm(type: .aes, sizeInBits: 128), label: "two")
            let (status, result) = copy(
                symmetric.merging([kSecAttrLabel as String: "one", kSecReturnRef as String: true]) { $1 })
            #expect(status == errSecSuccess)
            let key = try #require(result as? SecKey)
            #expect(CFGetTypeID(key) == SecKeyGetTypeID())
            #expect(SecKeyCopyPublicKey(key) == nil)
            #expect(SecKeyCopyAttributes(key)?[kSecAttrLabel as String] as? String == "one")
            var error: Unmanaged<CFError>?
            #expect(SecKeyCopyExternalRepresentation(key, &error) == nil)
            #expect(takeError(error)?.code == Int(errSecInteractionNotAllowed))
            #expect(
                SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, Data() as CFData, &error) == nil)
            #expect(takeError(error)?.code == Int(errSecParam))

            let persistent = copy(
                symmetric.merging([kSecAttrLabel as String: "one", kSecReturnPersistentRef as String: true]) {
                    $1
                })
            let reference = try #require(persistent.1 as? Data)
            let again = copy([
                kSecClass as String: kSecClassKey, kSecValuePersistentRef as String: reference,
                kSecReturnRef as String: true,
            ])
            #expect(again.1 as? SecKey == key)

            #expect(
                SecItemDelete(
                    [kSecClass as String: kSecClassKey, kSecValueRef as String: key] as CFDictionary)
                    == errSecSuccess)
            #expect(copy(symmetric.merging([kSecAttrLabel as String: "one"]) { $1 }).0 == errSecItemNotFound)
            #expect(try keychain.secretKeys().map(\.label) == ["two"])
            #expect(SecItemDelete(symmetric as CFDictionary) == errSecSuccess)
            #expect(try keychain.secretKeys().isEmpty)
            #expect(SecItemDelete(symmetric as CFDictionary) == errSecItemNotFound)
        }
    }

    @Test("an AES key pkcs11-tool generates is found through SecItem and deleted, and gone for pkcs11-tool")
    func pkcs11ToolKey() throws {
        try withPINKeychain { directory in
            let made = try pkcs11Tool(
                ["--keygen", "--key-type", "AES:32", "--label", "tool key", "--id", "a1b2"],
                keychainDirectory: directory)
            #expect(made.status == 0, "\(made.error)")
            let before = try pkcs11Tool(
                ["--list-objects", "--type", "secrkey"], keychainDirectory: directory)
            #expect(before.status == 0 && before.output.contains("tool key"), "\(before.output)")
            let (status, result) = copy(
                symmetric.merging([kSecAttrLabel as String: "tool key", kSecReturnAttributes as String: true])
                { $1 })
            #expect(status == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            #expect(attributes[kSecAttrKeySizeInBits as String] as? Int == 256)
            #expect(attributes[kSecAttrApplicationLabel as String] as? Data == Data([0xa1, 0xb2]))
            #expect(
                SecItemDelete(symmetric.merging([kSecAttrLabel as String: "tool key"]) { $1 } as CFDictionary)
                    == errSecSuccess)
            let listed = try pkcs11Tool(
                ["--list-objects", "--type", "secrkey"], keychainDirectory: directory)
            #expect(listed.status == 0 && !listed.output.contains("tool key"), "\(listed.output)")
        }
    }

    @Test("key classes keep apart: symmetric queries skip key pairs, private-key queries skip symmetric keys")
    func classesApart() throws {
        try withPINKeychain { _ in
            let keychain = try Keychain()
            try keychain.generateSecretKey(SecretKeyAlgorithm(type: .aes, sizeInBits: 256), label: "shared")
            try keychain.generateKeyPair(.p256, label: "shared")
            let all = copy([
                kSecClass as String: kSecClassKey, kSecAttrLabel as String: "shared",
                kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true,
            ])
            let classes = (all.1 as? [[String: Any]])?.compactMap {
                $0[kSecAttrKeyClass as String] as? String
            }
            #expect(
                Set(classes ?? [])
                    == Set(
                        [kSecAttrKeyClassPrivate, kSecAttrKeyClassPublic, kSecAttrKeyClassSymmetric].map {
                            $0 as String
                        }))
            let onlySymmetric = copy(
                symmetric.merging([
                    kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true,
                ]) { $1 })
            #expect((onlySymmetric.1 as? [[String: Any]])?.count == 1)
            let onlyPrivate = copy([
                kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true,
            ])
            #expect(
                (onlyPrivate.1 as? [[String: Any]])?.map { $0[kSecAttrKeyClass as String] as? String } == [
                    kSecAttrKeyClassPrivate as String
                ])
            // A limit of one over both kinds still returns one item.
            let one = copy([kSecClass as String: kSecClassKey, kSecReturnAttributes as String: true])
            #expect(one.1 is [String: Any])
        }
    }

    @Test(
        "locked, symmetric keys are not found; their data is withheld; SecItemAdd and SecItemUpdate refuse them"
    )
    func refusals() throws {
        try withPINKeychain { _ in
            let keychain = try Keychain()
            try keychain.generateSecretKey(SecretKeyAlgorithm(type: .aes, sizeInBits: 256), label: "k")
            #expect(
                copy(symmetric.merging([kSecReturnData as String: true]) { $1 }).0
                    == errSecInteractionNotAllowed)
            #expect(
                SecItemUpdate(symmetric as CFDictionary, [kSecAttrLabel as String: "new"] as CFDictionary)
                    == errSecUnimplemented)
            #expect(try keychain.secretKeys().map(\.label) == ["k"])
            #expect(SecKeychainLock(nil) == errSecSuccess)
            #expect(copy(symmetric).0 == errSecInteractionNotAllowed)
            #expect(SecItemDelete(symmetric as CFDictionary) == errSecInteractionNotAllowed)
            #expect(unlock(TestPIN.user) == errSecSuccess)
            #expect(copy(symmetric).0 == errSecSuccess)
        }
    }

    @Test("SecItemAdd stores a symmetric key from its value: found, with the value's AES check value, usable")
    func addFromValue() throws {
        try withPINKeychain { directory in
            let value = Data((0..<16).map { UInt8($0) })
            let applicationLabel = Data("aes-1".utf8)
            let add: [String: Any] = symmetric.merging([
                kSecAttrKeyType as String: kSecAttrKeyTypeAES, kSecValueData as String: value,
                kSecAttrLabel as String: "added", kSecAttrApplicationLabel as String: applicationLabel,
                kSecReturnAttributes as String: true,
            ]) { $1 }
            var result: CFTypeRef?
            #expect(SecItemAdd(add as CFDictionary, &result) == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            #expect(attributes[kSecAttrKeySizeInBits as String] as? Int == 128)
            #expect(attributes[kSecAttrCanEncrypt as String] as? Bool == true)
            #expect(attributes[kSecAttrIsExtractable as String] as? Bool == true, "Apple's default")
            #expect(SecItemAdd(add as CFDictionary, &result) == errSecDuplicateItem)

            // CKA_CHECK_VALUE is AES-ECB of a zero block under the value: openssl's, byte for byte.
            let zeros = directory + "/zeros"
            try Data(count: 16).write(to: URL(fileURLWithPath: zeros))
            try openssl([
                "enc", "-aes-128-ecb", "-nopad", "-K", value.hex, "-in", zeros, "-out", zeros + ".enc",
            ])
            let encrypted = try Data(contentsOf: URL(fileURLWithPath: zeros + ".enc"))
            let stored = try #require(try Keychain().firstSecretKey(matching: SecretKeyQuery(label: "added")))
            #expect(stored.checkValue == Array(encrypted.prefix(3)))

            let hmac: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecAttrKeyType as String: kSecAttrKeyTypeHMACSHA256,
                kSecValueData as String: Data(count: 32), kSecAttrLabel as String: "mac",
                kSecAttrCanSign as String: true,
            ]
            #expect(SecItemAdd(hmac as CFDictionary, nil) == errSecSuccess)
            let mac = try #require(try Keychain().firstSecretKey(matching: SecretKeyQuery(label: "mac")))
            #expect(mac.type == .hmac(.sha256))
            #expect(mac.usage.contains(.sign))

            let noType = symmetric.merging([kSecValueData as String: value]) { $1 }
            #expect(SecItemAdd(noType as CFDictionary, nil) == errSecParam)
            let notSensitive = add.merging([
                kSecAttrIsSensitive as String: false, kSecAttrApplicationLabel as String: Data("2".utf8),
            ]) { $1 }
            #expect(SecItemAdd(notSensitive as CFDictionary, &result) == errSecParam)
            let wrongSize = add.merging([
                kSecAttrKeySizeInBits as String: 256, kSecAttrApplicationLabel as String: Data("3".utf8),
            ]) { $1 }
            #expect(SecItemAdd(wrongSize as CFDictionary, &result) == errSecParam)
            let badLength = add.merging([
                kSecValueData as String: Data(count: 15), kSecAttrApplicationLabel as String: Data("4".utf8),
            ]) { $1 }
            #expect(SecItemAdd(badLength as CFDictionary, &result) == errSecParam)
            #expect(try Keychain().secretKeys().count == 2)
        }
    }
}
