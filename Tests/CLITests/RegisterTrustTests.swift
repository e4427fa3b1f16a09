import Foundation
import Testing

// register --trust: the keychain as a p11-kit trust source (trust-policy: yes), written as
// p11keychain-trust.module in place of p11keychain.module (p11-kit keeps one registration per
// library and drops the trust policy when both exist). That p11-kit's `trust list` then shows
// the keychain's anchors is proved by Tests/Integration/test_trust_policy.sh, which registers
// through scripts/register-module.sh --trust, a wrapper of this command.

@Suite("module registration as a trust source")
struct RegisterTrustTests {
    @Test("register --trust writes trust-policy: yes in p11keychain-trust.module, and only that file")
    func registerTrust() throws {
        let sandbox = try Sandbox()
        let directory = sandbox.path + "/config/pkcs11/modules"
        let plain = directory + "/p11keychain.module"
        let trusted = directory + "/p11keychain-trust.module"
        let module = URL(fileURLWithPath: Built.module).resolvingSymlinksInPath().path

        #expect(try sandbox.p11keychain("register", "--user").status == 0)
        let registered = try sandbox.p11keychain("register", "--user", "--trust")
        #expect(registered.status == 0, "\(registered.error)")
        #expect(registered.output.contains(trusted))
        let lines = String(decoding: try sandbox.read(trusted), as: UTF8.self)
            .split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(lines == ["module: \(module)", "critical: no", "trust-policy: yes"])
        #expect(
            !FileManager.default.fileExists(atPath: plain), "the plain registration would hide the policy")

        // Registering without --trust turns it back into the plain registration.
        #expect(try sandbox.p11keychain("register", "--user").status == 0)
        #expect(FileManager.default.fileExists(atPath: plain))
        #expect(!FileManager.default.fileExists(atPath: trusted))

        #expect(try sandbox.p11keychain("register", "--user", "--trust").status == 0)
        let removed = try sandbox.p11keychain("unregister", "--user")
        #expect(removed.status == 0)
        #expect(removed.output == "removed \(trusted)\n")
        #expect(!FileManager.default.fileExists(atPath: trusted))
    }
}
