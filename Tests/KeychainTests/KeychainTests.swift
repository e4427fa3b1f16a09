import Foundation
import Keychain
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Expects `body` to throw a `KeychainError` with `code` whose message contains `text`.
func expectError(
    _ code: KeychainError.Code, containing text: String = "",
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("expected error \(code), got success", sourceLocation: sourceLocation)
    } catch let error as KeychainError {
        #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
        #expect(
            text.isEmpty || error.message.contains(text), "message: \(error.message)",
            sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected KeychainError, got \(error)", sourceLocation: sourceLocation)
    }
}

@Suite("Opening a keychain")
struct OpeningTests {
    @Test("a missing store path is an error naming the path, unless creation is asked for")
    func missingStoreIsReported() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/missing.sqlite3"
        expectError(.noSuchKeychain, containing: path) { _ = try Keychain(path: path) }
        #expect(access(path, F_OK) != 0, "nothing is created")
        let keychain = try Keychain(path: path, createIfMissing: true)
        #expect(keychain.path == path)
        #expect(keychain.name == "missing")
        var status = stat()
        #expect(stat(path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600, "a new store is private to its owner")
    }

    @Test("a store that cannot be created is an error naming the path")
    func uncreatableStoreIsReported() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // A regular file where the store's directory should be.
        let blocker = directory.path + "/file"
        #expect(FileManager.default.createFile(atPath: blocker, contents: Data("x".utf8)))
        let path = blocker + "/store.sqlite3"
        expectError(.noSuchKeychain, containing: path) { _ = try Keychain(path: path, createIfMissing: true) }
    }

    @Test("a store file deleted and created again is opened anew, not served from the old connection")
    func replacedStoreIsReopened() throws {
        try withTemporaryKeychain { keychain, _ in
            try keychain.add(Fixture.alice.certificate)
            for suffix in ["", "-wal", "-shm"] { unlink(keychain.path + suffix) }
            let fresh = try Keychain(path: keychain.path, createIfMissing: true)
            #expect(try fresh.certificates().isEmpty)
            try fresh.add(Fixture.bob.certificate)
            #expect(try Keychain(path: keychain.path).certificates().map(\.label) == ["Bob Example"])
        }
    }

    @Test("a file that is not a store is refused as an invalid keychain")
    func garbageFileIsRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/garbage.sqlite3"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x41, count: 4096)))
        expectError(.invalidKeychain, containing: path) { _ = try Keychain(path: path) }
    }

    @Test("the default keychain is the login token under P11KEYCHAIN_DIR, read when opened")
    func defaultKeychainFollowsTheEnvironment() throws {
        try withKeychainEnvironment { directory in
            let keychain = try Keychain()
            #expect(keychain.name == "login")
            #expect(keychain.path == directory + "/login.sqlite3")
            #expect(try Keychain.default.path == keychain.path)
            #expect(access(keychain.path, F_OK) == 0, "created on first use")
        }
        try withKeychainEnvironment { directory in
            let path = try Keychain.default.path
            #expect(path == directory + "/login.sqlite3", "not cached from the previous test")
        }
    }

    @Test("a named token comes from the configuration file; an unknown name lists the known ones")
    func namedTokens() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let configuration = directory.path + "/p11keychain.conf"
        let text =
            "[token Work]\npath = \(directory.path)/work.sqlite3\n[token Archive]\npath = \(directory.path)/archive.sqlite3\nread-only = yes\n"
        #expect(FileManager.default.createFile(atPath: configuration, contents: Data(text.utf8)))
        try withKeychainEnvironment(configuration: configuration) { home in
            let work = try Keychain(tokenNamed: "Work")
            #expect(work.path == directory.path + "/work.sqlite3")
            #expect(work.name == "Work")
            #expect(!work.isReadOnly)
            let tokens = try Keychain.configuredTokens()
            #expect(tokens.map(\.name) == ["login", "Work", "Archive"])
            #expect(tokens[0].path == home + "/login.sqlite3")
            #expect(tokens[2].isReadOnly)
            expectError(.noSuchKeychain, containing: "login, Work, Archive") {
                _ = try Keychain(tokenNamed: "Nope")
            }
        }
    }

    @Test("an invalid configuration file is reported with its file and line")
    func invalidConfiguration() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let configuration = directory.path + "/bad.conf"
        #expect(FileManager.default.createFile(atPath: configuration, contents: Data("debug = maybe\n".utf8)))
        try withKeychainEnvironment(configuration: configuration) { _ in
            expectError(.notAvailable, containing: configuration + ":1") { _ = try Keychain() }
        }
    }
}

@Suite("Adding certificates")
struct AddingTests {
    @Test("an added certificate is a token object labelled with its subject summary by default")
    func addWithDefaults() throws {
        try withTemporaryKeychain { keychain, _ in
            let alice = try Fixture.alice.certificate
            let item = try keychain.add(alice)
            #expect(item.certificate == alice)
            #expect(item.label == "Alice Example")
            #expect(item.publicKeyHash == alice.publicKeyHash)
            #expect(!item.persistentReference.isEmpty)
            #expect(try keychain.certificates() == [item])
        }
    }

    @Test("a caller's label and key identifier win")
    func addWithLabelAndID() throws {
        try withTemporaryKeychain { keychain, _ in
            let item = try keychain.add(
                Fixture.bob.certificate, label: "My Certificate", publicKeyHash: [1, 2, 3])
            #expect(item.label == "My Certificate")
            #expect(item.publicKeyHash == [1, 2, 3])
            #expect(
                try keychain.firstCertificate(matching: CertificateQuery(publicKeyHash: [1, 2, 3])) == item)
        }
    }

    @Test("a duplicate (same issuer and serial) is refused whatever its label, and the first item is intact")
    func duplicateIsRefused() throws {
        try withTemporaryKeychain { keychain, _ in
            let first = try keychain.add(Fixture.alice.certificate, label: "first")
            expectError(.duplicateItem) { try keychain.add(Fixture.alice.certificate, label: "second") }
            #expect(try keychain.certificates() == [first])
        }
    }

    @Test("a batch is stored in one transaction: a duplicate in it stores none of it")
    func batchIsAllOrNothing() throws {
        try withTemporaryKeychain { keychain, _ in
            try keychain.add(Fixture.alice.certificate)
            let batch = try [Fixture.ca.certificate, Fixture.bob.certificate, Fixture.alice.certificate]
            expectError(.duplicateItem) { try keychain.add(contentsOf: batch) }
            #expect(try keychain.certificates().map(\.label) == ["Alice Example"])

            let added = try keychain.add(contentsOf: batch + batch, label: "bundle", duplicates: .skip)
            #expect(added.map(\.certificate) == Array(batch.prefix(2)))
            #expect(added.allSatisfy { $0.label == "bundle" })
            #expect(try keychain.certificates().count == 3)
        }
    }

    @Test("a read-only keychain refuses changes and keeps its items")
    func readOnlyKeychain() throws {
        try withTemporaryKeychain { keychain, directory in
            let item = try keychain.add(Fixture.alice.certificate)
            let readOnly = try Keychain(path: keychain.path, readOnly: true)
            #expect(readOnly.isReadOnly)
            expectError(.readOnly) { try readOnly.add(Fixture.bob.certificate) }
            expectError(.readOnly) { try readOnly.delete(item) }
            #expect(try readOnly.certificates() == [item])
            _ = directory
        }
    }

    @Test("a keychain opened twice sees the other's changes at once")
    func twoHandlesShareTheStore() throws {
        try withTemporaryKeychain { keychain, _ in
            let other = try Keychain(path: keychain.path)
            let item = try keychain.add(Fixture.alice.certificate)
            #expect(try other.certificates() == [item])
        }
    }
}

@Suite("Finding certificates")
struct FindingTests {
    /// A keychain holding the CA, Alice and Bob, in that order.
    func populated(_ body: (Keychain, [CertificateItem]) throws -> Void) throws {
        try withTemporaryKeychain { keychain, _ in
            let items = try keychain.add(contentsOf: [
                Fixture.ca.certificate, Fixture.alice.certificate, Fixture.bob.certificate,
            ])
            try body(keychain, items)
        }
    }

    @Test("each criterion finds exactly the certificates it describes")
    func eachCriterion() throws {
        try populated { keychain, items in
            let (ca, alice, bob) = (items[0], items[1], items[2])
            let cases: [(String, CertificateQuery, [CertificateItem])] = [
                ("all", .all, items),
                ("label", CertificateQuery(label: "Bob Example"), [bob]),
                ("subject DER", CertificateQuery(subject: alice.certificate.subjectDER), [alice]),
                ("issuer DER", CertificateQuery(issuer: ca.certificate.subjectDER), items),
                (
                    "serial content with its leading 00",
                    CertificateQuery(serialNumber: [0x00, 0x80, 0xA1, 0xB2, 0xC3]), [alice]
                ),
                (
                    "issuer and serial",
                    CertificateQuery(issuer: ca.certificate.subjectDER, serialNumber: [2]), [bob]
                ),
                ("public-key hash", CertificateQuery(publicKeyHash: bob.certificate.publicKeyHash), [bob]),
                (
                    "subject key identifier",
                    CertificateQuery(subjectKeyIdentifier: alice.certificate.subjectKeyIdentifier), [alice]
                ),
                ("subject contains, any case", CertificateQuery(subjectContains: "alice EXAMPLE"), [alice]),
                (
                    "subject contains an organisation",
                    CertificateQuery(subjectContains: "p11keychain tests"), items
                ),
                ("subject e-mail", CertificateQuery(emailAddress: "ALICE@example.org"), [alice]),
                ("alternative-name e-mail", CertificateQuery(emailAddress: "alice.alt@example.org"), [alice]),
                ("valid now", CertificateQuery(validOn: Date()), items),
                (
                    "SHA-1 fingerprint", CertificateQuery(sha1Fingerprint: bob.certificate.sha1Fingerprint),
                    [bob]
                ),
                (
                    "SHA-256 fingerprint",
                    CertificateQuery(sha256Fingerprint: ca.certificate.sha256Fingerprint), [ca]
                ),
                ("exact certificate", CertificateQuery(certificate: alice.certificate), [alice]),
                (
                    "persistent reference", CertificateQuery(persistentReference: bob.persistentReference),
                    [bob]
                ),
                ("two criteria", CertificateQuery(label: "Bob Example", subjectContains: "alice"), []),
            ]
            for (name, query, expected) in cases {
                let found = try keychain.certificates(matching: query)
                #expect(found == expected, "\(name)")
            }
        }
    }

    @Test("criteria that nothing can match find nothing, without error")
    func impossibleCriteria() throws {
        try populated { keychain, _ in
            let queries = [
                CertificateQuery(label: "nobody"),
                CertificateQuery(serialNumber: [0x00, 0x01]),  // not a minimal INTEGER
                CertificateQuery(serialNumber: []),
                CertificateQuery(sha1Fingerprint: [1, 2, 3]),
                CertificateQuery(validOn: Date(timeIntervalSince1970: 0)),
                CertificateQuery(subject: [0x30, 0x00]),
                CertificateQuery(persistentReference: Array("no such object".utf8)),
            ]
            for query in queries {
                let found = try keychain.certificates(matching: query)
                #expect(found.isEmpty, "\(query)")
            }
        }
    }

    @Test("the limit returns the first matches in the order added")
    func limits() throws {
        try populated { keychain, items in
            let one = try keychain.certificates(matching: CertificateQuery(limit: .one))
            #expect(one == [items[0]])
            let two = try keychain.certificates(matching: CertificateQuery(limit: .maximum(2)))
            #expect(two == Array(items.prefix(2)))
            let first = try keychain.firstCertificate(matching: CertificateQuery(serialNumber: [2]))
            #expect(first == items[2])
            expectError(.parameter) {
                _ = try keychain.certificates(matching: CertificateQuery(limit: .maximum(0)))
            }
        }
    }

    @Test("Apple's normalized subject and issuer find the certificate")
    func normalizedNames() throws {
        try withTemporaryKeychain { keychain, _ in
            let printable = try Fixture.printable.certificate
            let item = try keychain.add(printable)
            #expect(printable.normalizedSubjectSequence != printable.subjectDER)
            #expect(
                try keychain.certificates(
                    matching: CertificateQuery(subject: printable.normalizedSubjectSequence)) == [item])
            #expect(
                try keychain.certificates(
                    matching: CertificateQuery(issuer: printable.normalizedIssuerSequence, serialNumber: [9]))
                    == [item])
        }
    }
}

@Suite("Changing and deleting certificates")
struct ChangingTests {
    @Test("an update changes the label and key identifier of every match")
    func updateEveryMatch() throws {
        try withTemporaryKeychain { keychain, _ in
            try keychain.add(contentsOf: [Fixture.alice.certificate, Fixture.bob.certificate], label: "team")
            let updated = try keychain.updateCertificates(
                matching: CertificateQuery(label: "team"),
                setting: CertificateChanges(label: "renamed", publicKeyHash: [9]))
            #expect(updated.count == 2)
            #expect(try keychain.certificates(matching: CertificateQuery(label: "renamed")) == updated)
            #expect(try keychain.certificates(matching: CertificateQuery(label: "team")).isEmpty)
            #expect(try keychain.certificates(matching: CertificateQuery(publicKeyHash: [9])).count == 2)
            #expect(
                try keychain.updateCertificates(
                    matching: CertificateQuery(label: "none"), setting: CertificateChanges(label: "x")
                ).isEmpty)
        }
    }

    @Test("updating or deleting an item that is gone says so")
    func goneItem() throws {
        try withTemporaryKeychain { keychain, _ in
            let item = try keychain.add(Fixture.alice.certificate)
            let renamed = try keychain.update(item, setting: CertificateChanges(label: "new"))
            #expect(renamed.label == "new")
            try keychain.delete(item)
            expectError(.itemNotFound) { try keychain.delete(item) }
            expectError(.itemNotFound) { try keychain.update(item, setting: CertificateChanges(label: "x")) }
        }
    }

    @Test("a list of items is changed or deleted in one call; items gone meanwhile are left out")
    func itemLists() throws {
        try withTemporaryKeychain { keychain, _ in
            let items = try keychain.add(contentsOf: [
                Fixture.ca.certificate, Fixture.alice.certificate, Fixture.bob.certificate,
            ])
            try keychain.delete(items[0])
            let renamed = try keychain.update(items, setting: CertificateChanges(label: "renamed"))
            #expect(renamed.map(\.certificate) == items.dropFirst().map(\.certificate))
            #expect(renamed.allSatisfy { $0.label == "renamed" })
            #expect(try keychain.delete(items) == 2)
            #expect(try keychain.certificates().isEmpty)
        }
    }

    @Test("a delete removes every match and nothing else")
    func deleteEveryMatch() throws {
        try withTemporaryKeychain { keychain, _ in
            let items = try keychain.add(contentsOf: [
                Fixture.ca.certificate, Fixture.alice.certificate, Fixture.bob.certificate,
            ])
            #expect(
                try keychain.deleteCertificates(
                    matching: CertificateQuery(issuer: items[0].certificate.subjectDER, limit: .maximum(2)))
                    == 2)
            #expect(try keychain.certificates() == [items[2]])
            #expect(try keychain.deleteCertificates(matching: CertificateQuery(label: "nobody")) == 0)
        }
    }
}

@Suite("Certificate values")
struct CertificateTests {
    @Test("the values shown and looked up come from the DER")
    func values() throws {
        let alice = try Fixture.alice.certificate
        #expect(alice.subjectSummary == "Alice Example")
        #expect(alice.commonName == "Alice Example")
        #expect(alice.emailAddresses == ["alice@example.org", "alice.alt@example.org"])
        #expect(alice.serialNumber == [0x00, 0x80, 0xA1, 0xB2, 0xC3])
        #expect(alice.serialNumberDER == [0x02, 0x05, 0x00, 0x80, 0xA1, 0xB2, 0xC3])
        #expect(alice.version == 3)
        #expect(alice.subjectDescription.contains("CN=Alice Example"))
        #expect(alice.issuerDER == (try Fixture.ca.certificate.subjectDER))
        #expect(alice.notValidBefore < Date() && Date() < alice.notValidAfter)
        #expect(alice.isValid())
        #expect(!alice.isValid(at: Date(timeIntervalSince1970: 0)))
        #expect(alice.publicKeyAlgorithm == "id-ecPublicKey")
        #expect(alice.publicKeySize == 256)
        #expect(alice.publicKeyInfo.first == 0x30)
        #expect(alice.publicKeyHash.count == 20)
        #expect(alice.subjectKeyIdentifier?.count == 20)
        #expect(alice.sha1Fingerprint.count == 20)
        #expect(alice.sha256Fingerprint.count == 32)
        #expect(!alice.isCertificateAuthority)
        #expect(try Fixture.ca.certificate.isCertificateAuthority)
        #expect(try Fixture.ca.certificate.isSelfSigned)
        #expect(try Fixture.bob.certificate.subjectKeyIdentifier == nil)
    }

    @Test("a subject without a common name is summarised by its first value")
    func noCommonName() throws {
        let certificate = try Fixture.nocn.certificate
        #expect(certificate.commonName == nil)
        #expect(certificate.commonNames.isEmpty)
        #expect(certificate.subjectSummary == "No Common Name Org")
    }

    @Test("Apple's normalized names upper-case PrintableStrings and collapse their blanks")
    func normalizedNames() throws {
        let certificate = try Fixture.printable.certificate
        let normalized = String(decoding: certificate.normalizedSubjectSequence, as: UTF8.self)
        #expect(normalized.contains("ACME PRINTABLE CORP"))
        #expect(normalized.contains("PRINTABLE EXAMPLE"))
        #expect(certificate.normalizedIssuerSequence == certificate.normalizedSubjectSequence)
        // Already normalized: unchanged.
        let ca = try Fixture.ca.certificate
        #expect(ca.normalizedSubjectSequence.count == ca.subjectDER.count)
    }

    @Test("bytes that are not exactly one DER certificate are refused")
    func badDER() throws {
        let der = try Fixture.alice.certificate.derEncoded
        for bad in [[], [0x30, 0x03, 0x02, 0x01, 0x01], Array(der.dropLast()), der + [0]] {
            expectError(.decode) { _ = try Certificate(derEncoded: bad) }
        }
        expectError(.decode) { _ = try Certificate(pemEncoded: "no PEM here") }
        expectError(.decode) {
            _ = try Certificate(pemEncoded: "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n")
        }
    }

    @Test("PEM bundles decode in order and PEM round-trips")
    func pem() throws {
        let bundle = Fixture.ca.pem + "\n" + Fixture.alice.pem
        let certificates = try Certificate.certificates(pemEncoded: bundle)
        #expect(try certificates == [Fixture.ca.certificate, Fixture.alice.certificate])
        let alice = try Fixture.alice.certificate
        #expect(try Certificate(pemEncoded: alice.pemEncoded) == alice)
        #expect(alice.pemEncoded.hasPrefix("-----BEGIN CERTIFICATE-----\n"))
        #expect(try Certificate.certificates(decoding: alice.derEncoded) == [alice])
        #expect(try Certificate.certificates(decoding: Array(bundle.utf8)).count == 2)
    }
}
