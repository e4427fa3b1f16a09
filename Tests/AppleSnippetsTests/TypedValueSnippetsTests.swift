import Foundation
import Security
import TestSupport
import Testing

@Suite("Attribute values come back as the type they were given", .serialized)
struct TypedValueSnippetsTests {
    @Test("an account stored as Data comes back as Data, and a wrapper's allKeys finds it")
    func dataAccountComesBackAsData() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: TestPIN.user)
            #expect(setValue(Data("v1".utf8), forKey: "first", service: "wrapper") == errSecSuccess)
            #expect(setValue(Data("v2".utf8), forKey: "second", service: "wrapper") == errSecSuccess)
            #expect(Set(allKeys(service: "wrapper")) == ["first", "second"])
            let item = attributes(service: "wrapper", account: "first")
            #expect(item?[kSecAttrAccount as String] is Data)
            #expect(item?[kSecAttrService as String] as? String == "wrapper")
        }
    }

    @Test("an account stored as String comes back as String")
    func stringAccountComesBackAsString() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: TestPIN.user)
            let add: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "s",
                kSecAttrAccount as String: "alice", kSecValueData as String: Data("x".utf8),
            ]
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
            #expect(
                attributes(service: "s", account: "alice")?[kSecAttrAccount as String] as? String == "alice")
            #expect(allKeys(service: "s").isEmpty)
        }
    }

    @Test("a query matches an account across String and Data, as Apple's do")
    func queriesMatchAcrossTypes() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: TestPIN.user)
            #expect(setValue(Data("v".utf8), forKey: "bob", service: "s") == errSecSuccess)
            #expect(attributes(service: "s", account: "bob") != nil)
            #expect(attributes(service: "s", account: Data("bob".utf8)) != nil)
            #expect(attributes(service: "s", account: "carol") == nil)
            // The same bytes as String and as Data are one identity: a second add is a duplicate.
            let again: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "s",
                kSecAttrAccount as String: "bob", kSecValueData as String: Data("w".utf8),
            ]
            #expect(SecItemAdd(again as CFDictionary, nil) == errSecDuplicateItem)
        }
    }

    @Test("a change keeps the types of what it does not set and takes the type of what it sets")
    func changesKeepAndTakeTypes() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: TestPIN.user)
            #expect(setValue(Data("v".utf8), forKey: "bob", service: "s") == errSecSuccess)
            #expect(update(service: "s", [kSecAttrComment as String: Data("note".utf8)]) == errSecSuccess)
            var item = attributes(service: "s", account: "bob")
            #expect(item?[kSecAttrAccount as String] as? Data == Data("bob".utf8))
            #expect(item?[kSecAttrComment as String] as? Data == Data("note".utf8))
            #expect(update(service: "s", [kSecAttrAccount as String: "bob"]) == errSecSuccess)
            item = attributes(service: "s", account: "bob")
            #expect(item?[kSecAttrAccount as String] as? String == "bob")
            #expect(item?[kSecAttrComment as String] as? Data == Data("note".utf8))
        }
    }

    @Test("kSecAttrGeneric given as String and a label given as Data come back so")
    func genericAndLabelKeepTheirTypes() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: TestPIN.user)
            let add: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "s",
                kSecAttrAccount as String: "a", kSecValueData as String: Data("x".utf8),
                kSecAttrGeneric as String: "generic text", kSecAttrLabel as String: Data("tag".utf8),
            ]
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
            let item = attributes(service: "s", account: "a")
            #expect(item?[kSecAttrGeneric as String] as? String == "generic text")
            #expect(item?[kSecAttrLabel as String] as? Data == Data("tag".utf8))
        }
    }

    @Test("a key's tag given as String and label given as Data come back so; a Data tag finds it")
    func keyAttributesKeepTheirTypes() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: TestPIN.user)
            #expect(
                storeKey(try makeEphemeralKey(), tag: "com.example.tag", label: Data("key".utf8))
                    == errSecSuccess)
            let item = privateKeyAttributes(tag: Data("com.example.tag".utf8))
            #expect(item?[kSecAttrApplicationTag as String] as? String == "com.example.tag")
            #expect(item?[kSecAttrLabel as String] as? Data == Data("key".utf8))
        }
    }
}
