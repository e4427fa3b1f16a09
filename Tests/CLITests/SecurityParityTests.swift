import Foundation
import Testing

// security(1) parity: each invocation below is spelled as macOS `security` spells it (its
// command names, its flag letters and their meanings) and must do what security does: the
// exit status and what the output says. One sandbox holds a token with a user PIN, a few
// certificates and the trust fixtures' chain, so the table's rows run in order on one store.

/// A file of Tests/Fixtures/trust (see its README).
private func trustFixture(_ name: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures").appendingPathComponent("trust").appendingPathComponent(
            name + ".pem"
        )
        .path
}

@Suite("security(1) parity")
struct SecurityParityTests {
    /// One invocation as security(1) spells it, and what must come of it.
    struct Row: Sendable, CustomTestStringConvertible {
        var arguments: [String]
        var status: Int32 = 0
        /// Text the standard output must contain (for a failure: standard error).
        var says: String = ""
        var testDescription: String { arguments.joined(separator: " ") }
    }

    /// Placeholders the sandbox replaces: `@alice` is the fixture's path, `@root` a trust
    /// fixture's, `@pin` the user PIN, `@store` the second keychain's file.
    static let rows: [Row] = [
        // Certificates.
        Row(arguments: ["add-certificates", "@alice", "@bob"], says: "added 2 certificates"),
        Row(arguments: ["find-certificate", "-c", "alice", "-m"], says: "alice.alt@example.org"),
        Row(arguments: ["find-certificate", "-a", "-e", "alice@example.org", "-Z"], says: "SHA-256"),
        Row(arguments: ["find-certificate", "-c", "alice", "-p"], says: "-----BEGIN CERTIFICATE-----"),
        Row(arguments: ["export", "-t", "certs", "-f", "pemseq"], says: "-----BEGIN CERTIFICATE-----"),
        Row(
            arguments: ["export", "-t", "certs", "-f", "x509", "-p", "-l", "Alice Example"],
            says: "BEGIN CERTIFICATE"),
        Row(arguments: ["export", "-t", "privKeys"], status: 1, says: "only certificates"),
        Row(arguments: ["delete-certificate", "-c", "bob"], says: "deleted"),
        Row(arguments: ["find-certificate", "-c", "bob"], status: 1, says: "no certificate matches"),
        // Generic passwords.
        Row(
            arguments: ["add-generic-password", "-s", "svc", "-a", "me", "-l", "mine", "-w", "one"],
            says: "added"),
        Row(
            arguments: ["add-generic-password", "-s", "svc", "-a", "me", "-w", "two"], status: 1,
            says: "already"),
        Row(
            arguments: ["add-generic-password", "-U", "-s", "svc", "-a", "me", "-w", "two"], says: "updated"),
        Row(arguments: ["find-generic-password", "-l", "mine", "-g"], says: "\"two\""),
        Row(arguments: ["find-generic-password", "-s", "svc", "-a", "me", "-w"], says: "two"),
        Row(arguments: ["delete-generic-password", "-l", "mine"], says: "deleted"),
        Row(arguments: ["find-generic-password", "-s", "svc"], status: 1, says: "no generic password"),
        // Internet passwords.
        Row(
            arguments: [
                "add-internet-password", "-s", "www.example.org", "-a", "me", "-r", "htps", "-P", "443", "-p",
                "/login", "-t", "dflt", "-d", "realm", "-l", "web", "-w", "secret",
            ], says: "added internet password \"web\""),
        Row(
            arguments: [
                "add-internet-password", "-s", "www.example.org", "-a", "me", "-r", "htps", "-P", "443", "-p",
                "/login", "-t", "dflt", "-d", "realm", "-w", "again",
            ],
            status: 1, says: "already stored"),
        Row(arguments: [
            "add-internet-password", "-s", "www.example.org", "-a", "me", "-r", "ftp ", "-w", "ftp",
        ]),
        Row(
            arguments: ["find-internet-password", "-s", "www.example.org", "-r", "htps", "-g"],
            says: "\"secret\""),
        Row(
            arguments: ["find-internet-password", "-l", "web", "-P", "443"], says: "/login"),
        Row(arguments: ["find-internet-password", "-s", "www.example.org", "-r", "ftp ", "-w"], says: "ftp"),
        Row(
            arguments: ["find-internet-password", "-s", "www.example.org", "-P", "80"], status: 1,
            says: "no internet"),
        Row(arguments: ["delete-internet-password", "-s", "www.example.org"], status: 1, says: "several"),
        Row(arguments: ["delete-internet-password", "-s", "www.example.org", "-r", "htps"], says: "deleted"),
        Row(arguments: ["find-internet-password", "-l", "web"], status: 1, says: "no internet password"),
        // Trust and verification, in a second keychain named as security(1) names one (-k PATH):
        // it has no user PIN, so its trust settings count without an unlock (a token with a
        // PIN proves them only unlocked: docs/ARCHITECTURE.md's trust seal). It holds the
        // intermediate and the anchor.
        Row(arguments: ["add-certificates", "-k", "@store", "@intermediate"], says: "added 1 certificate"),
        Row(
            arguments: ["add-trusted-cert", "-k", "@store", "-r", "trustRoot", "@root"],
            says: "trust settings"),
        Row(arguments: ["verify-cert", "-k", "@store", "-c", "@leaf"], says: "successful"),
        Row(
            arguments: [
                "verify-cert", "-k", "@store", "-c", "@leaf", "-p", "ssl", "-n", "www.example.test", "-L",
            ],
            says: "successful"),
        Row(
            arguments: [
                "verify-cert", "-k", "@store", "-c", "@leaf", "-p", "ssl", "-n", "other.example.test",
            ], status: 1),
        Row(arguments: ["verify-cert", "-k", "@store", "-c", "@client", "-p", "ssl", "-C", "-q"]),
        Row(arguments: ["verify-cert", "-k", "@store", "-c", "@leaf", "-N", "-q"], status: 1),
        Row(arguments: ["verify-cert", "-k", "@store", "-c", "@leaf", "-r", "@other-root", "-q"], status: 1),
        Row(arguments: ["dump-trust-settings", "-k", "@store"], says: "Trust Test Root CA"),
        Row(arguments: ["remove-trusted-cert", "-k", "@store", "@root"], says: "removed"),
        Row(arguments: ["verify-cert", "-k", "@store", "-c", "@leaf", "-q"], status: 1),
        // The keychain's own commands, under security(1)'s names.
        Row(arguments: ["show-keychain-info"], says: "user PIN"),
        Row(arguments: ["list-keychains"], says: "login"),
        Row(arguments: ["lock-keychain"]),
        Row(arguments: ["set-keychain-password", "-o", "@pin", "-p", "98765432"], says: "changed"),
        Row(arguments: ["set-keychain-password", "-o", "98765432", "-p", "@pin"], says: "changed"),
        Row(arguments: ["find-certificate", "-k", "login", "-c", "alice"], says: "Alice Example"),
        Row(arguments: ["find-certificate", "-k", "./missing.sqlite3"], status: 1, says: "no keychain at"),
    ]

    /// The row's arguments with the placeholders filled in.
    private static func resolved(_ arguments: [String], store: String) -> [String] {
        arguments.map { argument in
            guard argument.hasPrefix("@") else { return argument }
            let name = String(argument.dropFirst())
            if name == "pin" { return PIN.user }
            if name == "store" { return store }
            if let fixture = Fixture(rawValue: name) { return fixture.path }
            return trustFixture(name)
        }
    }

    @Test("security(1)'s invocations do what security does, in order on one keychain")
    func table() throws {
        let sandbox = try Sandbox()
        sandbox.environment["P11KEYCHAIN_SYSTEM_ANCHORS"] = sandbox.path + "/no-system-anchors.pem"
        try sandbox.initializeToken()
        for row in Self.rows {
            let outcome = try sandbox.run(
                Built.program, Self.resolved(row.arguments, store: sandbox.path + "/trust.sqlite3"))
            #expect(outcome.status == row.status, "\(row.testDescription): \(outcome.error)")
            let text = row.status == 0 ? outcome.output : outcome.error
            if !row.says.isEmpty { #expect(text.contains(row.says), "\(row.testDescription) says: \(text)") }
            if row.status != 0, !row.says.isEmpty { #expect(outcome.errorLines.count == 1) }
        }
    }

    @Test("unlock-keychain -p unlocks for the session as unlock --pin does")
    func unlockKeychain() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        sandbox.environment["P11KEYCHAIN_PIN"] = nil
        let wrong = try sandbox.p11keychain("unlock-keychain", "-p", "00000000")
        #expect(wrong.failed(with: 1))
        let help = try sandbox.p11keychain("unlock-keychain", "--help")
        #expect(help.output.hasPrefix("usage: p11keychain unlock"))
        #expect(help.output.contains("-p, --pin PIN"))
    }

    @Test("verify-cert -c leaf.pem finds the intermediate and the anchor in the keychain")
    func verifyFindsIntermediatesInTheKeychain() throws {
        let sandbox = try Sandbox()
        sandbox.environment["P11KEYCHAIN_SYSTEM_ANCHORS"] = sandbox.path + "/no-system-anchors.pem"
        let leaf = trustFixture("leaf")
        // Neither the intermediate nor the anchor: no chain.
        #expect(try sandbox.p11keychain("verify-cert", "-c", leaf, "-r", trustFixture("root")).status == 1)
        #expect(try sandbox.p11keychain("add-certificates", trustFixture("intermediate")).status == 0)
        // The intermediate from the keychain, the anchor from -r.
        let anchored = try sandbox.p11keychain("verify-cert", "-c", leaf, "-r", trustFixture("root"))
        #expect(anchored.status == 0, "\(anchored.output)\(anchored.error)")
        // Both from the keychain.
        #expect(try sandbox.p11keychain("add-trusted-cert", trustFixture("root")).status == 0)
        let outcome = try sandbox.p11keychain("verify-cert", "-c", leaf)
        #expect(outcome.status == 0, "\(outcome.output)\(outcome.error)")
        #expect(outcome.output == "...certificate verification successful.\n")
        // -N: the keychain is not searched, so the intermediate is missing again.
        let alone = try sandbox.p11keychain("verify-cert", "-c", leaf, "-N")
        #expect(alone.status == 1)
        #expect(alone.output.contains("Cert Verify Result: "))
    }
}
