import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// KeychainCrypto's OpenSSL work runs in a library context of its own (ARCHITECTURE.md
/// §6.9): a host whose OpenSSL configuration leaves the default context unable to do
/// anything (here: only the null provider activated) must not stop it. OpenSSL reads its
/// configuration once per process, so the operations run in a child process,
/// `crypto-context-probe`, started with that configuration.
@Suite struct LibraryContextTests {
    /// A configuration whose default context has the null provider alone: no digest, cipher,
    /// KDF, key manager or random generator can be fetched from it.
    static let nullProviderConfiguration = """
        openssl_conf = openssl_init
        [openssl_init]
        providers = provider_sect
        [provider_sect]
        null = null_sect
        [null_sect]
        activate = 1

        """

    @Test(
        "with a host configuration that leaves OpenSSL's default context empty, every crypto operation still works"
    )
    func operationsIgnoreTheHostConfiguration() throws {
        try withTemporaryDirectory { directory in
            let configuration = directory.file("null-only.cnf")
            try Self.nullProviderConfiguration.write(toFile: configuration, atomically: true, encoding: .utf8)
            // The configuration is hostile indeed: OpenSSL's own tool cannot hash with it.
            let hostile = try Child.run(
                "/usr/bin/openssl", ["dgst", "-sha256", configuration], ["OPENSSL_CONF": configuration])
            #expect(hostile.status != 0)

            try OpenSSL.run(
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", "key.pem", "-out", "cert.pem", "-subj", "/CN=probe", "-days", "1",
                ], in: directory)
            try OpenSSL.run(
                [
                    "pkcs12", "-export", "-inkey", "key.pem", "-in", "cert.pem", "-out", "probe.p12",
                    "-passout", "pass:probe secret",
                ], in: directory)

            let probe = Built.directory + "/crypto-context-probe"
            #expect(access(probe, X_OK) == 0, "the probe is built with the tests")
            let outcome = try Child.run(
                probe, [directory.file("probe.p12"), "probe secret"], ["OPENSSL_CONF": configuration])
            let lines = outcome.output.split(separator: "\n")
            #expect(lines.count == 11, "\(outcome.output)")
            for line in lines { #expect(line.hasSuffix(": ok"), "\(line)") }
            #expect(outcome.status == 0, "\(outcome.output)")
        }
    }
}

/// What `swift build --build-tests` puts next to this test bundle.
enum Built {
    static var directory: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent().path
    }
}

/// A child process run to its end, its output read from a file (no pipe can fill up).
enum Child {
    struct Outcome {
        var status: Int32
        var output: String
    }

    static func run(_ executable: String, _ arguments: [String], _ environment: [String: String]) throws
        -> Outcome
    {
        let result = try runProgram(
            executable, arguments, environment: ["PATH": "/usr/bin:/bin"].merging(environment) { $1 },
            mergingErrors: true)
        return Outcome(status: result.status, output: result.output)
    }
}
