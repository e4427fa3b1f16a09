import Foundation
import Security
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body` with a fresh default keychain whose PINs `pkcs11-tool` set on the built module
/// (`withPINKeychain`: SO PIN 12345678, user PIN 1234), unlocked with `SecKeychainUnlock`.
private func withUnlockedKeychain(_ body: () throws -> Void) throws {
    try withPINKeychain { _ in
        try unlockKeychain(password: "1234")
        try body()
    }
}

/// What `pkcs11-tool --list-objects --type data`, logged in, prints for the default keychain.
private func pkcs11ToolDataObjects() throws -> String {
    let module = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent("libp11keychain-pkcs11.so").path
    var environment = ProcessInfo.processInfo.environment
    environment["PATH"] = "/usr/bin:/bin"
    let result = try runProgram(
        "/usr/bin/pkcs11-tool",
        ["--module", module, "--login", "--pin", TestPIN.user, "--list-objects", "--type", "data"],
        environment: environment)
    #expect(result.status == 0)
    return result.output
}

@Suite("Apple's item attributes, internet passwords and access control run unchanged", .serialized)
struct ItemAttributeSnippetsTests {
    @Test("passwords added through SecItemAdd are data objects that pkcs11-tool lists")
    func passwordsAreDataObjectsThroughPKCS11() throws {
        try withUnlockedKeychain {
            try addCredentials(Credentials(username: "alice", password: "s3cret"), server: "www.example.com")
            #expect(
                saveToken("t", service: "com.example.api", account: "bob", synchronizable: true)
                    == errSecSuccess)
            let listing = try pkcs11ToolDataObjects()
            #expect(listing.components(separatedBy: "Data object").count - 1 == 2)
            let applications = listing.split(separator: "\n").filter { $0.contains("application:") }
            #expect(applications.contains { $0.hasSuffix("'www.example.com'") })
            #expect(applications.contains { $0.hasSuffix("'com.example.api'") })
            #expect(listing.contains("'com.example.api token'"))
        }
    }

    @Test("an internet password is added, found, updated and deleted with protocol, port, path and auth type")
    func internetPasswordLifecycle() throws {
        try withUnlockedKeychain {
            try addCredentials(Credentials(username: "alice", password: "s3cret"), server: "www.example.com")
            let found = try findCredentials(server: "www.example.com")
            #expect(found.credentials.username == "alice")
            #expect(found.credentials.password == "s3cret")
            #expect(found.attributes[kSecClass as String] as? String == kSecClassInternetPassword as String)
            #expect(
                found.attributes[kSecAttrProtocol as String] as? String == kSecAttrProtocolHTTPS as String)
            #expect(found.attributes[kSecAttrPort as String] as? Int == 443)
            #expect(found.attributes[kSecAttrPath as String] as? String == "/login")
            #expect(
                found.attributes[kSecAttrAuthenticationType as String] as? String
                    == kSecAttrAuthenticationTypeHTMLForm as String)
            #expect(
                found.attributes[kSecAttrAccessible as String] as? String == kSecAttrAccessibleWhenUnlocked
                    as String)
            #expect(found.attributes[kSecAttrCreationDate as String] is Date)
            #expect(found.attributes[kSecAttrModificationDate as String] is Date)
            // Apple's uniqueness rule for the class: the same address and account again is a duplicate…
            #expect(throws: KeychainError.self) {
                try addCredentials(
                    Credentials(username: "alice", password: "other"), server: "www.example.com")
            }
            // …another server is not.
            try addCredentials(Credentials(username: "alice", password: "other"), server: "mail.example.com")

            try updateCredentials(Credentials(username: "bob", password: "n3w"), server: "www.example.com")
            let updated = try findCredentials(server: "www.example.com")
            #expect(updated.credentials.username == "bob")
            #expect(updated.credentials.password == "n3w")
            let created = try #require(updated.attributes[kSecAttrCreationDate as String] as? Date)
            let modified = try #require(updated.attributes[kSecAttrModificationDate as String] as? Date)
            #expect(modified >= created)

            try deleteCredentials(server: "www.example.com")
            #expect(throws: KeychainError.self) { try findCredentials(server: "www.example.com") }
            #expect(try findCredentials(server: "mail.example.com").credentials.password == "other")
        }
    }

    @Test(
        "accessibility, access group and synchronizable are stored; a query without sync sees only the others"
    )
    func synchronizableQueries() throws {
        try withUnlockedKeychain {
            #expect(
                saveToken("local", service: "com.example.api", account: "alice", synchronizable: false)
                    == errSecSuccess)
            #expect(
                saveToken("cloud", service: "com.example.api", account: "alice", synchronizable: true)
                    == errSecSuccess)
            // The same identity (service, account, group, sync) again is a duplicate.
            #expect(
                saveToken("again", service: "com.example.api", account: "alice", synchronizable: true)
                    == errSecDuplicateItem)

            let (status, plain) = allTokens(service: "com.example.api", anySynchronizable: false)
            #expect(status == errSecSuccess)
            #expect(plain.compactMap { $0[kSecValueData as String] as? Data } == [Data("local".utf8)])

            let (anyStatus, all) = allTokens(service: "com.example.api", anySynchronizable: true)
            #expect(anyStatus == errSecSuccess)
            #expect(
                Set(all.compactMap { $0[kSecValueData as String] as? Data }) == [
                    Data("local".utf8), Data("cloud".utf8),
                ])
            for item in all {
                // Given as Data (saveToken), the account comes back as Data, as on Apple platforms.
                #expect(item[kSecAttrAccount as String] as? Data == Data("alice".utf8))
                #expect(
                    item[kSecAttrAccessible as String] as? String == kSecAttrAccessibleAfterFirstUnlock
                        as String)
                #expect(item[kSecAttrAccessGroup as String] as? String == "group.com.example.shared")
                #expect(item[kSecAttrComment as String] as? String == "issued by the login server")
                #expect(item[kSecAttrDescription as String] as? String == "access token")
                #expect(item[kSecAttrGeneric as String] as? Data == Data([1, 2, 3]))
                #expect(item[kSecAttrCreationDate as String] is Date)
                #expect(item[kSecAttrModificationDate as String] is Date)
            }
            #expect(Set(all.compactMap { $0[kSecAttrSynchronizable as String] as? Bool }) == [false, true])

            #expect(renameTokens(service: "com.example.api", comment: "renewed") == errSecSuccess)
            let (_, renamed) = allTokens(service: "com.example.api", anySynchronizable: true)
            #expect(
                renamed.compactMap { $0[kSecAttrComment as String] as? String } == ["renewed", "renewed"])
            #expect(deleteTokens(service: "com.example.api") == errSecSuccess)
            #expect(allTokens(service: "com.example.api", anySynchronizable: true).0 == errSecItemNotFound)
        }
    }

    @Test("creation and modification dates cannot be set by a caller")
    func datesAreReadOnly() throws {
        try withUnlockedKeychain {
            let query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "s",
                kSecAttrAccount as String: "a", kSecValueData as String: Data("x".utf8),
                kSecAttrCreationDate as String: Date(timeIntervalSince1970: 0),
            ]
            #expect(SecItemAdd(query as CFDictionary, nil) == errSecParam)
        }
    }

    @Test("SecAccessControl with .userPresence: the secret reads only with the PIN, each time")
    func userPresenceIsEnforced() throws {
        try withUnlockedKeychain {
            try saveProtectedSecret(Data("launch codes".utf8), account: "alice")
            #expect(
                readProtectedSecret(account: "alice", context: nil, ui: nil).0 == errSecInteractionNotAllowed)
            #expect(
                readProtectedSecret(account: "alice", context: nil, ui: kSecUseAuthenticationUIFail).0
                    == errSecInteractionNotAllowed)
            #expect(
                readProtectedSecret(account: "alice", context: nil, ui: kSecUseAuthenticationUISkip).0
                    == errSecItemNotFound)
            #expect(readProtectedSecret(account: "alice", context: "0000", ui: nil).0 == errSecAuthFailed)
            let (status, data) = readProtectedSecret(account: "alice", context: "1234", ui: nil)
            #expect(status == errSecSuccess)
            #expect(data == Data("launch codes".utf8))
            // The attributes still read without the PIN, and carry the access control.
            let query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "alice",
                kSecReturnAttributes as String: true,
            ]
            var item: CFTypeRef?
            #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess)
            let attributes = try #require(item as? [String: Any])
            #expect(attributes[kSecAttrAccessControl as String] is SecAccessControl)
            #expect(
                attributes[kSecAttrAccessible as String] as? String
                    == kSecAttrAccessibleWhenUnlockedThisDeviceOnly as String)
        }
    }

    @Test("a key made with .userPresence access control never signs without the PIN")
    func protectedKeyNeedsThePIN() throws {
        try withUnlockedKeychain {
            let key = try makeProtectedSigningKey(tag: Data("com.example.protected-key".utf8))
            #expect(signatureErrorCode(key) == Int(errSecInteractionNotAllowed))
        }
    }

    @Test("biometric access control is refused with errSecParam")
    func biometryIsRefused() throws {
        let error = try #require(biometryAccessControlError())
        #expect((error as NSError).code == Int(errSecParam))
    }

    @Test("a persistent reference finds its password without kSecClass; kSecReturnRef gives the data")
    func persistentReferenceAndReturnRef() throws {
        try withUnlockedKeychain {
            #expect(
                saveToken("t0ken", service: "com.example.ref", account: "carol", synchronizable: false)
                    == errSecSuccess)
            let (status, data) = passwordByPersistentReference(service: "com.example.ref", account: "carol")
            #expect(status == errSecSuccess)
            #expect(data == Data("t0ken".utf8))
            let (refStatus, refData) = passwordAsReference(service: "com.example.ref")
            #expect(refStatus == errSecSuccess)
            #expect(refData == Data("t0ken".utf8))
        }
    }
}
