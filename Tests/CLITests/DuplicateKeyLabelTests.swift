import Foundation
import Testing

// Keys that share a label: stored (labels need not be unique, as on Apple and in PKCS#11),
// with a warning from generate-key and import that --allow-duplicate silences.

@Suite("duplicate key labels")
struct DuplicateKeyLabelTests {
    @Test("a second key pair with a used label is stored with a warning naming the other key's ID")
    func secondPairWarns() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let first = try sandbox.p11keychain("generate-key", "--type", "ec", "-l", "web")
        #expect(first.status == 0, "\(first.error)")
        #expect(first.error.isEmpty, "a first key with its label: \(first.error)")
        let firstID = try #require(first.printedKeyID)

        let second = try sandbox.p11keychain("generate-key", "--type", "ec", "-l", "web")
        #expect(second.status == 0, "\(second.error)")
        let secondID = try #require(second.printedKeyID)
        #expect(
            second.error
                == "warning: 1 other key labeled \"web\" already (id \(firstID)): -l web and the URI's object= "
                + "now match several keys; choose this one by --id \(secondID), or give --allow-duplicate "
                + "if that is meant\n")
        let listed = try sandbox.p11keychain("find-key", "-l", "web", "--class", "private")
        #expect(listed.output.contains(firstID) && listed.output.contains(secondID), "\(listed.output)")
    }

    @Test("--allow-duplicate stores the key without a word on standard error")
    func allowDuplicateIsSilent() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        #expect(try sandbox.p11keychain("generate-key", "--type", "aes:128", "-l", "data").status == 0)
        let pair = try sandbox.p11keychain("generate-key", "--type", "rsa", "-l", "data", "--allow-duplicate")
        #expect(pair.status == 0, "\(pair.error)")
        #expect(pair.error.isEmpty, "\(pair.error)")
        let secret = try sandbox.p11keychain("generate-key", "--type", "aes:256", "-l", "data")
        #expect(secret.status == 0, "\(secret.error)")
        #expect(secret.error.hasPrefix("warning: 2 other keys labeled \"data\" already"), "\(secret.error)")
    }

    @Test("import warns when its key's label is another key's, and not when it imports the same file again")
    func importWarns() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        let files = try sandbox.pkcs12("Person", kind: .ec, passphrase: "p12 secret")
        let first = try sandbox.p11keychain("import", files.p12, "--passphrase", "p12 secret", "-l", "me")
        #expect(first.status == 0, "\(first.error)")
        #expect(first.error.isEmpty, "\(first.error)")
        let again = try sandbox.p11keychain("import", files.p12, "--passphrase", "p12 secret", "-l", "me")
        #expect(again.status == 0, "\(again.error)")
        #expect(again.error.isEmpty, "the same key again is no duplicate: \(again.error)")

        #expect(try sandbox.p11keychain("generate-key", "--type", "ec", "-l", "other").status == 0)
        let other = try sandbox.pkcs12("Other", kind: .ec, passphrase: "p12 secret")
        let clash = try sandbox.p11keychain("import", other.p12, "--passphrase", "p12 secret", "-l", "other")
        #expect(clash.status == 0, "\(clash.error)")
        #expect(clash.error.hasPrefix("warning: 1 other key labeled \"other\" already"), "\(clash.error)")
        let quiet = try sandbox.p11keychain(
            "import", other.p12, "--passphrase", "p12 secret", "-l", "other", "--allow-duplicate")
        #expect(quiet.status == 0, "\(quiet.error)")
        #expect(quiet.error.isEmpty, "\(quiet.error)")
    }
}
