import Foundation
@_exported import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What `swift build --build-tests` / `swift test` put next to this test bundle.
enum Built {
    /// The build products directory: the test bundle's own directory.
    static var directory: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
    }

    /// The `p11keychain` program.
    static var program: String { directory + "/p11keychain" }

    /// The PKCS#11 module.
    static var module: String { directory + "/libp11keychain-pkcs11.so" }
}

/// The test certificates of `Tests/Fixtures` (see its README).
enum Fixture: String, CaseIterable {
    case ca, alice, bob, nocn, printable

    var path: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures").appendingPathComponent(rawValue + ".pem").path
    }
}

/// How a program ended and what it wrote.
struct Outcome {
    var status: Int32
    var output: String
    var error: String
    var outputBytes: [UInt8]

    /// The error output's lines.
    var errorLines: [Substring] { error.split(separator: "\n") }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
}

/// A fresh directory per test with the environment the child processes get: its own
/// default store (`P11KEYCHAIN_DIR`), no configuration file unless the test writes one, and
/// its own home and XDG directories, so that nothing outside it is read or written.
///
/// `@unchecked Sendable`: a test changes `environment` only before it starts children, and
/// children started at once from several tasks only read it.
final class Sandbox: @unchecked Sendable {
    let path: String
    var environment: [String: String]

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/p11keychain-cli-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw TestFailure(description: "mkdtemp failed") }
        path = String(cString: made)
        environment = [
            "PATH": "/usr/bin:/bin",
            "HOME": path + "/home",
            "XDG_CONFIG_HOME": path + "/config",
            "XDG_DATA_HOME": path + "/data",
            "P11KEYCHAIN_DIR": path + "/store",
            "P11KEYCHAIN_CONF": "/dev/null",
        ]
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// The default token's store file.
    var defaultStore: String { path + "/store/login.sqlite3" }

    /// Runs the built `p11keychain` with `arguments`.
    @discardableResult
    func p11keychain(_ arguments: String..., environment extra: [String: String] = [:], input: String? = nil)
        throws -> Outcome
    {
        try run(Built.program, arguments, environment: extra, input: input)
    }

    /// Runs a program in the sandbox's environment. Output goes through files, not pipes, so
    /// a chatty child never blocks on a full pipe.
    func run(
        _ program: String, _ arguments: [String], environment extra: [String: String] = [:],
        input: String? = nil
    )
        throws -> Outcome
    {
        let result = try runProgram(
            program, arguments, environment: environment.merging(extra) { _, new in new },
            input: input.map { Data($0.utf8) })
        guard !result.endedBySignal else {
            throw TestFailure(description: "\(program) \(arguments) died of signal \(result.status)")
        }
        return Outcome(
            status: result.status, output: result.output, error: result.error, outputBytes: result.outputBytes
        )
    }

    /// Runs `openssl` and returns its standard output; throws unless it succeeds.
    @discardableResult
    func openssl(_ arguments: String...) throws -> Outcome {
        let outcome = try run("/usr/bin/openssl", arguments)
        guard outcome.status == 0 else {
            throw TestFailure(description: "openssl \(arguments) failed: \(outcome.error)")
        }
        return outcome
    }

    /// Runs a shell script (generating certificates takes one openssl run each).
    func shell(_ script: String) throws {
        let outcome = try run("/bin/sh", ["-c", script])
        guard outcome.status == 0 else { throw TestFailure(description: "sh failed: \(outcome.error)") }
    }

    /// Writes a file in the sandbox and returns its path.
    @discardableResult
    func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let file = path + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        return file
    }

    /// The file's bytes.
    func read(_ file: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: file))) }

    /// A PEM bundle of `count` self-signed certificates `CN=NAME 1` … `CN=NAME count`, each
    /// with its own serial number, all with one EC key (the key does not matter here).
    func bundle(_ name: String, count: Int) throws -> String {
        let file = path + "/\(name).pem"
        try shell(
            """
            set -e
            cd '\(path)'
            openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out '\(name).key' 2>/dev/null
            i=1
            while [ $i -le \(count) ]; do
                openssl req -new -x509 -key '\(name).key' -subj "/CN=\(name) $i/O=p11keychain CLI tests" \
                    -set_serial $i -days 30 2>/dev/null
                i=$((i + 1))
            done > '\(file)'
            """)
        return file
    }
}

extension Outcome {
    /// True when the program failed the way every error of the command should: the given
    /// exit status, nothing on standard output, and one line on standard error that names
    /// the program, with no trace of a crash.
    func failed(with expected: Int32) -> Bool {
        status == expected && output.isEmpty && errorLines.count == 1 && error.hasPrefix("p11keychain: ")
            && !error.contains("Fatal error") && !error.contains("Stack dump")
    }
}

/// The SHA-1 fingerprint openssl computes for a PEM certificate, as upper-case hexadecimal.
func opensslSHA1(_ sandbox: Sandbox, _ pemFile: String) throws -> String {
    let line = try sandbox.openssl("x509", "-in", pemFile, "-noout", "-fingerprint", "-sha1").output
    return String(line.split(separator: "=").last ?? "").replacingOccurrences(of: ":", with: "")
        .trimmingCharacters(in: .whitespacesAndNewlines)
}

/// How many PEM certificate blocks a text has.
func pemBlockCount(_ text: String) -> Int {
    text.components(separatedBy: "-----BEGIN CERTIFICATE-----").count - 1
}
