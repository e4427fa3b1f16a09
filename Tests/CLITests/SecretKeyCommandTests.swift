import Foundation
import Testing

// generate-key --type aes:256|hmac-sha256|generic:BYTES, find-key's secret keys, delete-key,
// wrap-key and unwrap-key.

extension Outcome {
    /// The value of a `name: VALUE` line generate-key and unwrap-key print.
    func printed(_ name: String) -> String? {
        output.split(separator: "\n").first { $0.hasPrefix(name + ": ") }.map {
            $0.dropFirst(name.count + 1).trimmingCharacters(in: .whitespaces)
        }
    }
}

@Suite("secret key commands")
struct SecretKeyCommandTests {
    @Test("generate-key --type aes:256 prints the key's ID, check value and URI, and find-key lists it")
    func generateAndFind() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let generated = try sandbox.p11keychain("generate-key", "--type", "aes:256", "-l", "data key")
        #expect(generated.status == 0, "\(generated.error)")
        #expect(generated.output.hasPrefix("generated AES-256 secret key \"data key\" in token \"login\"\n"))
        let id = try #require(generated.printed("id"))
        let kcv = try #require(generated.printed("kcv"))
        #expect(id.count == 32, "16 random bytes: \(id)")
        #expect(kcv.count == 6 && kcv.allSatisfy(\.isHexDigit), "three bytes: \(kcv)")
        #expect(generated.printed("uri") == "pkcs11:token=login;object=data%20key;type=secret-key")
        #expect(try sandbox.p11keychain("generate-key", "--type", "ed25519", "-l", "pair").status == 0)

        let listed = try sandbox.p11keychain("find-key")
        #expect(listed.status == 0, "\(listed.error)")
        let tables = listed.output.components(separatedBy: "\n\n")
        #expect(tables.count == 2, "key pairs, then secret keys: \(listed.output)")
        #expect(tables.first?.hasPrefix("CLASS    TYPE     ID") == true)
        #expect(tables.last?.hasPrefix("CLASS   TYPE  BITS  ID ") == true, "\(listed.output)")
        #expect(
            tables.last?.hasSuffix(
                "\nsecret  AES   256   \(id)  \(kcv)  encrypt,decrypt,sign,verify  data key\n") == true,
            "\(listed.output)")
        let secret = try sandbox.p11keychain("find-key", "--class", "secret")
        #expect(secret.output.hasPrefix("CLASS   TYPE  BITS") && !secret.output.contains("Ed25519"))
        let byID = try sandbox.p11keychain("find-key", "--id", id)
        #expect(byID.output.contains("data key") && !byID.output.contains("pair"), "\(byID.output)")
        let pairs = try sandbox.p11keychain("find-key", "--class", "private")
        #expect(pairs.status == 0 && !pairs.output.contains("secret"), "\(pairs.output)")
        let none = try sandbox.p11keychain("find-key", "--type", "hmac-sha256")
        #expect(none.failed(with: 1), "\(none.error)")
        #expect(none.error.contains("no key matches type HMAC-SHA256"))
    }

    @Test(
        "generate-key makes each kind of secret key with its size",
        arguments: [
            ("aes:128", "AES 128"), ("aes:192", "AES 192"), ("aes", "AES 256"),
            ("hmac-sha1", "HMAC-SHA1 160"),
            ("hmac-sha256", "HMAC-SHA256 256"), ("hmac-sha512:16", "HMAC-SHA512 128"),
            ("generic:48", "generic 384"),
        ])
    func kinds(type: String, shown: String) throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let generated = try sandbox.p11keychain("generate-key", "--type", type, "-l", "K")
        #expect(generated.status == 0, "\(generated.error)")
        let listed = try sandbox.p11keychain("find-key", "--class", "secret")
        let row = listed.output.split(separator: "\n").dropFirst().first?.split(separator: " ")
        #expect(
            row.map { $0.dropFirst().prefix(2).joined(separator: " ") } == shown,
            "type and bits: \(listed.output)")
    }

    @Test(
        "secret key commands' wrong arguments are usage errors that touch no store",
        arguments: [
            (["generate-key", "--type", "aes:512", "-l", "K"], "aes:128, aes:192 or aes:256"),
            (["generate-key", "--type", "generic", "-l", "K"], "generic:BYTES needs"),
            (["generate-key", "--type", "generic:0", "-l", "K"], "BYTES from 1 to 4096"),
            (["generate-key", "--type", "hmac-md5", "-l", "K"], "hmac-sha1, hmac-sha224"),
            (
                ["generate-key", "--type", "hmac-sha256", "--wrap-key", "-l", "K"],
                "--wrap-key makes an AES key"
            ),
            (
                ["generate-key", "--type", "aes:128", "--bits", "128", "-l", "K"],
                "--bits and --curve are for key pairs"
            ),
            (["generate-key", "--type", "aes:128"], "-l LABEL"),
            (["generate-key", "--type", "aes:128", "--id", "xyz", "-l", "K"], "hexadecimal"),
            (["generate-key", "--type", "ec", "--wrap-key", "-l", "K"], "are for secret keys"),
            (["find-key", "--class", "session"], "secret, private or public"),
            (["find-key", "--type", "aes", "--class", "public"], "exclude each other"),
            (["wrap-key", "--wrapping-key", "W", "-o", "f"], "-l LABEL or --id HEX"),
            (["wrap-key", "-l", "K", "-o", "f"], "--wrapping-key LABEL"),
            (["wrap-key", "-l", "K", "--wrapping-key", "W"], "-o FILE"),
            (
                ["wrap-key", "-l", "K", "--wrapping-key", "W", "-o", "f", "--mechanism", "des"],
                "aes-kwp or aes-kw"
            ),
            (["unwrap-key", "--wrapping-key", "W"], "-i FILE"),
            (["unwrap-key", "-i", "f"], "--wrapping-key LABEL"),
        ])
    func usageErrors(arguments: [String], message: String) throws {
        let sandbox = try Sandbox()
        let outcome = try sandbox.run(Built.program, arguments)
        #expect(outcome.failed(with: 2), "\(arguments): \(outcome.error)")
        #expect(outcome.error.contains(message), "\(arguments): \(outcome.error)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.defaultStore))
    }

    @Test("wrap-key writes a file that unwrap-key stores back as the same key (same check value)")
    func wrapAndUnwrap() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let wrapping = try sandbox.p11keychain(
            "generate-key", "--type", "aes:256", "--wrap-key", "-l", "backup")
        #expect(wrapping.status == 0, "\(wrapping.error)")
        let original = try sandbox.p11keychain(
            "generate-key", "--type", "hmac-sha384", "--extractable", "--id", "C0FFEE", "-l", "api key/1")
        let kcv = try #require(original.printed("kcv"))
        let file = sandbox.path + "/api.wrapped"
        let wrapped = try sandbox.p11keychain(
            "wrap-key", "-l", "api key/1", "--wrapping-key", "backup", "-o", file)
        #expect(wrapped.status == 0, "\(wrapped.error)")
        #expect(
            wrapped.output
                == "wrapped HMAC-SHA384 (384-bit) secret key \"api key/1\" under \"backup\" (AES-KWP) into \(file)\n"
                + "kcv: \(kcv)\n")
        let text = String(decoding: try sandbox.read(file), as: UTF8.self)
        #expect(
            text.hasPrefix(
                "-----BEGIN P11KEYCHAIN WRAPPED KEY-----\nMechanism: AES-KWP\nKey-Class: secret\nKey-Type: hmac-sha384\n"
            ))
        #expect(text.contains("\nLabel: api%20key/1\nID: C0FFEE\nCheck-Value: \(kcv)\n"), "\(text)")
        #expect(text.hasSuffix("-----END P11KEYCHAIN WRAPPED KEY-----\n"))

        #expect(try sandbox.p11keychain("delete-key", "-l", "api key/1").status == 0)
        let restored = try sandbox.p11keychain("unwrap-key", "-i", file, "--wrapping-key", "backup")
        #expect(restored.status == 0, "\(restored.error)")
        #expect(
            restored.output.hasPrefix("unwrapped HMAC-SHA384 (384-bit) secret key \"api key/1\" into token"))
        #expect(restored.printed("kcv") == kcv)
        #expect(restored.printed("id") == "C0FFEE", "the file's ID")
        let again = try sandbox.p11keychain(
            "unwrap-key", "-i", file, "--wrapping-key", "backup", "-l", "copy", "--id", "01")
        #expect(again.status == 0 && again.printed("id") == "01", "\(again.error)")
        let listed = try sandbox.p11keychain("find-key", "--type", "hmac-sha384")
        #expect(
            listed.output.components(separatedBy: "  \(kcv)  ").count == 3,
            "two keys, one value: \(listed.output)")
        #expect(listed.output.contains("extractable  api key/1\n"), "the file's flags: \(listed.output)")

        let aesKW = try sandbox.p11keychain("generate-key", "--type", "aes:128", "--extractable", "-l", "kw")
        let kwFile = sandbox.path + "/kw.wrapped"
        let kw = try sandbox.p11keychain(
            "wrap-key", "-l", "kw", "--wrapping-key", "backup", "--mechanism", "aes-kw", "-o", kwFile)
        #expect(kw.status == 0, "\(kw.error)")
        let kwBack = try sandbox.p11keychain(
            "unwrap-key", "-i", kwFile, "--wrapping-key", "backup", "-l", "kw back")
        #expect(kwBack.printed("kcv") == aesKW.printed("kcv"))
    }

    @Test(
        "unwrap-key reads a key openssl wrapped, and openssl unwraps what wrap-key wrote, under a key pkcs11-tool stored"
    )
    func interoperatesWithOpenSSL() throws {
        guard Sandbox.hasPKCS11Tool else { return }
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let wrappingKey = (0..<32).map { UInt8($0) }
        let wrappingHex = wrappingKey.map { String(format: "%02x", $0) }.joined()
        let wrappingFile = try sandbox.write("wrapping.key", wrappingKey)
        let stored = try sandbox.pkcs11Tool(
            "--login", "--pin", PIN.user, "--write-object", wrappingFile, "--type", "secrkey", "--key-type",
            "AES:32", "--label", "from pkcs11-tool", "--usage-wrap")
        #expect(stored.status == 0, "\(stored.error)")

        let dataKey = (0xA0..<0xB0).map { UInt8($0) }
        let dataHex = dataKey.map { String(format: "%02x", $0) }.joined()
        let dataFile = try sandbox.write("data.key", dataKey)
        let opensslWrapped = sandbox.path + "/data.kwp"
        try sandbox.openssl(
            "enc", "-id-aes256-wrap-pad", "-K", wrappingHex, "-iv", "A65959A6", "-in", dataFile, "-out",
            opensslWrapped)
        let zeroBlock = try sandbox.write("zero", [UInt8](repeating: 0, count: 16))
        let encryptedZero = sandbox.path + "/zero.enc"
        try sandbox.openssl(
            "enc", "-aes-128-ecb", "-nopad", "-K", dataHex, "-in", zeroBlock, "-out", encryptedZero)
        let expectedKCV = try sandbox.read(encryptedZero).prefix(3).map { String(format: "%02X", $0) }
            .joined()
        let file = """
            -----BEGIN P11KEYCHAIN WRAPPED KEY-----
            Mechanism: AES-KWP
            Key-Type: aes
            Key-Bits: 128
            Label: from%20openssl
            Extractable: yes

            \(Data(try sandbox.read(opensslWrapped)).base64EncodedString())
            -----END P11KEYCHAIN WRAPPED KEY-----

            """
        let input = try sandbox.write("from-openssl.wrapped", Array(file.utf8))
        let unwrapped = try sandbox.p11keychain(
            "unwrap-key", "-i", input, "--wrapping-key", "from pkcs11-tool")
        #expect(unwrapped.status == 0, "\(unwrapped.error)")
        #expect(unwrapped.printed("kcv") == expectedKCV)
        #expect(
            unwrapped.output.hasPrefix("unwrapped AES-128 secret key \"from openssl\" into token \"login\"\n")
        )

        let output = sandbox.path + "/back.wrapped"
        let wrapped = try sandbox.p11keychain(
            "wrap-key", "-l", "from openssl", "--wrapping-key", "from pkcs11-tool", "-o", output)
        #expect(wrapped.status == 0, "\(wrapped.error)")
        let lines = String(decoding: try sandbox.read(output), as: UTF8.self).split(separator: "\n")
        let body = lines.drop { !$0.isEmpty && $0.contains(":") || $0.hasPrefix("-----BEGIN") }.filter {
            !$0.hasPrefix("-----")
        }
        let bytes = try #require(Data(base64Encoded: body.joined()))
        let back = try sandbox.write("back.kwp", Array(bytes))
        let plain = sandbox.path + "/back.key"
        try sandbox.openssl(
            "enc", "-d", "-id-aes256-wrap-pad", "-K", wrappingHex, "-iv", "A65959A6", "-in", back, "-out",
            plain)
        #expect(try sandbox.read(plain) == dataKey, "openssl unwraps wrap-key's bytes to the key")
    }

    @Test("a key pair made --extractable is wrapped as PKCS#8 and stored back, both halves, with its ID")
    func privateKeyRoundTrip() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        #expect(
            try sandbox.p11keychain("generate-key", "--type", "aes:256", "--wrap-key", "-l", "backup").status
                == 0)
        let generated = try sandbox.p11keychain(
            "generate-key", "--type", "ec", "--extractable", "-l", "movable")
        #expect(generated.status == 0, "\(generated.error)")
        let id = try #require(generated.printed("id"))
        let file = sandbox.path + "/movable.wrapped"
        let refused = try sandbox.p11keychain(
            "wrap-key", "-l", "movable", "--wrapping-key", "backup", "--mechanism", "aes-kw", "-o", file)
        #expect(refused.failed(with: 2) && refused.error.contains("aes-kwp"), "\(refused.error)")
        let wrapped = try sandbox.p11keychain(
            "wrap-key", "-l", "movable", "--wrapping-key", "backup", "-o", file)
        #expect(wrapped.status == 0, "\(wrapped.error)")
        #expect(
            wrapped.output.hasPrefix("wrapped EC P-256 private key \"movable\" under \"backup\" (AES-KWP)"))
        let text = String(decoding: try sandbox.read(file), as: UTF8.self)
        #expect(text.contains("Key-Class: private\nKey-Type: ec\nKey-Bits: 256\nLabel: movable\nID: \(id)\n"))
        #expect(text.contains("Public-Key-Hash: \(id)\n"), "\(text)")

        #expect(try sandbox.p11keychain("delete-key", "-l", "movable").status == 0)
        let restored = try sandbox.p11keychain("unwrap-key", "-i", file, "--wrapping-key", "backup")
        #expect(restored.status == 0, "\(restored.error)")
        #expect(
            restored.output.hasPrefix("unwrapped EC P-256 private key \"movable\" into token \"login\"\n"))
        #expect(restored.printed("id") == id)
        let listed = try sandbox.p11keychain("find-key", "-l", "movable")
        #expect(listed.output.contains("private  EC-P256  \(id)  movable\n"), "\(listed.output)")
        #expect(listed.output.contains("public   EC-P256  \(id)  movable\n"), "\(listed.output)")
        let withID = try sandbox.p11keychain(
            "unwrap-key", "-i", file, "--wrapping-key", "backup", "--id", "01")
        #expect(withID.failed(with: 2), "\(withID.error)")
    }

    @Test("wrapping a key that is not extractable fails with exit status 1 and writes nothing")
    func notExtractable() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        #expect(
            try sandbox.p11keychain("generate-key", "--type", "aes:256", "--wrap-key", "-l", "backup").status
                == 0)
        #expect(try sandbox.p11keychain("generate-key", "--type", "aes:256", "-l", "stays").status == 0)
        let file = sandbox.path + "/stays.wrapped"
        let outcome = try sandbox.p11keychain(
            "wrap-key", "-l", "stays", "--wrapping-key", "backup", "-o", file)
        #expect(outcome.failed(with: 1), "\(outcome.error)")
        #expect(
            outcome.error.contains(
                "cannot wrap the key \"stays\": the key is not extractable (CKA_EXTRACTABLE is false); "
                    + "only a key made with generate-key --extractable can be wrapped"), "\(outcome.error)")
        #expect(!FileManager.default.fileExists(atPath: file))

        #expect(
            try sandbox.p11keychain("generate-key", "--type", "aes:256", "--extractable", "-l", "movable")
                .status == 0)
        let noWrap = try sandbox.p11keychain(
            "wrap-key", "-l", "movable", "--wrapping-key", "stays", "-o", file)
        #expect(noWrap.failed(with: 1), "\(noWrap.error)")
        #expect(noWrap.error.contains("--wrap-key"), "how to make a wrapping key: \(noWrap.error)")
        let missing = try sandbox.p11keychain(
            "wrap-key", "-l", "nothing", "--wrapping-key", "backup", "-o", file)
        #expect(missing.failed(with: 1))
        #expect(missing.error.contains("no secret key matches label \"nothing\""))
        #expect(try sandbox.p11keychain("generate-key", "--type", "ec", "-l", "pair").status == 0)
        let pair = try sandbox.p11keychain("wrap-key", "-l", "pair", "--wrapping-key", "backup", "-o", file)
        #expect(pair.failed(with: 1))
        #expect(
            pair.error.contains("only a key pair made with generate-key --extractable can be wrapped"),
            "\(pair.error)")
        let pairAsWrapping = try sandbox.p11keychain(
            "wrap-key", "-l", "movable", "--wrapping-key", "pair", "-o", file)
        #expect(pairAsWrapping.failed(with: 1))
        #expect(pairAsWrapping.error.contains("it names a key pair, and a wrapping key is an AES key"))
        #expect(!FileManager.default.fileExists(atPath: file))
    }

    @Test(
        "unwrap-key under another key, of an altered or a foreign file, fails with exit status 1 and stores nothing"
    )
    func unwrapFailures() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        for label in ["backup", "other"] {
            #expect(
                try sandbox.p11keychain("generate-key", "--type", "aes:256", "--wrap-key", "-l", label).status
                    == 0)
        }
        #expect(
            try sandbox.p11keychain("generate-key", "--type", "aes:256", "--extractable", "-l", "data").status
                == 0)
        let file = sandbox.path + "/data.wrapped"
        #expect(
            try sandbox.p11keychain("wrap-key", "-l", "data", "--wrapping-key", "backup", "-o", file).status
                == 0)
        let text = String(decoding: try sandbox.read(file), as: UTF8.self)
        let altered = try sandbox.write(
            "altered", Array(text.replacingOccurrences(of: "Key-Bits: 256", with: "Key-Bits: 128").utf8))
        let foreign = try sandbox.write("foreign", Array("-----BEGIN CERTIFICATE-----\nMIIB\n".utf8))

        let cases: [([String], String)] = [
            (["-i", file, "--wrapping-key", "other"], "does not unwrap under this key"),
            (["-i", altered, "--wrapping-key", "backup"], "not the one it describes"),
            (["-i", foreign, "--wrapping-key", "backup"], "not a wrapped key file"),
            (["-i", sandbox.path + "/absent", "--wrapping-key", "backup"], "cannot read"),
            (["-i", file, "--wrapping-key", "absent"], "no secret key matches label \"absent\""),
        ]
        for (arguments, message) in cases {
            let outcome = try sandbox.run(Built.program, ["unwrap-key"] + arguments)
            #expect(outcome.failed(with: 1), "\(arguments): \(outcome.error)")
            #expect(outcome.error.contains(message), "\(arguments): \(outcome.error)")
        }
        let listed = try sandbox.p11keychain("find-key", "--class", "secret")
        #expect(
            listed.output.split(separator: "\n").count == 4, "three keys, nothing unwrapped: \(listed.output)"
        )
    }

    @Test("delete-key deletes a secret key by label, and refuses a label a secret key and a key pair share")
    func deleteSecretKey() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let generated = try sandbox.p11keychain(
            "generate-key", "--type", "generic:32", "-l", "seed", "--id", "AB01")
        #expect(generated.status == 0, "\(generated.error)")
        #expect(try sandbox.p11keychain("generate-key", "--type", "ec", "-l", "seed").status == 0)
        let ambiguous = try sandbox.p11keychain("delete-key", "-l", "seed")
        #expect(ambiguous.failed(with: 1))
        #expect(ambiguous.error.contains("matches 2 keys and nothing was deleted"), "\(ambiguous.error)")
        let deleted = try sandbox.p11keychain("delete-key", "--id", "AB01")
        #expect(deleted.status == 0, "\(deleted.error)")
        #expect(deleted.output == "deleted generic (256-bit) secret key \"seed\" (id AB01)\n")
        let listed = try sandbox.p11keychain("find-key")
        #expect(!listed.output.contains("secret"), "\(listed.output)")
    }

    @Test("help describes generate-key's secret key types, wrap-key and unwrap-key and their file")
    func help() throws {
        let sandbox = try Sandbox()
        let generate = try sandbox.p11keychain("help", "generate-key")
        #expect(generate.status == 0)
        #expect(generate.output.contains("--type aes:128|aes:192|aes:256|hmac-sha1"))
        #expect(generate.output.contains("--wrap-key"))
        for command in ["wrap-key", "unwrap-key"] {
            let help = try sandbox.p11keychain("help", command)
            #expect(help.status == 0)
            #expect(help.output.hasPrefix("usage: p11keychain \(command) "))
            #expect(help.output.contains("-----BEGIN P11KEYCHAIN WRAPPED KEY-----"))
        }
        let overview = try sandbox.p11keychain("help")
        #expect(overview.output.contains("  wrap-key ") && overview.output.contains("  unwrap-key "))
    }
}
