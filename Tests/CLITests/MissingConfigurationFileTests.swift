import Foundation
import Testing

// A P11KEYCHAIN_CONF that names no file: a usage error, said plainly, before anything is done.

@Suite("a P11KEYCHAIN_CONF that names no file")
struct MissingConfigurationFileTests {
    @Test(
        "every command says the file does not exist and exits 2, and no default store is made",
        arguments: [
            ["list-tokens"], ["find-certificate", "-a"], ["add-certificates", Fixture.ca.path],
            ["status"],
        ])
    func missingFileIsAUsageError(_ command: [String]) throws {
        let sandbox = try Sandbox()
        let missing = sandbox.path + "/p11keychain.conf.typo"
        sandbox.environment["P11KEYCHAIN_CONF"] = missing
        let outcome = try sandbox.run(Built.program, command)
        #expect(outcome.failed(with: 2), "\(command): \(outcome.error)")
        #expect(
            outcome.error
                == "p11keychain: \(command[0]): invalid configuration: \(missing): does not exist "
                + "(P11KEYCHAIN_CONF names it; /dev/null means no configuration file)\n",
            "\(command)")
        #expect(outcome.output.isEmpty, "\(command): \(outcome.output)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.defaultStore), "\(command)")
    }

    @Test("with the file in place, the same command runs")
    func existingFileRuns() throws {
        let sandbox = try Sandbox()
        let file = try sandbox.write("p11keychain.conf", Array("debug = no\n".utf8))
        sandbox.environment["P11KEYCHAIN_CONF"] = file
        let outcome = try sandbox.p11keychain("list-tokens")
        #expect(outcome.status == 0, "\(outcome.error)")
    }
}
