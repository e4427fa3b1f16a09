import CPKCS11
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Calls `C_Initialize` with `args` laid out in memory.
private func initialize(_ token: TestToken, _ args: CK_C_INITIALIZE_ARGS) throws -> CK_RV {
    var args = args
    let initialize = try token.m.C_Initialize
    return withUnsafeMutablePointer(to: &args) { initialize(UnsafeMutableRawPointer($0)) }
}

/// Application mutex callbacks (v2.40 §5.4). The module may use its own locks instead; these
/// only have to be valid C functions.
private let createMutex: CK_CREATEMUTEX = { mutex in
    mutex?.pointee = UnsafeMutableRawPointer(bitPattern: 0x1)
    return CK_RV(CKR_OK)
}
private let destroyMutex: CK_DESTROYMUTEX = { _ in CK_RV(CKR_OK) }
private let lockMutex: CK_LOCKMUTEX = { _ in CK_RV(CKR_OK) }
private let unlockMutex: CK_UNLOCKMUTEX = { _ in CK_RV(CKR_OK) }

/// Initialisation arguments with the callbacks `mask` selects (create, destroy, lock, unlock).
private func arguments(callbacks mask: [Bool], flags: CK_FLAGS = 0) -> CK_C_INITIALIZE_ARGS {
    var args = CK_C_INITIALIZE_ARGS()
    if mask[0] { args.CreateMutex = createMutex }
    if mask[1] { args.DestroyMutex = destroyMutex }
    if mask[2] { args.LockMutex = lockMutex }
    if mask[3] { args.UnlockMutex = unlockMutex }
    args.flags = flags
    return args
}

extension ModuleTests {
    @Suite("C_Initialize and C_Finalize (v2.40 §5.4)")
    struct Initialization {
        @Test("C_Initialize accepts NULL arguments and C_Finalize ends the session of the library")
        func acceptsNullArguments() throws {
            try withStore { token throws in
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
                var info = CK_INFO()
                #expect(try token.m.C_GetInfo(&info) == CKR_OK)
                #expect(try token.m.C_Finalize(nil) == CKR_OK)
                #expect(try token.m.C_GetInfo(&info) == CKR_CRYPTOKI_NOT_INITIALIZED)
            }
        }

        @Test("C_Initialize accepts CKF_OS_LOCKING_OK without callbacks")
        func acceptsOSLocking() throws {
            try withStore { token throws in
                let args = arguments(
                    callbacks: [false, false, false, false], flags: CK_FLAGS(CKF_OS_LOCKING_OK))
                #expect(try initialize(token, args) == CKR_OK)
                var info = CK_INFO()
                #expect(try token.m.C_GetInfo(&info) == CKR_OK)
            }
        }

        @Test(
            "C_Initialize accepts all four mutex callbacks without CKF_OS_LOCKING_OK",
            arguments: [false, true])
        func acceptsMutexCallbacks(osLockingToo: Bool) throws {
            try withStore { token throws in
                let flags = osLockingToo ? CK_FLAGS(CKF_OS_LOCKING_OK) : 0
                #expect(
                    try initialize(token, arguments(callbacks: [true, true, true, true], flags: flags))
                        == CKR_OK)
                // The module then works, threads or not.
                let session = try token.openSession()
                let alice = try Fixtures.alice.get()
                _ = try token.createCertificate(alice, in: session)
                #expect(try token.find([], in: session).count == 1)
            }
        }

        @Test(
            "C_Initialize refuses some but not all mutex callbacks with CKR_ARGUMENTS_BAD",
            arguments: [
                [true, false, false, false], [false, true, false, false], [true, true, false, false],
                [true, true, true, false], [false, true, true, true],
            ])
        func refusesPartialCallbacks(mask: [Bool]) throws {
            try withStore { token throws in
                #expect(try initialize(token, arguments(callbacks: mask)) == CKR_ARGUMENTS_BAD)
                // Nothing was initialised.
                var info = CK_INFO()
                #expect(try token.m.C_GetInfo(&info) == CKR_CRYPTOKI_NOT_INITIALIZED)
            }
        }

        @Test("C_Initialize refuses a non-NULL pReserved with CKR_ARGUMENTS_BAD")
        func refusesReserved() throws {
            try withStore { token throws in
                let reserved = UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 8)
                defer { reserved.deallocate() }
                var args = CK_C_INITIALIZE_ARGS()
                args.flags = CK_FLAGS(CKF_OS_LOCKING_OK)
                args.pReserved = reserved
                #expect(try initialize(token, args) == CKR_ARGUMENTS_BAD)
                var info = CK_INFO()
                #expect(try token.m.C_GetInfo(&info) == CKR_CRYPTOKI_NOT_INITIALIZED)
            }
        }

        @Test("A second C_Initialize returns CKR_CRYPTOKI_ALREADY_INITIALIZED and keeps the first")
        func refusesSecondInitialize() throws {
            try withToken { token throws in
                let session = try token.openSession()
                #expect(try token.m.C_Initialize(nil) == CKR_CRYPTOKI_ALREADY_INITIALIZED)
                var info = CK_SESSION_INFO()
                #expect(try token.m.C_GetSessionInfo(session, &info) == CKR_OK)
            }
        }

        @Test("C_Finalize refuses a non-NULL pReserved with CKR_ARGUMENTS_BAD and stays initialised")
        func finalizeRefusesReserved() throws {
            try withToken { token throws in
                var reserved: UInt8 = 0
                #expect(try token.m.C_Finalize(&reserved) == CKR_ARGUMENTS_BAD)
                var info = CK_INFO()
                #expect(try token.m.C_GetInfo(&info) == CKR_OK)
            }
        }

        @Test("Every call before C_Initialize returns CKR_CRYPTOKI_NOT_INITIALIZED")
        func callsBeforeInitialize() throws {
            try withStore { token throws in
                let m = token.m
                var info = CK_INFO()
                var slotInfo = CK_SLOT_INFO()
                var tokenInfo = CK_TOKEN_INFO()
                var sessionInfo = CK_SESSION_INFO()
                var mechanismInfo = CK_MECHANISM_INFO()
                var count: CK_ULONG = 0
                var session: CK_SESSION_HANDLE = 0
                var object: CK_OBJECT_HANDLE = 0
                var mechanism = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(CKM_SHA256), pParameter: nil, ulParameterLen: 0)
                var bytes = [UInt8](repeating: 0, count: 16)
                var slot: CK_SLOT_ID = 0
                let calls: [(String, CK_RV)] = [
                    ("C_Finalize", try m.C_Finalize(nil)),
                    ("C_GetInfo", try m.C_GetInfo(&info)),
                    ("C_GetSlotList", try m.C_GetSlotList(0, nil, &count)),
                    ("C_GetSlotInfo", try m.C_GetSlotInfo(0, &slotInfo)),
                    ("C_GetTokenInfo", try m.C_GetTokenInfo(0, &tokenInfo)),
                    ("C_GetMechanismList", try m.C_GetMechanismList(0, nil, &count)),
                    (
                        "C_GetMechanismInfo",
                        try m.C_GetMechanismInfo(0, CK_MECHANISM_TYPE(CKM_SHA256), &mechanismInfo)
                    ),
                    ("C_WaitForSlotEvent", try m.C_WaitForSlotEvent(CK_FLAGS(CKF_DONT_BLOCK), &slot, nil)),
                    ("C_OpenSession", try m.C_OpenSession(0, readWriteSession, nil, nil, &session)),
                    ("C_CloseSession", try m.C_CloseSession(1)),
                    ("C_CloseAllSessions", try m.C_CloseAllSessions(0)),
                    ("C_GetSessionInfo", try m.C_GetSessionInfo(1, &sessionInfo)),
                    ("C_Login", try m.C_Login(1, CK_USER_TYPE(CKU_USER), nil, 0)),
                    ("C_Logout", try m.C_Logout(1)),
                    ("C_CreateObject", try m.C_CreateObject(1, nil, 0, &object)),
                    ("C_DestroyObject", try m.C_DestroyObject(1, 1)),
                    ("C_FindObjectsInit", try m.C_FindObjectsInit(1, nil, 0)),
                    ("C_FindObjects", try m.C_FindObjects(1, &object, 1, &count)),
                    ("C_FindObjectsFinal", try m.C_FindObjectsFinal(1)),
                    ("C_DigestInit", try m.C_DigestInit(1, &mechanism)),
                    ("C_GenerateRandom", try m.C_GenerateRandom(1, &bytes, 16)),
                    ("C_SignInit", try m.C_SignInit(1, &mechanism, 1)),
                    ("C_GetFunctionStatus", try m.C_GetFunctionStatus(1)),
                ]
                for (function, rv) in calls {
                    #expect(rv == CKR_CRYPTOKI_NOT_INITIALIZED, "\(function) returned \(name(of: rv))")
                }
            }
        }

        @Test("After C_Finalize a new C_Initialize starts fresh and finds the stored objects")
        func finalizeThenInitializeAgain() throws {
            try withToken { token throws in
                let alice = try Fixtures.alice.get()
                let session = try token.openSession()
                _ = try token.createCertificate(alice, in: session)
                #expect(try token.m.C_Finalize(nil) == CKR_OK)
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
                // Sessions died with C_Finalize; objects did not.
                var info = CK_SESSION_INFO()
                #expect(try token.m.C_GetSessionInfo(session, &info) == CKR_SESSION_HANDLE_INVALID)
                let again = try token.openSession(readWrite: false)
                let found = try token.find([Attribute(CKA_LABEL, string: "Alice")], in: again)
                try #require(found.count == 1)
                #expect(try token.attribute(CKA_VALUE, of: found[0], in: again) == alice.der)
            }
        }

        @Test("The module survives C_Finalize, dlclose, dlopen and C_Initialize")
        func survivesReload() throws {
            try withStore { token throws in
                // A private copy, so that dlclose really drops the last reference to it.
                let copy = token.directory + "/reloaded-module.so"
                try FileManager.default.copyItem(atPath: token.module.path, toPath: copy)
                for round in 1...3 {
                    let module = try LoadedModule(path: copy)
                    let m = module.functions
                    #expect(try m.C_Initialize(nil) == CKR_OK, "round \(round)")
                    var session: CK_SESSION_HANDLE = 0
                    #expect(try m.C_OpenSession(0, readWriteSession, nil, nil, &session) == CKR_OK)
                    var info = CK_TOKEN_INFO()
                    #expect(try m.C_GetTokenInfo(0, &info) == CKR_OK)
                    #expect(info.ulSessionCount == 1)
                    #expect(try m.C_Finalize(nil) == CKR_OK)
                    #expect(dlclose(module.handle) == 0)
                }
            }
        }
    }
}
