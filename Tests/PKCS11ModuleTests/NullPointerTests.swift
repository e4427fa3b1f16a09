import CPKCS11
import Testing

/// What a NULL-pointer case may use: an initialised module, a read/write session and a
/// certificate object in it.
struct NullPointerFixture {
    let token: TestToken
    let session: CK_SESSION_HANDLE
    let object: CK_OBJECT_HANDLE

    var m: FunctionTable<CK_FUNCTION_LIST> { token.m }

    /// Starts a SHA-256 digest on the session.
    func startDigest() throws {
        var mechanism = CK_MECHANISM(
            mechanism: CK_MECHANISM_TYPE(CKM_SHA256), pParameter: nil, ulParameterLen: 0)
        try #require(try m.C_DigestInit(session, &mechanism) == CKR_OK)
    }

    /// Starts a search for everything on the session.
    func startSearch() throws {
        try #require(try m.C_FindObjectsInit(session, nil, 0) == CKR_OK)
    }
}

/// One call with a NULL where the spec requires a pointer.
struct NullPointerCase: Sendable, CustomTestStringConvertible {
    let testDescription: String
    let call: @Sendable (NullPointerFixture) throws -> CK_RV

    init(_ description: String, _ call: @escaping @Sendable (NullPointerFixture) throws -> CK_RV) {
        self.testDescription = description
        self.call = call
    }

    private static let label = [Attribute(CKA_LABEL, string: "x")]

    static let all: [NullPointerCase] = [
        NullPointerCase("C_GetFunctionList(NULL)") { fixture in fixture.token.module.getFunctionList(nil) },
        NullPointerCase("C_GetInterfaceList(list, NULL count)") { fixture in
            var interfaces = [CK_INTERFACE](repeating: CK_INTERFACE(), count: 4)
            return fixture.token.module.getInterfaceList(&interfaces, nil)
        },
        NullPointerCase("C_GetInterface(name, version, NULL)") { fixture in
            var name = Array("PKCS 11".utf8CString).map { CK_UTF8CHAR(bitPattern: $0) }
            return fixture.token.module.getInterface(&name, nil, nil, 0)
        },
        NullPointerCase("C_GetInfo(NULL)") { fixture in try fixture.m.C_GetInfo(nil) },
        NullPointerCase("C_GetSlotList(NULL list, NULL count)") { fixture in
            try fixture.m.C_GetSlotList(0, nil, nil)
        },
        NullPointerCase("C_GetSlotList(list, NULL count)") { fixture in
            var slots = [CK_SLOT_ID](repeating: 0, count: 4)
            return try fixture.m.C_GetSlotList(1, &slots, nil)
        },
        NullPointerCase("C_GetSlotInfo(0, NULL)") { fixture in try fixture.m.C_GetSlotInfo(0, nil) },
        NullPointerCase("C_GetTokenInfo(0, NULL)") { fixture in try fixture.m.C_GetTokenInfo(0, nil) },
        NullPointerCase("C_GetMechanismList(0, NULL, NULL)") { fixture in
            try fixture.m.C_GetMechanismList(0, nil, nil)
        },
        NullPointerCase("C_GetMechanismInfo(0, SHA256, NULL)") { fixture in
            try fixture.m.C_GetMechanismInfo(0, CK_MECHANISM_TYPE(CKM_SHA256), nil)
        },
        NullPointerCase("C_OpenSession(…, NULL handle)") { fixture in
            try fixture.m.C_OpenSession(0, readWriteSession, nil, nil, nil)
        },
        NullPointerCase("C_GetSessionInfo(session, NULL)") { fixture in
            try fixture.m.C_GetSessionInfo(fixture.session, nil)
        },
        NullPointerCase("C_CreateObject(NULL template, 4 entries)") { fixture in
            var object: CK_OBJECT_HANDLE = 0
            return try fixture.m.C_CreateObject(fixture.session, nil, 4, &object)
        },
        NullPointerCase("C_CreateObject(template, NULL handle)") { fixture in
            let create = try fixture.m.C_CreateObject
            let template = TestToken.certificateTemplate(try Fixtures.bob.get().der)
            return withTemplate(template) { create(fixture.session, $0, $1, nil) }
        },
        NullPointerCase("C_CopyObject(…, NULL new handle)") { fixture in
            let copy = try fixture.m.C_CopyObject
            return withTemplate([Attribute(CKA_TOKEN, bool: false)]) {
                copy(fixture.session, fixture.object, $0, $1, nil)
            }
        },
        NullPointerCase("C_CopyObject(NULL template, 1 entry)") { fixture in
            var copy: CK_OBJECT_HANDLE = 0
            return try fixture.m.C_CopyObject(fixture.session, fixture.object, nil, 1, &copy)
        },
        NullPointerCase("C_GetObjectSize(…, NULL)") { fixture in
            try fixture.m.C_GetObjectSize(fixture.session, fixture.object, nil)
        },
        NullPointerCase("C_GetAttributeValue(NULL template, 1 entry)") { fixture in
            try fixture.m.C_GetAttributeValue(fixture.session, fixture.object, nil, 1)
        },
        NullPointerCase("C_SetAttributeValue(NULL template, 1 entry)") { fixture in
            try fixture.m.C_SetAttributeValue(fixture.session, fixture.object, nil, 1)
        },
        NullPointerCase("C_SetAttributeValue(NULL pValue, length 4)") { fixture in
            let setValue = try fixture.m.C_SetAttributeValue
            return withTemplate([Attribute.null(CKA_LABEL, length: 4)]) {
                setValue(fixture.session, fixture.object, $0, $1)
            }
        },
        NullPointerCase("C_FindObjectsInit(NULL template, 1 entry)") { fixture in
            try fixture.m.C_FindObjectsInit(fixture.session, nil, 1)
        },
        NullPointerCase("C_FindObjectsInit(NULL pValue, length 4)") { fixture in
            let initialize = try fixture.m.C_FindObjectsInit
            return withTemplate([Attribute.null(CKA_LABEL, length: 4)]) {
                initialize(fixture.session, $0, $1)
            }
        },
        NullPointerCase("C_FindObjects(NULL handles, max 1)") { fixture in
            try fixture.startSearch()
            var count: CK_ULONG = 0
            return try fixture.m.C_FindObjects(fixture.session, nil, 1, &count)
        },
        NullPointerCase("C_FindObjects(handles, NULL count)") { fixture in
            try fixture.startSearch()
            var found: CK_OBJECT_HANDLE = 0
            return try fixture.m.C_FindObjects(fixture.session, &found, 1, nil)
        },
        NullPointerCase("C_Digest(data, NULL length)") { fixture in
            try fixture.startDigest()
            var data: [UInt8] = [1, 2, 3]
            var output = [UInt8](repeating: 0, count: 32)
            return try fixture.m.C_Digest(fixture.session, &data, 3, &output, nil)
        },
        NullPointerCase("C_Digest(NULL data, length 3)") { fixture in
            try fixture.startDigest()
            var output = [UInt8](repeating: 0, count: 32)
            var length: CK_ULONG = 32
            return try fixture.m.C_Digest(fixture.session, nil, 3, &output, &length)
        },
        NullPointerCase("C_DigestUpdate(NULL data, length 3)") { fixture in
            try fixture.startDigest()
            return try fixture.m.C_DigestUpdate(fixture.session, nil, 3)
        },
        NullPointerCase("C_DigestFinal(output, NULL length)") { fixture in
            try fixture.startDigest()
            var output = [UInt8](repeating: 0, count: 32)
            return try fixture.m.C_DigestFinal(fixture.session, &output, nil)
        },
        NullPointerCase("C_GenerateRandom(NULL, 16)") { fixture in
            try fixture.m.C_GenerateRandom(fixture.session, nil, 16)
        },
        NullPointerCase("C_SeedRandom(NULL, 16)") { fixture in
            try fixture.m.C_SeedRandom(fixture.session, nil, 16)
        },
        NullPointerCase("C_GenerateKey(NULL mechanism)") { fixture in
            var key: CK_OBJECT_HANDLE = 0
            return try fixture.m.C_GenerateKey(fixture.session, nil, nil, 0, &key)
        },
        NullPointerCase("C_GenerateKeyPair(NULL mechanism)") { fixture in
            var publicKey: CK_OBJECT_HANDLE = 0
            var privateKey: CK_OBJECT_HANDLE = 0
            return try fixture.m.C_GenerateKeyPair(
                fixture.session, nil, nil, 0, nil, 0, &publicKey, &privateKey)
        },
        NullPointerCase("C_WrapKey(NULL mechanism)") { fixture in
            var length: CK_ULONG = 0
            return try fixture.m.C_WrapKey(fixture.session, nil, 1, 2, nil, &length)
        },
        NullPointerCase("C_UnwrapKey(NULL mechanism)") { fixture in
            var key: CK_OBJECT_HANDLE = 0
            var wrapped: [UInt8] = [1]
            return try fixture.m.C_UnwrapKey(fixture.session, nil, 1, &wrapped, 1, nil, 0, &key)
        },
        NullPointerCase("C_DeriveKey(NULL mechanism)") { fixture in
            var key: CK_OBJECT_HANDLE = 0
            return try fixture.m.C_DeriveKey(fixture.session, nil, 1, nil, 0, &key)
        },
    ]
}

extension ModuleTests {
    @Suite("Bad input: NULL pointers")
    struct NullPointers {
        @Test(
            "A NULL where a pointer is required returns CKR_ARGUMENTS_BAD and harms nothing",
            arguments: NullPointerCase.all)
        func nullPointer(testCase: NullPointerCase) throws {
            let alice = try Fixtures.alice.get()
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createCertificate(alice, in: session)
                let fixture = NullPointerFixture(token: token, session: session, object: object)
                #expect(try testCase.call(fixture) == CKR_ARGUMENTS_BAD)
                // The module and the stored object are intact.
                let again = try token.openSession(readWrite: false)
                #expect(try token.find([], in: again) == [object])
                #expect(try token.attribute(CKA_VALUE, of: object, in: again) == alice.der)
            }
        }
    }
}
