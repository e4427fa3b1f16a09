import Foundation
import Testing

// verify-cert on a keychain with a user PIN that is locked: the anchors stored in it do not
// count (docs/token.md, "What a locked process trusts"), so a chain to one fails, exit status 1
// as before, and the error says why and how to unlock.

@Suite("verify-cert on a locked keychain")
struct LockedKeychainVerifyTests {
    @Test("a chain to a stored anchor fails on a locked PIN keychain with a hint to unlock it")
    func lockedHint() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        #expect(try sandbox.p11keychain("add-certificates", Fixture.ca.path).status == 0)
        let trusted = try sandbox.p11keychain("add-trusted-cert", Fixture.ca.path)
        #expect(trusted.status == 0, "\(trusted.error)")

        let locked = try sandbox.p11keychain("verify-cert", "-c", Fixture.alice.path)
        #expect(locked.status == 1)
        #expect(locked.error.contains("certificate verification failed"), "\(locked.error)")
        #expect(
            locked.error.contains("the keychain \"login\" is locked")
                && locked.error.contains("p11keychain unlock"),
            "\(locked.error)")

        // A chain to a root the keychain does not hold gets no such hint.
        let elsewhere = try sandbox.p11keychain("verify-cert", "-c", Fixture.nocn.path)
        #expect(elsewhere.status == 1)
        #expect(!elsewhere.error.contains("is locked"), "\(elsewhere.error)")
    }

    @Test("a keychain without a user PIN gets no hint: its anchors count")
    func noPINNoHint() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.p11keychain("add-certificates", Fixture.ca.path).status == 0)
        let outcome = try sandbox.p11keychain("verify-cert", "-c", Fixture.alice.path)
        #expect(outcome.status == 1)
        #expect(!outcome.error.contains("is locked"), "\(outcome.error)")
    }
}
