import Foundation
import Security
import Testing

// The Swift API and the PKCS#11 module serve one store (ARCHITECTURE.md §1): what one face writes, the
// other reads at once, from another process. p11tool (GnuTLS) loads the built module.

@Suite("Security and the PKCS#11 module share the store", .serialized)
struct CrossFaceTests {
    @Test("a certificate added with SecItemAdd is listed by p11tool through the module")
    func secItemAddIsVisibleToP11tool() throws {
        try withDefaultKeychain { directory in
            let status = SecItemAdd(
                [
                    kSecClass as String: kSecClassCertificate,
                    kSecValueRef as String: try Fixture.alice.certificate,
                    kSecAttrLabel as String: "My Certificate",
                ] as CFDictionary, nil)
            #expect(status == errSecSuccess)
            let listing = try p11tool(
                ["--list-all-certs", "pkcs11:token=login"], keychainDirectory: directory)
            #expect(listing.status == 0, "\(listing.output)")
            #expect(listing.output.contains("Label: My Certificate"), "\(listing.output)")
            #expect(listing.output.contains("type=cert"), "\(listing.output)")
            // CKA_ID is the public-key hash, shown by p11tool as the ID.
            let hash = try Fixture.alice.publicKeyHash.map { String(format: "%02x", $0) }.joined(
                separator: ":")
            #expect(listing.output.contains("ID: \(hash)"), "\(listing.output)")
        }
    }

    @Test("a certificate written by p11tool is found by SecItemCopyMatching with its label and attributes")
    func p11toolWriteIsFoundBySecItem() throws {
        try withDefaultKeychain { directory in
            let written = try p11tool(
                [
                    "--write", "--load-certificate", Fixture.alice.pemPath, "--label", "written by p11tool",
                    "--no-mark-private", "pkcs11:token=login",
                ], keychainDirectory: directory)
            #expect(written.status == 0, "\(written.output)")

            var item: CFTypeRef?
            let status = SecItemCopyMatching(
                [
                    kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: "written by p11tool",
                    kSecReturnAttributes as String: true, kSecReturnRef as String: true,
                ] as CFDictionary, &item)
            #expect(status == errSecSuccess)
            let attributes = try #require(item as? [String: Any])
            let alice = try Fixture.alice.certificate
            #expect(attributes[kSecValueRef as String] as? SecCertificate == alice)
            #expect(attributes[kSecAttrLabel as String] as? String == "written by p11tool")
            #expect(
                attributes[kSecAttrSerialNumber as String] as? Data == Data([0x00, 0x80, 0xA1, 0xB2, 0xC3]))
            #expect(attributes[kSecAttrIssuer as String] as? Data == (try Fixture.ca.subjectDER))
            #expect(attributes[kSecAttrSubject as String] as? Data == (try Fixture.alice.subjectDER))
            #expect(attributes[kSecAttrPublicKeyHash as String] as? Data == (try Fixture.alice.publicKeyHash))

            // And the keychain rules hold for it: adding it again is a duplicate.
            #expect(SecItemAdd([kSecValueRef as String: alice] as CFDictionary, nil) == errSecDuplicateItem)
        }
    }

    @Test("a certificate deleted with SecItemDelete is gone for p11tool")
    func secItemDeleteIsVisibleToP11tool() throws {
        try withDefaultKeychain { directory in
            #expect(try add(.bob, label: "short-lived") == errSecSuccess)
            #expect(
                try p11tool(["--list-all-certs", "pkcs11:token=login"], keychainDirectory: directory).output
                    .contains("short-lived"))
            #expect(
                SecItemDelete(
                    [kSecClass as String: kSecClassCertificate, kSecAttrLabel as String: "short-lived"]
                        as CFDictionary) == errSecSuccess)
            let listing = try p11tool(
                ["--list-all-certs", "pkcs11:token=login"], keychainDirectory: directory)
            #expect(!listing.output.contains("short-lived"), "\(listing.output)")
        }
    }

    @Test("the example program stores Examples/sample.cer as \"My Certificate\" and prints its summary")
    func exampleProgram() throws {
        try withDefaultKeychain { directory in
            let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
                .deletingLastPathComponent()
                .appendingPathComponent("store-certificate-example").path
            guard FileManager.default.fileExists(atPath: executable) else {
                Issue.record("no \(executable): build it with `swift build`")
                return
            }
            let sample = Fixture.directory.deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("Examples/sample.cer").path
            for expected in ["Stored the certificate", "already in the keychain"] {
                let result = try runProgram(
                    executable, [sample],
                    environment: [
                        "P11KEYCHAIN_DIR": directory, "P11KEYCHAIN_CONF": "/dev/null", "HOME": directory,
                    ])
                let output = result.output
                #expect(result.status == 0)
                #expect(output.contains(expected), "\(output)")
                #expect(output.contains("Subject summary: p11keychain Sample"), "\(output)")
            }
            let listing = try p11tool(
                ["--list-all-certs", "pkcs11:token=login"], keychainDirectory: directory)
            #expect(listing.output.contains("Label: My Certificate"), "\(listing.output)")
        }
    }
}
