import Foundation
import KeychainCrypto
@_exported import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The `openssl` command-line tool: the reference every derived value is compared with.
enum OpenSSL {
    /// Runs `openssl arguments…` and returns its standard output. A missing tool or a
    /// non-zero exit fails the test: these tests must not pass by not running.
    @discardableResult
    static func run(_ arguments: [String], in directory: TemporaryDirectory) throws -> String {
        let result = try runProgram("openssl", arguments, directory: directory.path)
        guard result.status == 0 else {
            throw TestFailure("openssl \(arguments.joined(separator: " ")) failed: \(result.error)")
        }
        return result.output
    }
}

/// The key of a generated certificate, and what OpenSSL says about such keys.
enum KeyKind: String, Sendable, CaseIterable {
    case rsa2048, p256, p384, ed25519

    var newKeyArguments: [String] {
        switch self {
        case .rsa2048: ["-newkey", "rsa:2048"]
        case .p256: ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
        case .p384: ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384"]
        case .ed25519: ["-newkey", "ed25519"]
        }
    }

    /// Length of the subjectPublicKey BIT STRING's key octets: RSAPublicKey DER, an
    /// uncompressed EC point, a raw Ed25519 key.
    var publicKeyLength: Int {
        switch self {
        case .rsa2048: 270
        case .p256: 65
        case .p384: 97
        case .ed25519: 32
        }
    }

    /// EVP_PKEY_get_bits: the modulus or the field size (256 for Ed25519, OpenSSL's
    /// ED25519_BITS).
    var bits: Int {
        switch self {
        case .rsa2048: 2048
        case .p256: 256
        case .p384: 384
        case .ed25519: 256
        }
    }
}

/// How to make a test certificate with `openssl req` (and `openssl x509 -req` when another
/// key signs it), and what the test expects of the parts OpenSSL does not print.
struct CertificateRecipe: Sendable, CustomTestStringConvertible {
    var name: String
    var key: KeyKind = .p256
    /// In `openssl -subj` form, UTF-8.
    var subject: String
    /// `-set_serial` value; nil lets OpenSSL pick a random one.
    var serial: String? = nil
    var days = 30
    /// Lines of the extension section (`openssl x509v3_config`).
    var extensions: [String] = []
    /// The subject of a CA (with a key of its own) that signs the certificate; nil: self-signed.
    var issuer: String? = nil
    /// PrintableString where possible, instead of OpenSSL's default UTF8String.
    var printableStrings = false

    var commonNames: [String]
    var summary: String
    var isSelfSigned: Bool

    var testDescription: String { name }

    /// Makes the certificate in `directory`.
    func make(in directory: TemporaryDirectory) throws -> GeneratedCertificate {
        let config = directory.file("openssl.cnf")
        let text = """
            [req]
            distinguished_name = dn
            string_mask = \(printableStrings ? "default" : "utf8only")
            [dn]
            [ca]
            subjectKeyIdentifier = hash
            basicConstraints = critical,CA:TRUE
            [ext]
            \(extensions.joined(separator: "\n"))

            """
        try text.write(toFile: config, atomically: true, encoding: .utf8)
        let common = ["-config", config, "-utf8", "-nodes"]
        let validity = ["-days", String(days)]
        let serialArguments = serial.map { ["-set_serial", $0] } ?? []
        if let issuer {
            try OpenSSL.run(
                ["req", "-x509", "-new"] + KeyKind.p256.newKeyArguments + common + validity
                    + ["-keyout", "ca.key", "-extensions", "ca", "-subj", issuer, "-out", "ca.pem"],
                in: directory)
            try OpenSSL.run(
                ["req", "-new"] + key.newKeyArguments + common
                    + ["-keyout", "key.pem", "-subj", subject, "-out", "request.pem"],
                in: directory)
            try OpenSSL.run(
                [
                    "x509", "-req", "-in", "request.pem", "-CA", "ca.pem", "-CAkey", "ca.key", "-days",
                    String(days),
                    "-set_serial", serial ?? "0x01", "-extfile", config, "-extensions", "ext",
                    "-outform", "DER", "-out", "cert.der",
                ],
                in: directory)
        } else {
            try OpenSSL.run(
                ["req", "-x509", "-new"] + key.newKeyArguments + common + validity + serialArguments
                    + [
                        "-keyout", "key.pem", "-extensions", "ext", "-subj", subject, "-outform", "DER",
                        "-out", "cert.der",
                    ],
                in: directory)
        }
        let der = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file("cert.der"))))
        return GeneratedCertificate(der: der, directory: directory)
    }
}

/// A certificate made by OpenSSL in a test's directory, and OpenSSL's answers about it.
struct GeneratedCertificate {
    let der: [UInt8]
    let directory: TemporaryDirectory

    /// `openssl x509 -noout arguments…` on this certificate.
    @discardableResult
    func x509(_ arguments: [String]) throws -> String {
        try OpenSSL.run(["x509", "-inform", "DER", "-in", "cert.der", "-noout"] + arguments, in: directory)
    }

    /// The value after `name=` in a one-line answer ("serial=80AB").
    func field(_ arguments: [String], _ name: String) throws -> String {
        let line = try x509(arguments).trimmingCharacters(in: .whitespacesAndNewlines)
        guard line.hasPrefix(name + "=") else { throw TestFailure("openssl printed '\(line)', not \(name)=") }
        return String(line.dropFirst(name.count + 1))
    }

    /// The SubjectPublicKeyInfo DER, as `openssl pkey` writes it.
    func publicKeyInfo() throws -> [UInt8] {
        try x509(["-pubkey", "-out", "public.pem"])
        try OpenSSL.run(
            ["pkey", "-pubin", "-in", "public.pem", "-outform", "DER", "-out", "public.der"], in: directory)
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file("public.der"))))
    }

    /// The hex bytes on the line after an extension's title in `-ext` output, or nil when
    /// the certificate lacks the extension.
    func extensionBytes(_ name: String) throws -> [UInt8]? {
        let lines = try x509(["-ext", name]).split(separator: "\n")
        guard lines.count >= 2 else { return nil }
        return try hexBytes(lines[1].trimmingCharacters(in: .whitespaces))
    }

    /// The elements of the TBSCertificate (RFC 5280 §4.1) as `openssl asn1parse` reports
    /// them: whole DER elements, in order, the optional [0] version left out.
    func tbsElements() throws -> [[UInt8]] {
        let output = try OpenSSL.run(["asn1parse", "-inform", "DER", "-in", "cert.der"], in: directory)
        var elements: [(offset: Int, length: Int, tag: String)] = []
        var tbsEnd: Int?
        // "    7:d=2  hl=2 l=  20 prim: INTEGER           :36D08C…"
        let pattern = #/^\s*(\d+):d=(\d+)\s+hl=(\d+)\s+l=\s*(\d+)\s+(?:cons|prim):\s*(.*)$/#
        for line in output.split(separator: "\n") {
            guard let match = line.wholeMatch(of: pattern), let offset = Int(match.1),
                let depth = Int(match.2),
                let header = Int(match.3), let length = Int(match.4)
            else { throw TestFailure("cannot read asn1parse line '\(line)'") }
            if depth == 1, tbsEnd == nil { tbsEnd = offset + header + length }
            if depth == 2, let tbsEnd, offset < tbsEnd {
                elements.append((offset, header + length, String(match.5)))
            }
        }
        return elements.filter { !$0.tag.hasPrefix("cont [ 0 ]") }.map {
            Array(der[$0.offset..<($0.offset + $0.length)])
        }
    }

    /// "Mon DD HH:MM:SS YYYY GMT" from `-startdate` / `-enddate`, as seconds since 1970.
    func date(_ option: String, _ name: String) throws -> (year: Int, month: Int, day: Int, seconds: Int64) {
        let text = try field([option], name)
        let words = text.split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard words.count == 5, words[4] == "GMT", let month = months.firstIndex(of: String(words[0])),
            let day = Int(words[1]), let year = Int(words[3])
        else { throw TestFailure("cannot read the date '\(text)'") }
        let clock = words[2].split(separator: ":").compactMap { Int($0) }
        guard clock.count == 3 else { throw TestFailure("cannot read the time in '\(text)'") }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(clock[0])
        parts.tm_min = Int32(clock[1])
        parts.tm_sec = Int32(clock[2])
        return (year, month + 1, day, Int64(timegm(&parts)))
    }
}

/// The bytes of "AB:CD:…" or "abcd…" text.
func hexBytes(_ text: some StringProtocol) throws -> [UInt8] {
    let digits = String(text.filter { $0 != ":" })
    guard digits.count % 2 == 0 else { throw TestFailure("odd number of hex digits in '\(text)'") }
    var bytes: [UInt8] = []
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        guard let byte = UInt8(digits[index..<next], radix: 16) else {
            throw TestFailure("not hex: '\(text)'")
        }
        bytes.append(byte)
        index = next
    }
    return bytes
}

/// Expects `body` to throw a `CryptoError` with `code`.
func expectCryptoError(
    _ code: CryptoError.Code, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record(
            "expected CryptoError \(code), got success. \(comment?.rawValue ?? "")",
            sourceLocation: sourceLocation)
    } catch let error as CryptoError {
        #expect(
            error.code == code, "\(error.message) \(comment?.rawValue ?? "")", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected CryptoError \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

/// A minimal DER walker for building malformed certificates (the code under test is not
/// used to take apart what it is then fed). Low tag numbers only, as in certificates.
enum DERWalker {
    /// The header length and content length of the element at `offset`.
    static func header(of der: [UInt8], at offset: Int) -> (header: Int, content: Int) {
        let first = Int(der[offset + 1])
        guard first >= 0x80 else { return (2, first) }
        let count = first & 0x7F
        let length = der[(offset + 2)..<(offset + 2 + count)].reduce(0) { $0 << 8 | Int($1) }
        return (2 + count, length)
    }

    /// The whole-element ranges of the children of the constructed element at `offset`.
    static func children(of der: [UInt8], at offset: Int) -> [Range<Int>] {
        let (header, content) = header(of: der, at: offset)
        var children: [Range<Int>] = []
        var cursor = offset + header
        while cursor < offset + header + content {
            let child = self.header(of: der, at: cursor)
            children.append(cursor..<(cursor + child.header + child.content))
            cursor += child.header + child.content
        }
        return children
    }

    /// The shortest length octets for `length`.
    static func lengthOctets(_ length: Int) -> [UInt8] {
        guard length >= 0x80 else { return [UInt8(length)] }
        var digits: [UInt8] = []
        var rest = length
        while rest > 0 {
            digits.insert(UInt8(rest & 0xFF), at: 0)
            rest >>= 8
        }
        return [0x80 | UInt8(digits.count)] + digits
    }

    /// `der` with the element at `target` given a long-form length one octet longer than
    /// needed (a leading 00), and every enclosing element's length corrected to match.
    static func lengthenHeader(of target: Range<Int>, in der: [UInt8]) -> [UInt8] {
        func rewrite(_ range: Range<Int>) -> [UInt8] {
            let (header, content) = header(of: der, at: range.lowerBound)
            let body: [UInt8]
            if range == target {
                body = Array(der[(range.lowerBound + header)..<range.upperBound])
                let digits = content >= 0x80 ? Array(lengthOctets(content).dropFirst()) : [UInt8(content)]
                let long = [0x80 | UInt8(digits.count + 1), 0x00] + digits
                return [der[range.lowerBound]] + long + body
            }
            guard target.lowerBound >= range.lowerBound + header, target.upperBound <= range.upperBound,
                der[range.lowerBound] & 0x20 != 0
            else { return Array(der[range]) }
            body = children(of: der, at: range.lowerBound).flatMap { rewrite($0) }
            return [der[range.lowerBound]] + lengthOctets(body.count) + body
        }
        return rewrite(0..<der.count)
    }
}
