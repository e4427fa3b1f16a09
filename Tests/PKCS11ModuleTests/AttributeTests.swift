import CPKCS11
import Testing

/// A template entry with its own output buffer, for C_GetAttributeValue.
private final class OutputTemplate {
    var entries: [CK_ATTRIBUTE]
    private var buffers: [UnsafeMutableRawPointer] = []

    /// One entry per (type, buffer size); a nil size passes a NULL pValue (a size query).
    init(_ requests: [(CK_ATTRIBUTE_TYPE, Int?)]) {
        entries = []
        for (type, size) in requests {
            guard let size else {
                entries.append(CK_ATTRIBUTE(type: type, pValue: nil, ulValueLen: 0))
                continue
            }
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(size, 1), alignment: 8)
            buffer.initializeMemory(as: UInt8.self, repeating: 0xEE, count: max(size, 1))
            buffers.append(buffer)
            entries.append(CK_ATTRIBUTE(type: type, pValue: buffer, ulValueLen: CK_ULONG(size)))
        }
    }

    deinit { buffers.forEach { $0.deallocate() } }

    func call(_ token: TestToken, _ session: CK_SESSION_HANDLE, _ object: CK_OBJECT_HANDLE) throws -> CK_RV {
        let get = try token.m.C_GetAttributeValue
        return entries.withUnsafeMutableBufferPointer {
            get(session, object, $0.baseAddress, CK_ULONG($0.count))
        }
    }

    func length(_ index: Int) -> CK_ULONG { entries[index].ulValueLen }

    /// The bytes the module wrote into entry `index`.
    func value(_ index: Int) -> [UInt8]? {
        let entry = entries[index]
        guard let pointer = entry.pValue, entry.ulValueLen != unavailableInformation else { return nil }
        return Array(UnsafeRawBufferPointer(start: pointer, count: Int(entry.ulValueLen)))
    }
}

/// Calls C_SetAttributeValue with `attributes`.
private func set(
    _ attributes: [Attribute], of object: CK_OBJECT_HANDLE, in session: CK_SESSION_HANDLE, _ token: TestToken
)
    throws -> CK_RV
{
    let setValue = try token.m.C_SetAttributeValue
    return withTemplate(attributes) { setValue(session, object, $0, $1) }
}

/// Calls C_CopyObject with `attributes`.
private func copy(
    _ object: CK_OBJECT_HANDLE, with attributes: [Attribute], in session: CK_SESSION_HANDLE,
    _ token: TestToken
)
    throws -> (CK_RV, CK_OBJECT_HANDLE)
{
    let copyObject = try token.m.C_CopyObject
    var copy: CK_OBJECT_HANDLE = 0
    let rv = withTemplate(attributes) { copyObject(session, object, $0, $1, &copy) }
    return (rv, copy)
}

extension ModuleTests {
    @Suite("C_GetAttributeValue (v2.40 §5.7): every entry processed")
    struct GetAttributeValue {
        @Test("A NULL pValue is a size query answered with each value's length")
        func sizeQuery() throws {
            let alice = try Fixtures.alice.get()
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(alice, in: session)
                let template = OutputTemplate([
                    (CKA_LABEL, nil), (CKA_VALUE, nil), (CKA_CLASS, nil), (CKA_TOKEN, nil),
                ])
                #expect(try template.call(token, session, object) == CKR_OK)
                #expect(template.length(0) == 5)
                #expect(template.length(1) == CK_ULONG(alice.der.count))
                #expect(template.length(2) == CK_ULONG(MemoryLayout<CK_ULONG>.size))
                #expect(template.length(3) == 1)
            }
        }

        @Test(
            "A short buffer gets CK_UNAVAILABLE_INFORMATION and CKR_BUFFER_TOO_SMALL; the other entries are filled"
        )
        func bufferTooSmall() throws {
            let alice = try Fixtures.alice.get()
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(alice, in: session)
                let template = OutputTemplate([
                    (CKA_CLASS, 8), (CKA_VALUE, 10), (CKA_LABEL, 32), (CKA_ID, nil),
                ])
                #expect(try template.call(token, session, object) == CKR_BUFFER_TOO_SMALL)
                #expect(decodeULong(template.value(0)) == CKO_CERTIFICATE)
                #expect(template.length(1) == unavailableInformation)
                #expect(template.value(2) == Array("Alice".utf8))
                #expect(template.length(3) == 20)
                // The short buffer is big enough for the label and too small for the DER.
                let exact = OutputTemplate([(CKA_VALUE, alice.der.count)])
                #expect(try exact.call(token, session, object) == CKR_OK)
                #expect(exact.value(0) == alice.der)
            }
        }

        @Test(
            "An attribute the object lacks gets CK_UNAVAILABLE_INFORMATION and CKR_ATTRIBUTE_TYPE_INVALID; the others are filled",
            arguments: [CK_ATTRIBUTE_TYPE(0x8000_4321), CKA_MODULUS, CKA_APPLICATION])
        func unknownAttribute(type: CK_ATTRIBUTE_TYPE) throws {
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(try Fixtures.alice.get(), in: session)
                let template = OutputTemplate([(CKA_LABEL, 32), (type, 64), (CKA_CLASS, 8), (CKA_TOKEN, nil)])
                #expect(try template.call(token, session, object) == CKR_ATTRIBUTE_TYPE_INVALID)
                #expect(template.value(0) == Array("Alice".utf8))
                #expect(template.length(1) == unavailableInformation)
                #expect(decodeULong(template.value(2)) == CKO_CERTIFICATE)
                #expect(template.length(3) == 1)
            }
        }

        @Test(
            "An unknown object handle returns CKR_OBJECT_HANDLE_INVALID",
            arguments: [0, 1, 0x0100_0000_0000_0999, CK_OBJECT_HANDLE.max])
        func invalidObjectHandle(object: CK_OBJECT_HANDLE) throws {
            try withToken { token throws in
                let session = try token.openSession()
                _ = try token.createCertificate(try Fixtures.alice.get(), in: session)
                let template = OutputTemplate([(CKA_LABEL, 32)])
                #expect(try template.call(token, session, object) == CKR_OBJECT_HANDLE_INVALID)
                var size: CK_ULONG = 0
                #expect(try token.m.C_GetObjectSize(session, object, &size) == CKR_OBJECT_HANDLE_INVALID)
                #expect(try token.m.C_DestroyObject(session, object) == CKR_OBJECT_HANDLE_INVALID)
                #expect(
                    try set([Attribute(CKA_LABEL, string: "x")], of: object, in: session, token)
                        == CKR_OBJECT_HANDLE_INVALID)
                #expect(try copy(object, with: [], in: session, token).0 == CKR_OBJECT_HANDLE_INVALID)
            }
        }

        @Test("C_GetObjectSize reports a size of at least the DER")
        func objectSize() throws {
            let alice = try Fixtures.alice.get()
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(alice, in: session)
                var size: CK_ULONG = 0
                #expect(try token.m.C_GetObjectSize(session, object, &size) == CKR_OK)
                #expect(size >= CK_ULONG(alice.der.count))
            }
        }
    }

    @Suite("C_SetAttributeValue, C_CopyObject and C_DestroyObject (v2.40 §5.7)")
    struct ChangingObjects {
        @Test("CKA_LABEL and CKA_ID can be changed, and the object is found by the new values")
        func changeLabelAndID() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(try Fixtures.alice.get(), in: session)
                let rv = try set(
                    [Attribute(CKA_LABEL, string: "renamed"), Attribute(CKA_ID, [0xAB, 0xCD])], of: object,
                    in: session, token)
                #expect(rv == CKR_OK)
                #expect(try token.string(CKA_LABEL, of: object, in: session) == "renamed")
                #expect(try token.find([Attribute(CKA_LABEL, string: "renamed")], in: session) == [object])
                #expect(try token.find([Attribute(CKA_LABEL, string: "Alice")], in: session).isEmpty)
                #expect(try token.find([Attribute(CKA_ID, [0xAB, 0xCD])], in: session) == [object])
                // And the change is stored.
                #expect(try token.m.C_Finalize(nil) == CKR_OK)
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
                let again = try token.openSession()
                #expect(try token.find([Attribute(CKA_LABEL, string: "renamed")], in: again).count == 1)
            }
        }

        @Test(
            "Attributes fixed by the DER or the class are refused with CKR_ATTRIBUTE_READ_ONLY",
            arguments: [
                CKA_VALUE, CKA_CLASS, CKA_SUBJECT, CKA_ISSUER, CKA_SERIAL_NUMBER, CKA_CERTIFICATE_TYPE,
                CKA_TOKEN,
            ])
        func readOnlyAttributes(type: CK_ATTRIBUTE_TYPE) throws {
            let alice = try Fixtures.alice.get()
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(alice, in: session)
                let before = try token.attribute(type, of: object, in: session)
                let value: [UInt8] =
                    switch type {
                    case CKA_CLASS, CKA_CERTIFICATE_TYPE: encode(CKO_DATA + 7)
                    case CKA_TOKEN: [0]
                    default: try DER.fields(of: try Fixtures.bob.get().der).subject
                    }
                #expect(
                    try set([Attribute(type, value)], of: object, in: session, token)
                        == CKR_ATTRIBUTE_READ_ONLY)
                #expect(try token.attribute(type, of: object, in: session) == before)
            }
        }

        @Test("A failed C_SetAttributeValue changes nothing, not even the valid entries")
        func setIsAtomic() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(try Fixtures.alice.get(), in: session)
                let rv = try set(
                    [Attribute(CKA_LABEL, string: "new"), Attribute(CKA_VALUE, [1])], of: object, in: session,
                    token)
                #expect(rv == CKR_ATTRIBUTE_READ_ONLY)
                #expect(try token.string(CKA_LABEL, of: object, in: session) == "Alice")
            }
        }

        @Test("C_SetAttributeValue refuses an unknown type, a bad size and a NULL value")
        func setBadInput() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(try Fixtures.alice.get(), in: session)
                #expect(
                    try set([Attribute(0x8000_4321, [1])], of: object, in: session, token)
                        == CKR_ATTRIBUTE_TYPE_INVALID)
                #expect(
                    try set([Attribute(CKA_CERTIFICATE_CATEGORY, [2])], of: object, in: session, token)
                        == CKR_ATTRIBUTE_VALUE_INVALID)
                #expect(
                    try set([Attribute.null(CKA_LABEL, length: 4)], of: object, in: session, token)
                        == CKR_ARGUMENTS_BAD)
                #expect(try token.string(CKA_LABEL, of: object, in: session) == "Alice")
            }
        }

        @Test("An object with CKA_MODIFIABLE=FALSE cannot be changed: CKR_ACTION_PROHIBITED")
        func unmodifiableObject() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(
                    try Fixtures.alice.get(), extra: [Attribute(CKA_MODIFIABLE, bool: false)], in: session)
                #expect(
                    try set([Attribute(CKA_LABEL, string: "renamed")], of: object, in: session, token)
                        == CKR_ACTION_PROHIBITED)
                #expect(try token.string(CKA_LABEL, of: object, in: session) == "Alice")
                // It can still be destroyed.
                #expect(try token.m.C_DestroyObject(session, object) == CKR_OK)
            }
        }

        @Test("A token object cannot be changed or destroyed in a read-only session: CKR_SESSION_READ_ONLY")
        func changesNeedReadWriteSession() throws {
            try withToken { token throws in
                let object = try token.createCertificate(
                    try Fixtures.alice.get(), in: try token.openSession())
                let readOnly = try token.openSession(readWrite: false)
                #expect(
                    try set([Attribute(CKA_LABEL, string: "renamed")], of: object, in: readOnly, token)
                        == CKR_SESSION_READ_ONLY)
                #expect(try token.m.C_DestroyObject(readOnly, object) == CKR_SESSION_READ_ONLY)
                #expect(try token.string(CKA_LABEL, of: object, in: readOnly) == "Alice")
            }
        }

        @Test("C_CopyObject copies a certificate into a session object with a new label")
        func copyToSessionObject() throws {
            let alice = try Fixtures.alice.get()
            try withToken { token throws in
                let session = try token.openSession()
                let original = try token.createCertificate(alice, in: session)
                let (rv, copied) = try copy(
                    original,
                    with: [Attribute(CKA_TOKEN, bool: false), Attribute(CKA_LABEL, string: "copy")],
                    in: session, token)
                try #require(rv == CKR_OK)
                #expect(copied != original)
                #expect(try token.string(CKA_LABEL, of: copied, in: session) == "copy")
                #expect(try token.attribute(CKA_TOKEN, of: copied, in: session) == [0])
                #expect(try token.attribute(CKA_VALUE, of: copied, in: session) == alice.der)
                #expect(try token.attribute(CKA_ID, of: copied, in: session) == alice.subjectKeyIdentifier)
                #expect(
                    try token.attribute(uniqueIDAttribute, of: copied, in: session)
                        != token.attribute(uniqueIDAttribute, of: original, in: session))
                #expect(try token.string(CKA_LABEL, of: original, in: session) == "Alice")
                // The copy is a session object of this session.
                #expect(try token.m.C_CloseSession(session) == CKR_OK)
                #expect(try token.find([], in: try token.openSession()) == [original])
            }
        }

        @Test("Copying a token certificate to another token object is refused as a duplicate")
        func copyToTokenIsDuplicate() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let original = try token.createCertificate(try Fixtures.alice.get(), in: session)
                for template in [[], [Attribute(CKA_LABEL, string: "twin")]] {
                    #expect(
                        try copy(original, with: template, in: session, token).0
                            == CKR_ATTRIBUTE_VALUE_INVALID)
                }
                #expect(try token.find([], in: session) == [original])
            }
        }

        @Test("C_CopyObject refuses an attribute fixed by the DER with CKR_ATTRIBUTE_READ_ONLY")
        func copyCannotChangeValue() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let original = try token.createCertificate(try Fixtures.alice.get(), in: session)
                let template = [
                    Attribute(CKA_TOKEN, bool: false), Attribute(CKA_VALUE, try Fixtures.bob.get().der),
                ]
                #expect(try copy(original, with: template, in: session, token).0 == CKR_ATTRIBUTE_READ_ONLY)
            }
        }

        @Test("An object with CKA_COPYABLE=FALSE cannot be copied: CKR_ACTION_PROHIBITED")
        func uncopyableObject() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(
                    try Fixtures.alice.get(), extra: [Attribute(CKA_COPYABLE, bool: false)], in: session)
                let template = [Attribute(CKA_TOKEN, bool: false), Attribute(CKA_LABEL, string: "copy")]
                #expect(try copy(object, with: template, in: session, token).0 == CKR_ACTION_PROHIBITED)
                #expect(try token.find([], in: session) == [object])
            }
        }

        @Test("C_DestroyObject removes an object; its handle is invalid afterwards")
        func destroyObject() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let alice = try token.createCertificate(try Fixtures.alice.get(), in: session)
                let bob = try token.createCertificate(try Fixtures.bob.get(), in: session)
                #expect(try token.m.C_DestroyObject(session, alice) == CKR_OK)
                #expect(try token.m.C_DestroyObject(session, alice) == CKR_OBJECT_HANDLE_INVALID)
                let template = OutputTemplate([(CKA_LABEL, 32)])
                #expect(try template.call(token, session, alice) == CKR_OBJECT_HANDLE_INVALID)
                #expect(try token.find([], in: session) == [bob])
                // The certificate can be stored again, under a new handle.
                let again = try token.createCertificate(try Fixtures.alice.get(), in: session)
                #expect(again != alice)
            }
        }

        @Test("An object with CKA_DESTROYABLE=FALSE cannot be destroyed: CKR_ACTION_PROHIBITED")
        func undestroyableObject() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(
                    try Fixtures.alice.get(), extra: [Attribute(CKA_DESTROYABLE, bool: false)], in: session)
                #expect(try token.m.C_DestroyObject(session, object) == CKR_ACTION_PROHIBITED)
                #expect(try token.find([], in: session) == [object])
            }
        }
    }
}
