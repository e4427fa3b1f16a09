import CPKCS11
import Testing

/// The certificate template Java's SunPKCS11 keystore (`P11KeyStore.storeCert`) sends to
/// C_CreateObject: names from the certificate, CKA_SERIAL_NUMBER as
/// `BigInteger.toByteArray()` (the INTEGER's content bytes, not the DER INTEGER), and the
/// keystore alias as both CKA_LABEL and CKA_ID.
func javaCertificateTemplate(_ der: [UInt8], serial: [UInt8], alias: String) throws -> [Attribute] {
    let fields = try DER.fields(of: der)
    return TestToken.certificateTemplate(der) + [
        Attribute(CKA_SUBJECT, fields.subject), Attribute(CKA_ISSUER, fields.issuer),
        Attribute(CKA_SERIAL_NUMBER, serial), Attribute(CKA_LABEL, string: alias),
        Attribute(CKA_ID, string: alias),
    ]
}

extension ModuleTests {
    @Suite("Java interop: certificates written the way SunPKCS11's keystore writes them")
    struct JavaInterop {
        @Test(
            "A certificate whose CKA_SERIAL_NUMBER is the bare INTEGER content is stored with the DER serial")
        func serialAsContentIsAccepted() throws {
            let alice = try Fixtures.alice.get()
            let fields = try DER.fields(of: alice.der)
            let content = Array(try DER.contents(fields.serial[...]))
            try withToken { token throws in
                let session = try token.openSession()
                let (rv, object) = try token.create(
                    try javaCertificateTemplate(alice.der, serial: content, alias: "mykey"), in: session)
                try #require(rv == CKR_OK, "C_CreateObject returned \(rvName(rv))")
                #expect(try token.attribute(CKA_SERIAL_NUMBER, of: object, in: session) == fields.serial)
                #expect(try token.string(CKA_LABEL, of: object, in: session) == "mykey")
                #expect(try token.attribute(CKA_ID, of: object, in: session) == Array("mykey".utf8))
                // Found by issuer and the DER serial, as NSS and p11tool look certificates up.
                let byIssuerAndSerial = [
                    Attribute(CKA_CLASS, ulong: CKO_CERTIFICATE), Attribute(CKA_ISSUER, fields.issuer),
                    Attribute(CKA_SERIAL_NUMBER, fields.serial),
                ]
                #expect(try token.find(byIssuerAndSerial, in: session) == [object])
                // The content form is not what is stored, so it finds nothing.
                let byContent = [
                    Attribute(CKA_CLASS, ulong: CKO_CERTIFICATE), Attribute(CKA_SERIAL_NUMBER, content),
                ]
                #expect(try token.find(byContent, in: session).isEmpty)
            }
        }

        /// Serial 0x8000 has its top bit set: DER (and `BigInteger.toByteArray()`) keep a
        /// leading zero byte, so the content is 00 80 00.
        @Test("A serial with its top bit set is accepted with Java's leading zero and stored as DER")
        func highBitSerialKeepsItsLeadingZero() throws {
            let certificate = try TestCertificate.make(subject: "/CN=High Bit", serial: 0x8000)
            let fields = try DER.fields(of: certificate.der)
            #expect(fields.serial == [0x02, 0x03, 0x00, 0x80, 0x00])
            try withToken { token throws in
                let session = try token.openSession()
                let (rv, object) = try token.create(
                    try javaCertificateTemplate(certificate.der, serial: [0x00, 0x80, 0x00], alias: "high"),
                    in: session)
                try #require(rv == CKR_OK, "C_CreateObject returned \(rvName(rv))")
                #expect(try token.attribute(CKA_SERIAL_NUMBER, of: object, in: session) == fields.serial)
            }
        }

        @Test(
            "A content-form serial that is not the certificate's is refused and nothing is stored",
            arguments: [
                // Another number.
                [0x2A],
                // The same digits without the sign byte: a negative number, not 0x8000.
                [0x80, 0x00],
                // A non-minimal form of the same number.
                [0x00, 0x00, 0x80, 0x00],
                // Nothing at all.
                [],
            ] as [[UInt8]])
        func wrongContentSerialIsRefused(serial: [UInt8]) throws {
            let certificate = try TestCertificate.make(subject: "/CN=High Bit", serial: 0x8000)
            try withToken { token throws in
                let session = try token.openSession()
                let (rv, _) = try token.create(
                    try javaCertificateTemplate(certificate.der, serial: serial, alias: "high"), in: session)
                #expect(rv == CKR_ATTRIBUTE_VALUE_INVALID, "got \(rvName(rv))")
                #expect(try token.find([], in: session).isEmpty)
            }
        }

        /// Java's keystore writes the private key (CKA_ID = alias) and then the certificate.
        /// When the certificate is refused (here: another certificate already has its issuer
        /// and serial), the key stays; the JDK does not see it (no certificate pairs with it)
        /// and writes the same key again on the next attempt.
        @Test("The same private key written again after a refused certificate is not stored twice")
        func retriedKeyIsNotDuplicated() throws {
            // Two self-signed certificates with one issuer name and serial but other keys.
            let first = try TestCertificate.make(subject: "/CN=Clash", serial: 7)
            let second = try TestCertificate.make(subject: "/CN=Clash", serial: 7)
            try withLoggedInToken { token, session throws in
                let scalar = randomP256Scalar()
                let keyTemplate = ecPrivateKeyTemplate(
                    scalar: scalar, label: "", extra: [Attribute(CKA_ID, string: "clash")])
                let key = try token.createObject(keyTemplate, in: session)
                _ = try token.createCertificate(first, in: session)
                let secondDER = try DER.fields(of: second.der)
                let (refused, _) = try token.create(
                    try javaCertificateTemplate(
                        second.der, serial: Array(try DER.contents(secondDER.serial[...])), alias: "clash"),
                    in: session)
                #expect(refused == CKR_ATTRIBUTE_VALUE_INVALID, "got \(rvName(refused))")

                // The retry: the same key, the same template.
                let again = try token.createObject(keyTemplate, in: session)
                let keysWithAlias = [
                    Attribute(CKA_CLASS, ulong: CKO_PRIVATE_KEY), Attribute(CKA_ID, string: "clash"),
                ]
                #expect(try token.find(keysWithAlias, in: session) == [key])
                #expect(
                    try token.attribute(uniqueIDAttribute, of: again, in: session)
                        == token.attribute(uniqueIDAttribute, of: key, in: session))
                // The key the retry got is whole: it signs.
                let (rv, signature) = try token.sign(coreMessage, with: again, .p256, in: session)
                #expect(rv == CKR_OK && signature.count == 64, "C_Sign returned \(rvName(rv))")
            }
        }

        /// How a second private key differs from a stored one.
        enum KeyDifference: CaseIterable, Sendable {
            case label, usage, id, keyMaterial
        }

        @Test(
            "A private key that differs from a stored one in anything is stored as a new object",
            arguments: KeyDifference.allCases)
        func differingKeyIsStoredAgain(difference: KeyDifference) throws {
            try withLoggedInToken { token, session throws in
                let scalar = randomP256Scalar()
                let id = Attribute(CKA_ID, string: "alias")
                let stored = try token.createObject(
                    ecPrivateKeyTemplate(scalar: scalar, label: "", extra: [id]), in: session)
                let other: [Attribute] =
                    switch difference {
                    case .label: ecPrivateKeyTemplate(scalar: scalar, label: "other", extra: [id])
                    case .usage:
                        ecPrivateKeyTemplate(
                            scalar: scalar, label: "", extra: [id, Attribute(CKA_DERIVE, bool: true)])
                    case .id:
                        ecPrivateKeyTemplate(
                            scalar: scalar, label: "", extra: [Attribute(CKA_ID, string: "b")])
                    case .keyMaterial:
                        ecPrivateKeyTemplate(scalar: randomP256Scalar(), label: "", extra: [id])
                    }
                let created = try token.createObject(other, in: session)
                #expect(created != stored)
                #expect(
                    try token.find([Attribute(CKA_CLASS, ulong: CKO_PRIVATE_KEY)], in: session).count == 2)
            }
        }

        @Test("A key whose CKA_ID a certificate has is no orphan: writing it again stores a second object")
        func keyWithCertificateIsStoredAgain() throws {
            let certificate = try TestCertificate.make(subject: "/CN=Paired", serial: 9)
            try withLoggedInToken { token, session throws in
                let keyTemplate = ecPrivateKeyTemplate(
                    scalar: randomP256Scalar(), label: "", extra: [Attribute(CKA_ID, string: "paired")])
                let key = try token.createObject(keyTemplate, in: session)
                let fields = try DER.fields(of: certificate.der)
                _ = try token.createObject(
                    try javaCertificateTemplate(
                        certificate.der, serial: Array(try DER.contents(fields.serial[...])), alias: "paired"),
                    in: session)
                let again = try token.createObject(keyTemplate, in: session)
                #expect(again != key)
            }
        }

        @Test("Writing an orphan key again in a read-only session is refused like any write")
        func orphanTwinInReadOnlySessionIsRefused() throws {
            try withLoggedInToken { token, session throws in
                let keyTemplate = ecPrivateKeyTemplate(
                    scalar: randomP256Scalar(), label: "", extra: [Attribute(CKA_ID, string: "orphan")])
                _ = try token.createObject(keyTemplate, in: session)
                let readOnly = try token.openSession(readWrite: false)
                let (rv, _) = try token.create(keyTemplate, in: readOnly)
                #expect(rv == CKR_SESSION_READ_ONLY, "got \(rvName(rv))")
            }
        }
    }
}
