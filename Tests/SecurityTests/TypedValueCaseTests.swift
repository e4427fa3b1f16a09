import Foundation
import Keychain
import Security
import Testing

/// Bytes that are not UTF-8 text: Apple's keychain takes them for any text attribute.
private let notText = Data([0xFF, 0xFE, 0x00, 0x80])

@Suite("Every value keeps its type: bytes that are not text, numbers, a new key's label and tag", .serialized)
struct TypedValueCaseTests {
    private func attributes(_ query: [String: Any]) -> (OSStatus, [String: Any]?) {
        var query = query
        query[kSecReturnAttributes as String] = true
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        return (status, result as? [String: Any])
    }

    @Test(
        "an account, service and label given as bytes that are not UTF-8 are stored, found and returned as those bytes"
    )
    func bytesThatAreNotTextRoundTrip() throws {
        try withPINKeychain { _ in
            let add: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: notText,
                kSecAttrAccount as String: notText, kSecAttrLabel as String: notText,
                kSecAttrComment as String: notText, kSecValueData as String: Data("x".utf8),
            ]
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecDuplicateItem)
            let (status, found) = attributes([
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: notText,
            ])
            #expect(status == errSecSuccess)
            for key in [kSecAttrService, kSecAttrAccount, kSecAttrLabel, kSecAttrComment] {
                #expect(found?[key as String] as? Data == notText)
            }
            let other: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: Data([0xFF]),
            ]
            #expect(attributes(other).0 == errSecItemNotFound)
            // The typed API holds them as bytes.
            let item = try #require(try Keychain().genericPasswords().first)
            #expect(item.attributes.binaryValues[.account] == Array(notText))
            #expect(item.attributes.valueType(of: .account) == .data)
        }
    }

    @Test(
        "a typed add with an account of bytes that are not text is returned as those bytes by SecItemCopyMatching"
    )
    func typedAddOfBytesThatAreNotText() throws {
        try withPINKeychain { _ in
            var given = ItemAttributes()
            given.binaryValues[.account] = Array(notText)
            given.valueTypes[.account] = .data
            try Keychain().addGenericPassword(Array("x".utf8), service: "s", account: "", attributes: given)
            let (status, found) = attributes([
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "s",
            ])
            #expect(status == errSecSuccess)
            #expect(found?[kSecAttrAccount as String] as? Data == notText)
            var query = GenericPasswordQuery()
            query.attributes.binaryValues[.account] = Array(notText)
            #expect(try Keychain().genericPasswords(matching: query).count == 1)
        }
    }

    @Test("an internet password's path given as bytes that are not text comes back as those bytes")
    func internetPathOfBytes() throws {
        try withPINKeychain { _ in
            let add: [String: Any] = [
                kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.org",
                kSecAttrAccount as String: "bob", kSecAttrPath as String: notText,
                kSecValueData as String: Data("x".utf8),
            ]
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
            let (status, found) = attributes([
                kSecClass as String: kSecClassInternetPassword, kSecAttrPath as String: notText,
            ])
            #expect(status == errSecSuccess)
            #expect(found?[kSecAttrPath as String] as? Data == notText)
            #expect(found?[kSecAttrAccount as String] as? String == "bob")
        }
    }

    @Test("an account given as a number is returned as that number and found by it")
    func numberAccountRoundTrips() throws {
        try withPINKeychain { _ in
            let add: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "s",
                kSecAttrAccount as String: NSNumber(value: 42), kSecAttrLabel as String: NSNumber(value: 1.5),
                kSecValueData as String: Data("x".utf8),
            ]
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
            let (status, found) = attributes([
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: NSNumber(value: 42),
            ])
            #expect(status == errSecSuccess)
            #expect(found?[kSecAttrAccount as String] as? NSNumber == NSNumber(value: 42))
            #expect(found?[kSecAttrLabel as String] as? NSNumber == NSNumber(value: 1.5))
            #expect(found?[kSecAttrService as String] as? String == "s")
            let item = try #require(try Keychain().genericPasswords().first)
            #expect(item.account == "42")
            #expect(item.attributes.valueType(of: .account) == .number)
        }
    }

    @Test("a new key's label and tag given in kSecPrivateKeyAttrs come back as the types they were given")
    func newKeyLabelAndTagKeepTheirTypes() throws {
        try withPINKeychain { _ in
            let parameters: [String: Any] = [
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                kSecAttrKeySizeInBits as String: 256,
                kSecPrivateKeyAttrs as String: [
                    kSecAttrIsPermanent as String: true,
                    kSecAttrLabel as String: Data("my key".utf8),
                    kSecAttrApplicationTag as String: "my.tag",
                ],
            ]
            #expect(SecKeyCreateRandomKey(parameters as CFDictionary, nil) != nil)
            let (status, found) = attributes([
                kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                kSecAttrApplicationTag as String: Data("my.tag".utf8),
            ])
            #expect(status == errSecSuccess)
            #expect(found?[kSecAttrLabel as String] as? Data == Data("my key".utf8))
            #expect(found?[kSecAttrApplicationTag as String] as? String == "my.tag")
        }
    }
}
