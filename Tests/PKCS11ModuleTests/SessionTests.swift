import CPKCS11
import Testing

extension ModuleTests {
    @Suite("Sessions (v2.40 §5.6)")
    struct Sessions {
        @Test("Read-only and read/write sessions report public session states")
        func sessionStates() throws {
            try withToken { token throws in
                let readOnly = try token.openSession(readWrite: false)
                let readWrite = try token.openSession(readWrite: true)
                #expect(readOnly != 0)
                #expect(readWrite != 0)
                #expect(readOnly != readWrite)
                var info = CK_SESSION_INFO()
                #expect(try token.m.C_GetSessionInfo(readOnly, &info) == CKR_OK)
                #expect(info.state == CK_STATE(CKS_RO_PUBLIC_SESSION))
                #expect(info.slotID == 0)
                #expect(info.flags & CK_FLAGS(CKF_SERIAL_SESSION) != 0)
                #expect(info.flags & CK_FLAGS(CKF_RW_SESSION) == 0)
                #expect(try token.m.C_GetSessionInfo(readWrite, &info) == CKR_OK)
                #expect(info.state == CK_STATE(CKS_RW_PUBLIC_SESSION))
                #expect(info.flags & CK_FLAGS(CKF_RW_SESSION) != 0)
            }
        }

        @Test(
            "C_OpenSession without CKF_SERIAL_SESSION returns CKR_SESSION_PARALLEL_NOT_SUPPORTED",
            arguments: [CK_FLAGS(0), CK_FLAGS(CKF_RW_SESSION)])
        func parallelSessionsRefused(flags: CK_FLAGS) throws {
            try withToken { token throws in
                var session: CK_SESSION_HANDLE = 0
                #expect(
                    try token.m.C_OpenSession(0, flags, nil, nil, &session)
                        == CKR_SESSION_PARALLEL_NOT_SUPPORTED)
                #expect(try token.tokenInfo().ulSessionCount == 0)
            }
        }

        @Test("C_CloseSession ends a session: its handle is invalid afterwards")
        func closeSession() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let other = try token.openSession()
                #expect(try token.m.C_CloseSession(session) == CKR_OK)
                var info = CK_SESSION_INFO()
                #expect(try token.m.C_GetSessionInfo(session, &info) == CKR_SESSION_HANDLE_INVALID)
                #expect(try token.m.C_CloseSession(session) == CKR_SESSION_HANDLE_INVALID)
                #expect(try token.m.C_GetSessionInfo(other, &info) == CKR_OK)
            }
        }

        @Test("C_CloseAllSessions closes every session of the slot")
        func closeAllSessions() throws {
            try withToken { token throws in
                let sessions = [
                    try token.openSession(readWrite: false), try token.openSession(), try token.openSession(),
                ]
                #expect(try token.m.C_CloseAllSessions(0) == CKR_OK)
                var info = CK_SESSION_INFO()
                for session in sessions {
                    #expect(try token.m.C_GetSessionInfo(session, &info) == CKR_SESSION_HANDLE_INVALID)
                }
                let counts = try token.tokenInfo()
                #expect(counts.ulSessionCount == 0)
                #expect(counts.ulRwSessionCount == 0)
                #expect(try token.m.C_CloseAllSessions(0) == CKR_OK)
            }
        }

        @Test(
            "Calls on an unknown session handle return CKR_SESSION_HANDLE_INVALID",
            arguments: [0, 777, CK_SESSION_HANDLE.max])
        func invalidSessionHandle(session: CK_SESSION_HANDLE) throws {
            try withToken { token throws in
                _ = try token.openSession()
                let m = token.m
                var info = CK_SESSION_INFO()
                var object: CK_OBJECT_HANDLE = 0
                var count: CK_ULONG = 0
                var size: CK_ULONG = 0
                var mechanism = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(CKM_SHA256), pParameter: nil, ulParameterLen: 0)
                var bytes = [UInt8](repeating: 0, count: 16)
                let calls: [(String, CK_RV)] = [
                    ("C_GetSessionInfo", try m.C_GetSessionInfo(session, &info)),
                    ("C_CloseSession", try m.C_CloseSession(session)),
                    ("C_Login", try m.C_Login(session, CK_USER_TYPE(CKU_USER), nil, 0)),
                    ("C_Logout", try m.C_Logout(session)),
                    ("C_CreateObject", try m.C_CreateObject(session, nil, 0, &object)),
                    ("C_GetObjectSize", try m.C_GetObjectSize(session, 1, &size)),
                    ("C_DestroyObject", try m.C_DestroyObject(session, 1)),
                    ("C_FindObjectsInit", try m.C_FindObjectsInit(session, nil, 0)),
                    ("C_FindObjects", try m.C_FindObjects(session, &object, 1, &count)),
                    ("C_FindObjectsFinal", try m.C_FindObjectsFinal(session)),
                    ("C_DigestInit", try m.C_DigestInit(session, &mechanism)),
                    ("C_GenerateRandom", try m.C_GenerateRandom(session, &bytes, 16)),
                    ("C_SignInit", try m.C_SignInit(session, &mechanism, 1)),
                ]
                for (function, rv) in calls {
                    #expect(rv == CKR_SESSION_HANDLE_INVALID, "\(function) returned \(name(of: rv))")
                }
            }
        }

        @Test("C_GetTokenInfo counts the open sessions and the read/write ones")
        func sessionCounts() throws {
            try withToken { token throws in
                _ = try token.openSession(readWrite: false)
                _ = try token.openSession(readWrite: false)
                let readWrite = try token.openSession(readWrite: true)
                var info = try token.tokenInfo()
                #expect(info.ulSessionCount == 3)
                #expect(info.ulRwSessionCount == 1)
                #expect(try token.m.C_CloseSession(readWrite) == CKR_OK)
                info = try token.tokenInfo()
                #expect(info.ulSessionCount == 2)
                #expect(info.ulRwSessionCount == 0)
            }
        }
    }
}
