import Foundation
import Security
import Testing

// A search of a locked keychain: Apple answers errSecInteractionNotAllowed for
// items that need it unlocked, so that code written for Apple tells "locked" from "absent".

@Suite("Searching a locked keychain", .serialized)
struct LockedKeychainTests {
    private let password: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "com.example.locked",
        kSecAttrAccount as String: "alice",
    ]

    @Test("a locked keychain answers errSecInteractionNotAllowed for passwords, private keys and identities")
    func lockedSearchesAreNotAllowed() throws {
        try withPINKeychain { _ in
            var stored = password
            stored[kSecValueData as String] = Data("s3cret".utf8)
            #expect(SecItemAdd(stored as CFDictionary, nil) == errSecSuccess)
            let internet: [String: Any] = [
                kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.com",
                kSecAttrAccount as String: "alice", kSecValueData as String: Data("pw".utf8),
            ]
            #expect(SecItemAdd(internet as CFDictionary, nil) == errSecSuccess)
            var error: Unmanaged<CFError>?
            let parameters: [String: Any] = [
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                kSecAttrKeySizeInBits as String: 256,
                kSecPrivateKeyAttrs as String: [
                    kSecAttrIsPermanent as String: true,
                    kSecAttrApplicationTag as String: Data("com.example.locked.key".utf8),
                ],
            ]
            #expect(SecKeyCreateRandomKey(parameters as CFDictionary, &error) != nil)
            #expect(SecKeychainLock(nil) == errSecSuccess)

            var result: CFTypeRef?
            var withData = password
            withData[kSecReturnData as String] = true
            #expect(SecItemCopyMatching(withData as CFDictionary, &result) == errSecInteractionNotAllowed)
            #expect(result == nil)
            #expect(
                (SecCopyErrorDiagnostic(errSecInteractionNotAllowed) as String?)?.contains("locked") == true)
            #expect(
                SecItemCopyMatching(
                    [kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.com"]
                        as CFDictionary, nil) == errSecInteractionNotAllowed)
            #expect(
                SecItemUpdate(
                    password as CFDictionary,
                    [kSecValueData as String: Data("other".utf8)] as CFDictionary)
                    == errSecInteractionNotAllowed)
            #expect(SecItemDelete(password as CFDictionary) == errSecInteractionNotAllowed)
            let privateKey: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                kSecReturnRef as String: true,
            ]
            #expect(SecItemCopyMatching(privateKey as CFDictionary, &result) == errSecInteractionNotAllowed)
            #expect(
                SecItemCopyMatching([kSecClass as String: kSecClassIdentity] as CFDictionary, nil)
                    == errSecInteractionNotAllowed)

            // Public items are found while locked; a certificate that is not there is not found.
            let publicKey: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassPublic,
                kSecReturnRef as String: true,
            ]
            #expect(SecItemCopyMatching(publicKey as CFDictionary, &result) == errSecSuccess)
            #expect(result is SecKey)
            #expect(
                SecItemCopyMatching([kSecClass as String: kSecClassCertificate] as CFDictionary, nil)
                    == errSecItemNotFound)
            var missingPublicKey = publicKey
            missingPublicKey[kSecAttrApplicationTag as String] = Data("no such tag".utf8)
            missingPublicKey[kSecReturnRef as String] = nil
            #expect(SecItemCopyMatching(missingPublicKey as CFDictionary, nil) == errSecItemNotFound)

            // Unlocked again, everything is there as it was.
            #expect(unlock(TestPIN.user) == errSecSuccess)
            #expect(SecItemCopyMatching(withData as CFDictionary, &result) == errSecSuccess)
            #expect(result as? Data == Data("s3cret".utf8))
            #expect(SecItemCopyMatching(privateKey as CFDictionary, &result) == errSecSuccess)
        }
    }

    @Test("an unlocked keychain still answers errSecItemNotFound for what is not there")
    func unlockedMissesAreNotFound() throws {
        try withPINKeychain { _ in
            #expect(SecItemCopyMatching(password as CFDictionary, nil) == errSecItemNotFound)
            #expect(SecItemDelete(password as CFDictionary) == errSecItemNotFound)
            #expect(
                SecItemCopyMatching([kSecClass as String: kSecClassIdentity] as CFDictionary, nil)
                    == errSecItemNotFound)
        }
    }
}
