import Foundation
import Testing

// The command line itself: help, version, and usage errors (exit status 2, one line on
// standard error that points at the command's help).

let commandNames = [
    "add-certificates", "find-certificate", "delete-certificate", "export", "dump-keychain",
    "list-tokens", "register", "unregister", "module-path", "import", "find-identity", "generate-key",
    "find-key", "delete-key", "add-generic-password", "find-generic-password", "delete-generic-password",
    "init", "set-pin", "token-info", "unlock", "lock", "status",
]

@Suite("command line")
struct CommandLineTests {
    @Test("--version prints the version and succeeds")
    func version() throws {
        let sandbox = try Sandbox()
        let outcome = try sandbox.p11keychain("--version")
        #expect(outcome.status == 0)
        #expect(outcome.output.hasPrefix("p11keychain "))
        #expect(outcome.error.isEmpty)
    }

    @Test(
        "help, --help and -h describe every command and succeed", arguments: [["help"], ["--help"], ["-h"]])
    func overview(arguments: [String]) throws {
        let sandbox = try Sandbox()
        let outcome = try sandbox.run(Built.program, arguments)
        #expect(outcome.status == 0)
        #expect(outcome.output.hasPrefix("usage: p11keychain"))
        for name in commandNames { #expect(outcome.output.contains("  \(name) "), "\(name) in help") }
        #expect(outcome.output.contains("--token NAME") && outcome.output.contains("--store PATH"))
        #expect(outcome.output.contains("exit status"))
        #expect(outcome.error.isEmpty)
    }

    @Test("each command's --help, -h and `help COMMAND` print its usage", arguments: commandNames)
    func commandHelp(name: String) throws {
        let sandbox = try Sandbox()
        for arguments in [
            [name, "--help"], [name, "-h"], ["help", name], ["--store", "/nonexistent", name, "--help"],
        ] {
            let outcome = try sandbox.run(Built.program, arguments)
            #expect(outcome.status == 0, "\(arguments)")
            #expect(outcome.output.hasPrefix("usage: p11keychain \(name)"), "\(arguments)")
            #expect(outcome.output.contains("--token NAME"), "global options in \(arguments)")
            #expect(outcome.error.isEmpty, "\(arguments)")
        }
        // Help touches no store.
        #expect(!FileManager.default.fileExists(atPath: sandbox.defaultStore))
    }

    @Test("no command is a usage error")
    func noCommand() throws {
        let outcome = try Sandbox().p11keychain()
        #expect(outcome.failed(with: 2))
        #expect(outcome.error.contains("p11keychain help"))
    }

    @Test(
        "an unknown command is a usage error",
        arguments: [["frobnicate"], ["help", "frobnicate"], ["Find-Certificate"]])
    func unknownCommand(arguments: [String]) throws {
        let outcome = try Sandbox().run(Built.program, arguments)
        #expect(outcome.failed(with: 2))
        #expect(outcome.error.contains("unknown command"))
    }

    @Test("an unknown option is a usage error that points at the command's help", arguments: commandNames)
    func unknownOption(name: String) throws {
        let sandbox = try Sandbox()
        for bad in ["--bogus", "-y", "--bogus=1"] {
            let outcome = try sandbox.p11keychain(name, bad)
            #expect(outcome.failed(with: 2), "\(name) \(bad): \(outcome.error)")
            #expect(outcome.error.contains("unknown option"), "\(name) \(bad)")
            #expect(outcome.error.contains("p11keychain \(name) --help"), "\(name) \(bad)")
        }
        #expect(
            !FileManager.default.fileExists(atPath: sandbox.defaultStore), "a usage error touches no store")
    }

    @Test(
        "an option without its value is a usage error",
        arguments: [
            ["find-certificate", "-l"], ["find-certificate", "-c"], ["find-certificate", "-e"],
            ["add-certificates", "-l"], ["delete-certificate", "-Z"], ["delete-certificate", "-l"],
            ["export", "-f"], ["export", "-o"], ["register", "--module"], ["module-path", "--module"],
            ["find-certificate", "--token"], ["--store"], ["list-tokens", "--store"],
        ])
    func missingValue(arguments: [String]) throws {
        let outcome = try Sandbox().run(Built.program, arguments)
        #expect(outcome.failed(with: 2), "\(arguments): \(outcome.error)")
        #expect(outcome.error.contains("needs a value"), "\(arguments)")
    }

    @Test(
        "wrong arguments are usage errors",
        arguments: [
            (["add-certificates"], "missing FILE"),
            (["find-certificate", "stray"], "takes no arguments"),
            (["dump-keychain", "stray"], "takes no arguments"),
            (["find-certificate", "-l", "a", "-l", "b"], "given twice"),
            (["--store", "/tmp/a", "find-certificate", "--store", "/tmp/b"], "given twice"),
            (["--token", "login", "--store", "/tmp/a", "list-tokens"], "give one"),
            (["delete-certificate"], "-l LABEL or -Z HASH"),
            (["delete-certificate", "-Z", "xyz"], "SHA-1"),
            (["delete-certificate", "-Z", "0011"], "SHA-1"),
            (["export", "-f", "p12"], "pem or der"),
            (["register", "--user", "--system"], "exclude each other"),
            (["unregister", "--user", "--system"], "exclude each other"),
            (["find-certificate", "-a=1"], "unknown option -="),
            (["find-certificate", "--all"], "unknown option --all"),
            (["module-path", "--module"], "needs a value"),
        ])
    func wrongArguments(arguments: [String], message: String) throws {
        let outcome = try Sandbox().run(Built.program, arguments)
        #expect(outcome.failed(with: 2), "\(arguments): \(outcome.error)")
        #expect(outcome.error.contains(message), "\(arguments): \(outcome.error)")
    }

    @Test(
        "options are read in every getopt form: clustered, attached, --long=value, after operands, after --")
    func optionForms() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.p11keychain("add-certificates", Fixture.alice.path, "-lAlice's").status == 0)
        #expect(try sandbox.p11keychain("find-certificate", "-aZ", "-lAlice's").output.contains("SHA-256:"))
        #expect(try sandbox.p11keychain("find-certificate", "-apZ").output.contains("SHA-1 hash:"))
        #expect(try sandbox.p11keychain("--store=\(sandbox.defaultStore)", "find-certificate").status == 0)
        #expect(try sandbox.p11keychain("find-certificate", "--token=login", "-l", "Alice's").status == 0)
        // After --, "-x.pem" is a file name, not an option.
        let dashed = try sandbox.p11keychain("add-certificates", "--", "-x.pem")
        #expect(dashed.failed(with: 1))
        #expect(dashed.error.contains("cannot read -x.pem"))
    }

    @Test("global options work before and after the command name")
    func globalOptionPlacement() throws {
        let sandbox = try Sandbox()
        let store = sandbox.path + "/elsewhere.sqlite3"
        #expect(try sandbox.p11keychain("--store", store, "add-certificates", Fixture.bob.path).status == 0)
        #expect(
            try sandbox.p11keychain("find-certificate", "--store", store, "-l", "Bob Example").status == 0)
        #expect(
            try sandbox.p11keychain("find-certificate", "-l", "Bob Example").failed(with: 1),
            "not in the default store")
    }
}
