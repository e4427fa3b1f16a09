import CPKCS11
import Testing

/// Three token certificates and a data object, the population of the find tests.
private struct Population {
    let alice: CK_OBJECT_HANDLE
    let bob: CK_OBJECT_HANDLE
    let carol: CK_OBJECT_HANDLE
    let notes: CK_OBJECT_HANDLE

    var certificates: Set<CK_OBJECT_HANDLE> { [alice, bob, carol] }
    var all: Set<CK_OBJECT_HANDLE> { [alice, bob, carol, notes] }

    init(_ token: TestToken, _ session: CK_SESSION_HANDLE) throws {
        alice = try token.createCertificate(try Fixtures.alice.get(), in: session)
        bob = try token.createCertificate(try Fixtures.bob.get(), in: session)
        carol = try token.createCertificate(try Fixtures.carol.get(), in: session)
        notes = try token.createObject(dataTemplate(label: "notes", value: [1, 2, 3]), in: session)
    }
}

extension ModuleTests {
    @Suite("C_FindObjectsInit, C_FindObjects and C_FindObjectsFinal (v2.40 §5.7)")
    struct Find {
        @Test("Objects are found by label, CKA_ID, issuer and serial, subject and class")
        func findByAttributes() throws {
            let bob = try Fixtures.bob.get()
            let carolFields = try DER.fields(of: try Fixtures.carol.get().der)
            let aliceFields = try DER.fields(of: try Fixtures.alice.get().der)
            try withToken { token throws in
                let session = try token.openSession()
                let objects = try Population(token, session)
                #expect(try token.find([Attribute(CKA_LABEL, string: "Bob")], in: session) == [objects.bob])
                #expect(
                    try token.find([Attribute(CKA_ID, bob.subjectKeyIdentifier)], in: session) == [
                        objects.bob
                    ])
                let issuerAndSerial = [
                    Attribute(CKA_ISSUER, carolFields.issuer),
                    Attribute(CKA_SERIAL_NUMBER, carolFields.serial),
                ]
                #expect(try token.find(issuerAndSerial, in: session) == [objects.carol])
                #expect(
                    try token.find([Attribute(CKA_SUBJECT, aliceFields.subject)], in: session) == [
                        objects.alice
                    ])
                let certificates = try token.find([Attribute(CKA_CLASS, ulong: CKO_CERTIFICATE)], in: session)
                #expect(Set(certificates) == objects.certificates)
                #expect(certificates.count == 3)
                #expect(
                    try token.find([Attribute(CKA_CLASS, ulong: CKO_DATA)], in: session) == [objects.notes])
                let byTypeAndLabel = [
                    Attribute(CKA_CLASS, ulong: CKO_CERTIFICATE),
                    Attribute(CKA_CERTIFICATE_TYPE, ulong: CKC_X_509),
                    Attribute(CKA_LABEL, string: "Carol"),
                ]
                #expect(try token.find(byTypeAndLabel, in: session) == [objects.carol])
            }
        }

        @Test("A search that matches nothing finds nothing")
        func findNothing() throws {
            try withToken { token throws in
                let session = try token.openSession()
                _ = try Population(token, session)
                #expect(try token.find([Attribute(CKA_LABEL, string: "Mallory")], in: session).isEmpty)
                #expect(
                    try token.find(
                        [Attribute(CKA_LABEL, string: "Bob"), Attribute(CKA_CLASS, ulong: CKO_DATA)],
                        in: session
                    ).isEmpty)
                #expect(try token.find([Attribute(CKA_ID, [])], in: session).isEmpty)
                #expect(try token.find([Attribute(CKA_PRIVATE, bool: true)], in: session).isEmpty)
                #expect(try token.find([Attribute(0x8000_4321, [1])], in: session).isEmpty)
            }
        }

        @Test("An empty template finds every object")
        func emptyTemplate() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let objects = try Population(token, session)
                let all = try token.find([], in: session)
                #expect(all.count == 4)
                #expect(Set(all) == objects.all)
            }
        }

        @Test("A second C_FindObjectsInit while a search is active returns CKR_OPERATION_ACTIVE")
        func oneSearchPerSession() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let other = try token.openSession()
                _ = try Population(token, session)
                #expect(try token.m.C_FindObjectsInit(session, nil, 0) == CKR_OK)
                #expect(try token.m.C_FindObjectsInit(session, nil, 0) == CKR_OPERATION_ACTIVE)
                // Another session searches independently.
                #expect(try token.find([Attribute(CKA_LABEL, string: "Bob")], in: other).count == 1)
                // The first search was not disturbed.
                var found = [CK_OBJECT_HANDLE](repeating: 0, count: 10)
                var count: CK_ULONG = 0
                #expect(try token.m.C_FindObjects(session, &found, 10, &count) == CKR_OK)
                #expect(count == 4)
                #expect(try token.m.C_FindObjectsFinal(session) == CKR_OK)
                #expect(try token.m.C_FindObjectsInit(session, nil, 0) == CKR_OK)
            }
        }

        @Test(
            "C_FindObjects and C_FindObjectsFinal without C_FindObjectsInit return CKR_OPERATION_NOT_INITIALIZED"
        )
        func findWithoutInit() throws {
            try withToken { token throws in
                let session = try token.openSession()
                var found: CK_OBJECT_HANDLE = 0
                var count: CK_ULONG = 0
                #expect(
                    try token.m.C_FindObjects(session, &found, 1, &count) == CKR_OPERATION_NOT_INITIALIZED)
                #expect(try token.m.C_FindObjectsFinal(session) == CKR_OPERATION_NOT_INITIALIZED)
                // Nor after a search has been finished.
                #expect(try token.find([], in: session).isEmpty)
                #expect(
                    try token.m.C_FindObjects(session, &found, 1, &count) == CKR_OPERATION_NOT_INITIALIZED)
            }
        }

        @Test("The results are fixed at C_FindObjectsInit: an object created later does not appear")
        func resultsSnapshot() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let objects = try Population(token, session)
                #expect(try token.m.C_FindObjectsInit(session, nil, 0) == CKR_OK)
                let later = try token.createObject(dataTemplate(label: "later", value: [4]), in: session)
                var found = [CK_OBJECT_HANDLE](repeating: 0, count: 10)
                var count: CK_ULONG = 0
                #expect(try token.m.C_FindObjects(session, &found, 10, &count) == CKR_OK)
                #expect(Set(found.prefix(Int(count))) == objects.all)
                #expect(try token.m.C_FindObjectsFinal(session) == CKR_OK)
                #expect(try token.find([], in: session).contains(later))
            }
        }

        @Test("C_FindObjects pages through the results one at a time")
        func paging() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let objects = try Population(token, session)
                let initialize = try token.m.C_FindObjectsInit
                let rv = withTemplate([Attribute(CKA_CLASS, ulong: CKO_CERTIFICATE)]) {
                    initialize(session, $0, $1)
                }
                #expect(rv == CKR_OK)
                var seen: [CK_OBJECT_HANDLE] = []
                for _ in 0..<5 {
                    var found: CK_OBJECT_HANDLE = 0
                    var count: CK_ULONG = 99
                    #expect(try token.m.C_FindObjects(session, &found, 1, &count) == CKR_OK)
                    #expect(count <= 1)
                    if count == 1 { seen.append(found) }
                }
                #expect(seen.count == 3)
                #expect(Set(seen) == objects.certificates)
                // A maximum of zero returns nothing and keeps the search.
                var count: CK_ULONG = 99
                #expect(try token.m.C_FindObjects(session, nil, 0, &count) == CKR_OK)
                #expect(count == 0)
                #expect(try token.m.C_FindObjectsFinal(session) == CKR_OK)
            }
        }

        @Test("Closing a session ends its search")
        func closeEndsSearch() throws {
            try withToken { token throws in
                let session = try token.openSession()
                #expect(try token.m.C_FindObjectsInit(session, nil, 0) == CKR_OK)
                #expect(try token.m.C_CloseSession(session) == CKR_OK)
                var count: CK_ULONG = 0
                var found: CK_OBJECT_HANDLE = 0
                #expect(try token.m.C_FindObjects(session, &found, 1, &count) == CKR_SESSION_HANDLE_INVALID)
            }
        }
    }
}
