import Foundation
import Testing

// add-certificates, find-certificate, delete-certificate, export and dump-keychain, checked
// against what openssl says about the same certificates.

@Suite("certificate commands")
struct CertificateCommandTests {
    /// A sandbox whose default keychain holds the CA, Alice and Bob.
    func threeCertificates() throws -> Sandbox {
        let sandbox = try Sandbox()
        let added = try sandbox.p11keychain(
            "add-certificates", Fixture.ca.path, Fixture.alice.path, Fixture.bob.path)
        #expect(added.status == 0)
        #expect(added.output == "added 3 certificates to \"login\"\n")
        return sandbox
    }

    // MARK: add-certificates

    @Test("adding the same certificates again is not an error and says they are already present")
    func duplicates() throws {
        let sandbox = try threeCertificates()
        let again = try sandbox.p11keychain("add-certificates", Fixture.alice.path, Fixture.nocn.path)
        #expect(again.status == 0)
        #expect(again.output == "added 1 certificate to \"login\"; 1 already present\n")
        // Given twice in one command: stored once.
        let twice = try sandbox.p11keychain(
            "add-certificates", Fixture.printable.path, Fixture.printable.path)
        #expect(twice.output == "added 1 certificate to \"login\"; 1 already present\n")
        #expect(
            try sandbox.p11keychain("find-certificate", "-a").output.components(separatedBy: "label:").count
                - 1 == 5)
    }

    @Test("a bundle of 50 PEM certificates is added at once, and adding it again adds nothing")
    func bundle() throws {
        let sandbox = try Sandbox()
        let bundle = try sandbox.bundle("Bulk", count: 50)
        let first = try sandbox.p11keychain("add-certificates", bundle)
        #expect(first.status == 0)
        #expect(first.output == "added 50 certificates to \"login\"\n")
        #expect(first.error.isEmpty, "no progress bar when standard error is not a terminal")
        let again = try sandbox.p11keychain("add-certificates", bundle, Fixture.alice.path)
        #expect(again.status == 0)
        #expect(again.output == "added 1 certificate to \"login\"; 50 already present\n")
        let exported = try sandbox.p11keychain("export")
        #expect(pemBlockCount(exported.output) == 51)
        let found = try sandbox.p11keychain("find-certificate", "-a", "-c", "bulk 50")
        #expect(found.output.components(separatedBy: "label:").count - 1 == 1, "Bulk 50 only")
        let many = try sandbox.p11keychain("find-certificate", "-a", "-c", "Bulk 1")
        #expect(many.output.components(separatedBy: "label:").count - 1 == 11, "Bulk 1 and Bulk 10-19")
    }

    @Test("importers running at once all succeed and store each certificate once")
    func concurrentImports() async throws {
        let sandbox = try Sandbox()
        let bundle = try sandbox.bundle("Shared", count: 30)
        let outcomes = try await withThrowingTaskGroup(of: Outcome.self) { group in
            for _ in 0..<4 {
                group.addTask { try sandbox.p11keychain("add-certificates", bundle) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for outcome in outcomes { #expect(outcome.status == 0, "\(outcome.error)") }
        let added = outcomes.compactMap {
            $0.output.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        }
        #expect(added.reduce(0, +) == 30, "\(outcomes.map(\.output))")
        #expect(pemBlockCount(try sandbox.p11keychain("export").output) == 30)
    }

    @Test("a progress bar is drawn on a terminal for a large bundle, and only there")
    func progressBar() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/script") else { return }
        let sandbox = try Sandbox()
        let bundle = try sandbox.bundle("Many", count: 120)
        // script(1) gives the command a terminal; its output is what the terminal showed.
        let command = "'\(Built.program)' add-certificates '\(bundle)'"
        let outcome = try sandbox.run("/usr/bin/script", ["-qec", command, "/dev/null"])
        #expect(outcome.status == 0)
        #expect(outcome.output.contains("checking ["))
        #expect(outcome.output.contains("120/120"))
        #expect(outcome.output.contains("added 120 certificates"))
    }

    @Test("DER files and standard input are read too")
    func derAndStandardInput() throws {
        let sandbox = try Sandbox()
        let der = sandbox.path + "/bob.der"
        try sandbox.openssl("x509", "-in", Fixture.bob.path, "-outform", "der", "-out", der)
        #expect(
            try sandbox.p11keychain("add-certificates", der).output == "added 1 certificate to \"login\"\n")
        let pem = String(decoding: try sandbox.read(Fixture.alice.path), as: UTF8.self)
        let piped = try sandbox.p11keychain("add-certificates", "-l", "from stdin", "-", input: pem)
        #expect(piped.output == "added 1 certificate to \"login\"\n")
        #expect(
            try sandbox.p11keychain("find-certificate", "-l", "from stdin").output.contains(
                "CN=Alice Example"))
    }

    @Test("-l gives every added certificate that label")
    func label() throws {
        let sandbox = try Sandbox()
        #expect(
            try sandbox.p11keychain("add-certificates", "-l", "Team", Fixture.alice.path, Fixture.bob.path)
                .status == 0)
        let found = try sandbox.p11keychain("find-certificate", "-a", "-l", "Team")
        #expect(found.output.contains("CN=Alice Example") && found.output.contains("CN=Bob Example"))
    }

    @Test(
        "a bad file is refused with one line, exit status 1, and nothing is added",
        arguments: ["directory", "missing", "binary", "empty", "damaged PEM", "key only"])
    func badFile(kind: String) throws {
        let sandbox = try Sandbox()
        let file: String
        switch kind {
        case "directory": file = sandbox.path
        case "missing": file = sandbox.path + "/missing.pem"
        case "binary":
            file = try sandbox.write("random.bin", (0..<4096).map { _ in UInt8.random(in: 0...255) })
        case "empty": file = try sandbox.write("empty.pem", [])
        case "damaged PEM":
            var text = String(decoding: try sandbox.read(Fixture.alice.path), as: UTF8.self)
            text = text.replacingOccurrences(of: "M", with: "*")
            file = try sandbox.write("damaged.pem", Array(text.utf8))
        default:
            try sandbox.openssl(
                "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
                sandbox.path + "/key.pem")
            file = sandbox.path + "/key.pem"
        }
        // A good file first: the batch is one transaction, so it is not added either.
        let outcome = try sandbox.p11keychain("add-certificates", Fixture.alice.path, file)
        #expect(outcome.failed(with: 1), "\(kind): \(outcome.error)")
        #expect(outcome.error.contains(file), "the message names the file")
        let listed = try sandbox.p11keychain("find-certificate", "-a")
        #expect(listed.failed(with: 1), "nothing was added")
        #expect(listed.error.contains("has no certificates"))
    }

    // MARK: find-certificate

    @Test("find-certificate shows label, subject, issuer, serial, validity and the SHA-1 openssl computes")
    func findSummary() throws {
        let sandbox = try threeCertificates()
        let outcome = try sandbox.p11keychain("find-certificate", "-l", "Alice Example")
        #expect(outcome.status == 0)
        #expect(outcome.error.isEmpty)
        let text = outcome.output
        #expect(text.contains("label:      Alice Example\n"))
        #expect(text.contains("subject:") && text.contains("CN=Alice Example"))
        #expect(text.contains("issuer:") && text.contains("CN=p11keychain Test CA"))
        let serial = try sandbox.openssl("x509", "-in", Fixture.alice.path, "-noout", "-serial").output
        #expect(serial == "serial=80A1B2C3\n")
        #expect(text.contains("serial:     80A1B2C3\n"))
        #expect(text.contains("not before: ") && text.contains("not after:  2126-"))
        #expect(text.contains("SHA-1:      \(try opensslSHA1(sandbox, Fixture.alice.path))\n"))
        #expect(!text.contains("SHA-256"))
    }

    @Test("without -a only the first match is shown; with -a every one")
    func firstOrAll() throws {
        let sandbox = try threeCertificates()
        let first = try sandbox.p11keychain("find-certificate")
        #expect(first.output.components(separatedBy: "label:").count - 1 == 1)
        #expect(first.output.contains("p11keychain Test CA"), "the first one added")
        let all = try sandbox.p11keychain("find-certificate", "-a")
        #expect(all.output.components(separatedBy: "label:").count - 1 == 3)
    }

    @Test("-c matches part of the common name in any case, -e an e-mail address")
    func byNameAndEmail() throws {
        let sandbox = try threeCertificates()
        let byName = try sandbox.p11keychain("find-certificate", "-a", "-c", "EXAMPLE")
        #expect(byName.output.contains("Alice Example") && byName.output.contains("Bob Example"))
        #expect(!byName.output.contains("label:      p11keychain Test CA"))
        // The organisation contains "tests", but -c looks at the common name only.
        #expect(try sandbox.p11keychain("find-certificate", "-c", "tests").failed(with: 1))
        let byEmail = try sandbox.p11keychain("find-certificate", "-a", "-e", "alice.alt@example.org")
        #expect(byEmail.output.contains("label:      Alice Example"))
        #expect(!byEmail.output.contains("Bob"))
    }

    @Test("-Z adds the SHA-256 hash; both equal openssl's")
    func hashes() throws {
        let sandbox = try threeCertificates()
        let outcome = try sandbox.p11keychain("find-certificate", "-Z", "-l", "Bob Example")
        let sha256 = try sandbox.openssl("x509", "-in", Fixture.bob.path, "-noout", "-fingerprint", "-sha256")
            .output
        let expected = String(sha256.split(separator: "=").last ?? "").replacingOccurrences(of: ":", with: "")
        #expect(outcome.output.contains("SHA-256:    \(expected)"))
        #expect(outcome.output.contains("SHA-1:      \(try opensslSHA1(sandbox, Fixture.bob.path))"))
    }

    @Test("-p writes PEM that openssl reads back as the same certificate")
    func pemOutput() throws {
        let sandbox = try threeCertificates()
        let outcome = try sandbox.p11keychain("find-certificate", "-p", "-l", "Alice Example")
        #expect(outcome.status == 0)
        #expect(pemBlockCount(outcome.output) == 1)
        let file = try sandbox.write("found.pem", Array(outcome.output.utf8))
        #expect(try opensslSHA1(sandbox, file) == opensslSHA1(sandbox, Fixture.alice.path))
        let all = try sandbox.p11keychain("find-certificate", "-a", "-p")
        #expect(pemBlockCount(all.output) == 3)
        #expect(!all.output.contains("label:"))
        let hashed = try sandbox.p11keychain("find-certificate", "-p", "-Z")
        #expect(hashed.output.hasPrefix("SHA-256 hash: "))
        #expect(
            hashed.output.contains(
                "SHA-1 hash: \(try opensslSHA1(sandbox, Fixture.ca.path))\n-----BEGIN CERTIFICATE-----"))
    }

    @Test("no match is exit status 1 with one line that says how to look")
    func noMatch() throws {
        let sandbox = try threeCertificates()
        let outcome = try sandbox.p11keychain("find-certificate", "-l", "x")
        #expect(outcome.failed(with: 1))
        #expect(
            outcome.error
                == "p11keychain: find-certificate: no certificate matches label \"x\" (try: p11keychain find-certificate -a)\n"
        )
        let empty = try Sandbox().p11keychain("find-certificate")
        #expect(empty.failed(with: 1))
        #expect(empty.error.contains("add-certificates"))
    }

    // MARK: delete-certificate

    @Test("delete-certificate -l deletes the one certificate with that label")
    func deleteByLabel() throws {
        let sandbox = try threeCertificates()
        let outcome = try sandbox.p11keychain("delete-certificate", "-l", "Bob Example")
        #expect(outcome.status == 0)
        #expect(
            outcome.output.hasPrefix(
                "deleted \"Bob Example\" (SHA-1 \(try opensslSHA1(sandbox, Fixture.bob.path)))"))
        #expect(try sandbox.p11keychain("find-certificate", "-l", "Bob Example").failed(with: 1))
        #expect(
            try sandbox.p11keychain("find-certificate", "-a").output.components(separatedBy: "label:").count
                - 1 == 2)
        let again = try sandbox.p11keychain("delete-certificate", "-l", "Bob Example")
        #expect(again.failed(with: 1))
        #expect(again.error.contains("no certificate matches label \"Bob Example\""))
    }

    @Test("delete-certificate -Z takes the SHA-1 in any case, with or without colons, or the SHA-256")
    func deleteByHash() throws {
        let sandbox = try threeCertificates()
        let sha1 = try opensslSHA1(sandbox, Fixture.alice.path)
        let colons = stride(from: 0, to: sha1.count, by: 2).map { offset -> String in
            let start = sha1.index(sha1.startIndex, offsetBy: offset)
            return String(sha1[start..<sha1.index(start, offsetBy: 2)])
        }.joined(separator: ":").lowercased()
        #expect(try sandbox.p11keychain("delete-certificate", "-Z", colons).status == 0)
        #expect(try sandbox.p11keychain("find-certificate", "-l", "Alice Example").failed(with: 1))
        let sha256 = try sandbox.openssl("x509", "-in", Fixture.bob.path, "-noout", "-fingerprint", "-sha256")
            .output
        let hex = String(sha256.split(separator: "=").last ?? "").trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(try sandbox.p11keychain("delete-certificate", "-Z", hex).status == 0)
        #expect(try sandbox.p11keychain("find-certificate", "-l", "Bob Example").failed(with: 1))
        #expect(
            try sandbox.p11keychain("find-certificate", "-l", "p11keychain Test CA").status == 0,
            "the CA stays")
    }

    @Test("an ambiguous delete deletes nothing and says how to choose; -a deletes every match")
    func ambiguousDelete() throws {
        let sandbox = try Sandbox()
        #expect(
            try sandbox.p11keychain("add-certificates", "-l", "Shared", Fixture.alice.path, Fixture.bob.path)
                .status == 0)
        let refused = try sandbox.p11keychain("delete-certificate", "-l", "Shared")
        #expect(refused.failed(with: 1))
        #expect(refused.error.contains("matches several certificates and nothing was deleted"))
        #expect(refused.error.contains("p11keychain find-certificate -a -l Shared"))
        #expect(
            try sandbox.p11keychain("find-certificate", "-a", "-l", "Shared").output.components(
                separatedBy: "label:"
            ).count - 1 == 2)
        let all = try sandbox.p11keychain("delete-certificate", "-a", "-l", "Shared")
        #expect(all.status == 0)
        #expect(all.output.split(separator: "\n").count == 2)
        #expect(try sandbox.p11keychain("find-certificate", "-a").failed(with: 1))
    }

    // MARK: export

    @Test("export -f der writes the exact DER openssl makes of the certificate")
    func exportDER() throws {
        let sandbox = try threeCertificates()
        let original = sandbox.path + "/alice.der"
        try sandbox.openssl("x509", "-in", Fixture.alice.path, "-outform", "der", "-out", original)
        let exported = sandbox.path + "/exported.der"
        let outcome = try sandbox.p11keychain("export", "-f", "der", "-o", exported, "-l", "Alice Example")
        #expect(outcome.status == 0)
        #expect(try sandbox.read(exported) == sandbox.read(original))
        // openssl reads it as DER and writes the same bytes back.
        let reencoded = sandbox.path + "/reencoded.der"
        try sandbox.openssl("x509", "-inform", "der", "-in", exported, "-outform", "der", "-out", reencoded)
        #expect(try sandbox.read(reencoded) == sandbox.read(original))
        // To standard output when it is not a terminal.
        let piped = try sandbox.p11keychain("export", "-f", "der", "-l", "Alice Example")
        #expect(piped.outputBytes == (try sandbox.read(original)))
    }

    @Test("export writes PEM of every certificate, or of those that match, that openssl reads")
    func exportPEM() throws {
        let sandbox = try threeCertificates()
        let everything = try sandbox.p11keychain("export")
        #expect(everything.status == 0)
        #expect(pemBlockCount(everything.output) == 3)
        let file = sandbox.path + "/bob.pem"
        #expect(try sandbox.p11keychain("export", "-o", file, "-l", "Bob Example").status == 0)
        #expect(try opensslSHA1(sandbox, file) == opensslSHA1(sandbox, Fixture.bob.path))
        let text = try sandbox.openssl("x509", "-in", file, "-noout", "-subject").output
        #expect(text.contains("Bob Example"))
        // Round trip: exported PEM added to another store is the same certificate.
        let other = sandbox.path + "/other.sqlite3"
        let bundle = try sandbox.write("all.pem", everything.outputBytes)
        #expect(
            try sandbox.p11keychain("--store", other, "add-certificates", bundle).output.hasPrefix(
                "added 3 certificates"))
        #expect(try sandbox.p11keychain("--store", other, "export").output == everything.output)
    }

    @Test("export fails with one line when DER would need several certificates or none match")
    func exportFailures() throws {
        let sandbox = try threeCertificates()
        let several = try sandbox.p11keychain("export", "-f", "der", "-o", sandbox.path + "/x.der")
        #expect(several.failed(with: 1))
        #expect(several.error.contains("DER holds one"))
        #expect(!FileManager.default.fileExists(atPath: sandbox.path + "/x.der"))
        let none = try sandbox.p11keychain("export", "-l", "nobody")
        #expect(none.failed(with: 1))
        let badDirectory = try sandbox.p11keychain("export", "-o", sandbox.path + "/missing/dir/out.pem")
        #expect(badDirectory.failed(with: 1))
        #expect(badDirectory.error.contains("cannot write"))
    }

    // MARK: dump-keychain

    @Test("dump-keychain shows every item with its attributes")
    func dump() throws {
        let sandbox = try threeCertificates()
        let outcome = try sandbox.p11keychain("dump-keychain")
        #expect(outcome.status == 0)
        let text = outcome.output
        #expect(text.hasPrefix("keychain \"login\" at \(sandbox.defaultStore): 3 certificates\n"))
        #expect(text.components(separatedBy: "\nitem ").count - 1 == 3)
        for field in [
            "class:", "label:", "subject:", "issuer:", "serial:", "not before:", "not after:", "e-mail:",
            "public key:", "public-key hash:", "subject key id:", "authority:", "self-signed:", "SHA-1:",
            "SHA-256:", "unique id:",
        ] {
            #expect(text.components(separatedBy: "    \(field)").count - 1 == 3, "\(field) for each item")
        }
        #expect(text.contains("alice@example.org, alice.alt@example.org"))
        #expect(text.contains("authority:       yes (CA)"))
        let empty = try Sandbox().p11keychain("dump-keychain")
        #expect(empty.status == 0)
        #expect(empty.output.hasSuffix(": 0 certificates\n"))
    }
}
