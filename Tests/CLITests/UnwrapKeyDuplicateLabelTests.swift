import Foundation
import Testing

// unwrap-key names the key it stores by a label as generate-key does, so it warns as
// generate-key does when another key has that label, and --allow-duplicate silences it.

@Suite("unwrap-key and duplicate labels")
struct UnwrapKeyDuplicateLabelTests {
    @Test("unwrap-key -l with another key's label stores the key and warns; --allow-duplicate is silent")
    func unwrapWarns() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        for arguments in [
            ["generate-key", "--type", "aes:256", "--wrap-key", "-l", "backup"],
            ["generate-key", "--type", "aes:128", "--extractable", "-l", "data"],
            ["wrap-key", "-l", "data", "--wrapping-key", "backup", "-o", sandbox.path + "/data.wrapped"],
        ] {
            let outcome = try sandbox.run(Built.program, arguments)
            #expect(outcome.status == 0, "\(arguments): \(outcome.error)")
        }
        let web = try sandbox.p11keychain("generate-key", "--type", "ec", "-l", "web")
        let webID = try #require(web.printedKeyID)

        let clash = try sandbox.p11keychain(
            "unwrap-key", "-i", sandbox.path + "/data.wrapped", "--wrapping-key", "backup", "-l", "web")
        #expect(clash.status == 0, "\(clash.error)")
        #expect(
            clash.error.hasPrefix("warning: 1 other key labeled \"web\" already (id \(webID))"),
            "\(clash.error)")

        let quiet = try sandbox.p11keychain(
            "unwrap-key", "-i", sandbox.path + "/data.wrapped", "--wrapping-key", "backup", "-l", "web",
            "--allow-duplicate")
        #expect(quiet.status == 0, "\(quiet.error)")
        #expect(quiet.error.isEmpty, "\(quiet.error)")
    }
}
