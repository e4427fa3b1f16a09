import Foundation
import Keychain
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The certificates of Tests/Fixtures/trust, typed.
private func certificates(_ names: String...) throws -> [Certificate] {
    try names.flatMap { try TrustFixtures.certificates($0) }.map { try Certificate(derEncoded: $0) }
}

/// The code of the error `body` throws; nil when it throws none.
private func code(of body: () throws(KeychainError) -> Void) -> KeychainError.Code? {
    do {
        try body()
        return nil
    } catch {
        return error.code
    }
}

/// `withTemporaryKeychain` holding `EnvironmentLock`, for the tests whose evaluations read the
/// system's anchors: other tests (`systemBundleReload`, the Apple snippets' trust tests) point
/// P11KEYCHAIN_SYSTEM_ANCHORS at bundles of these fixtures' roots while they run, in parallel,
/// and a basic-policy evaluation then found `root` there.
private func withSystemAnchorsStable(_ body: (Keychain, TemporaryDirectory) throws -> Void) throws {
    try EnvironmentLock.withLock { try withTemporaryKeychain(body) }
}

@Suite("trust settings and evaluation (typed API)")
struct TrustTests {
    @Test("settings are kept per purpose, merged by setTrust and removed whole")
    func settingsRoundTrip() throws {
        try withTemporaryKeychain { keychain, _ in
            let root = try certificates("root")[0]
            try keychain.add(root)
            #expect(try keychain.trustSettings(for: root) == .unspecified)
            try keychain.setTrust(.trustedAnchor, for: root, purposes: [.serverAuth])
            try keychain.setTrust(.distrusted, for: root, purposes: [.emailProtection])
            let settings = try keychain.trustSettings(for: root)
            #expect(settings.disposition(for: .serverAuth) == .trustedAnchor)
            #expect(settings.disposition(for: .emailProtection) == .distrusted)
            #expect(settings.disposition(for: .clientAuth) == .unspecified)
            #expect(try keychain.certificatesWithTrustSettings().map(\.certificate) == [root])
            try keychain.removeTrustSettings(for: root)
            #expect(try keychain.trustSettings(for: root).isUnspecified)
            #expect(try keychain.certificatesWithTrustSettings().isEmpty)
        }
    }

    @Test("a trust setting on a certificate the keychain does not hold is itemNotFound, and writes nothing")
    func notInKeychain() throws {
        try withTemporaryKeychain { keychain, _ in
            let root = try certificates("root")[0]
            #expect(
                code(of: { () throws(KeychainError) in try keychain.setTrust(.trustedAnchor, for: root) })
                    == .itemNotFound)
            #expect(try keychain.certificatesWithTrustSettings().isEmpty)
        }
    }

    @Test("a keychain with a user PIN takes trust changes only unlocked")
    func lockedKeychain() throws {
        try withTemporaryKeychain { keychain, _ in
            let root = try certificates("root")[0]
            try keychain.add(root)
            try keychain.initialize(securityOfficerPIN: "12345678", label: "test")
            try keychain.setUserPIN("1234", securityOfficerPIN: "12345678")
            do throws(KeychainError) {
                try keychain.setTrust(.trustedAnchor, for: root)
                Issue.record("a locked keychain took a trust change")
            } catch {
                #expect(error.code == .interactionNotAllowed)
            }
            #expect(try keychain.trustSettings(for: root).isUnspecified, "nothing was written")
            try keychain.unlock(pin: "1234")
            try keychain.setTrust(.trustedAnchor, for: root)
            #expect(try keychain.trustSettings(for: root).disposition(for: .any) == .trustedAnchor)
        }
    }

    @Test("the keychain's anchor ends the chain and says where it came from")
    func keychainAnchor() throws {
        try withSystemAnchorsStable { keychain, _ in
            let chain = try certificates("leaf", "intermediate")
            let before = try keychain.evaluate(chain: chain, policy: .ssl(hostName: "www.example.test"))
            #expect(!before.isTrusted)
            #expect(before.anchorSource == nil)
            #expect(before.failures.first?.reason == .missingIssuer)
            let root = try certificates("root")[0]
            try keychain.add(root)
            try keychain.setTrust(.trustedAnchor, for: root, purposes: [.serverAuth])
            let after = try keychain.evaluate(chain: chain, policy: .ssl(hostName: "www.example.test"))
            #expect(after.isTrusted, "\(after.failures)")
            #expect(after.anchorSource == .keychain)
            #expect(after.chain == (try certificates("leaf", "intermediate", "root")))
            // Only for servers: the basic policy finds no anchor.
            #expect(try !keychain.evaluate(chain: chain).isTrusted)
        }
    }

    @Test("a root distrusted for the purpose is reported as distrusted even when it is no anchor")
    func distrustedNotAnchor() throws {
        try withSystemAnchorsStable { keychain, _ in
            let root = try certificates("root")[0]
            try keychain.add(root)
            try keychain.setTrust(.distrusted, for: root, purposes: [.serverAuth])
            let result = try keychain.evaluate(
                chain: try certificates("leaf", "intermediate"), policy: .ssl())
            #expect(
                result.failures.contains { $0.reason == .distrusted && $0.depth == 2 }, "\(result.failures)")
            #expect(!result.isRecoverable)
        }
    }

    @Test("a trusted peer is trusted as itself, never as an issuer")
    func trustedPeer() throws {
        try withSystemAnchorsStable { keychain, _ in
            let intermediate = try certificates("intermediate")[0]
            try keychain.add(intermediate)
            try keychain.setTrust(.trustedPeer, for: intermediate)
            #expect(try keychain.evaluate(chain: [intermediate]).isTrusted)
            #expect(try !keychain.evaluate(chain: try certificates("leaf", "intermediate")).isTrusted)
        }
    }

    @Test("an empty chain is a parameter error; an untrusted chain is a result")
    func emptyChain() throws {
        try withSystemAnchorsStable { keychain, _ in
            #expect(
                code(of: { () throws(KeychainError) in _ = try keychain.evaluate(chain: []) }) == .parameter)
            let other = try keychain.evaluate(
                chain: try certificates("other-leaf"), anchors: try certificates("root"))
            #expect(other.failures.map(\.reason) == [.missingIssuer])
        }
    }

    @Test("the system bundle is read again when the file changes")
    func systemBundleReload() throws {
        try EnvironmentLock.withLock {
            try withTemporaryDirectory { directory in
                let bundle = directory.file("system.pem")
                let saved = getenv("P11KEYCHAIN_SYSTEM_ANCHORS").map { String(cString: $0) }
                defer {
                    if let saved {
                        setenv("P11KEYCHAIN_SYSTEM_ANCHORS", saved, 1)
                    } else {
                        unsetenv("P11KEYCHAIN_SYSTEM_ANCHORS")
                    }
                }
                setenv("P11KEYCHAIN_SYSTEM_ANCHORS", bundle, 1)
                let chain = try certificates("leaf", "intermediate")
                try String(contentsOfFile: TrustFixtures.path("other-root"), encoding: .utf8)
                    .write(toFile: bundle, atomically: true, encoding: .utf8)
                #expect(try !Keychain.evaluate(chain: chain).isTrusted)
                try
                    (String(contentsOfFile: TrustFixtures.path("other-root"), encoding: .utf8)
                    + String(contentsOfFile: TrustFixtures.path("root"), encoding: .utf8))
                    .write(toFile: bundle, atomically: true, encoding: .utf8)
                let trusted = try Keychain.evaluate(chain: chain)
                #expect(trusted.isTrusted)
                #expect(trusted.anchorSource == .system)
                // Anchors-only leaves the system out.
                #expect(try !Keychain.evaluate(chain: chain, anchorsOnly: true).isTrusted)
            }
        }
    }
}

@Suite("trust evaluation bad input")
struct TrustBadInputTests {
    // Seconds, not Dates: Foundation's Date.description traps on these, and Swift Testing
    // describes each argument.
    @Test(
        "a verify date no certificate can name is a parameter error, not a trap",
        arguments: [1e300, -1e300, Double.nan, Double.infinity])
    func absurdDates(_ seconds: Double) throws {
        let date = Date(timeIntervalSince1970: seconds)
        let chain = try certificates("leaf", "intermediate")
        let anchors = try certificates("root")
        do throws(KeychainError) {
            _ = try Keychain.evaluate(chain: chain, at: date, anchors: anchors, anchorsOnly: true)
            Issue.record("an absurd date was accepted")
        } catch {
            #expect(error.code == .parameter)
        }
    }
}
