import Foundation
import Testing

// PINs, keys and PKCS#12 files for the tests of private items. Every unlock runs the slow
// PIN key derivation (a few tenths of a second), so the tests log in as few times as they can.

/// TestSupport's test PINs, under the name these tests use.
typealias PIN = TestPIN

/// The key types generate-key and PKCS#12 files cover.
enum KeyKind: String, CaseIterable, CustomTestStringConvertible {
    case rsa, ec, ed25519

    var testDescription: String { rawValue }

    /// generate-key's options for the type.
    var generateArguments: [String] {
        switch self {
        case .rsa: ["--type", "rsa", "--bits", "2048"]
        case .ec: ["--type", "ec", "--curve", "p256"]
        case .ed25519: ["--type", "ed25519"]
        }
    }

    /// The pkcs11-tool mechanism that signs with it.
    var mechanism: String {
        switch self {
        case .rsa: "SHA256-RSA-PKCS"
        case .ec: "ECDSA-SHA256"
        case .ed25519: "EDDSA"
        }
    }

    /// `openssl req -newkey` arguments for a key of this type.
    var opensslNewKey: String {
        switch self {
        case .rsa: "-newkey rsa:2048"
        case .ec: "-newkey ec -pkeyopt ec_paramgen_curve:P-384"
        case .ed25519: "-newkey ed25519"
        }
    }
}

extension Sandbox {
    /// Initializes the default token with the test PINs (`init --so-pin --pin`) and lets every
    /// later command find the user PIN in P11KEYCHAIN_PIN.
    func initializeToken() throws {
        let outcome = try p11keychain("init", "--so-pin", PIN.securityOfficer, "--pin", PIN.user)
        guard outcome.status == 0 else { throw TestFailure(description: "init failed: \(outcome.error)") }
        environment["P11KEYCHAIN_PIN"] = PIN.user
    }

    /// Runs pkcs11-tool on the built module.
    func pkcs11Tool(_ arguments: String...) throws -> Outcome {
        try run("/usr/bin/pkcs11-tool", ["--module", Built.module] + arguments)
    }

    /// Writes the public key with CKA_ID `id` (hex) to `path`, read through the module by
    /// pkcs11-tool (DER, or PEM for Ed25519), or by p11tool (PEM) when pkcs11-tool fails with
    /// "cannot create EVP_PKEY". That failure is OpenSC 0.23.0's own: reading an EC public key,
    /// it frees the parameter arrays its merged list points into before EVP_PKEY_fromdata
    /// reads them, so whether the key is made depends on what reused that memory (the
    /// process's allocations before, the module's included). Fixed in later OpenSC.
    func exportPublicKey(id: String, to path: String) throws -> Outcome {
        let read = try pkcs11Tool("--read-object", "--type", "pubkey", "--id", id, "-o", path)
        guard read.status != 0, read.error.contains("cannot create EVP_PKEY") else { return read }
        let encoded = stride(from: 0, to: id.count, by: 2).map { offset -> String in
            let start = id.index(id.startIndex, offsetBy: offset)
            return "%" + id[start..<id.index(start, offsetBy: 2)]
        }.joined()
        return try run(
            "/usr/bin/p11tool",
            [
                "--provider", Built.module, "--batch", "--outfile", path, "--export",
                "pkcs11:id=\(encoded);type=public",
            ])
    }

    /// A self-signed certificate and its key, in `NAME.crt` and `NAME.key`, made by openssl;
    /// the PKCS#12 file of both in `NAME.p12`. Returns the three paths.
    @discardableResult
    func pkcs12(_ name: String, kind: KeyKind, passphrase: String, legacy: Bool = false) throws -> (
        p12: String, certificate: String, key: String
    ) {
        try shell(
            """
            set -e
            cd '\(path)'
            openssl req -x509 \(kind.opensslNewKey) -nodes -keyout '\(name).key' -out '\(name).crt' \
                -subj '/CN=\(name)/O=p11keychain CLI tests' -days 30 2>/dev/null
            openssl pkcs12 -export \(legacy ? "-legacy" : "") -inkey '\(name).key' -in '\(name).crt' \
                -name '\(name) friendly' -out '\(name).p12' -passout 'pass:\(passphrase)'
            """)
        return (path + "/\(name).p12", path + "/\(name).crt", path + "/\(name).key")
    }

    /// Runs `command` (a shell command line) on a terminal: script(1) gives it one, and what
    /// script prints is what the terminal showed. Each answer is typed once its question shows
    /// in script's transcript: the program turns echo off before it asks for a secret, so
    /// nothing typed then is echoed, however slowly the program starts. Questions and answers
    /// hold no single quote. A timeout ends a program that waits for more.
    func onTerminal(_ command: String, answering answers: [(question: String, typed: String)]) throws
        -> Outcome
    {
        let transcript = path + "/.typescript-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: transcript) }
        let typing = answers.map { question, typed in
            "i=0; until grep -qF -- '\(question)' '\(transcript)' 2>/dev/null; do "
                + "i=$((i + 1)); [ $i -gt 600 ] && exit 0; sleep 0.1; done; printf '%s' '\(typed)'; "
        }.joined()
        return try run(
            "/bin/sh",
            ["-c", "(\(typing)sleep 1) | timeout 90 script -qefc \"\(command)\" '\(transcript)'"])
    }

    /// True when script(1) is there to give a command a terminal.
    static var hasScript: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/script") }

    /// True when pkcs11-tool is installed.
    static var hasPKCS11Tool: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/pkcs11-tool") }
}

extension Outcome {
    /// The hexadecimal key ID generate-key printed on its `id:` line.
    var printedKeyID: String? {
        output.split(separator: "\n").first { $0.hasPrefix("id:") }.map {
            $0.dropFirst(3).trimmingCharacters(in: .whitespaces)
        }
    }
}
