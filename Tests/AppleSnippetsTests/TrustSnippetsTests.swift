import Foundation
import Security
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body` with a fresh default keychain and a "system" CA bundle of `systemAnchors`
/// fixtures (none by default), holding the environment lock every test target takes.
func withTrustKeychain(systemAnchors: [String] = [], _ body: () throws -> Void) throws {
    let lock = open(
        NSTemporaryDirectory() + "/p11keychain-tests-environment.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
    guard lock >= 0 else { throw TestFailure("cannot open the environment lock") }
    defer { close(lock) }
    flock(lock, LOCK_EX)
    defer { flock(lock, LOCK_UN) }
    try withTemporaryDirectory { directory in
        let names = ["P11KEYCHAIN_DIR", "P11KEYCHAIN_CONF", "P11KEYCHAIN_SYSTEM_ANCHORS"]
        let saved = names.map { ($0, getenv($0).map { String(cString: $0) }) }
        defer {
            for (name, value) in saved {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
        }
        var bundle = ""
        for name in systemAnchors {
            bundle += try String(contentsOfFile: TrustFixtures.path(name), encoding: .utf8)
        }
        try bundle.write(toFile: directory.file("system.pem"), atomically: true, encoding: .utf8)
        setenv("P11KEYCHAIN_DIR", directory.path, 1)
        setenv("P11KEYCHAIN_CONF", "/dev/null", 1)
        setenv("P11KEYCHAIN_SYSTEM_ANCHORS", directory.file("system.pem"), 1)
        try body()
    }
}

/// The fixture's certificates as SecCertificates.
func certificates(_ names: String...) throws -> [SecCertificate] {
    try names.flatMap { try TrustFixtures.certificates($0) }.map { der in
        try #require(SecCertificateCreateWithData(nil, Data(der) as CFData))
    }
}

@Suite("Apple's trust snippets give Apple's results", .serialized)
struct TrustSnippetsTests {
    /// One Apple-style evaluation, the outcome Apple gives, and the `openssl verify` run on the
    /// same files that must agree on trusted or not.
    struct Sample: Sendable, CustomTestStringConvertible {
        var name: String
        var leaf: String
        var untrusted = ["intermediate"]
        var host: String?
        var code: OSStatus?
        var result: SecTrustResultType
        var openssl: [String] = []
        var testDescription: String { name }
    }

    static let samples = [
        Sample(name: "basic X.509 to a given anchor", leaf: "leaf", result: .unspecified),
        Sample(
            name: "SSL with the right host name", leaf: "leaf", host: "www.example.test",
            result: .unspecified,
            openssl: ["-purpose", "sslserver", "-verify_hostname", "www.example.test"]),
        Sample(
            name: "SSL with a wrong host name", leaf: "leaf", host: "www.example.org",
            code: errSecHostNameMismatch,
            result: .recoverableTrustFailure,
            openssl: ["-purpose", "sslserver", "-verify_hostname", "www.example.org"]),
        Sample(
            name: "SSL to an IP address", leaf: "leaf", host: "127.0.0.1", result: .unspecified,
            openssl: ["-purpose", "sslserver", "-verify_ip", "127.0.0.1"]),
        Sample(
            name: "an expired leaf", leaf: "expired", code: errSecCertificateExpired,
            result: .recoverableTrustFailure),
        Sample(
            name: "a not yet valid leaf", leaf: "future", code: errSecCertificateNotValidYet,
            result: .recoverableTrustFailure),
        Sample(
            name: "a client certificate for a server", leaf: "client", host: "client.example.test",
            code: errSecInvalidExtendedKeyUsage, result: .recoverableTrustFailure,
            openssl: ["-purpose", "sslserver", "-verify_hostname", "client.example.test"]),
        Sample(
            name: "an unknown critical extension", leaf: "critical", code: errSecUnknownCriticalExtensionFlag,
            result: .fatalTrustFailure),
        Sample(
            name: "a leaf of another root", leaf: "other-leaf", untrusted: [], code: errSecNotTrusted,
            result: .recoverableTrustFailure),
    ]

    @Test("each sample gives Apple's outcome, and openssl verify agrees", arguments: samples)
    func sample(_ sample: Sample) throws {
        try withTrustKeychain {
            let chain = try certificates(sample.leaf) + sample.untrusted.flatMap { try certificates($0) }
            let outcome = try evaluate(chain, host: sample.host, anchors: try certificates("root"))
            #expect(outcome.trusted == (sample.code == nil))
            #expect(outcome.code == sample.code.map(Int.init))
            #expect(outcome.result == sample.result)
            let reference = try TrustFixtures.opensslVerify(
                sample.leaf, untrusted: sample.untrusted, anchors: ["root"], options: sample.openssl)
            #expect((reference == nil) == outcome.trusted, "openssl verify: \(String(describing: reference))")
        }
    }

    @Test("the trust builds the chain to the anchor and reports it")
    func chainAndProperties() throws {
        try withTrustKeychain {
            let trust = try makeTrust(
                try certificates("leaf", "intermediate"), policy: SecPolicyCreateBasicX509())
            #expect(SecTrustGetCertificateCount(trust) == 2, "before evaluation: the given certificates")
            SecTrustSetAnchorCertificates(trust, try certificates("root") as CFArray)
            var error: CFError?
            #expect(SecTrustEvaluateWithError(trust, &error))
            #expect(error == nil)
            let chain = try #require(SecTrustCopyCertificateChain(trust) as? [SecCertificate])
            #expect(chain == (try certificates("leaf", "intermediate", "root")))
            #expect(SecTrustGetCertificateCount(trust) == 3)
            let key = try #require(SecTrustCopyKey(trust))
            #expect(SecKeyCopyExternalRepresentation(key, nil) != nil)
            let result = try #require(swiftDictionary(SecTrustCopyResult(trust)))
            #expect(
                (result[kSecTrustResultValue as String] as? NSNumber)?.uint32Value
                    == SecTrustResultType.unspecified.rawValue)
            #expect(result[kSecTrustEvaluationDate as String] is Date)
            let properties = try #require(SecTrustCopyProperties(trust) as? [[String: Any]])
            #expect(properties.count == 3)
            #expect(properties.first?[kSecPropertyKeyValue as String] as? String == "www.example.test")
        }
    }

    @Test("anchors-only ignores the keychain's anchors; anchors-only false adds them back")
    func anchorsOnly() throws {
        try withTrustKeychain {
            try storeRoot(try certificates("root")[0], deny: false)
            let chain = try certificates("leaf", "intermediate")
            // Only the other root: the keychain's trusted root does not count.
            let only = try evaluate(chain, host: nil, anchors: try certificates("other-root"))
            #expect(
                only
                    == TrustOutcome(
                        trusted: false, code: Int(errSecNotTrusted), result: .recoverableTrustFailure))
            // Anchors-only off: the keychain's root counts, an explicit user setting (.proceed).
            let both = try evaluate(
                chain, host: nil, anchors: try certificates("other-root"), anchorsOnly: false)
            #expect(both == TrustOutcome(trusted: true, code: nil, result: .proceed))
            // No anchors set at all: the keychain's trust settings and the (empty) system bundle.
            let trust = try makeTrust(chain, policy: SecPolicyCreateBasicX509())
            #expect(evaluateTrust(trust) == TrustOutcome(trusted: true, code: nil, result: .proceed))
        }
    }

    @Test("the system bundle's roots are anchors, with the unspecified result")
    func systemAnchors() throws {
        try withTrustKeychain(systemAnchors: ["other-root", "root"]) {
            let trust = try makeTrust(
                try certificates("leaf", "intermediate"),
                policy: SecPolicyCreateSSL(true, "www.example.test" as CFString))
            #expect(evaluateTrust(trust) == TrustOutcome(trusted: true, code: nil, result: .unspecified))
        }
    }

    @Test("a root distrusted in the keychain fails the chain, even when given as an anchor")
    func distrustedRoot() throws {
        try withTrustKeychain(systemAnchors: ["root"]) {
            let root = try certificates("root")[0]
            try storeRoot(root, deny: true)
            #expect(trustSettingsResults(root) == [SecTrustSettingsResult.deny.rawValue])
            let chain = try certificates("leaf", "intermediate")
            let outcome = try evaluate(chain, host: nil, anchors: [root])
            #expect(outcome == TrustOutcome(trusted: false, code: Int(errSecTrustSettingDeny), result: .deny))
            #expect(
                try evaluate(chain, host: nil, anchors: nil) == outcome, "the system's copy of the root too")
            #expect(removeTrustSettings(root) == errSecSuccess)
            #expect(try evaluate(chain, host: nil, anchors: [root]).trusted)
            #expect(removeTrustSettings(root) == errSecItemNotFound)
        }
    }

    @Test(
        "trust settings are refused for a certificate the keychain does not hold, and trustRoot on an intermediate"
    )
    func trustSettingsErrors() throws {
        try withTrustKeychain {
            let root = try certificates("root")[0]
            #expect(SecTrustSettingsSetTrustSettings(root, .user, nil) == errSecItemNotFound)
            var settings: CFArray?
            #expect(SecTrustSettingsCopyTrustSettings(root, .user, &settings) == errSecItemNotFound)
            #expect(settings == nil)
            let intermediate = try certificates("intermediate")[0]
            let add: [String: Any] = [
                kSecClass as String: kSecClassCertificate, kSecValueRef as String: intermediate,
            ]
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
            #expect(SecTrustSettingsSetTrustSettings(intermediate, .user, nil) == errSecInvalidTrustSetting)
            let asRoot =
                [kSecTrustSettingsResult as String: SecTrustSettingsResult.trustAsRoot.rawValue]
                as CFDictionary
            #expect(
                SecTrustSettingsSetTrustSettings(intermediate, .user, asRoot as CFTypeRef) == errSecSuccess)
            #expect(trustSettingsResults(intermediate) == [SecTrustSettingsResult.trustAsRoot.rawValue])
            #expect(SecTrustSettingsSetTrustSettings(intermediate, .system, nil) == errSecDataNotModifiable)
        }
    }

    @Test("the verify date decides validity")
    func verifyDate() throws {
        try withTrustKeychain {
            let chain = try certificates("expired", "intermediate")
            let anchors = try certificates("root")
            #expect(try evaluate(chain, anchors: anchors, at: Date(timeIntervalSince1970: 1_590_969_600)))
            #expect(!(try evaluate(chain, anchors: anchors, at: Date())))
        }
    }

    @Test("the asynchronous evaluation calls back with the outcome")
    func asynchronous() throws {
        try withTrustKeychain {
            let trust = try makeTrust(
                try certificates("leaf", "intermediate"), policy: SecPolicyCreateBasicX509())
            SecTrustSetAnchorCertificates(trust, try certificates("root") as CFArray)
            let done = DispatchSemaphore(value: 0)
            let box = OutcomeBox()
            evaluateAsync(trust) { trusted, error in
                box.set(trusted, error == nil)
                done.signal()
            }
            #expect(done.wait(timeout: .now() + 30) == .success)
            #expect(box.value == (true, true))
        }
    }

    @Test("PKCS#12 import hands back the identity's trust, which evaluates to the chain's anchor")
    func pkcs12ImportTrust() throws {
        try withTrustKeychain {
            let data = try Data(contentsOf: URL(fileURLWithPath: TrustFixtures.path("leaf.p12")))
            let imported = try #require(extractIdentity(certData: data, certPassword: "trust"))
            #expect(imported.certificates.count == 2)
            var error: CFError?
            #expect(!SecTrustEvaluateWithError(imported.trust, &error), "the root is no anchor yet")
            #expect(error.map { $0.code } == Int(errSecNotTrusted))
            SecTrustSetAnchorCertificates(imported.trust, try certificates("root") as CFArray)
            #expect(SecTrustEvaluateWithError(imported.trust, &error))
            #expect(SecTrustGetCertificateCount(imported.trust) == 3)
            var certificate: SecCertificate?
            #expect(SecIdentityCopyCertificate(imported.identityRef, &certificate) == errSecSuccess)
            #expect(certificate == imported.certificates.first)
        }
    }

    @Test("policies: bad arguments are errSecParam, revocation is accepted")
    func policies() throws {
        var trust: SecTrust?
        #expect(
            SecTrustCreateWithCertificates([] as [SecCertificate] as AnyObject, nil, &trust) == errSecParam)
        #expect(SecTrustCreateWithCertificates("nonsense" as AnyObject, nil, &trust) == errSecParam)
        #expect(trust == nil)
        let leaf = try certificates("leaf")[0]
        let revocation = try #require(SecPolicyCreateRevocation(kSecRevocationUseAnyAvailableMethod))
        #expect(
            SecTrustCreateWithCertificates(
                leaf, [SecPolicyCreateBasicX509(), revocation] as AnyObject, &trust) == errSecSuccess)
        let made = try #require(trust)
        #expect(SecTrustSetPolicies(made, "nonsense" as AnyObject) == errSecParam)
        #expect(SecTrustSetPolicies(made, SecPolicyCreateSSL(true, nil)) == errSecSuccess)
        let properties = swiftDictionary(
            SecPolicyCopyProperties(SecPolicyCreateSSL(true, "a.test" as CFString)))
        #expect(properties?[kSecPolicyName as String] as? String == "a.test")
    }
}

/// A returned CFDictionary (a Swift dictionary or an NSDictionary, whichever CFDictionary is) as
/// Swift's.
private func swiftDictionary(_ value: Any?) -> [String: Any]? { value as? [String: Any] }

/// The asynchronous callback's outcome, handed across threads under a lock.
private final class OutcomeBox: @unchecked Sendable {
    // @unchecked Sendable: `stored` is read and written under `lock`.
    private let lock = NSLock()
    private var stored: (Bool, Bool) = (false, false)
    func set(_ trusted: Bool, _ noError: Bool) {
        lock.lock()
        stored = (trusted, noError)
        lock.unlock()
    }
    var value: (Bool, Bool) {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }
}
