import CPKCS11
import Testing

/// CKA_UNIQUE_ID is in p11/include (v3.0); spelled out as the test's own constant too.
let uniqueIDAttribute = CK_ATTRIBUTE_TYPE(CKA_UNIQUE_ID)

/// A way to spoil a certificate's DER.
enum BadDER: String, CaseIterable, Sendable {
    case truncated, truncatedHeader, trailingBytes, notDER, empty, wrongStructure

    func apply(to der: [UInt8]) -> [UInt8] {
        switch self {
        case .truncated: Array(der.prefix(der.count - 20))
        case .truncatedHeader: Array(der.prefix(3))
        case .trailingBytes: der + [0x00, 0x01]
        case .notDER: Array("-----BEGIN CERTIFICATE-----".utf8)
        case .empty: []
        // A well-formed DER SEQUENCE that is not a certificate.
        case .wrongStructure: [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x02]
        }
    }
}

extension ModuleTests {
    @Suite("Certificates: C_CreateObject derives every attribute from the DER (ARCHITECTURE.md §3.4)")
    struct Certificates {
        @Test("A certificate created from its DER alone has every derived attribute openssl agrees with")
        func derivedAttributes() throws {
            let alice = try Fixtures.alice.get()
            let fields = try DER.fields(of: alice.der)
            // The DER walker agrees with openssl on what it extracts.
            #expect(fields.publicKeyInfo == alice.subjectPublicKeyInfo)
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(alice, in: session)
                func value(_ type: CK_ATTRIBUTE_TYPE) throws -> [UInt8]? {
                    try token.attribute(type, of: object, in: session)
                }
                #expect(try value(CKA_VALUE) == alice.der)
                #expect(decodeULong(try value(CKA_CLASS)) == CKO_CERTIFICATE)
                #expect(decodeULong(try value(CKA_CERTIFICATE_TYPE)) == CKC_X_509)
                #expect(try value(CKA_TOKEN) == [1])
                #expect(try value(CKA_PRIVATE) == [0])
                #expect(try value(CKA_MODIFIABLE) == [1])
                #expect(try value(CKA_COPYABLE) == [1])
                #expect(try value(CKA_DESTROYABLE) == [1])
                #expect(try value(CKA_TRUSTED) == [0])
                #expect(try value(CKA_SUBJECT) == fields.subject)
                #expect(try value(CKA_ISSUER) == fields.issuer)
                // CKA_SERIAL_NUMBER is the full DER INTEGER; its content is openssl's serial.
                let serial = try #require(try value(CKA_SERIAL_NUMBER))
                #expect(serial == fields.serial)
                let content = try DER.contents(serial[...])
                #expect(hex(Array(content.drop { $0 == 0 })) == alice.serialHex.uppercased())
                #expect(
                    try value(CKA_START_DATE).map { String(decoding: $0, as: UTF8.self) } == alice.startDate)
                #expect(try value(CKA_END_DATE).map { String(decoding: $0, as: UTF8.self) } == alice.endDate)
                #expect(try value(CKA_PUBLIC_KEY_INFO) == alice.subjectPublicKeyInfo)
                #expect(try value(CKA_ID) == alice.subjectKeyIdentifier)
                #expect(try value(CKA_HASH_OF_SUBJECT_PUBLIC_KEY) == alice.subjectKeyIdentifier)
                // Self-signed: the issuer's key is the subject's.
                #expect(try value(CKA_HASH_OF_ISSUER_PUBLIC_KEY) == alice.subjectKeyIdentifier)
                #expect(decodeULong(try value(CKA_NAME_HASH_ALGORITHM)) == CKM_SHA_1)
                #expect(try value(CKA_CHECK_VALUE) == Array(alice.sha1Fingerprint.prefix(3)))
                #expect(decodeULong(try value(CKA_CERTIFICATE_CATEGORY)) == 3)
                #expect(try token.string(CKA_LABEL, of: object, in: session) == "Alice")
                #expect(try value(CKA_URL) == [])
                let uniqueID = try #require(try value(uniqueIDAttribute))
                #expect(!uniqueID.isEmpty)
            }
        }

        @Test("CK_DATE attributes are eight ASCII digits")
        func datesAreDigits() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(try Fixtures.bob.get(), in: session)
                for type in [CKA_START_DATE, CKA_END_DATE] {
                    let date = try #require(try token.attribute(type, of: object, in: session))
                    #expect(date.count == 8)
                    #expect(date.allSatisfy { (0x30...0x39).contains($0) })
                }
            }
        }

        @Test("An authority certificate has CKA_CERTIFICATE_CATEGORY 2, an entity certificate 3")
        func certificateCategory() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let authority = try token.createCertificate(try Fixtures.authority.get(), in: session)
                let entity = try token.createCertificate(try Fixtures.bob.get(), in: session)
                #expect(
                    decodeULong(try token.attribute(CKA_CERTIFICATE_CATEGORY, of: authority, in: session))
                        == 2)
                #expect(
                    decodeULong(try token.attribute(CKA_CERTIFICATE_CATEGORY, of: entity, in: session)) == 3)
                #expect(try token.string(CKA_LABEL, of: authority, in: session) == "Example Root CA")
            }
        }

        @Test("Without a CN the default label is the e-mail address")
        func labelFromEmail() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(try Fixtures.mailOnly.get(), in: session)
                #expect(try token.string(CKA_LABEL, of: object, in: session) == "mail.only@example.com")
            }
        }

        @Test("CKA_UNIQUE_ID is non-empty, different for each object, and kept across re-initialisation")
        func uniqueIDs() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let alice = try token.createCertificate(try Fixtures.alice.get(), in: session)
                let bob = try token.createCertificate(try Fixtures.bob.get(), in: session)
                let aliceID = try #require(try token.attribute(uniqueIDAttribute, of: alice, in: session))
                let bobID = try #require(try token.attribute(uniqueIDAttribute, of: bob, in: session))
                #expect(!aliceID.isEmpty)
                #expect(aliceID != bobID)
                #expect(try token.m.C_Finalize(nil) == CKR_OK)
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
                let again = try token.openSession()
                let found = try token.find([Attribute(CKA_LABEL, string: "Alice")], in: again)
                try #require(found.count == 1)
                #expect(try token.attribute(uniqueIDAttribute, of: found[0], in: again) == aliceID)
                // And a search by it finds the object.
                #expect(try token.find([Attribute(uniqueIDAttribute, aliceID)], in: again) == found)
            }
        }

        @Test("A caller's CKA_LABEL and CKA_ID win over the derived ones")
        func callerLabelAndIDWin() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(
                    try Fixtures.alice.get(),
                    extra: [Attribute(CKA_LABEL, string: "my cert"), Attribute(CKA_ID, [1, 2, 3])],
                    in: session)
                #expect(try token.string(CKA_LABEL, of: object, in: session) == "my cert")
                #expect(try token.attribute(CKA_ID, of: object, in: session) == [1, 2, 3])
            }
        }

        @Test("A caller's CKA_SUBJECT, CKA_ISSUER and CKA_SERIAL_NUMBER equal to the DER's are accepted")
        func agreeingDerivedAttributes() throws {
            let alice = try Fixtures.alice.get()
            let fields = try DER.fields(of: alice.der)
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(
                    alice,
                    extra: [
                        Attribute(CKA_SUBJECT, fields.subject), Attribute(CKA_ISSUER, fields.issuer),
                        Attribute(CKA_SERIAL_NUMBER, fields.serial),
                    ], in: session)
                #expect(try token.attribute(CKA_SUBJECT, of: object, in: session) == fields.subject)
            }
        }

        @Test(
            "A caller's attribute that contradicts the DER is refused with CKR_ATTRIBUTE_VALUE_INVALID",
            arguments: [CKA_SUBJECT, CKA_ISSUER, CKA_SERIAL_NUMBER, CKA_START_DATE, CKA_CHECK_VALUE])
        func contradictingAttribute(type: CK_ATTRIBUTE_TYPE) throws {
            let alice = try Fixtures.alice.get()
            let bobFields = try DER.fields(of: try Fixtures.bob.get().der)
            let contradiction: [UInt8] =
                switch type {
                case CKA_SUBJECT: bobFields.subject
                case CKA_ISSUER: bobFields.issuer
                case CKA_SERIAL_NUMBER: [0x02, 0x01, 0x2A]
                case CKA_START_DATE: Array("19991231".utf8)
                default: [0, 0, 0]
                }
            try withToken { token throws in
                let session = try token.openSession()
                let (rv, _) = try token.create(
                    TestToken.certificateTemplate(alice.der) + [Attribute(type, contradiction)], in: session)
                #expect(rv == CKR_ATTRIBUTE_VALUE_INVALID)
                #expect(try token.find([], in: session).isEmpty)
            }
        }

        @Test(
            "Malformed DER is refused with CKR_ATTRIBUTE_VALUE_INVALID and nothing is stored",
            arguments: BadDER.allCases)
        func malformedDER(damage: BadDER) throws {
            try withToken { token throws in
                let session = try token.openSession()
                _ = try token.createCertificate(try Fixtures.bob.get(), in: session)
                let before = try token.find([], in: session)
                let bad = damage.apply(to: try Fixtures.alice.get().der)
                for isToken in [true, false] {
                    let (rv, _) = try token.create(
                        TestToken.certificateTemplate(bad, token: isToken), in: session)
                    #expect(rv == CKR_ATTRIBUTE_VALUE_INVALID, "CKA_TOKEN=\(isToken)")
                }
                #expect(try token.find([], in: session) == before)
                #expect(try token.string(CKA_LABEL, of: before[0], in: session) == "Bob")
            }
        }

        @Test(
            "The same certificate twice is refused with CKR_ATTRIBUTE_VALUE_INVALID and the first stays intact"
        )
        func duplicateCertificate() throws {
            let alice = try Fixtures.alice.get()
            try withToken { token throws in
                let session = try token.openSession()
                let first = try token.createCertificate(alice, in: session)
                // The label is not part of the uniqueness key (ARCHITECTURE.md §3.5).
                for extra in [[], [Attribute(CKA_LABEL, string: "another label")]] {
                    let (rv, _) = try token.create(
                        TestToken.certificateTemplate(alice.der) + extra, in: session)
                    #expect(rv == CKR_ATTRIBUTE_VALUE_INVALID)
                }
                #expect(try token.find([], in: session) == [first])
                #expect(try token.string(CKA_LABEL, of: first, in: session) == "Alice")
                #expect(try token.attribute(CKA_VALUE, of: first, in: session) == alice.der)
            }
        }

        @Test(
            "A template without a required attribute is refused with CKR_TEMPLATE_INCOMPLETE",
            arguments: [CKA_VALUE, CKA_CLASS, CKA_CERTIFICATE_TYPE])
        func missingRequiredAttribute(missing: CK_ATTRIBUTE_TYPE) throws {
            try withToken { token throws in
                let session = try token.openSession()
                let template = TestToken.certificateTemplate(try Fixtures.alice.get().der).filter {
                    $0.type != missing
                }
                let (rv, _) = try token.create(template, in: session)
                #expect(rv == CKR_TEMPLATE_INCOMPLETE)
                #expect(try token.find([], in: session).isEmpty)
            }
        }

        @Test(
            "A NULL pValue with a non-zero length is refused with CKR_ARGUMENTS_BAD",
            arguments: [CKA_LABEL, CKA_VALUE])
        func nullValueWithLength(type: CK_ATTRIBUTE_TYPE) throws {
            try withToken { token throws in
                let session = try token.openSession()
                let template =
                    TestToken.certificateTemplate(try Fixtures.alice.get().der).filter { $0.type != type }
                    + [Attribute.null(type, length: 5)]
                let (rv, _) = try token.create(template, in: session)
                #expect(rv == CKR_ARGUMENTS_BAD)
                #expect(try token.find([], in: session).isEmpty)
            }
        }

        @Test(
            "A CK_BBOOL or CK_ULONG of the wrong size is refused with CKR_ATTRIBUTE_VALUE_INVALID",
            arguments: [
                (CKA_TOKEN, [UInt8](repeating: 1, count: 4)), (CKA_PRIVATE, []), (CKA_MODIFIABLE, [1, 0]),
                (CKA_CERTIFICATE_TYPE, [0, 0, 0, 0]), (CKA_CERTIFICATE_CATEGORY, [2]),
            ])
        func wrongSize(type: CK_ATTRIBUTE_TYPE, value: [UInt8]) throws {
            try withToken { token throws in
                let session = try token.openSession()
                let template =
                    TestToken.certificateTemplate(try Fixtures.alice.get().der).filter { $0.type != type }
                    + [Attribute(type, value)]
                let (rv, _) = try token.create(template, in: session)
                #expect(rv == CKR_ATTRIBUTE_VALUE_INVALID)
                #expect(try token.find([], in: session).isEmpty)
            }
        }

        @Test("A CKA_CLASS of the wrong size is refused with CKR_ATTRIBUTE_VALUE_INVALID")
        func wrongSizeClass() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let template =
                    [Attribute(CKA_CLASS, [1, 0, 0, 0])]
                    + TestToken.certificateTemplate(try Fixtures.alice.get().der).filter {
                        $0.type != CKA_CLASS
                    }
                #expect(try token.create(template, in: session).0 == CKR_ATTRIBUTE_VALUE_INVALID)
            }
        }

        @Test(
            "An attribute the certificate class does not have is refused with CKR_ATTRIBUTE_TYPE_INVALID",
            arguments: [CK_ATTRIBUTE_TYPE(0x8000_4321), CKA_MODULUS, CKA_APPLICATION, CKA_KEY_TYPE])
        func unknownAttributeType(type: CK_ATTRIBUTE_TYPE) throws {
            try withToken { token throws in
                let session = try token.openSession()
                let template =
                    TestToken.certificateTemplate(try Fixtures.alice.get().der) + [Attribute(type, [1, 2])]
                #expect(try token.create(template, in: session).0 == CKR_ATTRIBUTE_TYPE_INVALID)
                #expect(try token.find([], in: session).isEmpty)
            }
        }

        @Test("CKA_UNIQUE_ID in a template is refused with CKR_ATTRIBUTE_READ_ONLY")
        func uniqueIDIsReadOnly() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let template =
                    TestToken.certificateTemplate(try Fixtures.alice.get().der)
                    + [Attribute(uniqueIDAttribute, string: "chosen")]
                #expect(try token.create(template, in: session).0 == CKR_ATTRIBUTE_READ_ONLY)
            }
        }

        @Test("An attribute given twice is refused with CKR_TEMPLATE_INCONSISTENT")
        func duplicateAttribute() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let template =
                    TestToken.certificateTemplate(try Fixtures.alice.get().der)
                    + [Attribute(CKA_LABEL, string: "a"), Attribute(CKA_LABEL, string: "b")]
                #expect(try token.create(template, in: session).0 == CKR_TEMPLATE_INCONSISTENT)
            }
        }

        @Test("A class the token cannot hold is refused and nothing is stored")
        func unsupportedClass() throws {
            try withToken { token throws in
                let session = try token.openSession()
                // Domain parameters (v2.40 §4.13): a class this token has no objects of.
                let template = [
                    Attribute(CKA_CLASS, ulong: CKO_DOMAIN_PARAMETERS),
                    Attribute(CKA_KEY_TYPE, ulong: CKK_DSA),
                    Attribute(CKA_VALUE, [UInt8](repeating: 7, count: 16)),
                ]
                let rv = try token.create(template, in: session).0
                #expect(rv == CKR_ATTRIBUTE_VALUE_INVALID || rv == CKR_TEMPLATE_INCONSISTENT)
                #expect(try token.find([], in: session).isEmpty)
            }
        }

        @Test(
            "A token object in a read-only session is refused with CKR_SESSION_READ_ONLY; a session object is not"
        )
        func tokenObjectInReadOnlySession() throws {
            try withToken { token throws in
                let session = try token.openSession(readWrite: false)
                let der = try Fixtures.alice.get().der
                #expect(
                    try token.create(TestToken.certificateTemplate(der, token: true), in: session).0
                        == CKR_SESSION_READ_ONLY)
                #expect(try token.find([Attribute(CKA_TOKEN, bool: true)], in: session).isEmpty)
                #expect(
                    try token.create(TestToken.certificateTemplate(der, token: false), in: session).0
                        == CKR_OK)
            }
        }

        @Test(
            "A private object without a login is refused with CKR_USER_NOT_LOGGED_IN",
            arguments: [true, false])
        func privateObjectNeedsLogin(isToken: Bool) throws {
            try withToken { token throws in
                let session = try token.openSession()
                let template =
                    TestToken.certificateTemplate(try Fixtures.alice.get().der, token: isToken)
                    + [Attribute(CKA_PRIVATE, bool: true)]
                #expect(try token.create(template, in: session).0 == CKR_USER_NOT_LOGGED_IN)
                #expect(try token.find([], in: session).isEmpty)
            }
        }
    }
}
