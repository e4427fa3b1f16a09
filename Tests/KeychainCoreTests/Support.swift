import Foundation
import KeychainCore
@_exported import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A token over a new store in a fresh temporary directory. The store is given by path, so
/// no process environment is involved and the tests run in parallel. Its PINs derive their
/// key `pinIterations` times when given, else at the run's cost (`runPINIterations`).
func withToken<T>(pinIterations: Int? = nil, _ body: (Token, TemporaryDirectory) throws -> T) throws -> T {
    try withTemporaryDirectory { directory in
        var configuration = testConfiguration(path: directory.file("token.sqlite3"))
        if let pinIterations { configuration.pinIterations = pinIterations }
        return try body(Token(configuration: configuration), directory)
    }
}

/// The PIN cost this test process was started with (`$P11KEYCHAIN_PIN_ITERATIONS`, which
/// scripts/test.sh sets to its floor), read once: other targets' tests change the environment
/// while these run.
let runPINIterations: Int? = try? Configuration.pinIterations(environment: Environment.current)

/// The configuration of a token over `path` with the run's PIN cost, as `Configuration.load`
/// would give it.
func testConfiguration(name: String = "test", path: String) -> TokenConfiguration {
    var configuration = TokenConfiguration(name: name, path: path)
    if let runPINIterations { configuration.pinIterations = runPINIterations }
    return configuration
}

/// Expects `body` to throw a `CoreError` with `code` whose message contains `text`.
func expectKeychainError(
    _ code: CoreError.Code, containing text: String = "",
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("expected CoreError \(code), got success", sourceLocation: sourceLocation)
    } catch let error as CoreError {
        #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
        // (Foundation's `contains("")` is false: an empty `text` checks nothing.)
        #expect(
            text.isEmpty || error.message.contains(text), "message: \(error.message)",
            sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected CoreError \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

/// Session states, as the PKCS#11 adapter and the Swift API build them.
enum Contexts {
    static let readWrite = AccessContext(readWrite: true)
    static let readOnly = AccessContext(readWrite: false)
    static let user = AccessContext(readWrite: true, userLoggedIn: true)
    static let securityOfficer = AccessContext(readWrite: true, securityOfficer: true)
}

/// Gives `token` a security officer PIN and a user PIN, and logs the user in: private
/// objects are sealed under the token key a login unwraps.
func logInUser(_ token: Token) throws {
    try token.initialize(securityOfficerPIN: bytes("so-pin-0000"), label: token.configuration.name)
    try token.logIn(.securityOfficer, pin: bytes("so-pin-0000"))
    try token.initializeUserPIN(bytes("user-pin-0000"))
    token.logOut()
    try token.logIn(.user, pin: bytes("user-pin-0000"))
}

/// CK_ULONG and CK_BBOOL values as attribute bytes.
func ulong(_ value: UInt64) -> [UInt8] { AttributeValue.encode(value) }
let yes: [UInt8] = [1]
let no: [UInt8] = [0]

/// The UTF-8 bytes of `text`.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A C_CreateObject template for an X.509 certificate, a token object unless `token` says.
func certificateTemplate(_ der: [UInt8], token: Bool = true, _ extra: AttributeSet = [:]) -> AttributeSet {
    var template: AttributeSet = [
        .class: ulong(ObjectClass.certificate.rawValue),
        .certificateType: ulong(CertificateType.x509.rawValue),
        .token: token ? yes : no, .value: der,
    ]
    template.merge(extra) { $1 }
    return template
}

/// A C_CreateObject template for a data object.
func dataTemplate(label: String, token: Bool = true, _ extra: AttributeSet = [:]) -> AttributeSet {
    var template: AttributeSet = [
        .class: ulong(ObjectClass.data.rawValue), .token: token ? yes : no, .label: bytes(label),
    ]
    template.merge(extra) { $1 }
    return template
}

/// Runs a tool found on `PATH` in `directory` and returns its standard output. A missing tool
/// or a non-zero exit fails the test: these tests must not pass by not running.
@discardableResult
func run(_ tool: String, _ arguments: [String], in directory: TemporaryDirectory) throws -> String {
    let result = try runProgram(tool, arguments, directory: directory.path)
    guard result.status == 0 else {
        throw TestFailure("\(tool) \(arguments.joined(separator: " ")) failed: \(result.error)")
    }
    return result.output
}

/// A certificate made by the openssl CLI, and the values ARCHITECTURE.md §3.4 derives from it, taken
/// apart independently of the code under test (a DER walk and openssl's own answers).
struct TestCertificate: Sendable {
    let der: [UInt8]
    let subject: [UInt8]
    let issuer: [UInt8]
    /// The full DER INTEGER.
    let serialNumber: [UInt8]
    let publicKeyInfo: [UInt8]
    /// CK_DATE "YYYYMMDD" of notBefore and notAfter.
    let startDate: [UInt8]
    let endDate: [UInt8]
    let sha1Fingerprint: [UInt8]
    /// openssl's subjectKeyIdentifier "hash": SHA-1 of the subjectPublicKey (RFC 5280 method 1).
    let keyHash: [UInt8]

    /// Makes `name`.der (and its key and PEM) in `directory`: a P-256 certificate with a
    /// subjectKeyIdentifier, self-signed or signed by the certificate `signer` made before.
    static func make(
        _ name: String, subject: String, serial: String = "0x01", authority: Bool = false,
        signer: String? = nil, in directory: TemporaryDirectory
    ) throws -> TestCertificate {
        let config = directory.file("\(name).cnf")
        try """
        [req]
        distinguished_name = dn
        [dn]
        [ext]
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid:always
        basicConstraints = critical,CA:\(authority ? "TRUE" : "FALSE")

        """.write(toFile: config, atomically: true, encoding: .utf8)
        let key = [
            "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "\(name).key",
        ]
        if let signer {
            try run(
                "openssl",
                ["req", "-new", "-config", config, "-utf8", "-subj", subject, "-out", "\(name).csr"] + key,
                in: directory)
            try run(
                "openssl",
                [
                    "x509", "-req", "-in", "\(name).csr", "-CA", "\(signer).pem", "-CAkey", "\(signer).key",
                    "-set_serial", serial, "-days", "30", "-extfile", config, "-extensions", "ext", "-out",
                    "\(name).pem",
                ],
                in: directory)
        } else {
            try run(
                "openssl",
                [
                    "req", "-x509", "-new", "-config", config, "-extensions", "ext", "-utf8", "-subj",
                    subject,
                    "-set_serial", serial, "-days", "30", "-out", "\(name).pem",
                ] + key,
                in: directory)
        }
        try run(
            "openssl", ["x509", "-in", "\(name).pem", "-outform", "DER", "-out", "\(name).der"], in: directory
        )
        let der = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file("\(name).der"))))

        func answer(_ option: [String]) throws -> String {
            try run("openssl", ["x509", "-in", "\(name).pem", "-noout"] + option, in: directory)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        func value(_ line: String) -> String { String(line.split(separator: "=", maxSplits: 1).last ?? "") }
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func ckDate(_ line: String) throws -> [UInt8] {
            // "notBefore=Nov 30 09:08:19 2026 GMT"
            let words = value(line).split(separator: " ")
            guard words.count == 5, let month = months.firstIndex(of: String(words[0])),
                let day = Int(words[1])
            else { throw TestFailure("cannot read the date '\(line)'") }
            return bytes(String(words[3]) + String(format: "%02d%02d", month + 1, day))
        }
        let parts = DERWalker.children(of: der, at: DERWalker.children(of: der, at: 0)[0].lowerBound)
            .filter { der[$0.lowerBound] != 0xA0 }  // the [0] version
        let keyIdentifier = try answer(["-ext", "subjectKeyIdentifier"]).split(separator: "\n").last ?? ""
        return TestCertificate(
            der: der, subject: Array(der[parts[4]]), issuer: Array(der[parts[2]]),
            serialNumber: Array(der[parts[0]]),
            publicKeyInfo: Array(der[parts[5]]), startDate: try ckDate(try answer(["-startdate"])),
            endDate: try ckDate(try answer(["-enddate"])),
            sha1Fingerprint: try hexBytes(value(try answer(["-fingerprint", "-sha1"]))),
            keyHash: try hexBytes(keyIdentifier.trimmingCharacters(in: .whitespaces)))
    }
}

/// The bytes of "AB:CD:…" text.
func hexBytes(_ text: String) throws -> [UInt8] {
    let digits = Array(text.filter { $0 != ":" })
    guard digits.count % 2 == 0, !digits.isEmpty else { throw TestFailure("not hex bytes: '\(text)'") }
    return try stride(from: 0, to: digits.count, by: 2).map { index in
        guard let byte = UInt8(String(digits[index..<index + 2]), radix: 16) else {
            throw TestFailure("not hex bytes: '\(text)'")
        }
        return byte
    }
}

/// A minimal DER walker (low tag numbers, definite lengths, as in certificates).
enum DERWalker {
    /// The whole-element ranges of the children of the constructed element at `offset`.
    static func children(of der: [UInt8], at offset: Int) -> [Range<Int>] {
        func header(_ at: Int) -> (header: Int, content: Int) {
            let first = Int(der[at + 1])
            guard first >= 0x80 else { return (2, first) }
            let count = first & 0x7F
            return (2 + count, der[(at + 2)..<(at + 2 + count)].reduce(0) { $0 << 8 | Int($1) })
        }
        let (length, content) = header(offset)
        var children: [Range<Int>] = []
        var cursor = offset + length
        while cursor < offset + length + content {
            let child = header(cursor)
            children.append(cursor..<(cursor + child.header + child.content))
            cursor += child.header + child.content
        }
        return children
    }
}

/// Takes away this process's right to write `paths` for the length of `body`. Root ignores
/// permission bits, so as root the files are made immutable (`chattr +i`, which binds root
/// too); otherwise their write bits are cleared.
func withWriteProtected<T>(_ paths: [String], _ body: () throws -> T) throws -> T {
    let saved = try paths.map { path -> mode_t in
        var status = stat()
        guard stat(path, &status) == 0 else { throw TestFailure("cannot stat \(path)") }
        return status.st_mode & 0o7777
    }
    // `run` keeps chattr's output in a directory of its own, which stays writable.
    let scratch = try TemporaryDirectory()
    defer { scratch.remove() }
    if getuid() == 0 {
        try run("chattr", ["+i"] + paths, in: scratch)
    } else {
        for (path, mode) in zip(paths, saved) { chmod(path, mode & ~0o222) }
    }
    defer {
        if getuid() == 0 { _ = try? run("chattr", ["-i"] + paths, in: scratch) }
        for (path, mode) in zip(paths, saved) { chmod(path, mode) }
    }
    guard paths.allSatisfy({ access($0, W_OK) != 0 }) else {
        throw TestFailure("\(paths) are still writable: cannot test a read-only store here")
    }
    return try body()
}
