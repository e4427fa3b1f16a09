import Foundation
import Testing

// register / unregister / module-path (user scope only: the tests never touch /etc), and the
// same store seen through the PKCS#11 module by p11tool.

@Suite("module registration")
struct ModuleRegistrationTests {
    var canonicalModule: String {
        URL(fileURLWithPath: Built.module).resolvingSymlinksInPath().path
    }

    @Test("module-path finds the module built next to the program")
    func modulePath() throws {
        let outcome = try Sandbox().p11keychain("module-path")
        #expect(outcome.status == 0, "\(outcome.error)")
        #expect(outcome.output == canonicalModule + "\n")
    }

    @Test("--module and P11KEYCHAIN_MODULE choose the module, and a wrong one is an error")
    func explicitModule() throws {
        let sandbox = try Sandbox()
        let link = sandbox.path + "/linked.so"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: Built.module)
        #expect(try sandbox.p11keychain("module-path", "--module", link).output == canonicalModule + "\n")
        let fromEnvironment = try sandbox.p11keychain(
            "module-path", environment: ["P11KEYCHAIN_MODULE": link])
        #expect(fromEnvironment.output == canonicalModule + "\n")
        let missing = try sandbox.p11keychain("module-path", "--module", sandbox.path + "/none.so")
        #expect(missing.failed(with: 1))
        #expect(missing.error.contains("no module library at"))
        let wrongEnvironment = try sandbox.p11keychain(
            "module-path", environment: ["P11KEYCHAIN_MODULE": sandbox.path + "/none.so"])
        #expect(wrongEnvironment.failed(with: 1), "an explicit setting is never silently ignored")
        #expect(wrongEnvironment.error.contains("P11KEYCHAIN_MODULE"))
        let notLibrary = try sandbox.p11keychain("module-path", "--module", Fixture.ca.path)
        #expect(notLibrary.failed(with: 1))
        #expect(notLibrary.error.contains("not a shared library"))
    }

    @Test("register --user writes the p11-kit module file under XDG_CONFIG_HOME; unregister removes it")
    func registerUser() throws {
        let sandbox = try Sandbox()
        let file = sandbox.path + "/config/pkcs11/modules/p11keychain.module"
        let registered = try sandbox.p11keychain("register", "--user")
        #expect(registered.status == 0, "\(registered.error)")
        #expect(registered.output.contains(file))
        let text = String(decoding: try sandbox.read(file), as: UTF8.self)
        let lines = text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(lines == ["module: \(canonicalModule)", "critical: no"])
        // Again: the file is rewritten, not duplicated or refused.
        #expect(try sandbox.p11keychain("register", "--user").status == 0)
        let removed = try sandbox.p11keychain("unregister", "--user")
        #expect(removed.status == 0)
        #expect(removed.output == "removed \(file)\n")
        #expect(!FileManager.default.fileExists(atPath: file))
        let again = try sandbox.p11keychain("unregister", "--user")
        #expect(again.status == 0)
        #expect(again.output.hasPrefix("not registered"))
    }

    @Test("without XDG_CONFIG_HOME the user scope is ~/.config/pkcs11/modules")
    func registerUserHome() throws {
        let sandbox = try Sandbox()
        sandbox.environment["XDG_CONFIG_HOME"] = nil
        let link = sandbox.path + "/elsewhere.so"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: Built.module)
        #expect(try sandbox.p11keychain("register", "--user", "--module", link).status == 0)
        let file = sandbox.path + "/home/.config/pkcs11/modules/p11keychain.module"
        #expect(
            String(decoding: try sandbox.read(file), as: UTF8.self).contains("module: \(canonicalModule)\n"))
        #expect(try sandbox.p11keychain("unregister", "--user").status == 0)
        #expect(!FileManager.default.fileExists(atPath: file))
    }

    @Test("register fails with one line when the module cannot be found or the directory written")
    func registerFailures() throws {
        let sandbox = try Sandbox()
        let missing = try sandbox.p11keychain("register", "--user", "--module", sandbox.path + "/none.so")
        #expect(missing.failed(with: 1))
        #expect(!FileManager.default.fileExists(atPath: sandbox.path + "/config/pkcs11"))
        // XDG_CONFIG_HOME is a file: the directory cannot be made (even by root).
        sandbox.environment["XDG_CONFIG_HOME"] = try sandbox.write("plain", Array("x".utf8))
        let blocked = try sandbox.p11keychain("register", "--user")
        #expect(blocked.failed(with: 1))
        #expect(blocked.error.contains("cannot create directory"))
    }
}

@Suite("the same store through the PKCS#11 module")
struct CrossFaceTests {
    func p11tool(_ sandbox: Sandbox, _ arguments: String...) throws -> Outcome {
        try sandbox.run("/usr/bin/p11tool", ["--provider", Built.module, "--batch"] + arguments)
    }

    @Test("a certificate added by p11keychain is listed by p11tool with its label")
    func addedIsListedByP11tool() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/p11tool") else { return }
        let sandbox = try Sandbox()
        #expect(
            try sandbox.p11keychain("add-certificates", "-l", "From the CLI", Fixture.alice.path).status == 0)
        let listing = try p11tool(sandbox, "--list-all-certs", "pkcs11:token=login")
        #expect(listing.status == 0, "\(listing.error)")
        #expect(listing.output.contains("Label: From the CLI"))
        // Deleted by the CLI: gone for p11tool too.
        #expect(try sandbox.p11keychain("delete-certificate", "-l", "From the CLI").status == 0)
        #expect(
            !(try p11tool(sandbox, "--list-all-certs", "pkcs11:token=login").output.contains("From the CLI")))
    }

    @Test("a certificate written by p11tool is found, exported and counted by p11keychain")
    func writtenByP11toolIsFound() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/p11tool") else { return }
        let sandbox = try Sandbox()
        let written = try p11tool(
            sandbox, "--write", "--no-mark-private", "--load-certificate", Fixture.bob.path, "--label",
            "Written by p11tool", "pkcs11:token=login")
        #expect(written.status == 0, "\(written.error)")
        let found = try sandbox.p11keychain("find-certificate", "-l", "Written by p11tool")
        #expect(found.status == 0, "\(found.error)")
        #expect(found.output.contains("CN=Bob Example"))
        let exported = try sandbox.p11keychain("export", "-l", "Written by p11tool")
        let file = try sandbox.write("bob-exported.pem", exported.outputBytes)
        #expect(try opensslSHA1(sandbox, file) == opensslSHA1(sandbox, Fixture.bob.path))
        #expect(try sandbox.p11keychain("list-tokens").output.contains("login  read-write  1 "))
        // The CLI's duplicate rule is the module's: issuer and serial number.
        let again = try sandbox.p11keychain("add-certificates", Fixture.bob.path)
        #expect(again.output.hasSuffix("; 1 already present\n"))
    }
}

@Suite("the mechanism list")
struct MechanismListTests {
    @Test("list-mechanisms lists what the module reports to p11tool, in its order, with the same key sizes")
    func listMatchesTheModule() throws {
        let sandbox = try Sandbox()
        let listing = try sandbox.p11keychain("list-mechanisms")
        #expect(listing.status == 0, "\(listing.error)")
        let rows = listing.output.split(separator: "\n").dropFirst().map { $0.split(separator: " ") }
        let module = try sandbox.run(
            "/usr/bin/p11tool",
            ["--provider", Built.module, "--batch", "--list-mechanisms", "pkcs11:token=login"])
        #expect(module.status == 0, "\(module.error)")
        let reported = module.output.split(separator: "\n").map { $0.split(separator: " ") }
        #expect(rows.count == reported.count && rows.count > 50)
        for (row, line) in zip(rows, reported) {
            // "CKM_SHA256_HMAC  0x0251  …  1-4096  sign, verify" beside "[0x0251] CKM_… keysize range (1, 4096) …"
            #expect(row.count >= 4 && "[\(row[1])]" == String(line[0]), "\(row) vs \(line)")
            let sizes = line.firstIndex(of: "range").map {
                line[($0 + 1)...].prefix(2).joined(separator: " ")
            }
            if let sizes, row.count >= 4 {
                let bounds = row[3].split(separator: "-")
                #expect(sizes == "(\(bounds.first ?? ""), \(bounds.last ?? ""))", "\(row) vs \(line)")
            }
        }
    }
}
