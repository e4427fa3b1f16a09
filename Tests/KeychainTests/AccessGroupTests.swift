import Keychain
import Testing

@Suite("The typed API fills in and matches access groups as the Security face does")
struct AccessGroupTests {
    @Test("a password added without a group is in p11keychain.default; a query with a group sees only it")
    func passwordsGetTheDefaultGroup() throws {
        try withPINKeychain { keychain, _ in
            let item = try keychain.addGenericPassword(Array("a".utf8), service: "svc", account: "alice")
            #expect(item.attributes.accessGroup == "p11keychain.default")
            let shared = try keychain.addGenericPassword(
                Array("b".utf8), service: "svc", account: "alice",
                attributes: ItemAttributes(accessGroup: "com.example.shared"))
            #expect(shared.attributes.accessGroup == "com.example.shared")
            #expect(try keychain.genericPasswords(matching: GenericPasswordQuery(service: "svc")).count == 2)
            let byDefault = GenericPasswordQuery(
                service: "svc", attributes: ItemAttributes(accessGroup: "p11keychain.default"))
            #expect(try keychain.genericPasswords(matching: byDefault) == [item])
            expectError(.duplicateItem) {
                try keychain.addGenericPassword(Array("c".utf8), service: "svc", account: "alice")
            }
        }
    }

    @Test("keys and certificates added without a group are in p11keychain.default")
    func keysAndCertificatesGetTheDefaultGroup() throws {
        try withPINKeychain { keychain, _ in
            let certificate = try keychain.add(Fixture.alice.certificate)
            #expect(certificate.attributes.accessGroup == "p11keychain.default")
            let pair = try keychain.generateKeyPair(.p256, label: "k")
            #expect(pair.privateKey.attributes.accessGroup == "p11keychain.default")
            #expect(pair.publicKey.attributes.accessGroup == "p11keychain.default")
        }
    }
}
