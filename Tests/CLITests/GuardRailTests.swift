import Foundation
import Testing

// Guard rails: what the CLI says when a habit would go wrong later, or a name is wrong now.

@Suite("guard rails")
struct GuardRailTests {
    @Test(
        "generate-key --type ed25519 succeeds and warns about Debian 12's OpenSSL engine, naming the workaround"
    )
    func ed25519Note() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let outcome = try sandbox.p11keychain("generate-key", "--type", "ed25519", "-l", "edwards")
        #expect(outcome.status == 0, "\(outcome.error)")
        #expect(outcome.error.contains("libp11 0.4.12"), "\(outcome.error)")
        #expect(outcome.error.contains("--token NAME"), "\(outcome.error)")
        let ec = try sandbox.p11keychain("generate-key", "--type", "ec", "-l", "elliptic")
        #expect(ec.status == 0 && ec.error.isEmpty, "\(ec.error)")
    }

    @Test("an unknown token name says which tokens there are, not to check a directory")
    func unknownToken() throws {
        let sandbox = try Sandbox()
        let outcome = try sandbox.p11keychain("--token", "wrok", "find-certificate")
        #expect(outcome.failed(with: 1))
        #expect(outcome.error.contains("cannot open token \"wrok\""), "\(outcome.error)")
        #expect(outcome.error.contains("p11keychain list-tokens"))
        #expect(!outcome.error.contains("directory"), "\(outcome.error)")
    }
}
