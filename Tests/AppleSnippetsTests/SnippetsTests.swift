import Foundation
import Security
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body` with a fresh default keychain (P11KEYCHAIN_DIR, P11KEYCHAIN_CONF=/dev/null),
/// holding the environment lock every test target of the package takes (they share a process).
private func withDefaultKeychain(_ body: () throws -> Void) throws {
    let lock = open(
        NSTemporaryDirectory() + "/p11keychain-tests-environment.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
    guard lock >= 0 else { throw KeychainError.noCertificate }
    defer { close(lock) }
    flock(lock, LOCK_EX)
    defer { flock(lock, LOCK_UN) }
    var template = Array((NSTemporaryDirectory() + "/p11keychain-snippets-XXXXXX").utf8CString)
    guard let made = mkdtemp(&template) else { throw KeychainError.noCertificate }
    let directory = String(cString: made)
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let saved = (["P11KEYCHAIN_DIR", "P11KEYCHAIN_CONF"] as [String]).map {
        ($0, getenv($0).map { String(cString: $0) })
    }
    defer {
        for (name, value) in saved {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
    }
    setenv("P11KEYCHAIN_DIR", directory, 1)
    setenv("P11KEYCHAIN_CONF", "/dev/null", 1)
    try body()
}

/// Examples/sample.cer, the example program's certificate.
private var sampleCertificate: Data {
    get throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return try Data(contentsOf: root.appendingPathComponent("Examples/sample.cer"))
    }
}

@Suite("Apple's keychain snippets run unchanged", .serialized)
struct SnippetsTests {
    @Test("storing, retrieving, searching, updating and deleting a certificate")
    func certificateLifecycle() throws {
        try withDefaultKeychain {
            let data = try sampleCertificate
            try storeCertificate(data, label: "My Certificate")
            let stored = try retrieveCertificate(label: "My Certificate")
            #expect(SecCertificateCopySubjectSummary(stored) as String? == "p11keychain Sample")
            #expect(try certificateSummaries() == ["p11keychain Sample"])
            #expect(allCertificates() == [stored])

            let reference = try #require(persistentReference(label: "My Certificate"))
            #expect(certificate(persistentReference: reference) == stored)

            let description = describeCertificate(stored)
            #expect(description.commonName == "p11keychain Sample")
            #expect(description.emails.isEmpty)
            #expect(description.serial == Data([0x5A, 0x3F, 0x01]))
            #expect(description.der == data)

            try renameCertificate(from: "My Certificate", to: "Renamed")
            #expect(throws: KeychainError.self) { try retrieveCertificate(label: "My Certificate") }
            #expect(try retrieveCertificate(label: "Renamed") == stored)

            try deleteCertificate(stored)
            #expect(allCertificates().isEmpty)
            #expect(throws: KeychainError.self) { try certificateSummaries() }
        }
    }

    @Test("a duplicate add and an error message, the Apple way")
    func duplicateAndMessages() throws {
        try withDefaultKeychain {
            let data = try sampleCertificate
            try storeCertificate(data, label: "first")
            do {
                try storeCertificate(data, label: "second")
                Issue.record("a duplicate was stored")
            } catch KeychainError.unhandledError(let status) {
                #expect(status == errSecDuplicateItem)
                #expect(message(for: status).contains("already exists"))
            }
            #expect(throws: KeychainError.self) { try storeCertificate(Data("not DER".utf8), label: "bad") }
        }
    }
}
