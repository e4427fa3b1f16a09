import Foundation
import Testing

// dump-keychain lists every class of item (never a secret), unlocking with the usual PIN
// options; without a PIN at hand it lists the public items and says what it left out.

@Suite("dump-keychain")
struct DumpKeychainTests {
    private static func populated() throws -> Sandbox {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        for arguments in [
            ["add-certificates", Fixture.alice.path],
            ["generate-key", "--type", "ec", "-l", "pair"],
            ["generate-key", "--type", "aes:256", "-l", "sealed"],
            ["add-generic-password", "-s", "svc", "-a", "me", "-w", "generic-secret"],
            ["add-internet-password", "-s", "www.example.org", "-a", "me", "-w", "internet-secret"],
        ] {
            let outcome = try sandbox.run(Built.program, arguments)
            guard outcome.status == 0 else {
                throw TestFailure(description: "\(arguments): \(outcome.error)")
            }
        }
        sandbox.environment["P11KEYCHAIN_PIN"] = nil
        return sandbox
    }

    @Test("with the PIN it lists certificates, key pairs, secret keys and both kinds of password")
    func everyClass() throws {
        let sandbox = try Self.populated()
        let pinFile = try sandbox.write("pin", Array("\(PIN.user)\n".utf8))
        let outcome = try sandbox.p11keychain("dump-keychain", "--pin-file", pinFile)
        #expect(outcome.status == 0, "\(outcome.error)")
        let text = outcome.output
        #expect(
            text.contains(
                ": 1 certificate, 1 private key, 1 public key, 1 secret key, 1 generic password, "
                    + "1 internet password\n"), "\(text)")
        for kind in [
            "certificate (X.509 v3)", "private key", "public key", "secret key", "generic password",
            "internet password",
        ] {
            #expect(text.contains("    class:") && text.contains(kind), "\(kind)")
        }
        #expect(text.components(separatedBy: "\nitem ").count - 1 == 6)
        #expect(!text.contains("generic-secret") && !text.contains("internet-secret"))
    }

    @Test("without a PIN at hand it lists the public items and says that private ones are left out")
    func publicOnly() throws {
        let sandbox = try Self.populated()
        let outcome = try sandbox.p11keychain("dump-keychain")
        #expect(outcome.status == 0, "\(outcome.error)")
        #expect(outcome.output.contains(": 1 certificate, 1 public key\n"), "\(outcome.output)")
        #expect(outcome.output.contains("private items (secret keys, passwords, private keys) are not shown"))
    }

    @Test("a wrong PIN is a failure, not a silent partial list")
    func wrongPIN() throws {
        let sandbox = try Self.populated()
        #expect(try sandbox.p11keychain("dump-keychain", "--pin", "00000000").failed(with: 1))
    }
}
