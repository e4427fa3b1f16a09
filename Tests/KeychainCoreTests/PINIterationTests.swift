import Foundation
import KeychainCore
import KeychainStorage
import Testing

/// The PBKDF2 cost of a PIN: `pin-iterations` in the file, `$P11KEYCHAIN_PIN_ITERATIONS` over
/// it, 600,000 when neither says, and always the count written in the PIN's own record.
@Suite("The PIN's key derivation cost")
struct PINIterationTests {
    /// The iteration count written in the store's PIN record `name` (`so.pin`, `user.pin`):
    /// its first four bytes, little-endian.
    private func storedIterations(_ name: String, in path: String) throws -> UInt32 {
        let store = try ObjectStore(path: path, create: false)
        let record = try #require(try store.metadata(name), "no \(name) record")
        try #require(record.count > 4)
        return record.prefix(4).reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    @Test("with neither the file nor the environment saying, every token derives PINs 600,000 times")
    func defaultCount() throws {
        let configuration = try Configuration.load(environment: [
            "P11KEYCHAIN_CONF": "/dev/null", "HOME": "/h",
        ])
        #expect(Configuration.defaultPINIterations == 600_000)
        #expect(configuration.pinIterations == 600_000)
        #expect(configuration.tokens.map(\.pinIterations) == [600_000])
        #expect(TokenConfiguration(name: "a", path: "/a").pinIterations == 600_000)
    }

    @Test("pin-iterations in the file sets every token's count; the environment's value wins over it")
    func fileAndEnvironment() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("p11keychain.conf")
            try "pin-iterations = 2000\n[token Other]\npath = /o.sqlite3\n".write(
                toFile: path, atomically: true, encoding: .utf8)
            var environment = ["P11KEYCHAIN_CONF": path, "HOME": "/h"]
            let fromFile = try Configuration.load(environment: environment)
            #expect(fromFile.tokens.map(\.pinIterations) == [2000, 2000])
            environment["P11KEYCHAIN_PIN_ITERATIONS"] = "1000"
            let fromEnvironment = try Configuration.load(environment: environment)
            #expect(fromEnvironment.pinIterations == 1000)
            #expect(fromEnvironment.tokens.map(\.pinIterations) == [1000, 1000])
            environment["P11KEYCHAIN_PIN_ITERATIONS"] = ""
            #expect(
                try Configuration.load(environment: environment).tokens.map(\.pinIterations) == [2000, 2000])
        }
    }

    @Test(
        "a count that is not a number from 1,000 to 10,000,000 is an error naming the line or the variable",
        arguments: ["999", "10000001", "0", "-600000", "many", "6e5", "9223372036854775808"])
    func badCount(_ value: String) throws {
        do {
            var configuration = try Configuration.load(environment: ["P11KEYCHAIN_CONF": "/dev/null"])
            try configuration.apply("debug = no\npin-iterations = \(value)\n", file: "t.conf", home: "/h")
            Issue.record("pin-iterations = \(value) was accepted")
        } catch {
            #expect(
                error.line == 2 && error.description.contains("'pin-iterations' must be a number from 1000"))
        }
        expectBadVariable(value)
    }

    @Test("white space around the variable's count is part of it, and refused")
    func spacedVariable() {
        expectBadVariable("600000 ")
        expectBadVariable(" 1000")
    }

    private func expectBadVariable(_ value: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try Configuration.load(
                environment: ["P11KEYCHAIN_CONF": "/dev/null", "P11KEYCHAIN_PIN_ITERATIONS": value])
            Issue.record("P11KEYCHAIN_PIN_ITERATIONS=\(value) was accepted", sourceLocation: sourceLocation)
        } catch {
            #expect(
                error.description.hasPrefix("$P11KEYCHAIN_PIN_ITERATIONS: must be a number from 1000"),
                "\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test("each PIN record names the count it was made with, and opens under any later setting")
    func recordKeepsItsCount() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("token.sqlite3")
            var cheap = TokenConfiguration(name: "t", path: path)
            cheap.pinIterations = 1000
            let first = Token(configuration: cheap)
            try first.initialize(securityOfficerPIN: bytes("so-pin-0000"), label: "t")
            try first.logIn(.securityOfficer, pin: bytes("so-pin-0000"))
            #expect(try storedIterations("so.pin", in: path) == 1000)

            var dearer = TokenConfiguration(name: "t", path: path)
            dearer.pinIterations = 1500
            let second = Token(configuration: dearer)
            try second.logIn(.securityOfficer, pin: bytes("so-pin-0000"))
            try second.initializeUserPIN(bytes("user-pin-0000"))
            #expect(try storedIterations("user.pin", in: path) == 1500)
            #expect(try storedIterations("so.pin", in: path) == 1000, "a login rewrites no record")
            second.logOut()

            first.logOut()
            try first.logIn(.user, pin: bytes("user-pin-0000"))
            try first.changePIN(from: bytes("user-pin-0000"), to: bytes("user-pin-1111"))
            #expect(try storedIterations("user.pin", in: path) == 1000, "C_SetPIN takes its process's count")
            first.logOut()
            try second.logIn(.user, pin: bytes("user-pin-1111"))
        }
    }
}
