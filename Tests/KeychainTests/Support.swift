import Foundation
import Keychain
@_exported import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The test certificates of `Tests/Fixtures` (see its README).
enum Fixture: String, CaseIterable {
    case ca, alice, bob, nocn, printable

    var pem: String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures").appendingPathComponent(rawValue + ".pem")
        return (try? String(contentsOf: url, encoding: .utf8)) ?? ""
    }

    var certificate: Certificate {
        get throws { try Certificate(pemEncoded: pem) }
    }
}

/// A new keychain in its own temporary store, opened by path: no process environment is
/// involved, so these tests run in parallel.
func withTemporaryKeychain(_ body: (Keychain, TemporaryDirectory) throws -> Void) throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let keychain = try Keychain(path: directory.path + "/test.sqlite3", createIfMissing: true)
    try body(keychain, directory)
}

/// Runs `body` with `P11KEYCHAIN_DIR` set to a fresh directory and `P11KEYCHAIN_CONF` to
/// `configuration` (default `/dev/null`), holding a lock that every test target of this
/// package that changes the process environment takes: Swift Testing runs suites of all
/// targets in one process, in parallel.
func withKeychainEnvironment(configuration: String = "/dev/null", _ body: (String) throws -> Void) throws {
    try EnvironmentLock.withLock {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let saved = (["P11KEYCHAIN_DIR", "P11KEYCHAIN_CONF"] as [String]).map {
            ($0, getenv($0).map { String(cString: $0) })
        }
        defer {
            for (name, value) in saved {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
        }
        setenv("P11KEYCHAIN_DIR", directory.path, 1)
        setenv("P11KEYCHAIN_CONF", configuration, 1)
        try body(directory.path)
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
        guard fd >= 0 else { throw KeychainError(.io, "cannot open the environment lock file") }
        defer { close(fd) }
        flock(fd, LOCK_EX)
        defer { flock(fd, LOCK_UN) }
        return try body()
    }
}

extension Array where Element == UInt8 {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}
