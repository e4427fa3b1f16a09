import Foundation
import Security
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body` with a fresh default keychain whose PINs are set the way a user sets them
/// without Swift: `pkcs11-tool` on the built module (SO PIN 12345678, user PIN 1234), holding
/// the environment lock every test target of the package takes.
func withPINKeychain(_ body: (String) throws -> Void) throws {
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
    let module = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        .appendingPathComponent("libp11keychain-pkcs11.so").path
    for arguments in [
        ["--init-token", "--label", "login", "--so-pin", TestPIN.securityOfficer],
        [
            "--init-pin", "--login", "--login-type", "so", "--so-pin", TestPIN.securityOfficer, "--pin",
            TestPIN.user,
        ],
    ] {
        #expect(try run("/usr/bin/pkcs11-tool", ["--module", module] + arguments, in: directory) == 0)
    }
    defer { _ = SecKeychainLock(nil) }
    try body(directory)
}

/// Runs a program with the keychain environment; returns its exit status.
private func run(_ program: String, _ arguments: [String], in directory: String) throws -> Int32 {
    try runProgram(
        program, arguments,
        environment: ["P11KEYCHAIN_DIR": directory, "P11KEYCHAIN_CONF": "/dev/null", "PATH": "/usr/bin:/bin"]
    ).status
}

@Suite("Apple's key, identity and password snippets run unchanged", .serialized)
struct KeySnippetsTests {
    @Test("generate a tagged key, find it by tag, sign, verify, encrypt and decrypt")
    func keyLifecycle() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: "1234")
            let tag = "com.example.keys.mykey".data(using: .utf8)!
            let privateKey = try makeKey(tag: tag)
            let found = try retrieveKey(tag: tag, type: kSecAttrKeyTypeRSA)
            #expect(found == privateKey)
            let data = Data("The quick brown fox".utf8)
            let signature = try sign(data, with: found, algorithm: .rsaSignatureMessagePKCS1v15SHA512)
            #expect(
                try verify(signature, of: data, with: found, algorithm: .rsaSignatureMessagePKCS1v15SHA512))
            #expect(throws: (any Error).self) {
                try verify(
                    signature, of: Data("tampered".utf8), with: found,
                    algorithm: .rsaSignatureMessagePKCS1v15SHA512)
            }
            #expect(try roundTrip(data, privateKey: found) == data)
        }
    }

    @Test("store an in-memory key with a tag, and copy one through its external representation")
    func storeAndCopy() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: "1234")
            let key = try makeEphemeralKey()
            let tag = "com.example.keys.ec".data(using: .utf8)!
            try storeKey(key, tag: tag)
            #expect(try retrieveKey(tag: tag, type: kSecAttrKeyTypeECSECPrimeRandom) == key)
            #expect(try copyThroughData(key) == key)
            let data = Data("hello".utf8)
            let signature = try sign(data, with: key, algorithm: .ecdsaSignatureMessageX962SHA256)
            #expect(try verify(signature, of: data, with: key, algorithm: .ecdsaSignatureMessageX962SHA256))
        }
    }

    @Test("a locked keychain refuses a permanent key, with the error Apple's code throws")
    func lockedKeychain() throws {
        try withPINKeychain { _ in
            do {
                _ = try makeKey(tag: Data("t".utf8))
                Issue.record("a key was stored in a locked keychain")
            } catch {
                #expect((error as NSError).code == Int(errSecInteractionNotAllowed))
                #expect((error as NSError).domain == NSOSStatusErrorDomain)
            }
            #expect(throws: KeychainError.self) { try unlockKeychain(password: "0000") }
        }
    }

    @Test("import an identity from a PKCS#12 file, find it by label, and sign with its key")
    func identity() throws {
        try withPINKeychain { directory in
            try unlockKeychain(password: "1234")
            for arguments in [
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout",
                    directory + "/key.pem", "-out", directory + "/cert.pem", "-days", "2", "-subj",
                    "/CN=Snippet",
                ],
                [
                    "pkcs12", "-export", "-inkey", directory + "/key.pem", "-in", directory + "/cert.pem",
                    "-out",
                    directory + "/id.p12", "-passout", "pass:secret",
                ],
            ] {
                #expect(try run("/usr/bin/openssl", arguments, in: directory) == 0)
            }
            let p12 = try Data(contentsOf: URL(fileURLWithPath: directory + "/id.p12"))
            let imported = try importIdentity(p12Data: p12, password: "secret")
            #expect(imported.summary == "Snippet")
            let key = try identityKey(label: "Snippet")
            var importedKey: SecKey?
            #expect(SecIdentityCopyPrivateKey(imported.identity, &importedKey) == errSecSuccess)
            #expect(key == importedKey)
            let signature = try sign(Data("x".utf8), with: key, algorithm: .ecdsaSignatureMessageX962SHA256)
            #expect(
                try verify(
                    signature, of: Data("x".utf8), with: key, algorithm: .ecdsaSignatureMessageX962SHA256))
            #expect(throws: KeychainError.self) { _ = try importIdentity(p12Data: p12, password: "wrong") }
        }
    }

    @Test("add, find, update and delete a generic password")
    func password() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: "1234")
            let service = "com.example.backup"
            try addPassword(Credentials(username: "alice", password: "hunter2"), service: service)
            #expect(throws: KeychainError.self) {
                try addPassword(Credentials(username: "alice", password: "again"), service: service)
            }
            let found = try findPassword(service: service)
            #expect(found.username == "alice" && found.password == "hunter2")
            try updatePassword(Credentials(username: "bob", password: "correct horse"), service: service)
            let updated = try findPassword(service: service)
            #expect(updated.username == "bob" && updated.password == "correct horse")
            try deletePassword(service: service)
            #expect(throws: KeychainError.self) { try findPassword(service: service) }
        }
    }
}
