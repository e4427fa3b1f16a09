import Foundation
import Keychain
import Security
import Testing

@Suite("Both faces keep the type an attribute was given as", .serialized)
struct TypedValueTests {
    @Test("an account given to SecItemAdd as Data reads as data through the typed API")
    func typedAPIReportsTheGivenType() throws {
        try withPINKeychain { _ in
            let add: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "s",
                kSecAttrAccount as String: Data("bob".utf8), kSecValueData as String: Data("x".utf8),
            ]
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
            let item = try Keychain().firstGenericPassword(matching: GenericPasswordQuery(account: "bob"))
            #expect(item?.account == "bob")
            #expect(item?.attributes.valueType(of: .account) == .data)
            #expect(item?.attributes.valueType(of: .service) == .string)
            #expect(item?.attributes.valueType(of: .generic) == .data)
        }
    }

    @Test("a typed add that says the account is data is returned as Data by SecItemCopyMatching")
    func typedAddIsReturnedAsData() throws {
        try withPINKeychain { _ in
            var attributes = ItemAttributes()
            attributes.valueTypes[.account] = .data
            try Keychain().addGenericPassword(
                Array("x".utf8), service: "s", account: "bob", attributes: attributes)
            let query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "s",
                kSecReturnAttributes as String: true,
            ]
            var result: CFTypeRef?
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
            #expect((result as? [String: Any])?[kSecAttrAccount as String] as? Data == Data("bob".utf8))
        }
    }
}
