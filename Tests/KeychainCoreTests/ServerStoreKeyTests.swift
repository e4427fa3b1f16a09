import KeychainCore
import Testing

/// A token section's `freshness-ms` and `timeout-ms`: what a server's store may rely on and
/// how long it may wait (ARCHITECTURE.md §4.5, docs/fleet.md).
@Suite struct ServerStoreKeyTests {
    private func configuration(_ text: String) throws -> Configuration {
        var configuration = try Configuration.load(environment: [
            "P11KEYCHAIN_CONF": "/dev/null", "P11KEYCHAIN_DIR": "/data", "HOME": "/h",
        ])
        try configuration.apply(text, file: "a.conf", home: "/h")
        return configuration
    }

    @Test("freshness-ms is 100 and timeout-ms 10000 unless the token's section says otherwise")
    func defaultsAndValues() throws {
        let parsed = try configuration(
            "[token Fleet]\nstore = postgresql:host=db\nfreshness-ms = 0\ntimeout-ms = 2500\n"
                + "[token Other]\nstore = postgresql:host=db\n")
        let fleet = try #require(parsed.tokens.first { $0.name == "Fleet" })
        let other = try #require(parsed.tokens.first { $0.name == "Other" })
        #expect(fleet.freshnessMilliseconds == 0)
        #expect(fleet.timeoutMilliseconds == 2500)
        #expect(other.freshnessMilliseconds == 100)
        #expect(other.timeoutMilliseconds == 10_000)
        #expect(Configuration.defaultFreshnessMilliseconds == 100)
    }

    @Test(
        "freshness-ms outside 0…60000 or timeout-ms outside 1000…600000 is refused with its line and key",
        arguments: [
            ("freshness-ms", "-1"), ("freshness-ms", "60001"), ("freshness-ms", "100ms"),
            ("freshness-ms", ""),
            ("timeout-ms", "999"), ("timeout-ms", "600001"), ("timeout-ms", "0"), ("timeout-ms", "ten"),
        ])
    func badValues(key: String, value: String) throws {
        var configuration = try configuration("")
        do {
            try configuration.apply(
                "[token Fleet]\nstore = postgresql:host=db\n\(key) = \(value)\n", file: "a.conf", home: "/h")
            Issue.record("\(key) = '\(value)' was accepted")
        } catch {
            #expect(error.line == 3)
            #expect(error.reason.contains(key), "\(error)")
        }
    }
}
