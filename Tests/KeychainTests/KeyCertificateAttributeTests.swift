import Foundation
import Keychain
import Testing

/// The attributes these tests share: readable after first unlock, in a group, synchronized.
private let shared = ItemAttributes(
    accessibility: .afterFirstUnlock, accessGroup: "TEAMID.com.example.shared", synchronizable: true)

@Suite("Apple's common attributes on certificates, keys and secret keys through the Keychain API")
struct KeyCertificateAttributeTests {
    @Test(
        "a certificate's attributes are stored, matched (Apple's sync rule when asked for), changed, and dated"
    )
    func certificateAttributes() throws {
        try withTemporaryKeychain { keychain, _ in
            let item = try keychain.add(Fixture.alice.certificate, attributes: shared)
            #expect(item.attributes.accessibility == .afterFirstUnlock)
            #expect(item.attributes.accessGroup == "TEAMID.com.example.shared")
            #expect(item.attributes.synchronizable == true)
            let created = try #require(item.attributes.creationDate)
            #expect(item.attributes.modificationDate == created)

            // No synchronizable given: every item; Apple's rule (only items that are not
            // synchronizable) when asked for, as the Security face's queries do.
            #expect(try keychain.certificates() == [item])
            #expect(try keychain.certificates(matching: CertificateQuery(anySynchronizable: false)).isEmpty)
            #expect(
                try keychain.certificates(
                    matching: CertificateQuery(attributes: ItemAttributes(synchronizable: true)))
                    == [item])
            var byGroup = CertificateQuery(anySynchronizable: true)
            byGroup.attributes.accessGroup = "another group"
            #expect(try keychain.certificates(matching: byGroup).isEmpty)
            // A persistent reference names one item, synchronizable or not.
            #expect(
                try keychain.certificates(
                    matching: CertificateQuery(persistentReference: item.persistentReference))
                    == [item])

            var byDate = CertificateQuery(anySynchronizable: true)
            byDate.attributes.creationDate = created
            #expect(try keychain.certificates(matching: byDate) == [item])
            byDate.attributes.creationDate = created.addingTimeInterval(0.001)
            #expect(try keychain.certificates(matching: byDate).isEmpty)
            byDate.attributes.creationDate = Date(timeIntervalSince1970: -1)  // no stored date can be
            #expect(try keychain.certificates(matching: byDate).isEmpty)

            // Still unique by issuer and serial, whatever the group or sync.
            #expect(throws: KeychainError.self) { try keychain.add(Fixture.alice.certificate) }
            #expect(throws: KeychainError.self) {
                try keychain.add(
                    Fixture.bob.certificate, attributes: ItemAttributes(accessControl: .userPresence))
            }

            Thread.sleep(forTimeInterval: 0.005)
            let changed = try keychain.updateCertificates(
                matching: CertificateQuery(anySynchronizable: true),
                setting: CertificateChanges(
                    attributes: ItemAttributes(accessibility: .whenUnlocked, synchronizable: false)))
            #expect(changed.count == 1)
            #expect(changed.first?.attributes.synchronizable == false)
            #expect(changed.first?.attributes.accessibility == .whenUnlocked)
            #expect(changed.first?.attributes.accessGroup == "TEAMID.com.example.shared")
            #expect(changed.first?.attributes.creationDate == created)
            #expect((changed.first?.attributes.modificationDate ?? .distantPast) > created)
            #expect(try keychain.certificates() == changed)
        }
    }

    @Test("synchronizable set in a query matches exactly that, whatever anySynchronizable says")
    func synchronizableMatchesExactly() throws {
        try withTemporaryKeychain { keychain, _ in
            let synchronized = try keychain.add(
                Fixture.alice.certificate, attributes: ItemAttributes(synchronizable: true))
            let local = try keychain.add(Fixture.bob.certificate)
            func found(_ synchronizable: Bool?, any: Bool) throws -> Set<[UInt8]> {
                let query = CertificateQuery(
                    attributes: ItemAttributes(synchronizable: synchronizable), anySynchronizable: any)
                return Set(try keychain.certificates(matching: query).map(\.persistentReference))
            }
            let both: Set = [synchronized.persistentReference, local.persistentReference]
            for any in [true, false] {
                #expect(try found(true, any: any) == [synchronized.persistentReference])
                #expect(try found(false, any: any) == [local.persistentReference])
            }
            #expect(try found(nil, any: true) == both)
            #expect(try found(nil, any: false) == [local.persistentReference])
            // A change by such a query touches only the matching item.
            let changed = try keychain.updateCertificates(
                matching: CertificateQuery(attributes: ItemAttributes(synchronizable: false)),
                setting: CertificateChanges(attributes: ItemAttributes(accessGroup: "local")))
            #expect(changed.map(\.persistentReference) == [local.persistentReference])
        }
    }

    @Test(
        "a key pair's halves carry the attributes; access control stays on the private key and cannot change")
    func keyAttributes() throws {
        try withPINKeychain { keychain, _ in
            var attributes = shared
            attributes.accessControl = .userPresence
            let pair = try keychain.generateKeyPair(.p256, applicationTag: [1], attributes: attributes)
            #expect(pair.privateKey.attributes.accessControl == .userPresence)
            #expect(pair.publicKey.attributes.accessControl == nil)
            for half in [pair.privateKey, pair.publicKey] {
                #expect(half.attributes.accessGroup == "TEAMID.com.example.shared")
                #expect(half.attributes.synchronizable == true)
                #expect(half.attributes.creationDate != nil)
            }
            #expect(try keychain.keys().count == 2)
            #expect(try keychain.keys(matching: KeyQuery(anySynchronizable: false)).isEmpty)
            let query = KeyQuery(keyClass: .private, attributes: ItemAttributes(synchronizable: true))
            #expect(try keychain.keys(matching: query) == [pair.privateKey])

            #expect(throws: KeychainError.self) {
                try keychain.update(
                    [pair.privateKey], setting: KeyChanges(attributes: ItemAttributes(accessControl: []))
                )
            }
            let changed = try keychain.update(
                [pair.privateKey, pair.publicKey],
                setting: KeyChanges(attributes: ItemAttributes(accessGroup: "other", synchronizable: false)))
            #expect(changed.map(\.attributes.accessGroup) == ["other", "other"])
            #expect(try keychain.keys().count == 2)
            // Access control is unchanged: the private key still needs the PIN for each use.
            #expect(
                try keychain.keys(matching: KeyQuery(keyClass: .private)).first?.attributes.accessControl
                    == .userPresence)
            let key = try #require(try keychain.firstKey(matching: KeyQuery(keyClass: .private)))
            #expect(throws: KeychainError.self) {
                try keychain.sign([1], with: key, algorithm: .ecdsa(.sha256))
            }
            #expect(
                try !keychain.sign([1], with: key, algorithm: .ecdsa(.sha256), pin: Array("1234".utf8))
                    .isEmpty)
        }
    }

    @Test("an identity's query applies the attributes to its certificate and its key")
    func identityAttributes() throws {
        try withPINKeychain { keychain, directory in
            let files = try TestIdentityFiles(in: directory.path, keyType: "ec", name: "Shared")
            let bundle = try PKCS12Bundle(derEncoded: files.pkcs12, password: "secret")
            let pair = try keychain.add(try #require(bundle.privateKey), attributes: shared)
            try keychain.add(try #require(bundle.certificate), attributes: shared)
            #expect(try keychain.identities(matching: CertificateQuery(anySynchronizable: false)).isEmpty)
            let group = CertificateQuery(attributes: ItemAttributes(accessGroup: "TEAMID.com.example.shared"))
            let found = try keychain.identities(matching: group)
            #expect(found.map(\.privateKey) == [pair.privateKey])
            #expect(found.first?.certificate.attributes.accessGroup == "TEAMID.com.example.shared")
            // The key leaves the group: the identity no longer matches the group query.
            try keychain.update(
                [pair.privateKey], setting: KeyChanges(attributes: ItemAttributes(accessGroup: "other")))
            #expect(try keychain.identities(matching: group).isEmpty)
            #expect(try keychain.identities().count == 1)
        }
    }

    @Test("secret keys take the attributes but no access control")
    func secretKeyAttributes() throws {
        try withPINKeychain { keychain, _ in
            let key = try keychain.generateSecretKey(.aes256, label: "backup", attributes: shared)
            #expect(key.attributes.accessGroup == "TEAMID.com.example.shared")
            #expect(try keychain.secretKeys() == [key])
            #expect(try keychain.secretKeys(matching: SecretKeyQuery(anySynchronizable: false)).isEmpty)
            #expect(throws: KeychainError.self) {
                try keychain.generateSecretKey(
                    .aes128, attributes: ItemAttributes(accessControl: .userPresence))
            }
        }
    }

    @Test("passwords match their creation and modification dates exactly")
    func passwordDates() throws {
        try withPINKeychain { keychain, _ in
            let item = try keychain.addGenericPassword(Array("s3cret".utf8), service: "svc", account: "a")
            let created = try #require(item.attributes.creationDate)
            var query = GenericPasswordQuery(service: "svc")
            query.attributes.creationDate = created
            #expect(try keychain.genericPasswords(matching: query) == [item])
            query.attributes.creationDate = nil
            query.attributes.modificationDate = created.addingTimeInterval(1)
            #expect(try keychain.genericPasswords(matching: query).isEmpty)
        }
    }
}
