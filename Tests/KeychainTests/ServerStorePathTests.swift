import Foundation
import Keychain
import Testing

/// A keychain stored in PostgreSQL names its store without the password its connection
/// string may hold (ARCHITECTURE.md §4.5). Needs a server: `scripts/pg-test-cluster.sh run
/// swift test …` names one in `P11KEYCHAIN_TEST_POSTGRES`.
@Suite("Where a keychain stored in PostgreSQL is")
struct ServerStorePathTests {
    @Test("Keychain.path and configuredTokens name the server's host, database and user, never the password")
    func pathHasNoPassword() throws {
        guard let conninfo = ProcessInfo.processInfo.environment["P11KEYCHAIN_TEST_POSTGRES"] else {
            throw TestFailure(
                "P11KEYCHAIN_TEST_POSTGRES is not set: run under scripts/pg-test-cluster.sh run swift test …")
        }
        let token = "path_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let secret = "never-shown-Hq4"
        let directory = try TemporaryDirectory()
        defer {
            directory.remove()
            _ = try? runProgram(
                "psql", [conninfo, "-qtAX", "-c", "DROP SCHEMA IF EXISTS \"\(token)\" CASCADE"])
        }
        let configuration = directory.file("p11keychain.conf")
        try "[token \(token)]\nstore = postgresql:\(conninfo) password=\(secret)\n"
            .write(toFile: configuration, atomically: true, encoding: .utf8)
        try withKeychainEnvironment(configuration: configuration) { _ in
            let keychain = try Keychain(tokenNamed: token)
            #expect(keychain.path.hasPrefix("postgresql:"), "\(keychain.path)")
            #expect(keychain.path.contains("user=p11keychain"), "\(keychain.path)")
            #expect(!keychain.path.contains(secret), "\(keychain.path)")
            let info = try #require(try Keychain.configuredTokens().first { $0.name == token })
            #expect(info.path == keychain.path)
        }
    }
}
