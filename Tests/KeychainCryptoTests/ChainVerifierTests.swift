import Foundation
import KeychainCrypto
import Testing

/// One chain of `Tests/Fixtures/trust`, the policy it is checked under, and the verdict
/// expected: the first reason, or nil for trusted. `openssl` is the same check as
/// `openssl verify` options.
struct ChainCase: Sendable, CustomTestStringConvertible {
    var name: String
    var leaf: String
    var untrusted: [String] = ["intermediate"]
    var anchors: [String] = ["root"]
    var policy = ChainPolicy()
    var openssl: [String] = []
    var expected: ChainFailure.Reason?

    var testDescription: String { name }

    static let all: [ChainCase] = [
        ChainCase(name: "a leaf under an anchored root is trusted", leaf: "leaf"),
        ChainCase(
            name: "the SSL policy accepts the right host name", leaf: "leaf",
            policy: ChainPolicy(purpose: .serverAuth, hostName: "www.example.test"),
            openssl: ["-purpose", "sslserver", "-verify_hostname", "www.example.test"]),
        ChainCase(
            name: "the SSL policy refuses a wrong host name", leaf: "leaf",
            policy: ChainPolicy(purpose: .serverAuth, hostName: "mail.example.test"),
            openssl: ["-purpose", "sslserver", "-verify_hostname", "mail.example.test"],
            expected: .hostNameMismatch),
        ChainCase(
            name: "a wildcard matches one left-most label", leaf: "leaf",
            policy: ChainPolicy(purpose: .serverAuth, hostName: "a.wild.example.test"),
            openssl: ["-purpose", "sslserver", "-verify_hostname", "a.wild.example.test"]),
        ChainCase(
            name: "a wildcard does not match two labels", leaf: "leaf",
            policy: ChainPolicy(purpose: .serverAuth, hostName: "a.b.wild.example.test"),
            openssl: ["-purpose", "sslserver", "-verify_hostname", "a.b.wild.example.test"],
            expected: .hostNameMismatch),
        ChainCase(
            name: "an IP address matches an iPAddress name", leaf: "leaf",
            policy: ChainPolicy(purpose: .serverAuth, hostName: "127.0.0.1"),
            openssl: ["-purpose", "sslserver", "-verify_ip", "127.0.0.1"]),
        ChainCase(
            name: "an IP address does not match a DNS name spelling it", leaf: "dns-ip",
            policy: ChainPolicy(purpose: .serverAuth, hostName: "10.0.0.1"),
            openssl: ["-purpose", "sslserver", "-verify_ip", "10.0.0.1"], expected: .hostNameMismatch),
        ChainCase(name: "an expired leaf is refused", leaf: "expired", expected: .expired),
        ChainCase(name: "a not yet valid leaf is refused", leaf: "future", expected: .notYetValid),
        ChainCase(
            name: "a client-only leaf is refused for server authentication", leaf: "client",
            policy: ChainPolicy(purpose: .serverAuth), openssl: ["-purpose", "sslserver"],
            expected: .wrongPurpose),
        ChainCase(
            name: "an unknown critical extension is refused", leaf: "critical",
            expected: .unknownCriticalExtension),
        ChainCase(
            name: "a loop of CAs ends without an anchor", leaf: "loop-leaf", untrusted: ["loop"],
            expected: .missingIssuer),
        ChainCase(
            name: "a chain deeper than the bound is refused", leaf: "deep-leaf", untrusted: ["deep-chain"],
            openssl: ["-verify_depth", "10"], expected: .chainTooLong),
        ChainCase(
            name: "a name outside the issuer's name constraints is refused", leaf: "denied",
            untrusted: ["constrained"], expected: .nameConstraintViolation),
        ChainCase(
            name: "a name inside the name constraints is trusted", leaf: "allowed", untrusted: ["constrained"]
        ),
        ChainCase(
            name: "a leaf under another root is refused", leaf: "other-leaf", untrusted: [],
            expected: .missingIssuer),
        ChainCase(
            name: "an intermediate given as anchor is enough", leaf: "leaf", untrusted: [],
            anchors: ["intermediate"]),
    ]
}

@Suite struct ChainVerifierTests {
    static func verifiable(_ names: [String]) throws -> [VerifiableCertificate] {
        try names.flatMap { try TrustFixtures.certificates($0) }.map { try VerifiableCertificate(der: $0) }
    }

    static func verify(_ chainCase: ChainCase, distrusted: Set<[UInt8]> = []) throws -> ChainVerification {
        let leaf = try VerifiableCertificate(der: TrustFixtures.certificate(chainCase.leaf))
        return try ChainVerifier.verify(
            leaf, intermediates: verifiable(chainCase.untrusted),
            anchors: TrustAnchorStore(verifiable(chainCase.anchors)), distrusted: distrusted,
            policy: chainCase.policy)
    }

    @Test("each chain gets the expected verdict, the one openssl verify gives", arguments: ChainCase.all)
    func verdictAgreesWithOpenSSL(_ chainCase: ChainCase) throws {
        let result = try Self.verify(chainCase)
        #expect(result.failures.first?.reason == chainCase.expected, "\(result.failures)")
        #expect(result.isTrusted == (chainCase.expected == nil))
        let reference = try TrustFixtures.opensslVerify(
            chainCase.leaf, untrusted: chainCase.untrusted, anchors: chainCase.anchors,
            options: chainCase.openssl)
        #expect(
            result.failures.first?.code == reference, "openssl verify says \(String(describing: reference))")
    }

    @Test func trustedChainRunsFromLeafToAnchor() throws {
        let result = try Self.verify(ChainCase(name: "", leaf: "leaf"))
        let expected = try ["leaf", "intermediate", "root"].map { try TrustFixtures.certificate($0) }
        #expect(result.chain == expected)
        #expect(result.reachedAnchor)
    }

    @Test func distrustWinsOverBeingAnAnchor() throws {
        let root = try VerifiableCertificate(der: TrustFixtures.certificate("root"))
        let result = try Self.verify(ChainCase(name: "", leaf: "leaf"), distrusted: [root.fingerprint])
        #expect(result.failures.map(\.reason) == [.distrusted])
        #expect(result.failures.first?.depth == 2)
        #expect(!result.isTrusted)
    }

    @Test func distrustedIntermediateFailsTheChain() throws {
        let intermediate = try VerifiableCertificate(der: TrustFixtures.certificate("intermediate"))
        let result = try Self.verify(
            ChainCase(name: "", leaf: "leaf"), distrusted: [intermediate.fingerprint])
        #expect(result.failures.map(\.reason) == [.distrusted])
        #expect(result.failures.first?.depth == 1)
    }

    @Test func everyReasonIsReportedNotOnlyTheFirst() throws {
        let chainCase = ChainCase(
            name: "", leaf: "expired",
            policy: ChainPolicy(purpose: .serverAuth, hostName: "wrong.example.test"))
        let reasons = try Self.verify(chainCase).failures.map(\.reason)
        #expect(reasons.contains(.expired))
        #expect(reasons.contains(.hostNameMismatch))
    }

    @Test func verifyTimeDecidesValidity() throws {
        // 2020-06-01: the expired leaf was valid then; 2095: the future one is.
        var expired = ChainCase(name: "", leaf: "expired")
        expired.policy.verifyTime = 1_590_969_600
        #expect(try Self.verify(expired).isTrusted)
        var future = ChainCase(name: "", leaf: "future")
        future.policy.verifyTime = 3_944_678_400
        #expect(try Self.verify(future).isTrusted)
        future.policy.verifyTime = 4_102_444_800 + 86_400 * 365  // after every notAfter
        #expect(try Self.verify(future).failures.first?.reason == .expired)
    }

    @Test func oversizeInputIsRefusedBeforeOpenSSLSeesIt() throws {
        let leaf = try VerifiableCertificate(der: TrustFixtures.certificate("leaf"))
        let intermediate = try VerifiableCertificate(der: TrustFixtures.certificate("intermediate"))
        let many = Array(repeating: intermediate, count: ChainVerifier.maximumInputCertificates)
        let result = try ChainVerifier.verify(
            leaf, intermediates: many, anchors: TrustAnchorStore(Self.verifiable(["root"])),
            policy: ChainPolicy())
        #expect(result.failures.map(\.reason) == [.chainTooLong])
    }

    @Test func noAnchorsMeansNoTrust() throws {
        let result = try Self.verify(ChainCase(name: "", leaf: "leaf", anchors: []))
        #expect(result.failures.first?.reason == .missingIssuer)
        #expect(!result.reachedAnchor)
    }

    @Test func codeSigningNeedsTheCodeSigningUsage() throws {
        let result = try Self.verify(
            ChainCase(name: "", leaf: "leaf", policy: ChainPolicy(purpose: .codeSigning)))
        #expect(result.failures.map(\.reason) == [.wrongPurpose])
    }

    @Test func malformedCertificateIsRefusedAtDecoding() throws {
        var der = try TrustFixtures.certificate("leaf")
        der.removeLast()
        #expect(throws: CryptoError.self) { try VerifiableCertificate(der: der) }
        #expect(throws: CryptoError.self) { try VerifiableCertificate(der: []) }
        #expect(throws: CryptoError.self) { try VerifiableCertificate(der: der + [0, 0]) }
    }

    @Test func hostNameWithNULIsRefused() throws {
        let chainCase = ChainCase(
            name: "", leaf: "leaf", policy: ChainPolicy(hostName: "www.example.test\u{0}.evil"))
        #expect(throws: CryptoError.self) { try Self.verify(chainCase) }
    }

    @Test func systemBundleLoadsEveryCertificate() throws {
        let path = "/etc/ssl/certs/ca-certificates.crt"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let count = text.components(separatedBy: "-----BEGIN CERTIFICATE-----").count - 1
        let loaded = try VerifiableCertificate.certificates(inPEMFile: path)
        #expect(loaded.count == count)
        #expect(count > 100)
        #expect(throws: CryptoError.self) {
            try VerifiableCertificate.certificates(inPEMFile: "/nonexistent/x.pem")
        }
    }
}
