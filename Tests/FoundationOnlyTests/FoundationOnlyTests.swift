// A file as an Apple app target has it: it imports Foundation (and XCTest) only, and uses
// Security's names, which Foundation brings along on Apple platforms. Here the test target's one
// build setting, `-Xfrontend -import-module -Xfrontend Security` (Package.swift), gives them.

import Foundation
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

final class FoundationOnlyTests: XCTestCase {
    /// Examples/sample.cer.
    private var sampleCertificate: Data {
        get throws {
            let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent()
            return try Data(contentsOf: root.appendingPathComponent("Examples/sample.cer"))
        }
    }

    func testSecurityNamesWithOnlyFoundationImported() throws {
        // The environment lock every test target of the package takes (they share a process).
        let lock = open(
            NSTemporaryDirectory() + "/p11keychain-tests-environment.lock", O_CREAT | O_RDWR | O_CLOEXEC,
            0o600)
        XCTAssertGreaterThanOrEqual(lock, 0)
        defer { close(lock) }
        flock(lock, LOCK_EX)
        defer { flock(lock, LOCK_UN) }
        let directory = NSTemporaryDirectory() + "/p11keychain-foundation-only-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
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

        let data = try sampleCertificate
        let certificate = try XCTUnwrap(SecCertificateCreateWithData(nil, data as CFData))
        let add: [String: Any] = [
            kSecClass as String: kSecClassCertificate, kSecValueRef as String: certificate,
            kSecAttrLabel as String: "Foundation only",
        ]
        XCTAssertEqual(SecItemAdd(add as CFDictionary, nil), errSecSuccess)
        let query: [String: Any] = [
            kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: "Foundation only",
            kSecReturnRef as String: true,
        ]
        var item: CFTypeRef?
        XCTAssertEqual(SecItemCopyMatching(query as CFDictionary, &item), errSecSuccess)
        let found = try XCTUnwrap(item as? SecCertificate)
        XCTAssertEqual(SecCertificateCopyData(found) as Data, data)
        XCTAssertEqual(
            SecItemDelete(query.filter { $0.key != kSecReturnRef as String } as CFDictionary), errSecSuccess)

        var bytes = [UInt8](repeating: 0, count: 16)
        XCTAssertEqual(SecRandomCopyBytes(kSecRandomDefault, bytes.count, &bytes), errSecSuccess)
        XCTAssertEqual(
            SecCopyErrorMessageString(errSecItemNotFound, nil) as String?,
            "The specified item could not be found in the keychain.")
    }
}
