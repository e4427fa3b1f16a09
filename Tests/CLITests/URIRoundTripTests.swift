import Foundation
import Testing

// pkcs11: URIs (RFC 7512): every URI the CLI prints selects exactly that object again in the
// CLI (-l URI), in p11tool (GnuTLS, which takes URIs) and, through the URI's id= and object=,
// in pkcs11-tool (OpenSC 0.23 takes no URI). The token has a label other than its name, so
// token= is the label, as C_GetTokenInfo shows it.

/// pkcs11-tool on the built module.
private func pkcs11Tool(_ sandbox: Sandbox, _ arguments: [String]) throws -> Outcome {
    try sandbox.run("/usr/bin/pkcs11-tool", ["--module", Built.module] + arguments)
}

@Suite("pkcs11: URI round trip")
struct URIRoundTripTests {
    /// One object as `--json` lists it.
    struct Listed {
        var uri: String
        var label: String
        var id: String
        var type: String
    }

    private static func listed(_ outcome: Outcome) throws -> [Listed] {
        let document = try JSONSerialization.jsonObject(with: Data(outcome.output.utf8)) as? [String: Any]
        let items = document?["items"] as? [[String: Any]] ?? []
        return items.compactMap { item in
            guard let uri = item["uri"] as? String, let label = item["label"] as? String,
                let id = item["id"] as? String, let type = item["class"] as? String
            else { return nil }
            return Listed(uri: uri, label: label, id: id, type: type)
        }
    }

    @Test("every printed URI selects exactly its object in the CLI, p11tool and pkcs11-tool")
    func roundTrip() throws {
        let sandbox = try Sandbox()
        let initialized = try sandbox.p11keychain(
            "init", "--so-pin", PIN.securityOfficer, "--pin", PIN.user, "--label", "Work Token")
        #expect(initialized.status == 0, "\(initialized.error)")
        sandbox.environment["P11KEYCHAIN_PIN"] = PIN.user
        let generated = try sandbox.p11keychain("generate-key", "--type", "ec", "-l", "web key/1")
        let printed = generated.output.split(separator: "\n").first { $0.hasPrefix("uri: ") }.map {
            String($0.dropFirst(5))
        }
        #expect(printed == "pkcs11:token=Work%20Token;object=web%20key%2F1;type=private")
        for arguments in [
            ["generate-key", "--type", "ec", "-l", "other"],
            ["generate-key", "--type", "aes:128", "-l", "aes one"],
            ["add-certificates", Fixture.alice.path, Fixture.bob.path],
        ] {
            #expect(try sandbox.run(Built.program, arguments).status == 0, "\(arguments)")
        }
        let keys = try Self.listed(sandbox.p11keychain("find-key", "--json"))
        let certificates = try Self.listed(sandbox.p11keychain("find-certificate", "-a", "--json"))
        #expect(keys.count == 5 && certificates.count == 2)

        // The CLI: the URI alone selects the object, and lists it with the same URI.
        if let printed {
            let found = try Self.listed(sandbox.p11keychain("find-key", "-l", printed, "--json"))
            #expect(found.map(\.label) == ["web key/1"] && found.first?.type == "private-key")
        }
        for object in keys {
            let found = try Self.listed(sandbox.p11keychain("find-key", "-l", object.uri, "--json"))
            #expect(found.map(\.uri) == [object.uri], "\(object.uri)")
        }
        for object in certificates {
            let found = try Self.listed(
                sandbox.p11keychain("find-certificate", "-a", "-l", object.uri, "--json"))
            #expect(found.map(\.uri) == [object.uri], "\(object.uri)")
        }

        // p11tool: one object, the one with that label.
        for object in keys + certificates {
            let outcome = try sandbox.run(
                "/usr/bin/p11tool",
                ["--provider", Built.module, "--login", "--set-pin", PIN.user, "--list-all", object.uri])
            let listed = outcome.output.split(separator: "\n").filter { $0.hasPrefix("Object ") }
            #expect(outcome.status == 0 && listed.count == 1, "p11tool \(object.uri): \(outcome.output)")
            #expect(outcome.output.contains("Label: \(object.label)\n"), "\(outcome.output)")
        }

        // pkcs11-tool, with the URI's object= and id=: the certificate it reads is that one,
        // the private key it signs with and the public key it verifies that signature with
        // are found. (Verified, not read: OpenSC 0.23.0 reads an EC public key through freed
        // memory, `Sandbox.exportPublicKey`.)
        let data = try sandbox.write("data", Array("round trip".utf8))
        let privateFirst = keys.filter { $0.type == "private-key" } + keys.filter { $0.type != "private-key" }
        for object in privateFirst + certificates {
            let select = ["--label", object.label, "--id", object.id]
            let outcome: Outcome
            switch object.type {
            case "certificate":
                outcome = try pkcs11Tool(
                    sandbox,
                    ["--read-object", "--type", "cert"] + select + ["-o", sandbox.path + "/read.der"])
                try sandbox.openssl(
                    "x509", "-in", object.label == "Alice Example" ? Fixture.alice.path : Fixture.bob.path,
                    "-outform", "der", "-out", sandbox.path + "/expected.der")
                #expect(
                    try sandbox.read(sandbox.path + "/read.der")
                        == sandbox.read(sandbox.path + "/expected.der"))
            case "private-key":
                outcome = try pkcs11Tool(
                    sandbox,
                    ["--login", "--pin", PIN.user, "--sign", "--mechanism", "ECDSA-SHA256"] + select
                        + ["--input-file", data, "--output-file", sandbox.path + "/signature-\(object.id)"])
            case "public-key":
                outcome = try pkcs11Tool(
                    sandbox,
                    ["--verify", "--mechanism", "ECDSA-SHA256"] + select
                        + [
                            "--input-file", data, "--signature-file",
                            sandbox.path + "/signature-\(object.id)",
                        ])
                #expect(outcome.output.contains("Signature is valid"), "\(object.label): \(outcome.output)")
            default: continue  // secret keys: p11tool above
            }
            #expect(outcome.status == 0, "pkcs11-tool \(object.type) \(object.label): \(outcome.error)")
        }
    }

    @Test("a URI that matches nothing, or several, says so; a malformed one is a usage error")
    func nothingOrSeveral() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        for _ in 0..<2 {
            #expect(try sandbox.p11keychain("generate-key", "--type", "ec", "-l", "twin").status == 0)
        }
        let nothing = try sandbox.p11keychain("find-key", "-l", "pkcs11:object=none")
        #expect(nothing.failed(with: 1) && nothing.error.contains("no key matches"))
        let several = try sandbox.p11keychain("delete-key", "-l", "pkcs11:object=twin;type=private")
        #expect(several.failed(with: 1) && several.error.contains("matches 2 keys"), "\(several.error)")
        #expect(try sandbox.p11keychain("find-key", "-l", "pkcs11:object=%zz").failed(with: 2))
        #expect(try sandbox.p11keychain("find-key", "-l", "pkcs11:foo=bar;object=twin").failed(with: 2))
        // A token URI where a store path goes is a token, not a file to create.
        let store = try sandbox.p11keychain("--store", "pkcs11:token=work", "find-certificate")
        #expect(store.failed(with: 1) && store.error.contains("no token named"), "\(store.error)")
        #expect(!FileManager.default.fileExists(atPath: "pkcs11:token=work"))
    }
}
