import Foundation
import Keychain
import Testing

/// A keychain opened by path, which no configuration section names, takes its PIN cost from
/// its opener (the CLI passes the configuration's `pin-iterations`), else the environment.
@Suite("The PIN cost of a keychain opened by path")
struct PathKeychainPINCostTests {
    /// The iteration count in the store's PIN record `name`, as the hex of its first four
    /// bytes (little-endian), read with sqlite3.
    private func storedCount(_ name: String, in path: String) throws -> String {
        let query = "SELECT hex(substr(value, 1, 4)) FROM metadata WHERE name = '\(name)'"
        let result = try runProgram("/usr/bin/sqlite3", [path, query])
        #expect(result.status == 0, "\(result.error)")
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(
        "Keychain(path:pinIterations:) derives its PINs' keys that many times; a count out of range is refused"
    )
    func explicitCount() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("k.sqlite3")
            let keychain = try Keychain(path: path, createIfMissing: true, pinIterations: 1500)
            try keychain.initialize(securityOfficerPIN: "12345678", label: "k")
            try keychain.setUserPIN("1234", securityOfficerPIN: "12345678")
            #expect(try storedCount("so.pin", in: path) == "DC050000", "1,500 little-endian")
            #expect(try storedCount("user.pin", in: path) == "DC050000")
            for bad in [0, 999, 10_000_001] {
                do {
                    _ = try Keychain(path: path, pinIterations: bad)
                    Issue.record("pinIterations \(bad) was accepted")
                } catch let error as KeychainError {
                    #expect(error.code == .parameter && error.message.contains("1000 to 10000000"))
                }
            }
        }
    }
}
