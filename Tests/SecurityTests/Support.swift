import Foundation
import Security
@_exported import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The test certificates of `Tests/Fixtures` (see its README), as DER.
enum Fixture: String, CaseIterable {
    case ca, alice, bob, nocn, printable

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures")

    var pemPath: String { Fixture.directory.appendingPathComponent(rawValue + ".pem").path }

    /// The DER inside the PEM file.
    var der: Data {
        let text = (try? String(contentsOfFile: pemPath, encoding: .utf8)) ?? ""
        let base64 = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        return Data(base64Encoded: base64) ?? Data()
    }

    var certificate: SecCertificate {
        get throws {
            guard let certificate = SecCertificateCreateWithData(nil, der as CFData) else {
                throw FixtureError(message: "\(rawValue).pem does not decode")
            }
            return certificate
        }
    }
}

struct FixtureError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// A fresh directory under the system's temporary directory.
func makeTemporaryDirectory() throws -> String {
    var template = Array((NSTemporaryDirectory() + "/p11keychain-security-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { throw FixtureError(message: "mkdtemp failed") }
    return String(cString: made)
}

/// Runs `body` with the default keychain in a fresh directory: `P11KEYCHAIN_DIR` set to it
/// and `P11KEYCHAIN_CONF` to `configuration` (`/dev/null` by default), as the PKCS#11 module
/// would see them. Holds a process-wide lock meanwhile: Swift Testing runs the suites of every
/// test target of the package in one process, in parallel, and the environment is shared.
func withDefaultKeychain(configuration: String = "/dev/null", _ body: (String) throws -> Void) throws {
    try EnvironmentLock.withLock {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let saved = (["P11KEYCHAIN_DIR", "P11KEYCHAIN_CONF"] as [String]).map {
            ($0, getenv($0).map { String(cString: $0) })
        }
        defer {
            for (name, value) in saved {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
        }
        setenv("P11KEYCHAIN_DIR", directory, 1)
        setenv("P11KEYCHAIN_CONF", configuration, 1)
        try body(directory)
    }
}

/// A process-wide lock on the environment: `flock` on a file in the temporary directory,
/// which conflicts between separate opens even within one process, so test targets that
/// share no code still exclude each other.
enum EnvironmentLock {
    static func withLock<T>(_ body: () throws -> T) throws -> T {
        let fd = open(
            NSTemporaryDirectory() + "/p11keychain-tests-environment.lock", O_CREAT | O_RDWR | O_CLOEXEC,
            0o600)
        guard fd >= 0 else { throw FixtureError(message: "cannot open the environment lock file") }
        defer { close(fd) }
        flock(fd, LOCK_EX)
        defer { flock(fd, LOCK_UN) }
        return try body()
    }
}

/// Adds a fixture certificate to the default keychain, optionally with a label.
@discardableResult
func add(_ fixture: Fixture, label: String? = nil) throws -> OSStatus {
    var attributes: [String: Any] = [
        kSecClass as String: kSecClassCertificate, kSecValueRef as String: try fixture.certificate,
    ]
    if let label { attributes[kSecAttrLabel as String] = label }
    return SecItemAdd(attributes as CFDictionary, nil)
}

/// The labels of every certificate in the default keychain, in the order added.
func storedLabels() -> [String] {
    var result: CFTypeRef?
    let query: [String: Any] = [
        kSecClass as String: kSecClassCertificate, kSecMatchLimit as String: kSecMatchLimitAll,
        kSecReturnAttributes as String: true,
    ]
    guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess,
        let items = result as? [[String: Any]]
    else { return [] }
    return items.compactMap { $0[kSecAttrLabel as String] as? String }
}

/// The built PKCS#11 module: `$P11KEYCHAIN_TEST_MODULE`, else `libp11keychain-pkcs11.so`
/// next to the test bundle (`swift build --build-tests` and `swift test` build it there).
func modulePath() throws -> String {
    if let explicit = ProcessInfo.processInfo.environment["P11KEYCHAIN_TEST_MODULE"], !explicit.isEmpty {
        return explicit
    }
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let path = executable.deletingLastPathComponent().appendingPathComponent("libp11keychain-pkcs11.so").path
    guard FileManager.default.fileExists(atPath: path) else {
        throw FixtureError(
            message: "no \(path): build it with `swift build --build-tests` or set P11KEYCHAIN_TEST_MODULE")
    }
    return path
}

/// Runs `p11tool` with the PKCS#11 module on the keychain in `directory`; returns its exit
/// status and output (stdout and stderr).
func p11tool(_ arguments: [String], keychainDirectory directory: String) throws -> (
    status: Int32, output: String
) {
    let result = try runProgram(
        "/usr/bin/p11tool", ["--provider", try modulePath(), "--batch"] + arguments,
        environment: [
            "P11KEYCHAIN_DIR": directory, "P11KEYCHAIN_CONF": "/dev/null",
            "PATH": "/usr/bin:/bin", "HOME": directory,
        ],
        mergingErrors: true)
    return (result.status, result.output)
}

extension Data {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}
