import Foundation
import Testing

// import (PKCS#12 files openssl makes), find-identity, and the generic-password commands.

@Suite("identities")
struct IdentityCommandTests {
    @Test(
        "import stores a PKCS#12 file openssl made, and find-identity lists it with openssl's SHA-1",
        arguments: [KeyKind.rsa, .ec])
    func importAndFind(kind: KeyKind) throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let files = try sandbox.pkcs12("Person \(kind)", kind: kind, passphrase: "p12 secret")
        let imported = try sandbox.p11keychain("import", files.p12, "--passphrase", "p12 secret")
        #expect(imported.status == 0, "\(imported.error)")
        #expect(
            imported.output.hasPrefix("imported identity \"Person \(kind) friendly\""), "\(imported.output)")
        #expect(!imported.output.contains("p12 secret"))
        let sha1 = try opensslSHA1(sandbox, files.certificate)
        let found = try sandbox.p11keychain("find-identity")
        #expect(found.status == 0, "\(found.error)")
        #expect(
            found.output
                == "  1) \(sha1) \"Person \(kind) friendly\" (O=p11keychain CLI tests,CN=Person \(kind))\n"
                + "     1 identity found\n", "\(found.output)")
        #expect(try sandbox.p11keychain("find-identity", "-v").output.contains("1 valid identity found"))
        // The key is the file's: its public key is the certificate's.
        let keys = try sandbox.p11keychain("find-key", "--type", kind.rawValue)
        #expect(keys.output.split(separator: "\n").count == 3, "\(keys.output)")
        // Importing again changes nothing.
        #expect(try sandbox.p11keychain("import", files.p12, "--passphrase", "p12 secret").status == 0)
        #expect(try sandbox.p11keychain("find-identity").output.hasSuffix("     1 identity found\n"))
        #expect(try sandbox.p11keychain("find-key").output.split(separator: "\n").count == 3)
    }

    @Test("a wrong passphrase is exit status 1 with one line, and nothing is imported")
    func wrongPassphrase() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let files = try sandbox.pkcs12("Wrong", kind: .ec, passphrase: "right")
        let outcome = try sandbox.p11keychain("import", files.p12, "--passphrase", "wrong")
        #expect(outcome.failed(with: 1), "\(outcome.error)")
        #expect(
            outcome.error == "p11keychain: import: wrong passphrase for \(files.p12); nothing was imported\n")
        #expect(try sandbox.p11keychain("find-certificate").failed(with: 1))
        let notPKCS12 = try sandbox.p11keychain("import", Fixture.ca.path, "--passphrase", "x")
        #expect(notPKCS12.failed(with: 1), "\(notPKCS12.error)")
        #expect(notPKCS12.error.contains("is not a PKCS#12 file"))
        let noPassphrase = try sandbox.p11keychain("import", files.p12)
        #expect(noPassphrase.failed(with: 1))
        #expect(noPassphrase.error.contains("P11KEYCHAIN_P12_PASSPHRASE"))
        #expect(try sandbox.p11keychain("import").failed(with: 2))
        let twice = try sandbox.p11keychain("import", "-", "--passphrase-file", "-")
        #expect(twice.failed(with: 2))
        #expect(twice.error.contains("--passphrase-file and FILE cannot both read standard input"))
    }

    @Test(
        "the passphrase comes from a file or P11KEYCHAIN_P12_PASSPHRASE; -l labels the identity; legacy files too"
    )
    func passphraseSources() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let first = try sandbox.pkcs12("First", kind: .rsa, passphrase: "from a file")
        let second = try sandbox.pkcs12("Second", kind: .ec, passphrase: "from the environment", legacy: true)
        let file = try sandbox.write("passphrase", Array("from a file\n".utf8))
        let fromFile = try sandbox.p11keychain("import", first.p12, "--passphrase-file", file, "-l", "Mine")
        #expect(fromFile.status == 0, "\(fromFile.error)")
        let fromEnvironment = try sandbox.p11keychain(
            "import", second.p12, environment: ["P11KEYCHAIN_P12_PASSPHRASE": "from the environment"])
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.error)")
        let mine = try sandbox.p11keychain("find-identity", "-l", "Mine")
        #expect(mine.output.contains("\"Mine\" (O=p11keychain CLI tests,CN=First)\n"), "\(mine.output)")
        #expect(mine.output.hasSuffix("     1 identity found\n"))
        #expect(try sandbox.p11keychain("find-identity").output.hasSuffix("     2 identities found\n"))
    }

    @Test("find-identity -v leaves out an expired identity, which the full list marks")
    func expiredIdentity() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        // openssl ca can backdate a certificate: valid in January 2020 only.
        try sandbox.shell(
            """
            set -e
            cd '\(sandbox.path)'
            mkdir ca && touch ca/index.txt
            printf '[ca]\\ndefault_ca = d\\n[d]\\ndatabase = ca/index.txt\\nserial = ca/serial\\n' > ca.cnf
            printf 'new_certs_dir = ca\\ndefault_md = sha256\\npolicy = p\\n[p]\\ncommonName = supplied\\n' >> ca.cnf
            openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out old.key 2>/dev/null
            openssl req -new -key old.key -subj /CN=Expired -out old.csr
            openssl ca -batch -config ca.cnf -selfsign -keyfile old.key -in old.csr -create_serial -notext \
                -startdate 20200101000000Z -enddate 20200201000000Z -out old.crt 2>/dev/null
            openssl pkcs12 -export -inkey old.key -in old.crt -out old.p12 -passout pass:x
            """)
        let current = try sandbox.pkcs12("Current", kind: .ec, passphrase: "x")
        for file in [sandbox.path + "/old.p12", current.p12] {
            #expect(try sandbox.p11keychain("import", file, "--passphrase", "x").status == 0)
        }
        let all = try sandbox.p11keychain("find-identity")
        #expect(all.output.contains("\"Expired\" (CN=Expired) (expired)\n"), "\(all.output)")
        #expect(all.output.hasSuffix("     2 identities found\n"))
        let valid = try sandbox.p11keychain("find-identity", "-v")
        #expect(!valid.output.contains("Expired"))
        #expect(valid.output.hasSuffix("     1 valid identity found\n"))
    }

    @Test("a token without identities says 0; a certificate without its key is none")
    func noIdentities() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.p11keychain("add-certificates", Fixture.alice.path).status == 0)
        let none = try sandbox.p11keychain("find-identity")
        #expect(none.status == 0, "\(none.error)")
        #expect(none.output == "     0 identities found\n")
    }
}

@Suite("generic passwords")
struct PasswordCommandTests {
    @Test("processes adding the same service and account at once: exactly one succeeds, one is stored")
    func concurrentAddsStoreOne() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        // A thread each, so that all of them run at once: each unlocks (the slow PIN
        // derivation), then they race from the check for the pair to the insert.
        let results = Results()
        let group = DispatchGroup()
        for index in 1...6 {
            group.enter()
            Thread {
                defer { group.leave() }
                let outcome = Result {
                    try sandbox.p11keychain(
                        "add-generic-password", "-s", "race.example.org", "-a", "same", "-w",
                        "secret \(index)")
                }
                results.append(outcome)
            }.start()
        }
        group.wait()
        let outcomes = try results.all.map { try $0.get() }
        #expect(outcomes.filter { $0.status == 0 }.count == 1, "\(outcomes.map(\.error))")
        for refused in outcomes where refused.status != 0 {
            #expect(refused.failed(with: 1) && refused.error.contains("already stored"), "\(refused.error)")
        }
        let listing = try sandbox.pkcs11Tool("--login", "--pin", PIN.user, "--list-objects", "--type", "data")
        let stored = listing.output.split(separator: "\n").filter {
            $0.contains("label:") && $0.contains("race.example.org")
        }
        #expect(stored.count == 1, "\(listing.output)")
    }

    /// Outcomes collected from several threads.
    private final class Results: @unchecked Sendable {
        // @unchecked: `outcomes` is touched only with `lock` held.
        private let lock = NSLock()
        private var outcomes: [Result<Outcome, any Error>] = []

        func append(_ outcome: Result<Outcome, any Error>) { lock.withLock { outcomes.append(outcome) } }
        var all: [Result<Outcome, any Error>] { lock.withLock { outcomes } }
    }

    @Test("add, find (-w prints exactly the secret), a refused duplicate, -U, delete")
    func lifecycle() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let added = try sandbox.p11keychain(
            "add-generic-password", "-s", "backup.example.org", "-a", "alice", "-w", "correct horse")
        #expect(added.status == 0, "\(added.error)")
        #expect(
            added.output
                == "added generic password \"backup.example.org\" (service \"backup.example.org\", account \"alice\")\n"
        )
        let secret = try sandbox.p11keychain("find-generic-password", "-s", "backup.example.org", "-w")
        #expect(secret.status == 0)
        #expect(secret.outputBytes == Array("correct horse".utf8))
        let shown = try sandbox.p11keychain(
            "find-generic-password", "-s", "backup.example.org", "-a", "alice", "-g")
        #expect(
            shown.output
                == "service:  backup.example.org\naccount:  alice\nlabel:    backup.example.org\n"
                + "password: \"correct horse\"\n")
        #expect(
            !(try sandbox.p11keychain("find-generic-password", "-s", "backup.example.org").output.contains(
                "horse")))
        let duplicate = try sandbox.p11keychain(
            "add-generic-password", "-s", "backup.example.org", "-a", "alice", "-w", "other")
        #expect(duplicate.failed(with: 1), "\(duplicate.error)")
        #expect(duplicate.error.contains("already stored") && duplicate.error.contains("-U"))
        #expect(!duplicate.error.contains("other"))
        let updated = try sandbox.p11keychain(
            "add-generic-password", "-s", "backup.example.org", "-a", "alice", "-w", "battery staple", "-U",
            "-l",
            "Backups")
        #expect(updated.status == 0, "\(updated.error)")
        #expect(updated.output.hasPrefix("updated generic password \"Backups\""))
        #expect(
            try sandbox.p11keychain("find-generic-password", "-s", "backup.example.org", "-w").output
                == "battery staple")
        // -U adds when there is nothing to update.
        #expect(
            try sandbox.p11keychain(
                "add-generic-password", "-s", "backup.example.org", "-a", "bob", "-w", "b", "-U"
            ).output.hasPrefix("added"))
        let ambiguous = try sandbox.p11keychain("delete-generic-password", "-s", "backup.example.org")
        #expect(ambiguous.failed(with: 1))
        #expect(ambiguous.error.contains("several accounts") && ambiguous.error.contains("-a ACCOUNT"))
        let deleted = try sandbox.p11keychain(
            "delete-generic-password", "-s", "backup.example.org", "-a", "alice")
        #expect(deleted.status == 0, "\(deleted.error)")
        #expect(
            deleted.output
                == "deleted generic password \"Backups\" (service \"backup.example.org\", account \"alice\")\n"
        )
        let gone = try sandbox.p11keychain("find-generic-password", "-s", "backup.example.org", "-a", "alice")
        #expect(gone.failed(with: 1))
        #expect(
            gone.error.contains(
                "no generic password for service \"backup.example.org\" and account \"alice\""))
        #expect(
            try sandbox.p11keychain("delete-generic-password", "-s", "backup.example.org", "-a", "alice")
                .failed(with: 1))
        #expect(
            try sandbox.p11keychain("find-generic-password", "-s", "backup.example.org", "-w").output == "b")
    }

    @Test("a password from --password-file; one that is not text is shown in hexadecimal by -g")
    func passwordFile() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let file = try sandbox.write("password", Array("from a file\nignored\n".utf8))
        #expect(
            try sandbox.p11keychain("add-generic-password", "-s", "s", "-a", "a", "--password-file", file)
                .status == 0)
        #expect(try sandbox.p11keychain("find-generic-password", "-s", "s", "-w").output == "from a file")
        let tab = try sandbox.write("tab", Array("a\tb\n".utf8))
        #expect(
            try sandbox.p11keychain("add-generic-password", "-s", "t", "-a", "a", "--password-file", tab)
                .status == 0)
        #expect(
            try sandbox.p11keychain("find-generic-password", "-s", "t", "-g").output.contains(
                "password: 0x610962\n"))
    }

    @Test(
        "generic-password usage errors touch no store",
        arguments: [
            (["add-generic-password", "-s", "s", "-w", "w"], "-s SERVICE and -a ACCOUNT"),
            (["add-generic-password", "-a", "a"], "-s SERVICE and -a ACCOUNT"),
            (["find-generic-password"], "-s SERVICE"),
            (["find-generic-password", "-s", "s", "-w", "-g"], "give one"),
            (["delete-generic-password", "-a", "a"], "-s SERVICE"),
            (["add-generic-password", "-s"], "needs a value"),
        ])
    func usage(arguments: [String], message: String) throws {
        let sandbox = try Sandbox()
        let outcome = try sandbox.run(Built.program, arguments)
        #expect(outcome.failed(with: 2), "\(arguments): \(outcome.error)")
        #expect(outcome.error.contains(message), "\(arguments): \(outcome.error)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.defaultStore))
    }

    @Test("on a terminal add-generic-password asks for the password twice, without echo")
    func passwordPrompt() throws {
        guard Sandbox.hasScript else { return }
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let command = "'\(Built.program)' add-generic-password -s svc -a me"
        let question = "Password for \"svc\", account \"me\": "
        let differ = try sandbox.onTerminal(
            command, answering: [(question, "first try\n"), ("Retype the password: ", "second try\n")])
        #expect(differ.status == 1, "\(differ.output)")
        #expect(differ.output.contains("differ; nothing was changed"))
        let added = try sandbox.onTerminal(
            command, answering: [(question, "typed secret\n"), ("Retype the password: ", "typed secret\n")])
        #expect(added.status == 0, "\(added.output)")
        #expect(added.output.contains("Password for \"svc\", account \"me\": "))
        #expect(added.output.contains("Retype the password: "))
        #expect(!added.output.contains("typed secret"))
        #expect(try sandbox.p11keychain("find-generic-password", "-s", "svc", "-w").output == "typed secret")
    }
}
