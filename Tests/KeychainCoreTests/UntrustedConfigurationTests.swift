import Foundation
import Testing

@testable import KeychainCore

#if canImport(Glibc)
    import Glibc
#endif

/// Seconds of the monotonic clock that `body` took.
private func seconds<T>(_ body: () throws -> T) rethrows -> (T, Double) {
    let start = DispatchTime.now().uptimeNanoseconds
    let result = try body()
    return (result, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
}

/// The configuration file is not trusted, and in a privileged host nothing
/// of the environment is.
@Suite("The configuration file as found, and privileged hosts")
struct UntrustedConfigurationTests {
    /// The error loading `path` as `P11KEYCHAIN_CONF` gives, and how long it took.
    private func loadError(_ path: String) -> (String?, Double) {
        seconds { () -> String? in
            do {
                _ = try Configuration.load(environment: ["P11KEYCHAIN_CONF": path, "HOME": "/home/u"])
                return nil
            } catch let error as Configuration.ParseError {
                return error.description
            } catch {
                return "\(error)"
            }
        }
    }

    @Test(
        "a FIFO as the configuration is refused within a second with an error naming it",
        .timeLimit(.minutes(1)))
    func fifoIsRefused() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("p11keychain.conf")
            #expect(mkfifo(path, 0o600) == 0)
            let (error, elapsed) = loadError(path)
            #expect(error == "\(path): is a FIFO, not a regular file")
            #expect(elapsed < 1)
        }
    }

    @Test(
        "a device or a directory as the configuration is refused, never read",
        .timeLimit(.minutes(1)), arguments: ["/dev/zero", "/dev/urandom", "/"])
    func nonRegularFilesAreRefused(path: String) {
        let (error, elapsed) = loadError(path)
        #expect(error?.hasPrefix("\(path): is a ") == true, "\(error ?? "loaded")")
        #expect(error?.hasSuffix(", not a regular file") == true, "\(error ?? "loaded")")
        #expect(elapsed < 1)
    }

    @Test("a configuration file larger than 1 MiB is refused with its size")
    func largeFileIsRefused() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("p11keychain.conf")
            let text = String(repeating: "# a comment line of padding\n", count: 40_000)
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            let (error, _) = loadError(path)
            #expect(
                error == "\(path): is \(text.utf8.count) bytes; a configuration file may have 1048576 at most"
            )
            // A file of exactly the limit is read.
            try String(text.prefix(Configuration.maximumFileSize)).write(
                toFile: path, atomically: true, encoding: .utf8)
            #expect(loadError(path).0 == nil)
        }
    }

    @Test("/dev/null is an empty configuration, and a missing file none")
    func devNullIsEmpty() throws {
        let configuration = try Configuration.load(environment: [
            "P11KEYCHAIN_CONF": "/dev/null", "HOME": "/h",
        ])
        #expect(configuration.source == "/dev/null")
        #expect(configuration.tokens.count == 1)
    }

    @Test("rsa-pkcs1-decryption is yes unless the file says no")
    func rsaPKCS1Decryption() throws {
        var configuration = try Configuration.load(environment: [
            "P11KEYCHAIN_CONF": "/dev/null", "HOME": "/h",
        ])
        #expect(configuration.allowsRSAPKCS1Decryption)
        try configuration.apply("rsa-pkcs1-decryption = no\n", file: "a.conf", home: "/h")
        #expect(!configuration.allowsRSAPKCS1Decryption)
        try configuration.apply("rsa-pkcs1-decryption = yes\n", file: "a.conf", home: "/h")
        #expect(configuration.allowsRSAPKCS1Decryption)
        #expect(throws: Configuration.ParseError.self) {
            try configuration.apply("\nrsa-pkcs1-decryption = maybe\n", file: "a.conf", home: "/h")
        }
        do {
            try configuration.apply("\nrsa-pkcs1-decryption = maybe\n", file: "a.conf", home: "/h")
        } catch {
            #expect(error.description == "a.conf:2: 'rsa-pkcs1-decryption' must be yes or no, not 'maybe'")
        }
        // A section's key of the same name is not the global one.
        #expect(throws: Configuration.ParseError.self) {
            try configuration.apply("[token login]\nrsa-pkcs1-decryption = no\n", file: "a.conf", home: "/h")
        }
    }

    @Test("the documented example conf/p11keychain.conf parses and keeps PKCS#1 v1.5 decryption on")
    func documentedExampleParses() throws {
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("conf/p11keychain.conf").path
        let configuration = try Configuration.load(environment: ["P11KEYCHAIN_CONF": example, "HOME": "/h"])
        #expect(configuration.source == example)
        #expect(configuration.allowsRSAPKCS1Decryption)
    }

    @Test("in a privileged host every P11KEYCHAIN_* and XDG_* variable and HOME is ignored")
    func privilegedHostIgnoresTheEnvironment() throws {
        try withTemporaryDirectory { directory in
            let conf = directory.file("evil.conf")
            try "debug = yes\nlog-file = /etc/passwd\n[token login]\npath = /tmp/evil.sqlite3\n".write(
                toFile: conf, atomically: true, encoding: .utf8)
            let environment = [
                "P11KEYCHAIN_CONF": conf, "P11KEYCHAIN_DIR": directory.file("dir"), "P11KEYCHAIN_DEBUG": "1",
                "XDG_CONFIG_HOME": directory.path, "XDG_DATA_HOME": directory.path, "HOME": directory.path,
                "P11KEYCHAIN_PIN_ITERATIONS": "1000",
            ]
            let ordinary = try Configuration.load(environment: environment, privileged: false)
            #expect(ordinary.debug && ordinary.logFile == "/etc/passwd" && ordinary.source == conf)
            #expect(ordinary.tokens.map(\.pinIterations) == [1000])

            let privileged = try Configuration.load(environment: environment, privileged: true)
            #expect(!privileged.debug)
            if privileged.source == nil {  // no system file here to set it
                #expect(
                    privileged.tokens.map(\.pinIterations) == [Configuration.defaultPINIterations],
                    "the caller's environment lowered the PIN cost of a privileged host")
            }
            #expect(privileged.logFile == nil)
            #expect(privileged.source == nil || privileged.source == Configuration.systemFile)
            let home = try #require(getpwuid(geteuid())).pointee.pw_dir.map { String(cString: $0) }
            #expect(
                privileged.tokens.map(\.path) == ["\(home ?? "/")/.local/share/p11keychain/login.sqlite3"])
        }
    }

    @Test("this test process is not privileged, so its environment is read")
    func ordinaryProcessIsNotPrivileged() {
        #expect(!Environment.isPrivileged)
        #expect(Environment.current["HOME"] != nil)
    }
}
