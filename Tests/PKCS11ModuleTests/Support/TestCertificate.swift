import Foundation

/// A certificate made by the `openssl` command line for a test, with what openssl itself
/// says about it: the values the module's derived attributes are checked against.
struct TestCertificate: Sendable {
    let der: [UInt8]
    /// From `openssl x509 -ext subjectKeyIdentifier`: OpenSSL's "hash" method is SHA-1 of
    /// the subjectPublicKey BIT STRING contents, the module's default CKA_ID (ARCHITECTURE.md §3.4).
    let subjectKeyIdentifier: [UInt8]
    /// From `openssl x509 -fingerprint -sha1`.
    let sha1Fingerprint: [UInt8]
    /// notBefore and notAfter as CK_DATE text (YYYYMMDD), from `openssl x509 -startdate -enddate`.
    let startDate: String
    let endDate: String
    /// The serial number in hex, from `openssl x509 -serial`.
    let serialHex: String
    /// SubjectPublicKeyInfo DER, from `openssl x509 -pubkey | openssl pkey -pubin -outform der`.
    let subjectPublicKeyInfo: [UInt8]

    /// The openssl configuration: `ee` makes an end-entity certificate, `ca` an authority.
    private static let configuration = """
        [req]
        distinguished_name = dn
        [dn]
        [ee]
        basicConstraints = critical,CA:FALSE
        subjectKeyIdentifier = hash
        [ca]
        basicConstraints = critical,CA:TRUE
        subjectKeyIdentifier = hash
        """

    static let openssl = "/usr/bin/openssl"

    /// A new self-signed P-256 certificate with a new key.
    static func make(subject: String, authority: Bool = false, serial: Int? = nil) throws -> TestCertificate {
        let directory = NSTemporaryDirectory() + "p11keychain-cert-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try configuration.write(toFile: directory + "/req.cnf", atomically: true, encoding: .utf8)
        var request = [
            "req", "-x509", "-config", "req.cnf", "-extensions", authority ? "ca" : "ee",
            "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "key.pem",
            "-subj", subject, "-days", "30", "-outform", "der", "-out", "cert.der",
        ]
        if let serial { request += ["-set_serial", String(serial)] }
        try openSSL(request, in: directory)
        let facts = try openSSL(
            [
                "x509", "-inform", "der", "-in", "cert.der", "-noout", "-startdate", "-enddate", "-serial",
                "-fingerprint", "-sha1", "-ext", "subjectKeyIdentifier",
            ], in: directory)
        try openSSL(
            ["x509", "-inform", "der", "-in", "cert.der", "-pubkey", "-noout", "-out", "pub.pem"],
            in: directory)
        try openSSL(
            ["pkey", "-pubin", "-in", "pub.pem", "-outform", "der", "-out", "spki.der"], in: directory)
        return try TestCertificate(
            der: read(directory + "/cert.der"), facts: facts, spki: read(directory + "/spki.der"))
    }

    /// `count` distinct end-entity certificates (`CN=<prefix><n>`, serial n) sharing one key:
    /// one shell loop instead of a process per certificate.
    static func batch(count: Int, prefix: String) throws -> [[UInt8]] {
        let directory = NSTemporaryDirectory() + "p11keychain-batch-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try configuration.write(toFile: directory + "/req.cnf", atomically: true, encoding: .utf8)
        let script = """
            set -e
            \(openssl) genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem
            i=1
            while [ $i -le \(count) ]; do
                \(openssl) req -x509 -config req.cnf -extensions ee -key key.pem -subj "/CN=\(prefix)$i" \
                    -set_serial $i -days 30 -outform der -out cert$i.der
                i=$((i + 1))
            done
            """
        let result = try runCommand("/bin/sh", ["-c", script], in: directory)
        guard result.status == 0 else {
            throw ModuleLoadError(description: "openssl batch failed: \(result.standardError)")
        }
        return try (1...count).map { try read(directory + "/cert\($0).der") }
    }

    @discardableResult
    private static func openSSL(_ arguments: [String], in directory: String) throws -> String {
        let result = try runCommand(openssl, arguments, in: directory)
        guard result.status == 0 else {
            throw ModuleLoadError(
                description: "openssl \(arguments.joined(separator: " ")) failed: \(result.standardError)")
        }
        return result.standardOutput
    }

    private static func read(_ path: String) throws -> [UInt8] {
        let bytes = readFile(path)
        guard !bytes.isEmpty else { throw ModuleLoadError(description: "cannot read \(path)") }
        return bytes
    }

    private init(der: [UInt8], facts: String, spki: [UInt8]) throws {
        self.der = der
        subjectPublicKeyInfo = spki
        var values: [String: String] = [:]
        var lines = facts.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }[...]
        while let line = lines.popFirst() {
            if line.hasPrefix("X509v3 Subject Key Identifier") {
                values["ski"] = lines.popFirst()
            } else if let equals = line.firstIndex(of: "=") {
                values[String(line[..<equals])] = String(line[line.index(after: equals)...])
            }
        }
        guard let start = values["notBefore"], let end = values["notAfter"], let serial = values["serial"],
            let fingerprint = values["sha1 Fingerprint"], let ski = values["ski"]
        else { throw ModuleLoadError(description: "unexpected openssl x509 output:\n\(facts)") }
        startDate = try TestCertificate.ckDate(start)
        endDate = try TestCertificate.ckDate(end)
        serialHex = serial
        sha1Fingerprint = try hexBytes(fingerprint)
        subjectKeyIdentifier = try hexBytes(ski)
    }

    /// "Nov 30 09:00:25 2026 GMT" → "20261130".
    private static func ckDate(_ text: String) throws -> String {
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let parts = text.split(separator: " ")
        guard parts.count == 5, let month = months.firstIndex(of: String(parts[0])), let day = Int(parts[1])
        else {
            throw ModuleLoadError(description: "unexpected openssl date \(text)")
        }
        return String(parts[3]) + String(format: "%02d%02d", month + 1, day)
    }
}

/// "AB:CD" or "abcd" → [0xAB, 0xCD].
func hexBytes(_ text: String) throws -> [UInt8] {
    let digits = Array(text.filter { $0 != ":" })
    guard digits.count % 2 == 0 else { throw ModuleLoadError(description: "odd hex \(text)") }
    return try stride(from: 0, to: digits.count, by: 2).map { index in
        guard let byte = UInt8(String(digits[index...index + 1]), radix: 16) else {
            throw ModuleLoadError(description: "bad hex \(text)")
        }
        return byte
    }
}

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02X", $0) }.joined()
}

/// Just enough DER to find the TBSCertificate fields by position (RFC 5280 §4.1), to check
/// the names and serial the module derives against the certificate's own bytes.
enum DER {
    struct Malformed: Error {}

    /// The complete TLVs one after another in `bytes`.
    static func elements(_ bytes: ArraySlice<UInt8>) throws -> [ArraySlice<UInt8>] {
        var result: [ArraySlice<UInt8>] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let (headerLength, contentLength) = try header(bytes[index...])
            let end = index + headerLength + contentLength
            guard end <= bytes.endIndex else { throw Malformed() }
            result.append(bytes[index..<end])
            index = end
        }
        return result
    }

    /// The contents of one TLV.
    static func contents(_ tlv: ArraySlice<UInt8>) throws -> ArraySlice<UInt8> {
        let (headerLength, contentLength) = try header(tlv)
        return tlv.dropFirst(headerLength).prefix(contentLength)
    }

    private static func header(_ bytes: ArraySlice<UInt8>) throws -> (Int, Int) {
        guard bytes.count >= 2 else { throw Malformed() }
        let first = bytes[bytes.startIndex + 1]
        if first < 0x80 { return (2, Int(first)) }
        let count = Int(first & 0x7f)
        guard count >= 1, count <= 4, bytes.count >= 2 + count else { throw Malformed() }
        var length = 0
        for byte in bytes.dropFirst(2).prefix(count) { length = length << 8 | Int(byte) }
        return (2 + count, length)
    }

    /// serialNumber, issuer, validity, subject and subjectPublicKeyInfo of a certificate.
    static func fields(of certificate: [UInt8]) throws
        -> (serial: [UInt8], issuer: [UInt8], subject: [UInt8], publicKeyInfo: [UInt8])
    {
        guard let outer = try elements(certificate[...]).first,
            let tbs = try elements(try contents(outer)).first
        else { throw Malformed() }
        let fields = try elements(try contents(tbs))
        // [0] EXPLICIT version is optional.
        let first = fields.first?.first == 0xA0 ? 1 : 0
        guard fields.count >= first + 6 else { throw Malformed() }
        return (
            Array(fields[first]), Array(fields[first + 2]), Array(fields[first + 4]), Array(fields[first + 5])
        )
    }
}

/// Certificates shared by the tests that only read them (made once per test process).
enum Fixtures {
    static let alice = Result { try TestCertificate.make(subject: "/CN=Alice/emailAddress=a@example.com") }
    static let authority = Result {
        try TestCertificate.make(subject: "/O=Example/CN=Example Root CA", authority: true)
    }
    static let bob = Result { try TestCertificate.make(subject: "/CN=Bob") }
    static let carol = Result { try TestCertificate.make(subject: "/CN=Carol/O=Example") }
    /// No CN: the default label is the e-mail address (Apple's subject summary).
    static let mailOnly = Result { try TestCertificate.make(subject: "/emailAddress=mail.only@example.com") }
}
