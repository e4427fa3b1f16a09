import Foundation
import Testing

// verify-cert, add-trusted-cert, remove-trusted-cert and dump-trust-settings: their output and
// exit status, and verify-cert's verdict beside openssl verify's on the same files.

/// A file of Tests/Fixtures/trust (see its README).
private func trust(_ name: String) -> String {
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures").appendingPathComponent("trust").appendingPathComponent(
            name + ".pem"
        ).path
}

/// A sandbox whose "system" bundle is `bundle` (a fixture or nothing), so that no test
/// depends on the machine's CA certificates.
private func sandbox(systemAnchors bundle: String? = nil) throws -> Sandbox {
    let sandbox = try Sandbox()
    sandbox.environment["P11KEYCHAIN_SYSTEM_ANCHORS"] =
        bundle.map(trust) ?? sandbox.path + "/no-system-anchors.pem"
    return sandbox
}

@Suite("trust commands")
struct TrustCommandTests {
    /// One verify-cert run and the openssl verify run that must agree with it.
    struct Agreement: Sendable, CustomTestStringConvertible {
        var name: String
        var leaf: String
        var untrusted = ["intermediate"]
        var options: [String] = []
        var opensslOptions: [String] = []
        var trusted: Bool
        var testDescription: String { name }
    }

    static let agreements = [
        Agreement(name: "a good chain", leaf: "leaf", trusted: true),
        Agreement(
            name: "ssl with the right host", leaf: "leaf", options: ["-p", "ssl", "-n", "www.example.test"],
            opensslOptions: ["-purpose", "sslserver", "-verify_hostname", "www.example.test"], trusted: true),
        Agreement(
            name: "ssl with a wrong host", leaf: "leaf", options: ["-p", "ssl", "-n", "other.example.test"],
            opensslOptions: ["-purpose", "sslserver", "-verify_hostname", "other.example.test"],
            trusted: false),
        Agreement(name: "an expired leaf", leaf: "expired", trusted: false),
        Agreement(
            name: "an expired leaf at a date it was valid", leaf: "expired",
            options: ["-d", "2020-06-01-12:00:00"],
            opensslOptions: ["-attime", "1591012800"], trusted: true),
        Agreement(
            name: "a client certificate for a server", leaf: "client", options: ["-p", "ssl"],
            opensslOptions: ["-purpose", "sslserver"], trusted: false),
        Agreement(name: "an unknown critical extension", leaf: "critical", trusted: false),
        Agreement(name: "a leaf under another root", leaf: "other-leaf", untrusted: [], trusted: false),
    ]

    @Test("verify-cert with -r agrees with openssl verify -CAfile", arguments: agreements)
    func agreesWithOpenSSL(_ agreement: Agreement) throws {
        let sandbox = try sandbox()
        var arguments = ["verify-cert", "-c", trust(agreement.leaf)]
        for helper in agreement.untrusted { arguments += ["-c", trust(helper)] }
        arguments += ["-r", trust("root")] + agreement.options
        let ours = try sandbox.run(Built.program, arguments)
        var openssl = ["verify", "-partial_chain", "-CAfile", trust("root")] + agreement.opensslOptions
        if !agreement.untrusted.isEmpty {
            openssl += ["-untrusted", agreement.untrusted.map(trust).joined()]
        }
        let reference = try sandbox.run("/usr/bin/openssl", openssl + [trust(agreement.leaf)])
        #expect(
            (ours.status == 0) == (reference.status == 0), "openssl: \(reference.output)\(reference.error)")
        #expect((ours.status == 0) == agreement.trusted)
        if agreement.trusted {
            #expect(ours.output == "...certificate verification successful.\n")
        } else {
            #expect(ours.status == 1)
            #expect(ours.output.hasPrefix("Cert Verify Result: "))
            #expect(ours.error == "p11keychain: verify-cert: certificate verification failed\n")
        }
    }

    @Test("verify-cert trusts a root marked trusted in the keychain, and stops when the mark is removed")
    func keychainAnchor() throws {
        let sandbox = try sandbox()
        let chain = ["verify-cert", "-c", trust("leaf"), "-c", trust("intermediate"), "-q"]
        #expect(try sandbox.run(Built.program, chain).status == 1, "no anchor yet")
        let added = try sandbox.p11keychain("add-trusted-cert", trust("root"))
        #expect(added.status == 0, "\(added.error)")
        #expect(added.output == "trust settings of \"Trust Test Root CA\": any=trustedAnchor\n")
        let trusted = try sandbox.run(Built.program, chain)
        #expect(trusted.status == 0)
        #expect(trusted.output.isEmpty, "-q prints nothing")
        let removed = try sandbox.p11keychain("remove-trusted-cert", trust("root"))
        #expect(removed.status == 0)
        #expect(removed.output == "removed the trust settings of \"Trust Test Root CA\"\n")
        #expect(try sandbox.run(Built.program, chain).status == 1)
        // The certificate stays; removing again finds no settings.
        #expect(try sandbox.p11keychain("find-certificate", "-c", "Trust Test Root").status == 0)
        let again = try sandbox.p11keychain("remove-trusted-cert", trust("root"))
        #expect(again.failed(with: 1))
        #expect(again.error.contains("no trust settings"))
    }

    @Test("verify-cert uses the system bundle, and a keychain deny beats it")
    func systemAnchorsAndDeny() throws {
        let sandbox = try sandbox(systemAnchors: "root")
        let chain = ["verify-cert", "-c", trust("leaf"), "-c", trust("intermediate")]
        #expect(try sandbox.run(Built.program, chain).status == 0)
        let denied = try sandbox.p11keychain("add-trusted-cert", "-r", "deny", trust("root"))
        #expect(denied.status == 0)
        let refused = try sandbox.run(Built.program, chain)
        #expect(refused.status == 1)
        #expect(refused.output.contains("distrusted"))
        // Deny also wins over an anchor given with -k.
        #expect(try sandbox.run(Built.program, chain + ["-r", trust("root")]).status == 1)
    }

    @Test("a setting for one policy counts only for that policy")
    func perPolicy() throws {
        let sandbox = try sandbox()
        #expect(try sandbox.p11keychain("add-trusted-cert", "-p", "smime", trust("root")).status == 0)
        let chain = ["verify-cert", "-c", trust("leaf"), "-c", trust("intermediate"), "-q"]
        #expect(try sandbox.run(Built.program, chain + ["-p", "ssl"]).status == 1)
        #expect(try sandbox.run(Built.program, chain + ["-p", "basic"]).status == 1)
        #expect(try sandbox.p11keychain("add-trusted-cert", "-p", "ssl", trust("root")).status == 0)
        #expect(try sandbox.run(Built.program, chain + ["-p", "ssl", "-n", "www.example.test"]).status == 0)
    }

    @Test("trustAsRoot makes an intermediate an anchor; trustRoot refuses it, and adds nothing")
    func trustAsRoot() throws {
        let sandbox = try sandbox()
        let refused = try sandbox.p11keychain("add-trusted-cert", trust("intermediate"))
        #expect(refused.failed(with: 1))
        #expect(refused.error.contains("trustAsRoot"))
        #expect(try sandbox.p11keychain("find-certificate", "-a").status == 1, "nothing was added")
        #expect(
            try sandbox.p11keychain("add-trusted-cert", "-r", "trustAsRoot", trust("intermediate")).status
                == 0)
        #expect(try sandbox.run(Built.program, ["verify-cert", "-c", trust("leaf"), "-q"]).status == 0)
        #expect(
            try sandbox.p11keychain("add-trusted-cert", "-r", "trustAsRoot", trust("root")).failed(with: 1))
    }

    @Test("dump-trust-settings lists each certificate's settings, and fails when there are none")
    func dump() throws {
        let sandbox = try sandbox()
        let none = try sandbox.p11keychain("dump-trust-settings")
        #expect(none.failed(with: 1))
        #expect(none.error.contains("No Trust Settings were found."))
        #expect(try sandbox.p11keychain("add-trusted-cert", "-p", "ssl", trust("root")).status == 0)
        #expect(try sandbox.p11keychain("add-trusted-cert", "-r", "deny", trust("other-root")).status == 0)
        let dumped = try sandbox.p11keychain("dump-trust-settings")
        #expect(dumped.status == 0)
        let text = dumped.output
        #expect(text.hasPrefix("Number of trusted certs = 2\n"))
        #expect(
            text.contains("Cert 0: Trust Test Root CA\n") || text.contains("Cert 1: Trust Test Root CA\n"))
        #expect(text.contains("      Policy                : SSL server\n"))
        #expect(text.contains("      Policy                : SSL client\n"))
        #expect(text.contains("      Result Type           : kSecTrustSettingsResultTrustRoot\n"))
        #expect(text.contains("      Result Type           : kSecTrustSettingsResultDeny\n"))
    }

    @Test("unspecified removes the setting of the given policies only")
    func unspecified() throws {
        let sandbox = try sandbox()
        #expect(
            try sandbox.p11keychain("add-trusted-cert", "-p", "ssl", "-p", "smime", trust("root")).status == 0
        )
        let cleared = try sandbox.p11keychain(
            "add-trusted-cert", "-r", "unspecified", "-p", "ssl", trust("root"))
        #expect(cleared.output == "trust settings of \"Trust Test Root CA\": emailProtection=trustedAnchor\n")
    }

    @Test("bad command lines are usage errors (exit status 2)")
    func usage() throws {
        let sandbox = try sandbox()
        #expect(try sandbox.p11keychain("verify-cert").failed(with: 2))
        #expect(try sandbox.p11keychain("verify-cert", "-c", trust("leaf"), "-p", "nonsense").failed(with: 2))
        #expect(
            try sandbox.p11keychain("verify-cert", "-c", trust("leaf"), "-d", "yesterday").failed(with: 2))
        for date in ["2020-02-30", "2020-13-01", "2020-06-01T25:00:00Z", "2020-06-01-12:00", "2020-06-01x"] {
            #expect(
                try sandbox.p11keychain("verify-cert", "-c", trust("leaf"), "-d", date).failed(with: 2),
                "-d \(date)")
        }
        #expect(try sandbox.p11keychain("verify-cert", "-c", trust("leaf"), "-n", "x.test").failed(with: 2))
        #expect(try sandbox.p11keychain("add-trusted-cert", "-r", "always", trust("root")).failed(with: 2))
        #expect(try sandbox.p11keychain("add-trusted-cert", "-p", "nonsense", trust("root")).failed(with: 2))
        #expect(try sandbox.p11keychain("add-trusted-cert").failed(with: 2))
        #expect(try sandbox.p11keychain("remove-trusted-cert").failed(with: 2))
        #expect(try sandbox.p11keychain("dump-trust-settings", "extra").failed(with: 2))
    }

    @Test("a file that is not a certificate is a failure, not a crash")
    func badFiles() throws {
        let sandbox = try sandbox()
        let junk = try sandbox.write("junk.pem", Array("not a certificate".utf8))
        #expect(try sandbox.p11keychain("verify-cert", "-c", junk).failed(with: 1))
        #expect(try sandbox.p11keychain("verify-cert", "-c", trust("leaf"), "-r", junk).failed(with: 1))
        #expect(try sandbox.p11keychain("add-trusted-cert", junk).failed(with: 1))
        #expect(try sandbox.p11keychain("remove-trusted-cert", sandbox.path + "/missing.pem").failed(with: 1))
        #expect(
            try sandbox.p11keychain("remove-trusted-cert", trust("root")).failed(with: 1),
            "not in the keychain")
    }

    @Test("help lists the trust commands")
    func help() throws {
        let sandbox = try sandbox()
        let help = try sandbox.p11keychain("help").output
        for command in ["verify-cert", "add-trusted-cert", "remove-trusted-cert", "dump-trust-settings"] {
            #expect(help.contains("  \(command) "))
        }
        #expect(
            try sandbox.p11keychain("verify-cert", "--help").output.hasPrefix(
                "usage: p11keychain verify-cert"))
    }
}
