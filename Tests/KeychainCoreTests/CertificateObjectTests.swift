import Foundation
import KeychainCore
import Testing

@Suite("Certificates created from their DER")
struct CertificateCreationTests {
    @Test("a self-signed CA gets every attribute of ARCHITECTURE.md §3.4 from its DER alone")
    func selfSignedCertificateIsDerived() throws {
        try withToken { token, directory in
            let ca = try TestCertificate.make(
                "ca", subject: "/CN=Test Root/O=Tests", serial: "0x80AB", authority: true, in: directory)
            let reference = try token.createObject(certificateTemplate(ca.der), context: Contexts.readWrite)
            #expect(!reference.isSessionObject)
            let attributes = try token.attributes(of: reference, context: Contexts.readWrite)

            #expect(attributes[.value] == ca.der)
            #expect(attributes[.subject] == ca.subject)
            #expect(attributes[.issuer] == ca.issuer)
            #expect(attributes[.issuer] == ca.subject, "self-signed")
            #expect(attributes[.serialNumber] == ca.serialNumber)
            #expect(attributes[.serialNumber] == [0x02, 0x03, 0x00, 0x80, 0xAB], "a full DER INTEGER")
            #expect(attributes[.startDate] == ca.startDate)
            #expect(attributes[.endDate] == ca.endDate)
            #expect(attributes[.publicKeyInfo] == ca.publicKeyInfo)
            #expect(attributes[.checkValue] == Array(ca.sha1Fingerprint.prefix(3)))
            #expect(attributes[.hashOfSubjectPublicKey] == ca.keyHash)
            #expect(attributes[.hashOfIssuerPublicKey] == ca.keyHash, "its own key signed it")
            #expect(attributes.ulong(.certificateCategory) == CertificateCategory.authority.rawValue)
            #expect(attributes[.id] == ca.keyHash, "Apple's public-key hash")
            #expect(attributes.string(.label) == "Test Root", "the common name")

            // The rest: what the template said, and the defaults of PKCS#11 v2.40 §4.4, §4.6.
            #expect(attributes.ulong(.class) == ObjectClass.certificate.rawValue)
            #expect(attributes.ulong(.certificateType) == CertificateType.x509.rawValue)
            #expect(attributes.bool(.token) == true)
            #expect(attributes.bool(.private) == false)
            #expect(attributes.bool(.modifiable) == true)
            #expect(attributes.bool(.copyable) == true)
            #expect(attributes.bool(.destroyable) == true)
            #expect(attributes.bool(.trusted) == false)
            #expect(attributes[.url] == [])
            #expect(attributes.ulong(.javaMIDPSecurityDomain) == 0)
            #expect(attributes.ulong(.nameHashAlgorithm) == 0x220, "CKM_SHA_1")
            #expect(attributes.string(.uniqueID) == "\(token.serialNumber):\(reference.rowID)")
            #expect(
                Set(attributes.keys) == [
                    .class, .token, .private, .modifiable, .copyable, .destroyable, .label, .uniqueID,
                    .certificateType, .trusted, .certificateCategory, .checkValue, .startDate, .endDate,
                    .publicKeyInfo, .subject, .id, .issuer, .serialNumber, .value, .url,
                    .hashOfSubjectPublicKey, .creationDate, .modificationDate,
                    .hashOfIssuerPublicKey, .javaMIDPSecurityDomain, .nameHashAlgorithm, .distrusted,
                ])
        }
    }

    @Test("a certificate issued by another key is an end entity with no derivable issuer key hash")
    func issuedCertificateIsDerived() throws {
        try withToken { token, directory in
            let ca = try TestCertificate.make("ca", subject: "/CN=Test Root", authority: true, in: directory)
            let leaf = try TestCertificate.make(
                "leaf", subject: "/CN=Alice Example/O=Tests", serial: "0x1234", signer: "ca", in: directory)
            let reference = try token.createObject(certificateTemplate(leaf.der), context: Contexts.readWrite)
            let attributes = try token.attributes(of: reference, context: Contexts.readWrite)
            #expect(attributes[.subject] == leaf.subject)
            #expect(attributes[.issuer] == ca.subject)
            #expect(attributes[.serialNumber] == [0x02, 0x02, 0x12, 0x34])
            #expect(attributes[.hashOfSubjectPublicKey] == leaf.keyHash)
            #expect(attributes[.hashOfIssuerPublicKey] == [], "only a self-signed certificate's is known")
            #expect(attributes.ulong(.certificateCategory) == CertificateCategory.otherEntity.rawValue)
            #expect(attributes[.id] == leaf.keyHash)
            #expect(attributes.string(.label) == "Alice Example")
        }
    }

    @Test(
        "the default label is the subject summary: CN, else e-mail, else the first RDN value",
        arguments: [
            ("/CN=Common/O=Org", "Common"), ("/O=Org/emailAddress=mail@example.org", "mail@example.org"),
            ("/O=First Org/OU=Unit", "First Org"), ("/CN=Zoë", "Zoë"),
        ])
    func defaultLabelIsTheSummary(_ subject: String, label: String) throws {
        try withToken { token, directory in
            let certificate = try TestCertificate.make("cert", subject: subject, in: directory)
            let reference = try token.createObject(
                certificateTemplate(certificate.der), context: Contexts.readWrite)
            #expect(try token.attributes(of: reference, context: Contexts.readWrite).string(.label) == label)
        }
    }

    @Test("a label and an ID given by the caller win over the derived ones, even when empty")
    func callerLabelAndIDWin() throws {
        try withToken { token, directory in
            let first = try TestCertificate.make("first", subject: "/CN=First", serial: "1", in: directory)
            let second = try TestCertificate.make("second", subject: "/CN=Second", serial: "2", in: directory)
            let given = try token.createObject(
                certificateTemplate(first.der, [.label: bytes("my label"), .id: [1, 2, 3]]),
                context: Contexts.readWrite)
            let givenAttributes = try token.attributes(of: given, context: Contexts.readWrite)
            #expect(givenAttributes.string(.label) == "my label")
            #expect(givenAttributes[.id] == [1, 2, 3])
            #expect(
                givenAttributes[.hashOfSubjectPublicKey] == first.keyHash, "derived values are still there")

            let empty = try token.createObject(
                certificateTemplate(second.der, [.label: [], .id: []]), context: Contexts.readWrite)
            let emptyAttributes = try token.attributes(of: empty, context: Contexts.readWrite)
            #expect(emptyAttributes[.label] == [])
            #expect(emptyAttributes[.id] == [])
        }
    }

    @Test("a category or trust the template gives is kept")
    func templateCategoryIsKept() throws {
        try withToken { token, directory in
            let certificate = try TestCertificate.make(
                "cert", subject: "/CN=Kept", authority: true, in: directory)
            let reference = try token.createObject(
                certificateTemplate(
                    certificate.der,
                    [.certificateCategory: ulong(CertificateCategory.tokenUser.rawValue), .trusted: yes]),
                context: Contexts.securityOfficer)
            let attributes = try token.attributes(of: reference, context: Contexts.readWrite)
            #expect(attributes.ulong(.certificateCategory) == CertificateCategory.tokenUser.rawValue)
            #expect(attributes.bool(.trusted) == true)
        }
    }

    @Test(
        "a derived attribute given with the value the DER has is accepted",
        arguments: [
            AttributeType.subject, .issuer, .serialNumber, .startDate, .endDate, .publicKeyInfo, .checkValue,
            .hashOfSubjectPublicKey,
        ])
    func agreeingDerivedAttributeIsAccepted(_ type: AttributeType) throws {
        try withToken { token, directory in
            let certificate = try TestCertificate.make("cert", subject: "/CN=Agreeing", in: directory)
            let value = TestCertificate.value(of: type, in: certificate)
            let reference = try token.createObject(
                certificateTemplate(certificate.der, [type: value]), context: Contexts.readWrite)
            #expect(try token.attributes(of: reference, context: Contexts.readWrite)[type] == value)
        }
    }

    @Test(
        "a derived attribute that contradicts the DER is refused and nothing is stored",
        arguments: [
            AttributeType.subject, .issuer, .serialNumber, .startDate, .endDate, .publicKeyInfo, .checkValue,
            .hashOfSubjectPublicKey,
        ])
    func contradictingDerivedAttributeIsRefused(_ type: AttributeType) throws {
        try withToken { token, directory in
            let certificate = try TestCertificate.make("cert", subject: "/CN=Contradicted", in: directory)
            var value = TestCertificate.value(of: type, in: certificate)
            // Another value of the same form: a date stays eight digits.
            if type == .startDate || type == .endDate {
                value = bytes("19991231")
            } else {
                value[value.count - 1] ^= 1
            }
            expectKeychainError(.attributeValueInvalid, containing: "contradicts the certificate DER") {
                _ = try token.createObject(
                    certificateTemplate(certificate.der, [type: value]), context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [])
        }
    }

    /// Templates that cannot make a certificate, and the error each gets.
    static let badTemplates: [Named<(AttributeSet, CoreError.Code)>] = [
        Named("no CKA_CLASS", ([.certificateType: ulong(0), .value: [0x30, 0x00]], .templateIncomplete)),
        Named(
            "a CKA_CLASS of the wrong size",
            ([.class: [1], .certificateType: ulong(0), .value: []], .attributeValueInvalid)),
        Named(
            "a class no token creates (CKO_MECHANISM)", ([.class: ulong(7)], .attributeValueInvalid)),
        Named("a vendor class", ([.class: ulong(0x8000_0001)], .attributeValueInvalid)),
        Named("no CKA_VALUE", ([.class: ulong(1), .certificateType: ulong(0)], .templateIncomplete)),
        Named("no CKA_CERTIFICATE_TYPE", ([.class: ulong(1), .value: [0x30, 0x00]], .templateIncomplete)),
        Named(
            "a non-X.509 certificate type",
            ([.class: ulong(1), .certificateType: ulong(1), .value: [0x30, 0x00]], .attributeValueInvalid)),
        Named(
            "a CKA_VALUE that is not a certificate",
            (certificateTemplate([0x30, 0x03, 0x02, 0x01, 0x01]), .attributeValueInvalid)),
        Named("an empty CKA_VALUE", (certificateTemplate([]), .attributeValueInvalid)),
        Named(
            "a PEM CKA_VALUE",
            (
                certificateTemplate(bytes("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")),
                .attributeValueInvalid
            )),
        Named(
            "an attribute of another class",
            (certificateTemplate([0x30, 0x00], [.keyType: ulong(0)]), .attributeTypeInvalid)),
        Named(
            "a vendor attribute",
            (certificateTemplate([0x30, 0x00], [.vendorDefined: [1]]), .attributeTypeInvalid)),
        Named(
            "a CKA_UNIQUE_ID",
            (certificateTemplate([0x30, 0x00], [.uniqueID: bytes("x:1")]), .attributeReadOnly)),
        Named(
            "a CK_BBOOL of two bytes",
            (certificateTemplate([0x30, 0x00], [.modifiable: [1, 0]]), .attributeValueInvalid)),
        Named(
            "a CK_DATE that is not eight digits",
            (certificateTemplate([0x30, 0x00], [.startDate: bytes("2024-1-1")]), .attributeValueInvalid)),
        Named(
            "CKA_TRUSTED true from a user",
            (certificateTemplate([0x30, 0x00], [.trusted: yes]), .attributeReadOnly)),
    ]

    @Test(
        "a template that cannot make a certificate is refused and nothing is stored", arguments: badTemplates)
    func badTemplateIsRefused(_ template: Named<(AttributeSet, CoreError.Code)>) throws {
        let (attributes, code) = template.value
        try withToken { token, _ throws in
            expectKeychainError(code) { _ = try token.createObject(attributes, context: Contexts.readWrite) }
            #expect(try token.findObjects([:], context: Contexts.user) == [])
        }
    }

    @Test("a DER that does not parse is refused with a message saying so")
    func badDERMessage() throws {
        try withToken { token, directory in
            let certificate = try TestCertificate.make("cert", subject: "/CN=Cut", in: directory)
            expectKeychainError(.attributeValueInvalid, containing: "certificate DER does not parse") {
                _ = try token.createObject(
                    certificateTemplate(Array(certificate.der.dropLast())), context: Contexts.readWrite)
            }
            expectKeychainError(.attributeValueInvalid) {
                _ = try token.createObject(
                    certificateTemplate(certificate.der + [0]), context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [])
        }
    }
}

@Suite("Uniqueness: one certificate per issuer and serial")
struct UniquenessTests {
    @Test("adding the same certificate again is a duplicate and leaves the first intact")
    func duplicateIsRefused() throws {
        try withToken { token, directory in
            let certificate = try TestCertificate.make("cert", subject: "/CN=Once", in: directory)
            let first = try token.createObject(
                certificateTemplate(certificate.der, [.label: bytes("first")]), context: Contexts.readWrite)
            let before = try token.attributes(of: first, context: Contexts.readWrite)
            for label in ["first", "second"] {
                expectKeychainError(.duplicateItem, containing: "issuer and serial number") {
                    _ = try token.createObject(
                        certificateTemplate(certificate.der, [.label: bytes(label)]),
                        context: Contexts.readWrite)
                }
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [first])
            #expect(try token.attributes(of: first, context: Contexts.readWrite) == before)
            #expect(try token.findObjects([.label: bytes("second")], context: Contexts.readWrite) == [])
        }
    }

    @Test("a different certificate with the same issuer and serial is a duplicate")
    func sameIssuerAndSerialIsADuplicate() throws {
        try withToken { token, directory in
            _ = try TestCertificate.make("ca", subject: "/CN=CA", authority: true, in: directory)
            let first = try TestCertificate.make(
                "first", subject: "/CN=One", serial: "7", signer: "ca", in: directory)
            let second = try TestCertificate.make(
                "second", subject: "/CN=Two", serial: "7", signer: "ca", in: directory)
            #expect(first.der != second.der)
            let stored = try token.createObject(certificateTemplate(first.der), context: Contexts.readWrite)
            expectKeychainError(.duplicateItem) {
                _ = try token.createObject(certificateTemplate(second.der), context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [stored])
        }
    }

    @Test("certificates with the same subject but other serials are all stored")
    func sameSubjectOtherSerials() throws {
        try withToken { token, directory in
            var references: [ObjectReference] = []
            for serial in 1...3 {
                let certificate = try TestCertificate.make(
                    "c\(serial)", subject: "/CN=Same", serial: String(serial), in: directory)
                references.append(
                    try token.createObject(certificateTemplate(certificate.der), context: Contexts.readWrite))
            }
            #expect(Set(references).count == 3)
            #expect(try token.findObjects([.label: bytes("Same")], context: Contexts.readWrite) == references)
        }
    }

    @Test("the same certificate may be both a token object and a session object")
    func tokenAndSessionCopiesAreSeparate() throws {
        try withToken { token, directory in
            let certificate = try TestCertificate.make("cert", subject: "/CN=Both", in: directory)
            let stored = try token.createObject(
                certificateTemplate(certificate.der), context: Contexts.readWrite)
            let session = try token.createObject(
                certificateTemplate(certificate.der, token: false), context: Contexts.readWrite)
            #expect(session.isSessionObject)
            expectKeychainError(.duplicateItem) {
                _ = try token.createObject(
                    certificateTemplate(certificate.der, token: false), context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [stored, session])
        }
    }
}

@Suite("Batch import")
struct BatchTests {
    @Test("a batch stores every object, in order")
    func batchStoresAll() throws {
        try withToken { token, directory in
            let certificates = try (1...3).map {
                try TestCertificate.make(
                    "c\($0)", subject: "/CN=Batch \($0)", serial: String($0), in: directory)
            }
            let references = try token.createObjects(
                certificates.map { certificateTemplate($0.der) }, context: Contexts.readWrite)
            #expect(references.count == 3)
            #expect(try token.findObjects([:], context: Contexts.readWrite) == references)
            for (reference, certificate) in zip(references, certificates) {
                #expect(
                    try token.attributes(of: reference, context: Contexts.readWrite)[.value]
                        == certificate.der)
            }
            #expect(try token.createObjects([], context: Contexts.readWrite) == [])
        }
    }

    @Test("a batch with one bad certificate stores nothing")
    func batchWithBadDERStoresNothing() throws {
        try withToken { token, directory in
            let good = try TestCertificate.make("good", subject: "/CN=Good", in: directory)
            expectKeychainError(.attributeValueInvalid) {
                _ = try token.createObjects(
                    [
                        certificateTemplate(good.der), dataTemplate(label: "data"),
                        certificateTemplate(Array(good.der.dropFirst())),
                    ],
                    context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [])
        }
    }

    @Test("a batch with a duplicate, of its own or of a stored certificate, stores nothing")
    func batchWithDuplicateStoresNothing() throws {
        try withToken { token, directory in
            let first = try TestCertificate.make("first", subject: "/CN=First", serial: "1", in: directory)
            let second = try TestCertificate.make("second", subject: "/CN=Second", serial: "2", in: directory)
            expectKeychainError(.duplicateItem) {
                _ = try token.createObjects(
                    [
                        certificateTemplate(first.der), dataTemplate(label: "data"),
                        certificateTemplate(first.der),
                    ],
                    context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [])

            let stored = try token.createObject(certificateTemplate(first.der), context: Contexts.readWrite)
            expectKeychainError(.duplicateItem) {
                _ = try token.createObjects(
                    [certificateTemplate(second.der), certificateTemplate(first.der)],
                    context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [stored])
        }
    }

    @Test("a batch that fails stores no session object either")
    func failedBatchLeavesNoSessionObject() throws {
        try withToken { token, directory in
            let certificate = try TestCertificate.make("cert", subject: "/CN=Twice", in: directory)
            expectKeychainError(.duplicateItem) {
                _ = try token.createObjects(
                    [
                        dataTemplate(label: "session", token: false), certificateTemplate(certificate.der),
                        certificateTemplate(certificate.der),
                    ],
                    context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [])
        }
    }

    @Test("a batch a read-only session may not write stores nothing")
    func batchInReadOnlySession() throws {
        try withToken { token, directory in
            let certificate = try TestCertificate.make("cert", subject: "/CN=RO", in: directory)
            expectKeychainError(.sessionReadOnly) {
                _ = try token.createObjects(
                    [dataTemplate(label: "session", token: false), certificateTemplate(certificate.der)],
                    context: Contexts.readOnly)
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [])
        }
    }
}

extension TestCertificate {
    /// The value ARCHITECTURE.md §3.4 derives for `type`.
    static func value(of type: AttributeType, in certificate: TestCertificate) -> [UInt8] {
        switch type {
        case .subject: certificate.subject
        case .issuer: certificate.issuer
        case .serialNumber: certificate.serialNumber
        case .startDate: certificate.startDate
        case .endDate: certificate.endDate
        case .publicKeyInfo: certificate.publicKeyInfo
        case .checkValue: Array(certificate.sha1Fingerprint.prefix(3))
        case .hashOfSubjectPublicKey: certificate.keyHash
        default: []
        }
    }
}
