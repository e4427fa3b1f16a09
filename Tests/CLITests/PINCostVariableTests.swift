import Foundation
import Testing

// $P11KEYCHAIN_PIN_ITERATIONS that is not a count: every command says which variable and what
// to do, exits 1, and makes no store.

@Suite("a P11KEYCHAIN_PIN_ITERATIONS that is not a count")
struct PINCostVariableTests {
    @Test(
        "every command names the variable and the fix, and no store is made",
        arguments: [["list-tokens"], ["find-certificate", "-a"], ["init", "--so-pin", "12345678"]])
    func badCountIsSaid(_ command: [String]) throws {
        let sandbox = try Sandbox()
        let outcome = try sandbox.run(
            Built.program, command, environment: ["P11KEYCHAIN_PIN_ITERATIONS": "12"])
        #expect(outcome.failed(with: 1), "\(command): \(outcome.error)")
        #expect(
            outcome.error.hasSuffix(
                "$P11KEYCHAIN_PIN_ITERATIONS: must be a number from 1000 to 10000000, not '12' "
                    + "(set it to a number from 1000 to 10000000, or unset it for the default)\n"),
            "\(command): \(outcome.error)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.defaultStore), "\(command)")
    }
}
