import Foundation
import Testing

// generate-key, find-key, delete-key: keys the CLI makes are used through the PKCS#11 module
// by pkcs11-tool, and keys pkcs11-tool makes are seen by the CLI.

@Suite("key commands")
struct KeyCommandTests {
    @Test(
        "generate-key prints the ID and URI of a key that pkcs11-tool signs with and openssl verifies",
        arguments: KeyKind.allCases)
    func generateAndSign(kind: KeyKind) throws {
        guard Sandbox.hasPKCS11Tool else { return }
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let generated = try sandbox.run(
            Built.program, ["generate-key", "-l", "Signing \(kind)"] + kind.generateArguments)
        #expect(generated.status == 0, "\(generated.error)")
        #expect(generated.output.contains("uri: pkcs11:token=login;object=Signing%20\(kind);type=private\n"))
        let id = try #require(generated.printedKeyID)
        #expect(id.count == 40, "the SHA-1 of the public key: \(id)")
        let data = try sandbox.write("data", Array("signed through the module\n".utf8))
        let signature = sandbox.path + "/signature"
        var sign = [
            "--login", "--pin", PIN.user, "--sign", "--id", id, "--mechanism", kind.mechanism, "-i", data,
            "-o",
            signature,
        ]
        if kind == .ec { sign += ["--signature-format", "openssl"] }
        let signed = try sandbox.run("/usr/bin/pkcs11-tool", ["--module", Built.module] + sign)
        #expect(signed.status == 0, "\(signed.error)")
        let publicKey = sandbox.path + "/public-key"
        let read = try sandbox.exportPublicKey(id: id, to: publicKey)
        #expect(read.status == 0, "\(read.error)")
        // pkcs11-tool writes DER, or PEM for Ed25519 (p11tool PEM); openssl reads either.
        let verified =
            kind == .ed25519
            ? try sandbox.run(
                "/usr/bin/openssl",
                [
                    "pkeyutl", "-verify", "-pubin", "-inkey", publicKey, "-rawin", "-in", data, "-sigfile",
                    signature,
                ])
            : try sandbox.run(
                "/usr/bin/openssl", ["dgst", "-sha256", "-verify", publicKey, "-signature", signature, data])
        #expect(verified.status == 0, "\(verified.output) \(verified.error)")
        #expect(verified.output.contains("Verified"))
        let listed = try sandbox.p11keychain("find-key", "-l", "Signing \(kind)")
        let lines = listed.output.split(separator: "\n")
        #expect(lines.count == 3, "a private and a public key: \(listed.output)")
        #expect(lines.dropFirst().allSatisfy { $0.contains(id) })
        #expect(lines.count == 3 && lines[1].hasPrefix("private ") && lines[2].hasPrefix("public "))
    }

    @Test(
        "generate-key makes RSA keys of each size and EC keys on each curve",
        arguments: [
            (["--type", "rsa", "--bits", "3072"], "RSA-3072"),
            (["--type", "ec", "--curve", "p384"], "EC-P384"),
            (["--type", "ec", "--curve", "P-521"], "EC-P521"), (["--type", "ec"], "EC-P256"),
            (["--type", "rsa"], "RSA-2048"),
        ])
    func sizes(arguments: [String], shown: String) throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let generated = try sandbox.run(Built.program, ["generate-key", "-l", "K"] + arguments)
        #expect(generated.status == 0, "\(generated.error)")
        let listed = try sandbox.p11keychain("find-key")
        #expect(listed.output.contains("private  \(shown) "), "\(listed.output)")
    }

    @Test(
        "generate-key's wrong arguments are usage errors that touch no store",
        arguments: [
            (["generate-key", "-l", "K"], "--type rsa, ec or ed25519"),
            (["generate-key", "--type", "dsa", "-l", "K"], "rsa, ec or ed25519"),
            (["generate-key", "--type", "ec"], "-l LABEL"),
            (["generate-key", "--type", "ec", "--bits", "2048", "-l", "K"], "--bits"),
            (["generate-key", "--type", "rsa", "--curve", "p256", "-l", "K"], "--curve is for EC keys"),
            (["generate-key", "--type", "rsa", "--bits", "1024", "-l", "K"], "2048, 3072 or 4096"),
            (["generate-key", "--type", "ec", "--curve", "p192", "-l", "K"], "p256, p384 or p521"),
            (["generate-key", "--type"], "needs a value"),
            (["delete-key"], "-l LABEL or --id HEX"),
            (["delete-key", "--id", "xyz"], "hexadecimal"),
            (["find-key", "--type", "dh"], "rsa, ec or ed25519"),
            (["find-key", "stray"], "takes no arguments"),
        ])
    func generateUsage(arguments: [String], message: String) throws {
        let sandbox = try Sandbox()
        let outcome = try sandbox.run(Built.program, arguments)
        #expect(outcome.failed(with: 2), "\(arguments): \(outcome.error)")
        #expect(outcome.error.contains(message), "\(arguments): \(outcome.error)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.defaultStore))
    }

    @Test("the URI names the token by its label, percent-encoded, and p11tool finds the key by it")
    func uriFindsTheKey() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/p11tool") else { return }
        let sandbox = try Sandbox()
        let initialized = try sandbox.p11keychain(
            "init", "--label", "My Token", "--so-pin", PIN.securityOfficer, "--pin", PIN.user)
        #expect(initialized.status == 0, "\(initialized.error)")
        let generated = try sandbox.p11keychain(
            "generate-key", "--type", "ec", "-l", "web key/1", "--pin", PIN.user)
        #expect(generated.status == 0, "\(generated.error)")
        let uri = "pkcs11:token=My%20Token;object=web%20key%2F1;type=private"
        #expect(generated.output.hasSuffix("uri: \(uri)\n"), "\(generated.output)")
        let listed = try sandbox.run(
            "/usr/bin/p11tool",
            ["--provider", Built.module, "--batch", "--login", "--set-pin", PIN.user, "--list-privkeys", uri])
        #expect(listed.status == 0, "\(listed.error)")
        #expect(listed.output.contains("Label: web key/1"), "\(listed.output)")
        #expect(listed.output.components(separatedBy: "Object ").count == 2, "one key: \(listed.output)")
    }

    @Test("a key made by pkcs11-tool --keypairgen is listed by find-key and deleted by delete-key --id")
    func keyFromPKCS11Tool() throws {
        guard Sandbox.hasPKCS11Tool else { return }
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let made = try sandbox.pkcs11Tool(
            "--login", "--pin", PIN.user, "--keypairgen", "--key-type", "EC:prime256v1", "--label",
            "From pkcs11-tool",
            "--id", "c0ffee")
        #expect(made.status == 0, "\(made.error)")
        let listed = try sandbox.p11keychain("find-key", "--type", "ec")
        #expect(listed.status == 0, "\(listed.error)")
        #expect(listed.output.contains("private  EC-P256  C0FFEE  From pkcs11-tool\n"), "\(listed.output)")
        #expect(listed.output.contains("public   EC-P256  C0FFEE  From pkcs11-tool\n"), "\(listed.output)")
        let deleted = try sandbox.p11keychain("delete-key", "--id", "C0:FF:EE")
        #expect(deleted.status == 0, "\(deleted.error)")
        #expect(
            deleted.output
                == "deleted EC P-256 key \"From pkcs11-tool\" (id C0FFEE; private and public key)\n")
        let none = try sandbox.p11keychain("find-key")
        #expect(none.failed(with: 1))
        #expect(none.error.contains("has no keys"))
        #expect(
            !(try sandbox.pkcs11Tool("--login", "--pin", PIN.user, "--list-objects").output.contains(
                "From pkcs11-tool")))
    }

    @Test("delete-key by a label two keys share deletes nothing; -a deletes both; no match is exit status 1")
    func ambiguousDelete() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        for _ in 1...2 {
            #expect(try sandbox.p11keychain("generate-key", "--type", "ed25519", "-l", "Twin").status == 0)
        }
        #expect(try sandbox.p11keychain("generate-key", "--type", "ec", "-l", "Other").status == 0)
        let ambiguous = try sandbox.p11keychain("delete-key", "-l", "Twin")
        #expect(ambiguous.failed(with: 1), "\(ambiguous.error)")
        #expect(ambiguous.error.contains("matches 2 keys and nothing was deleted"))
        #expect(ambiguous.error.contains("p11keychain find-key -l Twin"))
        #expect(try sandbox.p11keychain("find-key", "-l", "Twin").output.split(separator: "\n").count == 5)
        let all = try sandbox.p11keychain("delete-key", "-l", "Twin", "-a")
        #expect(all.status == 0, "\(all.error)")
        #expect(all.output.split(separator: "\n").count == 2)
        let gone = try sandbox.p11keychain("delete-key", "-l", "Twin")
        #expect(gone.failed(with: 1))
        #expect(gone.error.contains("no key matches label \"Twin\""))
        #expect(try sandbox.p11keychain("find-key", "-l", "Other").status == 0, "the other key is kept")
    }

    @Test("without the PIN find-key lists no private key: a token without a user PIN shows its public keys")
    func publicKeysWithoutPIN() throws {
        guard Sandbox.hasPKCS11Tool else { return }
        let sandbox = try Sandbox()
        // A public key object written through the module needs no login.
        try sandbox.shell(
            """
            cd '\(sandbox.path)'
            openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out k.pem 2>/dev/null
            openssl pkey -in k.pem -pubout -outform DER -out k.pub.der
            """)
        let written = try sandbox.pkcs11Tool(
            "--write-object", sandbox.path + "/k.pub.der", "--type", "pubkey", "--label", "Public only",
            "--id", "01")
        #expect(written.status == 0, "\(written.error)")
        let listed = try sandbox.p11keychain("find-key")
        #expect(listed.status == 0, "\(listed.error)")
        #expect(listed.output.contains("public  EC-P256  01  Public only\n"), "\(listed.output)")
    }
}
