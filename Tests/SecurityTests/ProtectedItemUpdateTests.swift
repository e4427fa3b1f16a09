import Foundation
import Keychain
import Security
import Testing

// A password whose access control needs the PIN for each use is not changed
// without that PIN. SecItemUpdate takes it from the query's kSecUseAuthenticationContext, as
// SecItemCopyMatching does to read the value; the core checks it.

@Suite("A .userPresence password changes only with the PIN", .serialized)
struct ProtectedItemUpdateTests {
    private static let service = "com.example.protected-update"

    private static func add(_ secret: String) throws {
        let access = try #require(
            SecAccessControlCreateWithFlags(
                nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .userPresence, nil))
        let item: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrAccount as String: "alice", kSecAttrAccessControl as String: access,
            kSecValueData as String: Data(secret.utf8),
        ]
        try #require(SecItemAdd(item as CFDictionary, nil) == errSecSuccess)
    }

    private static func query(pin: String?) -> [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
            kSecAttrAccount as String: "alice",
        ]
        if let pin { query[kSecUseAuthenticationContext as String] = pin }
        return query
    }

    private static func update(pin: String?, _ changes: [String: Any]) -> OSStatus {
        SecItemUpdate(query(pin: pin) as CFDictionary, changes as CFDictionary)
    }

    private static func secret() -> String? {
        var read = query(pin: TestPIN.user)
        read[kSecReturnData as String] = true
        var item: CFTypeRef?
        guard SecItemCopyMatching(read as CFDictionary, &item) == errSecSuccess, let data = item as? Data
        else {
            return nil
        }
        return String(decoding: data, as: UTF8.self)
    }

    @Test("SecItemUpdate without the PIN is errSecInteractionNotAllowed, with a wrong one errSecAuthFailed")
    func updateNeedsThePIN() throws {
        try withPINKeychain { _ in
            try Self.add("original")
            let newValue = [kSecValueData as String: Data("replaced".utf8)]
            #expect(Self.update(pin: nil, newValue) == errSecInteractionNotAllowed)
            #expect(
                Self.update(pin: nil, [kSecAttrLabel as String: "renamed"]) == errSecInteractionNotAllowed)
            #expect(Self.update(pin: "0000", newValue) == errSecAuthFailed)
            #expect(Self.secret() == "original")
            #expect(Self.update(pin: TestPIN.user, newValue) == errSecSuccess)
            #expect(Self.secret() == "replaced")
        }
    }

    @Test("the typed API changes a protected password only when given the PIN")
    func typedUpdateNeedsThePIN() throws {
        try withPINKeychain { _ in
            try Self.add("original")
            let keychain = try Keychain()
            let query = GenericPasswordQuery(service: Self.service, account: "alice")
            let changes = GenericPasswordChanges(password: Array("replaced".utf8))
            do {
                try keychain.updateGenericPasswords(matching: query, setting: changes)
                Issue.record("a protected password changed without the PIN")
            } catch let error as KeychainError {
                #expect(error.code == .interactionNotAllowed)
            }
            #expect(Self.secret() == "original")
            try keychain.updateGenericPasswords(
                matching: query, setting: changes, pin: Array(TestPIN.user.utf8))
            #expect(Self.secret() == "replaced")
        }
    }
}
