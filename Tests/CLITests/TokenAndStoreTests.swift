import Foundation
import Testing

// Choosing the keychain (--token, --store), list-tokens, and stores that cannot be used.

@Suite("tokens and stores")
struct TokenAndStoreTests {
    /// A configuration with a second token, `Work`, in the sandbox.
    func configureWorkToken(_ sandbox: Sandbox, readOnly: Bool = false) throws -> String {
        let store = sandbox.path + "/work/work.sqlite3"
        let text = """
            # a second token for the tests
            [token Work]
            path = \(store)
            read-only = \(readOnly ? "yes" : "no")

            """
        let file = try sandbox.write("p11keychain.conf", Array(text.utf8))
        sandbox.environment["P11KEYCHAIN_CONF"] = file
        return store
    }

    @Test("list-tokens shows the default token, its access, object count and store")
    func listDefault() throws {
        let sandbox = try Sandbox()
        let before = try sandbox.p11keychain("list-tokens")
        #expect(before.status == 0)
        #expect(before.output.hasPrefix("NAME "))
        #expect(before.output.contains("login  read-write  -"))
        #expect(before.output.contains("\(sandbox.defaultStore) (not created yet)"))
        #expect(!FileManager.default.fileExists(atPath: sandbox.defaultStore), "listing creates no store")
        #expect(try sandbox.p11keychain("add-certificates", Fixture.ca.path, Fixture.bob.path).status == 0)
        let after = try sandbox.p11keychain("list-tokens")
        #expect(after.output.contains("login  read-write  2 "))
        #expect(after.output.hasSuffix("\(sandbox.defaultStore)\n"))
    }

    @Test("--token NAME uses a token of the configuration file, and list-tokens lists it")
    func secondToken() throws {
        let sandbox = try Sandbox()
        let store = try configureWorkToken(sandbox)
        let added = try sandbox.p11keychain("--token", "Work", "add-certificates", Fixture.alice.path)
        #expect(added.output == "added 1 certificate to \"Work\"\n")
        #expect(FileManager.default.fileExists(atPath: store))
        #expect(
            try sandbox.p11keychain("find-certificate", "--token", "Work", "-l", "Alice Example").status == 0)
        #expect(
            try sandbox.p11keychain("find-certificate", "-l", "Alice Example").failed(with: 1), "not in login"
        )
        let listed = try sandbox.p11keychain("list-tokens")
        let lines = listed.output.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines[1].hasPrefix("login "))
        #expect(lines[2].hasPrefix("Work ") && lines[2].contains(" 1 ") && lines[2].hasSuffix(store))
        let one = try sandbox.p11keychain("list-tokens", "--token", "Work")
        #expect(one.output.split(separator: "\n").count == 2)
        let unknown = try sandbox.p11keychain("--token", "Nope", "find-certificate")
        #expect(unknown.failed(with: 1))
        #expect(unknown.error.contains("no token named 'Nope'") && unknown.error.contains("Work"))
        #expect(try sandbox.p11keychain("list-tokens", "--token", "Nope").failed(with: 1))
    }

    @Test("a read-only token can be read but adding to it fails with one line")
    func readOnlyToken() throws {
        let sandbox = try Sandbox()
        let store = sandbox.path + "/work/work.sqlite3"
        #expect(try sandbox.p11keychain("--store", store, "add-certificates", Fixture.bob.path).status == 0)
        _ = try configureWorkToken(sandbox, readOnly: true)
        #expect(
            try sandbox.p11keychain("--token", "Work", "find-certificate", "-l", "Bob Example").status == 0)
        let refused = try sandbox.p11keychain("--token", "Work", "add-certificates", Fixture.alice.path)
        #expect(refused.failed(with: 1), "\(refused.error)")
        #expect(refused.error.contains("read-only"))
        let deleted = try sandbox.p11keychain("--token", "Work", "delete-certificate", "-l", "Bob Example")
        #expect(deleted.failed(with: 1), "\(deleted.error)")
        #expect(
            try sandbox.p11keychain("--token", "Work", "find-certificate", "-l", "Bob Example").status == 0)
        #expect(try sandbox.p11keychain("list-tokens").output.contains("Work   read-only   1 "))
    }

    @Test("--store PATH reads an existing file, creates one only to add, and reports a missing one")
    func storePath() throws {
        let sandbox = try Sandbox()
        let store = sandbox.path + "/stores/mine.sqlite3"
        let missing = try sandbox.p11keychain("--store", store, "find-certificate")
        #expect(missing.failed(with: 1))
        #expect(missing.error.contains("no keychain at \(store)"))
        #expect(!FileManager.default.fileExists(atPath: store))
        #expect(
            try sandbox.p11keychain("--store", store, "add-certificates", Fixture.ca.path).output
                == "added 1 certificate to \"mine\"\n")
        #expect(
            try sandbox.p11keychain("--store", store, "find-certificate").output.contains(
                "p11keychain Test CA"))
        let listed = try sandbox.p11keychain("--store", store, "list-tokens")
        #expect(listed.output.contains("mine  read-write  1 "))
        #expect(
            !FileManager.default.fileExists(atPath: sandbox.defaultStore), "the default store is untouched")
        #expect(
            try sandbox.p11keychain("--store", sandbox.path + "/none.sqlite3", "list-tokens").failed(with: 1))
    }

    @Test(
        "a store that cannot be opened or created is one line and exit status 1",
        arguments: ["directory under a file", "directory as store", "not a store"])
    func unusableStore(kind: String) throws {
        let sandbox = try Sandbox()
        var arguments = ["find-certificate"]
        switch kind {
        case "directory under a file":
            let file = try sandbox.write("plain", Array("x".utf8))
            sandbox.environment["P11KEYCHAIN_DIR"] = file + "/sub"
        case "directory as store":
            arguments = ["--store", sandbox.path, "find-certificate"]
        default:
            let file = try sandbox.write(
                "text.sqlite3", Array(String(repeating: "not a database\n", count: 100).utf8))
            arguments = ["--store", file, "find-certificate"]
        }
        for command in [
            arguments, arguments.dropLast() + ["add-certificates", Fixture.ca.path],
            arguments.dropLast() + ["dump-keychain"],
        ] {
            let outcome = try sandbox.run(Built.program, Array(command))
            #expect(outcome.failed(with: 1), "\(kind) \(command): \(outcome.error)")
            #expect(outcome.error.contains("cannot open the keychain"), "\(kind): \(outcome.error)")
        }
    }

    @Test("an invalid configuration file is reported with its file and line")
    func invalidConfiguration() throws {
        let sandbox = try Sandbox()
        let file = try sandbox.write("bad.conf", Array("debug = yes\nfrobnicate = 1\n".utf8))
        sandbox.environment["P11KEYCHAIN_CONF"] = file
        for command in [["find-certificate"], ["list-tokens"], ["add-certificates", Fixture.ca.path]] {
            let outcome = try sandbox.run(Built.program, command)
            #expect(outcome.failed(with: 1), "\(command): \(outcome.error)")
            #expect(outcome.error.contains("\(file):2"), "\(command): \(outcome.error)")
            #expect(outcome.error.contains("P11KEYCHAIN_CONF=/dev/null"))
        }
    }
}
