import Foundation
import Security
import TestSupport
import Testing

/// Examples/sample.cer, the example program's certificate.
private var sampleCertificate: Data {
    get throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return try Data(contentsOf: root.appendingPathComponent("Examples/sample.cer"))
    }
}

/// A PKCS#12 file of a new P-256 key and its self-signed certificate (CN=Shared), made by
/// `openssl` in `directory`, with password "secret".
func makeP12(in directory: String) throws -> Data {
    for arguments in [
        [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            directory + "/key.pem", "-out", directory + "/cert.pem", "-days", "2", "-subj", "/CN=Shared",
        ],
        [
            "pkcs12", "-export", "-inkey", directory + "/key.pem", "-in", directory + "/cert.pem", "-out",
            directory + "/id.p12", "-passout", "pass:secret",
        ],
    ] {
        #expect(try runProgram("/usr/bin/openssl", arguments).status == 0)
    }
    return try Data(contentsOf: URL(fileURLWithPath: directory + "/id.p12"))
}

/// Expects the attributes Apple returns for an item added by these snippets.
private func expectShared(
    _ attributes: [String: Any], accessible: CFString, synchronizable: Bool,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(
        attributes[kSecAttrAccessible as String] as? String == accessible as String,
        sourceLocation: sourceLocation)
    #expect(
        attributes[kSecAttrAccessGroup as String] as? String == sharedAccessGroup,
        sourceLocation: sourceLocation)
    #expect(
        attributes[kSecAttrSynchronizable as String] as? Bool == synchronizable,
        sourceLocation: sourceLocation)
    let created = attributes[kSecAttrCreationDate as String] as? Date
    let modified = attributes[kSecAttrModificationDate as String] as? Date
    #expect(created != nil && modified != nil, sourceLocation: sourceLocation)
    if let created, let modified { #expect(modified >= created, sourceLocation: sourceLocation) }
    // Stamped by this run's keychain, not some default.
    if let created { #expect(abs(created.timeIntervalSinceNow) < 600, sourceLocation: sourceLocation) }
}

@Suite("Apple's item attributes on keys, certificates and identities run unchanged", .serialized)
struct KeyCertificateAttributeSnippetsTests {
    @Test(
        "a key added with accessibility, access group and sync is found with SynchronizableAny, dated, updated, deleted"
    )
    func keyLifecycle() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: "1234")
            let tag = Data("com.example.synced-key".utf8)
            #expect(addSynchronizedKey(try makeEphemeralKey(), tag: tag) == errSecSuccess)
            // Apple's rule: a query without kSecAttrSynchronizable finds only local items.
            #expect(itemExists(kSecClassKey, [kSecAttrApplicationTag as String: tag]) == errSecItemNotFound)
            #expect(
                itemExists(
                    kSecClassKey,
                    [kSecAttrApplicationTag as String: tag, kSecAttrSynchronizable as String: true])
                    == errSecSuccess)
            let (status, all) = sharedItemAttributes(kSecClassKey)
            #expect(status == errSecSuccess)
            // The private key and the public key stored beside it (PKCS#11 keeps both halves).
            #expect(all.count == 2)
            for attributes in all {
                expectShared(attributes, accessible: kSecAttrAccessibleAfterFirstUnlock, synchronizable: true)
            }
            let privateKey = try #require(
                all.first { $0[kSecAttrKeyClass as String] as? String == kSecAttrKeyClassPrivate as String })
            let created = try #require(privateKey[kSecAttrCreationDate as String] as? Date)
            let byDate: [String: Any] = [
                kSecAttrApplicationTag as String: tag, kSecAttrCreationDate as String: created,
                kSecAttrSynchronizable as String: kSecAttrSynchronizableAny,
            ]
            #expect(itemExists(kSecClassKey, byDate) == errSecSuccess)
            var otherDate = byDate
            otherDate[kSecAttrCreationDate as String] = created.addingTimeInterval(1)
            #expect(itemExists(kSecClassKey, otherDate) == errSecItemNotFound)

            // The keychain sets the dates and fixes access control: SecItemAdd and
            // SecItemUpdate refuse them.
            let addWithDate: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecValueRef as String: try makeEphemeralKey(),
                kSecAttrCreationDate as String: Date(),
            ]
            #expect(SecItemAdd(addWithDate as CFDictionary, nil) == errSecParam)
            let anyTagged: [String: Any] = [
                kSecAttrApplicationTag as String: tag,
                kSecAttrSynchronizable as String: kSecAttrSynchronizableAny,
            ]
            #expect(
                update(kSecClassKey, anyTagged, [kSecAttrModificationDate as String: Date()]) == errSecParam)
            let access = try #require(
                SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, .userPresence, nil))
            #expect(update(kSecClassKey, anyTagged, [kSecAttrAccessControl as String: access]) == errSecParam)

            #expect(stopSynchronizing(kSecClassKey) == errSecSuccess)
            #expect(itemExists(kSecClassKey, [kSecAttrApplicationTag as String: tag]) == errSecSuccess)
            let (localStatus, local) = sharedItemAttributes(kSecClassKey, synchronizable: false)
            #expect(localStatus == errSecSuccess)
            #expect(local.count == 2)
            for attributes in local {
                expectShared(attributes, accessible: kSecAttrAccessibleWhenUnlocked, synchronizable: false)
            }
            #expect(sharedItemAttributes(kSecClassKey, synchronizable: true).0 == errSecItemNotFound)
            #expect(deleteSharedItems(kSecClassKey) == errSecSuccess)
            #expect(sharedItemAttributes(kSecClassKey).0 == errSecItemNotFound)
        }
    }

    @Test(
        "a certificate added with accessibility, access group and sync: found, updated, still unique by issuer and serial"
    )
    func certificateLifecycle() throws {
        try withPINKeychain { _ in
            let der = try sampleCertificate
            #expect(addSynchronizedCertificate(der, label: "Shared") == errSecSuccess)
            #expect(
                itemExists(kSecClassCertificate, [kSecAttrLabel as String: "Shared"]) == errSecItemNotFound)
            let (status, all) = sharedItemAttributes(kSecClassCertificate)
            #expect(status == errSecSuccess)
            #expect(all.count == 1)
            for attributes in all {
                expectShared(attributes, accessible: kSecAttrAccessibleAfterFirstUnlock, synchronizable: true)
                #expect(attributes[kSecAttrLabel as String] as? String == "Shared")
            }
            // Apple's uniqueness for certificates: issuer and serial, whatever group or sync.
            #expect(addSynchronizedCertificate(der, label: "Again") == errSecDuplicateItem)
            let local: [String: Any] = [
                kSecClass as String: kSecClassCertificate, kSecValueData as String: der,
                kSecAttrLabel as String: "Local",
            ]
            #expect(SecItemAdd(local as CFDictionary, nil) == errSecDuplicateItem)
            // A certificate is a public item: no access control.
            let access = try #require(
                SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, .userPresence, nil))
            #expect(deleteSharedItems(kSecClassCertificate) == errSecSuccess)
            var protected = local
            protected[kSecAttrAccessControl as String] = access
            #expect(SecItemAdd(protected as CFDictionary, nil) == errSecParam)

            #expect(addSynchronizedCertificate(der, label: "Shared") == errSecSuccess)
            #expect(stopSynchronizing(kSecClassCertificate) == errSecSuccess)
            let (localStatus, after) = sharedItemAttributes(kSecClassCertificate, synchronizable: false)
            #expect(localStatus == errSecSuccess)
            #expect(after.count == 1)
            for attributes in after {
                expectShared(attributes, accessible: kSecAttrAccessibleWhenUnlocked, synchronizable: false)
            }
            #expect(itemExists(kSecClassCertificate, [kSecAttrLabel as String: "Shared"]) == errSecSuccess)
            #expect(deleteSharedItems(kSecClassCertificate) == errSecSuccess)
            #expect(sharedItemAttributes(kSecClassCertificate).0 == errSecItemNotFound)
        }
    }

    @Test("an identity added with access group and sync gives both parts the attributes; found, deleted")
    func identityLifecycle() throws {
        try withPINKeychain { directory in
            try unlockKeychain(password: "1234")
            #expect(
                addSynchronizedIdentity(p12: try makeP12(in: directory), password: "secret") == errSecSuccess)
            #expect(
                itemExists(kSecClassIdentity, [kSecAttrAccessGroup as String: sharedAccessGroup])
                    == errSecItemNotFound)
            let (status, identities) = sharedItemAttributes(kSecClassIdentity)
            #expect(status == errSecSuccess)
            #expect(identities.count == 1)
            for attributes in identities {
                expectShared(attributes, accessible: kSecAttrAccessibleAfterFirstUnlock, synchronizable: true)
                #expect(attributes[kSecClass as String] as? String == kSecClassIdentity as String)
            }
            #expect(sharedItemAttributes(kSecClassCertificate).1.count == 1)
            #expect(sharedItemAttributes(kSecClassKey).1.count == 2)
            #expect(deleteSharedItems(kSecClassIdentity) == errSecSuccess)
            #expect(sharedItemAttributes(kSecClassIdentity).0 == errSecItemNotFound)
            #expect(sharedItemAttributes(kSecClassCertificate).0 == errSecItemNotFound)
        }
    }

    @Test("a .userPresence key signs only when fetched with the PIN as kSecUseAuthenticationContext")
    func userPresenceKeyNeedsItsContext() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: "1234")
            let tag = Data("com.example.presence-key".utf8)
            #expect(addUserPresenceKey(try makeEphemeralKey(), tag: tag) == errSecSuccess)
            let message = Data("transfer 100".utf8)

            let withoutContext = try #require(protectedKey(tag: tag, context: nil))
            #expect(signOrCode(withoutContext, message).1 == Int(errSecInteractionNotAllowed))
            let wrongContext = try #require(protectedKey(tag: tag, context: "0000"))
            #expect(signOrCode(wrongContext, message).1 == Int(errSecAuthFailed))

            let key = try #require(protectedKey(tag: tag, context: "1234"))
            // Each use is checked again, with the context the key keeps.
            for _ in 0..<2 {
                let signature = try #require(signOrCode(key, message).0)
                let publicKey = try #require(SecKeyCopyPublicKey(key))
                #expect(
                    SecKeyVerifySignature(
                        publicKey, .ecdsaSignatureMessageX962SHA256, message as CFData, signature as CFData,
                        nil))
            }
            let (_, all) = sharedItemAttributes(kSecClassKey)
            #expect(all.isEmpty)  // not in the shared group
            var query: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag,
                kSecReturnAttributes as String: true,
            ]
            var result: CFTypeRef?
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            #expect(
                attributes[kSecAttrAccessible as String] as? String
                    == kSecAttrAccessibleWhenUnlockedThisDeviceOnly as String)
            #expect(attributes[kSecAttrAccessControl as String] is SecAccessControl)
            query[kSecReturnAttributes as String] = nil
            #expect(SecItemDelete(query as CFDictionary) == errSecSuccess)
        }
    }

    @Test(
        "a password's creation and modification dates are matched exactly; SecItemAdd and SecItemUpdate refuse them"
    )
    func passwordDatesInQueries() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: "1234")
            let add: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "com.example.dates",
                kSecAttrAccount as String: "alice", kSecValueData as String: Data("s3cret".utf8),
                kSecReturnAttributes as String: true,
            ]
            var result: CFTypeRef?
            #expect(SecItemAdd(add as CFDictionary, &result) == errSecSuccess)
            let attributes = try #require(result as? [String: Any])
            let created = try #require(attributes[kSecAttrCreationDate as String] as? Date)
            let modified = try #require(attributes[kSecAttrModificationDate as String] as? Date)
            let service: [String: Any] = [kSecAttrService as String: "com.example.dates"]
            for (key, date) in [(kSecAttrCreationDate, created), (kSecAttrModificationDate, modified)] {
                var query = service
                query[key as String] = date
                #expect(itemExists(kSecClassGenericPassword, query) == errSecSuccess)
                query[key as String] = date.addingTimeInterval(-1)
                #expect(itemExists(kSecClassGenericPassword, query) == errSecItemNotFound)
                #expect(update(kSecClassGenericPassword, service, [key as String: Date()]) == errSecParam)
            }
            var dated = add
            dated[kSecAttrAccount as String] = "bob"
            dated[kSecAttrCreationDate as String] = Date()
            #expect(SecItemAdd(dated as CFDictionary, nil) == errSecParam)
        }
    }

    @Test("an identity whose key needs the user signs through SecIdentityCopyPrivateKey with the context")
    func protectedIdentityKey() throws {
        try withPINKeychain { directory in
            try unlockKeychain(password: "1234")
            let access = try #require(
                SecAccessControlCreateWithFlags(
                    nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .userPresence, nil))
            #expect(
                addSynchronizedIdentity(
                    p12: try makeP12(in: directory), password: "secret", accessControl: access)
                    == errSecSuccess)
            let message = Data("sign in".utf8)
            let locked = try #require(sharedIdentityKey(context: nil))
            #expect(signOrCode(locked, message).1 == Int(errSecInteractionNotAllowed))
            let key = try #require(sharedIdentityKey(context: "1234"))
            #expect(signOrCode(key, message).0 != nil)
        }
    }
}
