import Foundation
import Testing

// The one option parser (docs/cli.md "One option parser, not getopt_long"): it accepts the
// forms getopt_long accepts, and refuses what getopt_long would guess: a shortened long option.

@Suite("option parser")
struct OptionParserTests {
    @Test("getopt_long's forms work: -lVALUE, --long=VALUE, options after operands, clusters, --")
    func getoptForms() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.p11keychain("add-certificates", "-lWeb", Fixture.alice.path).status == 0)
        #expect(try sandbox.p11keychain("add-certificates", Fixture.bob.path, "-l", "Mail").status == 0)
        let web = try sandbox.p11keychain("find-certificate", "-ap", "-l", "Web")
        #expect(web.status == 0)
        #expect(web.output.hasPrefix("-----BEGIN CERTIFICATE-----"), "clustered -a -p")
        let mail = try sandbox.p11keychain("find-certificate", "-l", "Mail", "--token=login", "--")
        #expect(mail.status == 0, "\(mail.error)")
        #expect(mail.output.contains("Mail"))
        let missing = try sandbox.p11keychain("find-certificate", "-l", "Mail", "--token=nosuch")
        #expect(missing.status != 0, "--token=VALUE is read as the value")
    }

    @Test(
        "a shortened long option is a usage error, never a guess",
        arguments: [
            ["generate-key", "--allow", "--type", "ec", "-l", "k"],
            ["find-generic-password", "-s", "svc", "--pin-f", "/dev/null"],
            ["find-certificate", "--lab", "Web"],
        ])
    func shortenedLongOption(arguments: [String]) throws {
        let sandbox = try Sandbox()
        let outcome = try sandbox.run(Built.program, arguments)
        #expect(outcome.status == 2, "\(arguments)")
        #expect(outcome.error.contains("unknown option --"), "\(arguments): \(outcome.error)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.defaultStore), "\(arguments) made a store")
    }
}
