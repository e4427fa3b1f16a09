import Foundation
import Security
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body` with a fresh keychain (`withPINKeychain`, unlocked with `SecKeychainUnlock`)
/// whose "system" CA bundle is empty, so that only the keychain's trust settings anchor.
private func withSearchKeychain(_ body: () throws -> Void) throws {
    try withPINKeychain { directory in
        let saved = getenv("P11KEYCHAIN_SYSTEM_ANCHORS").map { String(cString: $0) }
        defer {
            if let saved {
                setenv("P11KEYCHAIN_SYSTEM_ANCHORS", saved, 1)
            } else {
                unsetenv("P11KEYCHAIN_SYSTEM_ANCHORS")
            }
        }
        let anchors = directory + "/system.pem"
        try "".write(toFile: anchors, atomically: true, encoding: .utf8)
        setenv("P11KEYCHAIN_SYSTEM_ANCHORS", anchors, 1)
        try unlockKeychain(password: "1234")
        try body()
    }
}

/// A fixture of `Tests/Fixtures` ("alice", "trust/root"…): its first certificate.
private func fixture(_ name: String) throws -> SecCertificate {
    let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/\(name).pem").path
    let text = try String(contentsOfFile: path, encoding: .utf8)
    let body = text.components(separatedBy: "-----BEGIN CERTIFICATE-----")[1]
        .components(separatedBy: "-----END CERTIFICATE-----")[0]
        .components(separatedBy: .whitespacesAndNewlines).joined()
    let der = try #require(Data(base64Encoded: body))
    return try #require(SecCertificateCreateWithData(nil, der as CFData))
}

/// Stores the people fixtures: the test CA, Alice (with e-mail addresses) and Bob (none).
private func storePeople() throws -> (ca: SecCertificate, alice: SecCertificate, bob: SecCertificate) {
    let people = (ca: try fixture("ca"), alice: try fixture("alice"), bob: try fixture("bob"))
    try storeCertificateRef(people.ca, label: "ca")
    try storeCertificateRef(people.alice, label: "alice")
    try storeCertificateRef(people.bob, label: "bob")
    return people
}

/// Stores the trust fixtures' chain: root, intermediate, the server leaf and a client leaf.
private func storeChain() throws -> (root: SecCertificate, intermediate: SecCertificate) {
    let root = try fixture("trust/root")
    let intermediate = try fixture("trust/intermediate")
    try storeCertificateRef(root, label: "root")
    try storeCertificateRef(intermediate, label: "intermediate")
    try storeCertificateRef(try fixture("trust/leaf"), label: "leaf")
    try storeCertificateRef(try fixture("trust/client"), label: "client")
    return (root, intermediate)
}

@Suite("Apple's certificate and identity search keys give Apple's results", .serialized)
struct SearchKeySnippetsTests {
    @Test("client-certificate selection finds the identity whose chain has an issuer the server accepts")
    func clientCertificateSelection() throws {
        try withSearchKeychain {
            let p12 = try Data(
                contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                    .deletingLastPathComponent()
                    .appendingPathComponent("Fixtures/trust/leaf.p12"))
            let imported = try importIdentity(p12Data: p12, password: "trust")
            let (root, intermediate) = try storeChain()
            try storeCertificateRef(try fixture("trust/other-root"), label: "other root")
            let rootName = try storedSubject(of: root)
            let otherName = try storedSubject(of: try fixture("trust/other-root"))

            // The leaf's own issuer, and the root its intermediate (in the keychain) chains to.
            #expect(
                clientIdentities(acceptedIssuers: [try storedSubject(of: intermediate)]) == [
                    imported.identity
                ])
            #expect(clientIdentities(acceptedIssuers: [rootName]) == [imported.identity])
            #expect(clientIdentities(acceptedIssuers: [otherName, rootName]) == [imported.identity])
            #expect(clientIdentities(acceptedIssuers: [otherName]).isEmpty)
            // Apple's normalized form of the name finds the same.
            let normalized = try #require(SecCertificateCopyNormalizedSubjectSequence(root)) as Data
            #expect(clientIdentities(acceptedIssuers: [normalized]) == [imported.identity])

            // The identity by its subject, and as trusted once the root is.
            let identity =
                [kSecClass as String: kSecClassIdentity, kSecReturnRef as String: true] as [String: Any]
            for (keys, found) in [
                ([kSecMatchSubjectWholeString as String: "www.example.test"], true),
                ([kSecMatchSubjectWholeString as String: "WWW.example.test"], false),
                (
                    [
                        kSecMatchSubjectWholeString as String: "WWW.example.test",
                        kSecMatchCaseInsensitive as String: true,
                    ], true
                ),
                ([kSecMatchTrustedOnly as String: true], false),
            ] as [([String: Any], Bool)] {
                var result: CFTypeRef?
                let status = SecItemCopyMatching(identity.merging(keys) { $1 } as CFDictionary, &result)
                #expect(status == (found ? errSecSuccess : errSecItemNotFound), "\(keys)")
                #expect((result as? SecIdentity) == (found ? imported.identity : nil), "\(keys)")
            }
            try storeRoot(root, deny: false)
            var trusted: CFTypeRef?
            let query = identity.merging([kSecMatchTrustedOnly as String: true]) { $1 }
            #expect(SecItemCopyMatching(query as CFDictionary, &trusted) == errSecSuccess)
            #expect((trusted as? SecIdentity) == imported.identity)

            // Certificates: every one under the root, the root too (it issued itself).
            let (status, labels) = certificateLabels([kSecMatchIssuers as String: [rootName]])
            #expect(status == errSecSuccess)
            // The import labelled the leaf (and maybe the intermediate) first; the other root is out.
            #expect(labels.count == 4)
            #expect(labels.contains("root") && labels.contains("client") && !labels.contains("other root"))

            // SecItemDelete of the identity named by an item list: its certificate and key go.
            let delete: [String: Any] = [
                kSecClass as String: kSecClassIdentity, kSecMatchItemList as String: [imported.identity],
            ]
            #expect(SecItemDelete(delete as CFDictionary) == errSecSuccess)
            #expect(clientIdentities(acceptedIssuers: [rootName]).isEmpty)
            #expect(certificateLabels([kSecMatchIssuers as String: [rootName]]).1.count == 3)
        }
    }

    @Test("subject searches are case-sensitive unless kSecMatchCaseInsensitive says otherwise")
    func subjectSearches() throws {
        try withSearchKeychain {
            _ = try storePeople()
            let cases: [([String: Any], [String])] = [
                ([kSecMatchSubjectContains as String: "Alice"], ["alice"]),
                ([kSecMatchSubjectContains as String: "ALICE"], []),
                (
                    [kSecMatchSubjectContains as String: "ALICE", kSecMatchCaseInsensitive as String: true],
                    ["alice"]
                ),
                (
                    [kSecMatchSubjectContains as String: "ALICE", kSecMatchCaseInsensitive as String: false],
                    []
                ),
                ([kSecMatchSubjectStartsWith as String: "Bob"], ["bob"]),
                ([kSecMatchSubjectStartsWith as String: "Example"], []),
                ([kSecMatchSubjectStartsWith as String: "p11keychain"], ["alice", "bob", "ca"]),
                ([kSecMatchSubjectEndsWith as String: "Example"], ["alice", "bob"]),
                ([kSecMatchSubjectEndsWith as String: "EXAMPLE"], []),
                (
                    [
                        kSecMatchSubjectEndsWith as String: "EXAMPLE",
                        kSecMatchCaseInsensitive as String: true,
                    ],
                    ["alice", "bob"]
                ),
                ([kSecMatchSubjectWholeString as String: "Alice Example"], ["alice"]),
                ([kSecMatchSubjectWholeString as String: "Alice"], []),
                ([kSecMatchSubjectStartsWith as String: ""], ["alice", "bob", "ca"]),
                (
                    [
                        kSecMatchSubjectWholeString as String: "p11keychain test ca",
                        kSecMatchCaseInsensitive as String: true,
                    ], ["ca"]
                ),
                (
                    [
                        kSecMatchSubjectStartsWith as String: "Alice",
                        kSecMatchSubjectEndsWith as String: "Example",
                    ], ["alice"]
                ),
            ]
            for (keys, expected) in cases {
                let (status, labels) = certificateLabels(keys)
                #expect(status == (expected.isEmpty ? errSecItemNotFound : errSecSuccess), "\(keys)")
                #expect(labels == expected, "\(keys)")
            }
        }
    }

    @Test("an e-mail address if present: certificates with addresses must have it, those without match")
    func emailAddressIfPresent() throws {
        try withSearchKeychain {
            _ = try storePeople()
            #expect(
                certificateLabels([kSecMatchEmailAddressIfPresent as String: "alice@example.org"]).1
                    == ["alice", "bob", "ca"])
            #expect(
                certificateLabels([kSecMatchEmailAddressIfPresent as String: "ALICE.alt@example.org"]).1
                    == ["alice", "bob", "ca"])
            #expect(
                certificateLabels([kSecMatchEmailAddressIfPresent as String: "carol@example.org"]).1 == [
                    "bob", "ca",
                ])
        }
    }

    @Test("trusted only finds nothing before the root is trusted in the keychain, then the chain under it")
    func trustedOnly() throws {
        try withSearchKeychain {
            let (root, _) = try storeChain()
            let trusted = [kSecMatchTrustedOnly as String: true]
            #expect(certificateLabels(trusted).0 == errSecItemNotFound)
            #expect(
                certificateLabels([kSecMatchTrustedOnly as String: false]).1
                    == ["client", "intermediate", "leaf", "root"])
            try storeRoot(root, deny: false)
            #expect(certificateLabels(trusted).1 == ["client", "intermediate", "leaf", "root"])
            // An SSL server policy for the leaf's host name: only the leaf passes it.
            let ssl = SecPolicyCreateSSL(true, "www.example.test" as CFString)
            #expect(
                certificateLabels([kSecMatchTrustedOnly as String: true, kSecMatchPolicy as String: ssl]).1
                    == ["leaf"])
            // A root distrusted in the keychain: nothing under it is trusted.
            try storeRoot(root, deny: true)
            #expect(certificateLabels(trusted).0 == errSecItemNotFound)
        }
    }

    @Test("a policy alone checks its purpose, not the anchor")
    func policyAlone() throws {
        try withSearchKeychain {
            _ = try storeChain()
            let client = SecPolicyCreateSSL(false, nil)
            let labels = certificateLabels([kSecMatchPolicy as String: client]).1
            #expect(labels.contains("client"))
            #expect(!labels.contains("leaf"), "the server leaf's extended key usage is serverAuth only")
            let server = certificateLabels([kSecMatchPolicy as String: SecPolicyCreateSSL(true, nil)]).1
            #expect(server.contains("leaf"))
            #expect(!server.contains("client"))
        }
    }

    @Test("an item list restricts the search, and SecItemDelete deletes only the listed items")
    func itemList() throws {
        try withSearchKeychain {
            let people = try storePeople()
            #expect(certificateLabels([kSecMatchItemList as String: [people.alice]]).1 == ["alice"])
            #expect(
                certificateLabels([kSecMatchItemList as String: [people.alice] as CFArray]).1 == ["alice"])
            #expect(
                certificateLabels([kSecUseItemList as String: [people.bob, people.ca]]).1 == ["bob", "ca"])
            #expect(
                certificateLabels([
                    kSecMatchItemList as String: [people.bob, people.ca],
                    kSecMatchSubjectStartsWith as String: "Bob",
                ]).1 == ["bob"])
            // A persistent reference, as kSecReturnPersistentRef gave it.
            let query: [String: Any] = [
                kSecClass as String: kSecClassCertificate, kSecValueRef as String: people.bob,
                kSecReturnPersistentRef as String: true,
            ]
            var reference: CFTypeRef?
            #expect(SecItemCopyMatching(query as CFDictionary, &reference) == errSecSuccess)
            let persistent = try #require(reference as? Data)
            #expect(certificateLabels([kSecMatchItemList as String: [persistent]]).1 == ["bob"])

            let delete: [String: Any] = [
                kSecClass as String: kSecClassCertificate, kSecMatchItemList as String: [people.alice],
            ]
            #expect(SecItemDelete(delete as CFDictionary) == errSecSuccess)
            #expect(certificateLabels([:]).1 == ["bob", "ca"])
            #expect(SecItemDelete(delete as CFDictionary) == errSecItemNotFound)
        }
    }

    @Test("a limit counts the matches left after the search keys")
    func limitAfterFilters() throws {
        try withSearchKeychain {
            _ = try storePeople()
            // The CA was stored first: a limit applied before the filter would find nothing.
            let (status, labels) = certificateLabels([kSecMatchSubjectStartsWith as String: "Bob"], limit: 1)
            #expect(status == errSecSuccess)
            #expect(labels == ["bob"])
            #expect(
                certificateLabels([kSecMatchSubjectEndsWith as String: "Example"], limit: 2).1 == [
                    "alice", "bob",
                ])
        }
    }

    @Test("search keys of the wrong type, or given to SecItemDelete, are errSecParam")
    func wrongValues() throws {
        try withSearchKeychain {
            _ = try storePeople()
            let wrong: [[String: Any]] = [
                [kSecMatchCaseInsensitive as String: "yes"],
                [kSecMatchSubjectStartsWith as String: 3],
                [kSecMatchSubjectEndsWith as String: Data()],
                [kSecMatchSubjectWholeString as String: true],
                [kSecMatchEmailAddressIfPresent as String: ["alice@example.org"]],
                [kSecMatchIssuers as String: Data()],
                [kSecMatchIssuers as String: ["CN=Test"]],
                [kSecMatchPolicy as String: "basic"],
                [kSecMatchTrustedOnly as String: "true"],
                [kSecMatchItemList as String: "alice"],
                [kSecMatchItemList as String: [42]],
                [kSecUseItemList as String: Data()],
            ]
            for keys in wrong {
                #expect(certificateLabels(keys).0 == errSecParam, "\(keys)")
                var identity = keys
                identity[kSecClass as String] = kSecClassIdentity
                #expect(SecItemCopyMatching(identity as CFDictionary, nil) == errSecParam, "\(keys)")
            }
            for keys in [
                [kSecMatchIssuers as String: [Data()]], [kSecMatchSubjectStartsWith as String: "Bob"],
            ] {
                var delete = keys
                delete[kSecClass as String] = kSecClassCertificate
                #expect(SecItemDelete(delete as CFDictionary) == errSecParam, "\(keys)")
            }
            #expect(certificateLabels([:]).1 == ["alice", "bob", "ca"], "nothing was deleted")
        }
    }
}
