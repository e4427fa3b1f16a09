import Foundation
import KeychainCrypto
import Testing

/// Certificates of every shape the item model derives values from, made by OpenSSL.
let recipes: [CertificateRecipe] = [
    CertificateRecipe(
        name: "an RSA 2048 self-signed CA", key: .rsa2048,
        subject: "/CN=p11keychain Test CA/O=p11keychain tests",
        serial: "1",
        extensions: [
            "subjectKeyIdentifier = hash", "authorityKeyIdentifier = keyid:always",
            "basicConstraints = critical,CA:TRUE",
        ],
        commonNames: ["p11keychain Test CA"], summary: "p11keychain Test CA", isSelfSigned: true),
    CertificateRecipe(
        name: "a P-256 end entity issued by a CA, with a high-bit serial and subjectAltName e-mails",
        subject: "/CN=Alice Example/O=p11keychain tests/emailAddress=alice@example.org", serial: "0x80AB",
        extensions: [
            "subjectKeyIdentifier = hash", "authorityKeyIdentifier = keyid",
            "basicConstraints = critical,CA:FALSE",
            "subjectAltName = email:alice.alt@example.org, email:alice2@example.org, DNS:alice.example.org",
        ],
        issuer: "/CN=Issuing CA/O=p11keychain tests",
        commonNames: ["Alice Example"], summary: "Alice Example", isSelfSigned: false),
    CertificateRecipe(
        name: "a P-384 version 1 certificate with no extensions and no common name", key: .p384,
        subject: "/O=No Common Name Org/OU=Unit", serial: "0x00FF",
        commonNames: [], summary: "No Common Name Org", isSelfSigned: true),
    CertificateRecipe(
        name: "an Ed25519 certificate whose subject has an e-mail address but no common name", key: .ed25519,
        subject: "/O=Mail Org/emailAddress=only@example.org", serial: "0x7F",
        extensions: ["subjectKeyIdentifier = hash"],
        commonNames: [], summary: "only@example.org", isSelfSigned: true),
    CertificateRecipe(
        name: "a certificate whose only e-mail address is in its subjectAltName",
        subject: "/O=San Org/OU=Unit", serial: "0xFFFFFFFFFFFFFFFF",
        extensions: ["subjectAltName = email:san@example.org", "subjectKeyIdentifier = none"],
        commonNames: [], summary: "san@example.org", isSelfSigned: true),
    CertificateRecipe(
        name: "a certificate valid past 2049 (a GeneralizedTime notAfter)", subject: "/CN=Long Lived",
        days: 36_500,
        extensions: ["subjectKeyIdentifier = hash", "basicConstraints = CA:TRUE"],
        commonNames: ["Long Lived"], summary: "Long Lived", isSelfSigned: true),
    CertificateRecipe(
        name: "a certificate with UTF-8 names and two common names", key: .ed25519,
        subject: "/CN=Zoë Ünïcode/CN=Second Name/O=Ørg", extensions: ["subjectKeyIdentifier = hash"],
        commonNames: ["Zoë Ünïcode", "Second Name"], summary: "Zoë Ünïcode", isSelfSigned: true),
    CertificateRecipe(
        name: "a certificate naming itself as issuer but signed by another key", subject: "/CN=Twin",
        serial: "0x1234",
        extensions: ["subjectKeyIdentifier = hash", "authorityKeyIdentifier = keyid"], issuer: "/CN=Twin",
        commonNames: ["Twin"], summary: "Twin", isSelfSigned: false),
    CertificateRecipe(
        name: "a certificate with PrintableString names", key: .rsa2048,
        subject: "/O=acme   printable  corp/CN=Printable Example",
        extensions: ["subjectKeyIdentifier = hash", "authorityKeyIdentifier = keyid"], printableStrings: true,
        commonNames: ["Printable Example"], summary: "Printable Example", isSelfSigned: true),
]

@Suite("X.509 certificates compared with openssl x509")
struct CertificateTests {
    @Test("every value derived from a certificate agrees with openssl x509", arguments: recipes)
    func derivedValuesAgreeWithOpenSSL(_ recipe: CertificateRecipe) throws {
        try withTemporaryDirectory { directory in
            let generated = try recipe.make(in: directory)
            let certificate = try X509Certificate(der: generated.der)
            #expect(certificate.der == generated.der)

            // The exact bytes of the TBSCertificate's parts, never a re-encoding.
            let parts = try generated.tbsElements()
            try #require(parts.count >= 6)
            #expect(certificate.serialNumber == parts[0])
            #expect(certificate.issuer == parts[2])
            #expect(certificate.subject == parts[4])
            #expect(certificate.subjectPublicKeyInfo == parts[5])
            #expect(certificate.subjectPublicKeyInfo == (try generated.publicKeyInfo()))
            #expect(
                certificate.subjectPublicKeyInfo.suffix(certificate.subjectPublicKey.count)
                    == certificate.subjectPublicKey[...])
            #expect(certificate.subjectPublicKey.count == recipe.key.publicKeyLength)

            let nameOptions = ["-nameopt", "RFC2253,-esc_msb"]
            #expect(
                certificate.subjectDescription == (try generated.field(["-subject"] + nameOptions, "subject"))
            )
            #expect(
                certificate.issuerDescription == (try generated.field(["-issuer"] + nameOptions, "issuer")))
            #expect(
                (certificate.subject == certificate.issuer)
                    == (recipe.issuer == nil || recipe.issuer == recipe.subject))

            // openssl prints the serial's magnitude; a positive INTEGER whose first octet has
            // the high bit set carries a leading 00.
            var serial = try hexBytes(try generated.field(["-serial"], "serial"))
            if let first = serial.first, first >= 0x80 { serial.insert(0, at: 0) }
            #expect(certificate.serialNumberContent == serial)
            #expect(certificate.serialNumber == [0x02, UInt8(serial.count)] + serial)
            #expect(DERInteger.content(of: certificate.serialNumber) == serial)

            let notBefore = try generated.date("-startdate", "notBefore")
            let notAfter = try generated.date("-enddate", "notAfter")
            for (time, expected) in [(certificate.notBefore, notBefore), (certificate.notAfter, notAfter)] {
                #expect(time.year == expected.year)
                #expect(time.month == expected.month)
                #expect(time.day == expected.day)
                #expect(time.secondsSince1970 == expected.seconds)
                let ckDate = String(format: "%04d%02d%02d", expected.year, expected.month, expected.day)
                #expect(time.ckDate == Array(ckDate.utf8))
            }
            #expect(
                certificate.notAfter.secondsSince1970 - certificate.notBefore.secondsSince1970 == Int64(
                    recipe.days) * 86_400)

            #expect(
                certificate.sha1Fingerprint
                    == (try hexBytes(try generated.field(["-fingerprint", "-sha1"], "sha1 Fingerprint"))))
            #expect(
                certificate.sha256Fingerprint
                    == (try hexBytes(try generated.field(["-fingerprint", "-sha256"], "sha256 Fingerprint"))))

            // OpenSSL 3 adds a subjectKeyIdentifier to every v3 certificate unless told "none",
            // and makes it by RFC 5280 method 1, as publicKeyHash is.
            let keyIdentifier = try generated.extensionBytes("subjectKeyIdentifier")
            #expect(certificate.subjectKeyIdentifier == keyIdentifier)
            let withoutKeyIdentifier =
                recipe.extensions.isEmpty || recipe.extensions.contains("subjectKeyIdentifier = none")
            #expect((keyIdentifier == nil) == withoutKeyIdentifier)
            if let keyIdentifier { #expect(certificate.publicKeyHash == keyIdentifier) }
            #expect(certificate.publicKeyHash == DigestAlgorithm.sha1.hash(certificate.subjectPublicKey))

            let constraints = try generated.x509(["-ext", "basicConstraints"])
            #expect(certificate.isCertificateAuthority == constraints.contains("CA:TRUE"))
            #expect(certificate.isSelfSigned == recipe.isSelfSigned)

            // openssl -email lists subject and subjectAltName addresses, sorted.
            let emails = try generated.x509(["-email"]).split(separator: "\n").map(String.init)
            #expect(certificate.emailAddresses.sorted() == emails.sorted())
            #expect(certificate.commonNames == recipe.commonNames)
            #expect(certificate.subjectSummary == recipe.summary)

            let text = try generated.x509(["-text"])
            #expect(text.contains("Public Key Algorithm: \(certificate.publicKeyAlgorithm)\n"))
            #expect(certificate.publicKeyBits == recipe.key.bits)
            if recipe.key != .ed25519 {
                #expect(text.contains("Public-Key: (\(certificate.publicKeyBits) bit)"))
            }
        }
    }

    @Test(
        "the public key algorithm and size are OpenSSL's names for each key kind",
        arguments: [
            (KeyKind.rsa2048, "rsaEncryption"), (.p256, "id-ecPublicKey"), (.p384, "id-ecPublicKey"),
            (.ed25519, "ED25519"),
        ])
    func publicKeyAlgorithms(_ key: KeyKind, algorithm: String) throws {
        try withTemporaryDirectory { directory in
            let recipe = CertificateRecipe(
                name: key.rawValue, key: key, subject: "/CN=\(key.rawValue)", commonNames: [key.rawValue],
                summary: key.rawValue, isSelfSigned: true)
            let certificate = try X509Certificate(der: try recipe.make(in: directory).der)
            #expect(certificate.publicKeyAlgorithm == algorithm)
            #expect(certificate.publicKeyBits == key.bits)
        }
    }

    @Test("a certificate's issuer is the exact subject DER of the CA that signed it")
    func issuerIsTheCASubject() throws {
        try withTemporaryDirectory { directory in
            let leaf = try recipes[1].make(in: directory)
            try OpenSSL.run(["x509", "-in", "ca.pem", "-outform", "DER", "-out", "ca.der"], in: directory)
            let caDER = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file("ca.der"))))
            let ca = try X509Certificate(der: caDER)
            let certificate = try X509Certificate(der: leaf.der)
            #expect(certificate.issuer == ca.subject)
            #expect(ca.isCertificateAuthority)
            #expect(ca.isSelfSigned)
            #expect(!certificate.isSelfSigned)
            #expect(!certificate.isCertificateAuthority)
        }
    }

    @Test("a parsed certificate can be shared across tasks")
    func certificateIsSendable() async throws {
        let der = try withTemporaryDirectory { try recipes[2].make(in: $0).der }
        let certificate = try X509Certificate(der: der)
        let summaries = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<8 { group.addTask { certificate.subjectSummary } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(summaries == Array(repeating: "No Common Name Org", count: 8))
    }
}

@Suite("Input that is not one DER certificate")
struct BadCertificateTests {
    /// One small certificate, made once per test.
    private static func sample(_ body: ([UInt8], TemporaryDirectory) throws -> Void) throws {
        try withTemporaryDirectory { directory in
            let recipe = CertificateRecipe(
                name: "sample", subject: "/CN=Sample/O=Org", serial: "0x80AB",
                extensions: ["subjectKeyIdentifier = hash", "subjectAltName = email:a@example.org"],
                commonNames: ["Sample"], summary: "Sample", isSelfSigned: true)
            try body(try recipe.make(in: directory).der, directory)
        }
    }

    @Test("every prefix of a certificate's DER is refused as invalid input, never a crash")
    func everyPrefixIsRefused() throws {
        try BadCertificateTests.sample { der, _ in
            _ = try X509Certificate(der: der)
            for length in 0..<der.count {
                expectCryptoError(.invalidInput, "prefix of \(length) bytes") {
                    _ = try X509Certificate(der: Array(der.prefix(length)))
                }
            }
        }
    }

    @Test("any one damaged byte is refused as invalid input or parsed, never a crash")
    func damagedBytesNeverCrash() throws {
        try BadCertificateTests.sample { der, _ in
            for index in der.indices {
                for mask: UInt8 in [0x01, 0x80, 0xFF] {
                    var damaged = der
                    damaged[index] ^= mask
                    do throws(CryptoError) {
                        _ = try X509Certificate(der: damaged)
                    } catch {
                        #expect(error.code == .invalidInput, "byte \(index) ^ \(mask): \(error.message)")
                    }
                }
            }
        }
    }

    @Test("bytes after the certificate are refused")
    func trailingBytesAreRefused() throws {
        try BadCertificateTests.sample { der, _ in
            for trailer: [UInt8] in [[0], [0x30, 0x00], der] {
                expectCryptoError(.invalidInput, "\(trailer.count) trailing bytes") {
                    _ = try X509Certificate(der: der + trailer)
                }
            }
        }
    }

    @Test("PEM text is refused as DER")
    func pemIsRefused() throws {
        try BadCertificateTests.sample { der, _ in
            expectCryptoError(.invalidInput) {
                _ = try X509Certificate(der: Array(PEM.encodeCertificate(der).utf8))
            }
        }
    }

    @Test("DER that is something else is refused")
    func otherDERIsRefused() throws {
        try BadCertificateTests.sample { der, _ in
            let certificate = try X509Certificate(der: der)
            for (name, bytes) in [
                ("a SubjectPublicKeyInfo", certificate.subjectPublicKeyInfo), ("a Name", certificate.subject),
                ("an INTEGER", certificate.serialNumber), ("an empty SEQUENCE", [0x30, 0x00]),
                ("a SEQUENCE of three empty SEQUENCEs", [0x30, 0x06, 0x30, 0x00, 0x30, 0x00, 0x30, 0x00]),
            ] {
                expectCryptoError(.invalidInput, "\(name)") { _ = try X509Certificate(der: bytes) }
            }
        }
    }

    @Test("an indefinite-length (BER) encoding is refused")
    func indefiniteLengthIsRefused() throws {
        try BadCertificateTests.sample { der, _ in
            // Certificate ::= SEQUENCE: swap its definite length for 0x80 … 00 00.
            let headerLength = der[1] < 0x80 ? 2 : 2 + Int(der[1] & 0x7F)
            let ber = [0x30, 0x80] + der[headerLength...] + [0, 0]
            expectCryptoError(.invalidInput) { _ = try X509Certificate(der: ber) }
        }
    }

    @Test(
        "a length in more octets than needed (BER, not DER) is refused at every level",
        arguments: [
            "Certificate", "TBSCertificate", "serialNumber", "issuer", "subject", "subjectPublicKeyInfo",
        ])
    func nonMinimalLengthsAreRefused(_ element: String) throws {
        try BadCertificateTests.sample { der, _ in
            let certificate = try X509Certificate(der: der)
            let tbs = try #require(DERWalker.children(of: der, at: 0).first)
            var parts = DERWalker.children(of: der, at: tbs.lowerBound)
            if der[parts[0].lowerBound] == 0xA0 { parts.removeFirst() }  // [0] version
            let target: Range<Int>
            switch element {
            case "Certificate": target = 0..<der.count
            case "TBSCertificate": target = tbs
            case "serialNumber": target = parts[0]
            case "issuer": target = parts[2]
            case "subject": target = parts[4]
            default: target = parts[5]
            }
            let ber = DERWalker.lengthenHeader(of: target, in: der)
            #expect(ber.count > der.count)
            expectCryptoError(.invalidInput, "\(element) with a long-form length") {
                _ = try X509Certificate(der: ber)
            }
            // The rewriting itself is sound: the same walk over the original finds the parts.
            #expect(Array(der[parts[0]]) == certificate.serialNumber)
            #expect(Array(der[parts[4]]) == certificate.subject)
        }
    }

    @Test(
        "an issuer or subject not laid out as a Name is refused (an RDN that is no SET, a type that is no OID)",
        arguments: ["issuer", "subject"])
    func namesThatAreNotNamesAreRefused(_ element: String) throws {
        try BadCertificateTests.sample { der, _ in
            let tbs = try #require(DERWalker.children(of: der, at: 0).first)
            var parts = DERWalker.children(of: der, at: tbs.lowerBound)
            if der[parts[0].lowerBound] == 0xA0 { parts.removeFirst() }  // [0] version
            let name = element == "issuer" ? parts[2] : parts[4]
            // Name ::= SEQUENCE OF SET OF SEQUENCE { type OBJECT IDENTIFIER, value }
            let set = try #require(DERWalker.children(of: der, at: name.lowerBound).first)
            let pair = try #require(DERWalker.children(of: der, at: set.lowerBound).first)
            let type = try #require(DERWalker.children(of: der, at: pair.lowerBound).first)
            #expect(der[set.lowerBound] == 0x31)
            #expect(der[type.lowerBound] == 0x06)
            for (what, offset, tag) in [
                ("its first RDN a SEQUENCE", set.lowerBound, UInt8(0x30)),
                ("its first attribute type a UTF8String", type.lowerBound, UInt8(0x0C)),
            ] {
                var damaged = der
                damaged[offset] = tag
                expectCryptoError(.invalidInput, "\(element) with \(what)") {
                    _ = try X509Certificate(der: damaged)
                }
            }
        }
    }

    @Test("empty input and random bytes are refused", arguments: [0, 1, 2, 16, 300, 4096])
    func randomBytesAreRefused(count: Int) {
        for _ in 0..<20 {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255) }
            expectCryptoError(.invalidInput, "\(bytes)") { _ = try X509Certificate(der: bytes) }
        }
    }
}

@Suite("PEM")
struct PEMTests {
    @Test("a certificate encodes to the PEM text openssl writes, and decodes back")
    func pemMatchesOpenSSL() throws {
        try withTemporaryDirectory { directory in
            let der = try recipes[0].make(in: directory).der
            let pem = try OpenSSL.run(
                ["x509", "-inform", "DER", "-in", "cert.der", "-outform", "PEM"], in: directory)
            #expect(PEM.encodeCertificate(der) == pem)
            #expect(try PEM.certificates(in: Array(pem.utf8)) == [der])
            #expect(PEM.looksLikePEM(Array(pem.utf8)))
            #expect(!PEM.looksLikePEM(der))
        }
    }

    @Test("every certificate block is read in order and other blocks are skipped")
    func severalBlocks() throws {
        try withTemporaryDirectory { directory in
            let first = try recipes[2].make(in: directory).der
            let key = try String(contentsOfFile: directory.file("key.pem"), encoding: .utf8)
            let second = try recipes[5].make(in: directory).der
            let text =
                "leading text\n" + PEM.encodeCertificate(first) + key + "between\n"
                + PEM.encodeCertificate(second)
            #expect(try PEM.certificates(in: Array(text.utf8)) == [first, second])
        }
    }

    @Test(
        "text without a certificate block, or with a damaged one, is refused",
        arguments: [
            "", "no PEM here",
            "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n",
            "-----BEGIN CERTIFICATE-----\n!!!not base64!!!\n-----END CERTIFICATE-----\n",
            "-----BEGIN CERTIFICATE-----\nMIIB\n",
        ])
    func badPEMIsRefused(_ text: String) {
        expectCryptoError(.invalidInput) { _ = try PEM.certificates(in: Array(text.utf8)) }
    }

    @Test(
        "looksLikePEM finds a BEGIN line anywhere and nothing else",
        arguments: [
            ("-----BEGIN CERTIFICATE-----", true), ("junk\n-----BEGIN X", true), ("-----BEGIN", false),
            ("", false), ("-----END CERTIFICATE-----", false),
        ])
    func looksLikePEM(_ text: String, expected: Bool) {
        #expect(PEM.looksLikePEM(Array(text.utf8)) == expected)
    }
}

@Suite("Apple's normalized names")
struct NormalizedNameTests {
    @Test(
        "PrintableString values are upper-cased with blanks collapsed; the result is what openssl encodes for that text"
    )
    func printableStringsAreNormalized() throws {
        let original = try withTemporaryDirectory {
            try X509Certificate(der: try recipes[8].make(in: $0).der)
        }
        let recipe = CertificateRecipe(
            name: "normalized", subject: "/O=ACME PRINTABLE CORP/CN=PRINTABLE EXAMPLE",
            printableStrings: true,
            commonNames: [], summary: "", isSelfSigned: true)
        let expected = try withTemporaryDirectory { try X509Certificate(der: try recipe.make(in: $0).der) }
        #expect(original.subject != expected.subject)
        #expect(DistinguishedName.normalized(original.subject) == expected.subject)
        #expect(
            DistinguishedName.normalized(expected.subject) == expected.subject, "normalizing is idempotent")
    }

    @Test("UTF8String values are left as they are")
    func utf8StringsAreKept() throws {
        let certificate = try withTemporaryDirectory {
            try X509Certificate(der: try recipes[6].make(in: $0).der)
        }
        #expect(DistinguishedName.normalized(certificate.subject) == certificate.subject)
    }

    @Test(
        "bytes that are not one DER Name give nil",
        arguments: [[], [0x30], [0x02, 0x01, 0x01], [0x30, 0x00, 0x00]] as [[UInt8]])
    func notANameGivesNil(_ bytes: [UInt8]) {
        #expect(DistinguishedName.normalized(bytes) == nil)
    }
}
