import CPKCS11
import Testing

/// DER of OBJECT IDENTIFIER 1.2.840.113549.1.9.1 (emailAddress).
let emailAddressOID: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x01]

func dataTemplate(label: String, value: [UInt8], token: Bool = true) -> [Attribute] {
    [
        Attribute(CKA_CLASS, ulong: CKO_DATA), Attribute(CKA_TOKEN, bool: token),
        Attribute(CKA_LABEL, string: label), Attribute(CKA_APPLICATION, string: "p11keychain tests"),
        Attribute(CKA_OBJECT_ID, emailAddressOID), Attribute(CKA_VALUE, value),
    ]
}

extension ModuleTests {
    @Suite("Data objects (v2.40 §4.5)")
    struct DataObjects {
        @Test("A data object keeps its application, object ID, value and label")
        func dataObjectRoundTrip() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let value: [UInt8] = Array("some public bytes".utf8) + [0, 255]
                let object = try token.createObject(dataTemplate(label: "notes", value: value), in: session)
                #expect(decodeULong(try token.attribute(CKA_CLASS, of: object, in: session)) == CKO_DATA)
                #expect(try token.string(CKA_APPLICATION, of: object, in: session) == "p11keychain tests")
                #expect(try token.attribute(CKA_OBJECT_ID, of: object, in: session) == emailAddressOID)
                #expect(try token.attribute(CKA_VALUE, of: object, in: session) == value)
                #expect(try token.string(CKA_LABEL, of: object, in: session) == "notes")
                #expect(try token.attribute(CKA_PRIVATE, of: object, in: session) == [0])
                #expect(try token.attribute(CKA_TOKEN, of: object, in: session) == [1])
                #expect(try !(token.attribute(uniqueIDAttribute, of: object, in: session) ?? []).isEmpty)
                // A certificate-only attribute is not part of a data object.
                #expect(try token.attribute(CKA_SUBJECT, of: object, in: session) == nil)
                let found = try token.find(
                    [
                        Attribute(CKA_APPLICATION, string: "p11keychain tests"),
                        Attribute(CKA_CLASS, ulong: CKO_DATA),
                    ],
                    in: session)
                #expect(found == [object])
            }
        }

        @Test("A data object needs only its class: the other attributes default to empty")
        func dataObjectDefaults() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createObject(
                    [Attribute(CKA_CLASS, ulong: CKO_DATA), Attribute(CKA_TOKEN, bool: true)], in: session)
                #expect(try token.attribute(CKA_VALUE, of: object, in: session) == [])
                #expect(try token.attribute(CKA_APPLICATION, of: object, in: session) == [])
                #expect(try token.attribute(CKA_OBJECT_ID, of: object, in: session) == [])
            }
        }

        @Test(
            "An invalid CKA_OBJECT_ID is refused with CKR_ATTRIBUTE_VALUE_INVALID",
            arguments: [
                [0x06, 0x09, 0x2A, 0x86], [0x04, 0x03, 0x2A, 0x03, 0x04], [0x06, 0x00],
                [0x06, 0x02, 0x2A, 0x86], Array("1.2.3.4".utf8),
            ])
        func invalidObjectID(oid: [UInt8]) throws {
            try withToken { token throws in
                let session = try token.openSession()
                let template =
                    dataTemplate(label: "bad", value: [1]).filter { $0.type != CKA_OBJECT_ID }
                    + [Attribute(CKA_OBJECT_ID, oid)]
                #expect(try token.create(template, in: session).0 == CKR_ATTRIBUTE_VALUE_INVALID)
                #expect(try token.find([], in: session).isEmpty)
            }
        }

        @Test("A data object's value can be changed; an invalid object ID cannot be set")
        func changeDataObject() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createObject(dataTemplate(label: "notes", value: [1]), in: session)
                let setValue = try token.m.C_SetAttributeValue
                #expect(
                    withTemplate([Attribute(CKA_VALUE, [9, 9])]) { setValue(session, object, $0, $1) }
                        == CKR_OK)
                #expect(try token.attribute(CKA_VALUE, of: object, in: session) == [9, 9])
                let rv = withTemplate([Attribute(CKA_OBJECT_ID, [0x06, 0x05, 0x2A])]) {
                    setValue(session, object, $0, $1)
                }
                #expect(rv == CKR_ATTRIBUTE_VALUE_INVALID)
                #expect(try token.attribute(CKA_OBJECT_ID, of: object, in: session) == emailAddressOID)
            }
        }
    }

    @Suite("Session objects (CKA_TOKEN=FALSE)")
    struct SessionObjects {
        @Test("A session object is visible to the process's other sessions and vanishes with its session")
        func sessionObjectLifetime() throws {
            try withToken { token throws in
                let creator = try token.openSession(readWrite: false)
                let other = try token.openSession(readWrite: false)
                let object = try token.createCertificate(try Fixtures.alice.get(), token: false, in: creator)
                #expect(try token.attribute(CKA_TOKEN, of: object, in: other) == [0])
                #expect(try token.find([Attribute(CKA_LABEL, string: "Alice")], in: other) == [object])
                #expect(try token.find([Attribute(CKA_TOKEN, bool: true)], in: other).isEmpty)
                // Closing another session leaves it alone.
                let third = try token.openSession()
                #expect(try token.m.C_CloseSession(third) == CKR_OK)
                #expect(try token.find([], in: other) == [object])

                #expect(try token.m.C_CloseSession(creator) == CKR_OK)
                var size: CK_ULONG = 0
                #expect(try token.m.C_GetObjectSize(other, object, &size) == CKR_OBJECT_HANDLE_INVALID)
                var label = CK_ATTRIBUTE(type: CKA_LABEL, pValue: nil, ulValueLen: 0)
                #expect(
                    try token.m.C_GetAttributeValue(other, object, &label, 1) == CKR_OBJECT_HANDLE_INVALID)
                #expect(try token.find([], in: other).isEmpty)
            }
        }

        @Test("C_CloseAllSessions removes the session objects too")
        func closeAllRemovesSessionObjects() throws {
            try withToken { token throws in
                let session = try token.openSession()
                _ = try token.createCertificate(try Fixtures.alice.get(), token: false, in: session)
                _ = try token.createCertificate(try Fixtures.bob.get(), token: true, in: session)
                #expect(try token.m.C_CloseAllSessions(0) == CKR_OK)
                let again = try token.openSession()
                let left = try token.find([], in: again)
                try #require(left.count == 1)
                #expect(try token.string(CKA_LABEL, of: left[0], in: again) == "Bob")
            }
        }

        @Test("A session object is never stored: a re-initialised module does not see it")
        func sessionObjectsAreNotPersistent() throws {
            try withToken { token throws in
                let session = try token.openSession()
                _ = try token.createCertificate(try Fixtures.alice.get(), token: false, in: session)
                _ = try token.createObject(
                    dataTemplate(label: "scratch", value: [1], token: false), in: session)
                #expect(try token.find([], in: session).count == 2)
                #expect(try token.m.C_Finalize(nil) == CKR_OK)
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
                #expect(try token.find([], in: try token.openSession()).isEmpty)
            }
        }

        @Test("The same certificate may exist as a token object and as a session object")
        func tokenAndSessionCopies() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let alice = try Fixtures.alice.get()
                let stored = try token.createCertificate(alice, token: true, in: session)
                let scratch = try token.createCertificate(alice, token: false, in: session)
                #expect(stored != scratch)
                #expect(
                    Set(try token.find([Attribute(CKA_LABEL, string: "Alice")], in: session)) == [
                        stored, scratch,
                    ])
                // But not twice in the session store.
                #expect(
                    try token.create(TestToken.certificateTemplate(alice.der, token: false), in: session).0
                        == CKR_ATTRIBUTE_VALUE_INVALID)
            }
        }
    }
}
