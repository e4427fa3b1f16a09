import CPKCS11
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension ModuleTests {
    @Suite("Stores and configuration (ARCHITECTURE.md §4, §5)")
    struct Stores {
        @Test(
            "A token configured read-only is CKF_WRITE_PROTECTED: R/W sessions are refused, R/O sessions read"
        )
        func readOnlyToken() throws {
            try withStore { token throws in
                let alice = try Fixtures.alice.get()
                // First fill the store as a writable token.
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
                let object = try token.createCertificate(alice, in: try token.openSession())
                #expect(try token.m.C_Finalize(nil) == CKR_OK)

                try token.configure("[token login]\npath = \(token.storePath)\nread-only = yes\n")
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
                let info = try token.tokenInfo()
                #expect(info.flags & CK_FLAGS(CKF_WRITE_PROTECTED) != 0)
                #expect(text(info.label) == padded("login", to: 32))
                var session: CK_SESSION_HANDLE = 0
                #expect(
                    try token.m.C_OpenSession(0, readWriteSession, nil, nil, &session)
                        == CKR_TOKEN_WRITE_PROTECTED)
                let readOnly = try token.openSession(readWrite: false)
                let found = try token.find([Attribute(CKA_LABEL, string: "Alice")], in: readOnly)
                #expect(found == [object])
                #expect(try token.attribute(CKA_VALUE, of: object, in: readOnly) == alice.der)
                // Token objects cannot be written; session objects can.
                let bob = try Fixtures.bob.get()
                #expect(
                    try token.create(TestToken.certificateTemplate(bob.der), in: readOnly).0
                        == CKR_TOKEN_WRITE_PROTECTED)
                #expect(
                    try token.create(TestToken.certificateTemplate(bob.der, token: false), in: readOnly).0
                        == CKR_OK)
                #expect(try token.m.C_DestroyObject(readOnly, object) == CKR_TOKEN_WRITE_PROTECTED)
                let setValue = try token.m.C_SetAttributeValue
                let rv = withTemplate([Attribute(CKA_LABEL, string: "renamed")]) {
                    setValue(readOnly, object, $0, $1)
                }
                #expect(rv == CKR_TOKEN_WRITE_PROTECTED)
                #expect(try token.string(CKA_LABEL, of: object, in: readOnly) == "Alice")
            }
        }

        @Test(
            "A configuration error fails C_Initialize with CKR_GENERAL_ERROR and names the file and line",
            arguments: [
                ("debug = no\ncolour = blue\n", 2, "colour"),
                ("[token login]\nread-only = maybe\n", 2, "read-only"),
                ("# comment\n\n[token login]\npath = /tmp/x.sqlite3\nsize = 3\n", 5, "size"),
                ("[keys]\n", 1, "keys"),
            ])
        func configurationErrors(text: String, line: Int, word: String) throws {
            try withStore { token throws in
                let path = try token.configure(text)
                let (rv, output) = try capturingStandardError { try token.m.C_Initialize(nil) }
                #expect(rv == CKR_GENERAL_ERROR)
                #expect(output.contains("\(path):\(line):"), "stderr: \(output)")
                #expect(output.contains(word), "stderr: \(output)")
                // Nothing was initialised.
                var info = CK_INFO()
                #expect(try token.m.C_GetInfo(&info) == CKR_CRYPTOKI_NOT_INITIALIZED)
                // Once the file is fixed, the module starts.
                try token.configure("debug = no\n")
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
            }
        }

        @Test("A store directory that cannot be created leaves the slot without a token and nothing crashes")
        func missingStoreDirectory() throws {
            try withStore { token throws in
                setenv("P11KEYCHAIN_DIR", "/proc/nonexistent/x", 1)
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
                var slotInfo = CK_SLOT_INFO()
                #expect(try token.m.C_GetSlotInfo(0, &slotInfo) == CKR_OK)
                #expect(slotInfo.flags & CK_FLAGS(CKF_TOKEN_PRESENT) == 0)
                var count: CK_ULONG = 9
                #expect(try token.m.C_GetSlotList(1, nil, &count) == CKR_OK)
                #expect(count == 0)
                #expect(try token.m.C_GetSlotList(0, nil, &count) == CKR_OK)
                #expect(count == 1)
                var session: CK_SESSION_HANDLE = 0
                #expect(
                    try token.m.C_OpenSession(0, readOnlySession, nil, nil, &session) == CKR_TOKEN_NOT_PRESENT
                )
                #expect(
                    try token.m.C_OpenSession(0, readWriteSession, nil, nil, &session)
                        == CKR_TOKEN_NOT_PRESENT)
                var tokenInfo = CK_TOKEN_INFO()
                #expect(try token.m.C_GetTokenInfo(0, &tokenInfo) == CKR_TOKEN_NOT_PRESENT)
                var mechanisms: CK_ULONG = 0
                #expect(try token.m.C_GetMechanismList(0, nil, &mechanisms) == CKR_OK)
                #expect(try token.m.C_Finalize(nil) == CKR_OK)
            }
        }

        @Test("A second configured token is slot 1; its sessions do not accept slot 0's object handles")
        func secondSlot() throws {
            try withStore { token throws in
                try token.configure("[token Other]\npath = \(token.directory)/other.sqlite3\n")
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
                var slots = [CK_SLOT_ID](repeating: 99, count: 4)
                var count: CK_ULONG = 4
                #expect(try token.m.C_GetSlotList(1, &slots, &count) == CKR_OK)
                #expect(Array(slots.prefix(Int(count))) == [0, 1])
                #expect(text(try token.tokenInfo(slot: 1).label) == padded("Other", to: 32))
                #expect(
                    text(try token.tokenInfo(slot: 0).serialNumber)
                        != text(try token.tokenInfo(slot: 1).serialNumber))

                let login = try token.openSession(slot: 0)
                let other = try token.openSession(slot: 1)
                var info = CK_SESSION_INFO()
                #expect(try token.m.C_GetSessionInfo(other, &info) == CKR_OK)
                #expect(info.slotID == 1)
                let alice = try token.createCertificate(try Fixtures.alice.get(), in: login)
                // Slot 1's store holds nothing; slot 0's handle means nothing there.
                #expect(try token.find([], in: other).isEmpty)
                var size: CK_ULONG = 0
                #expect(try token.m.C_GetObjectSize(other, alice, &size) == CKR_OBJECT_HANDLE_INVALID)
                #expect(try token.m.C_DestroyObject(other, alice) == CKR_OBJECT_HANDLE_INVALID)
                // The same certificate may be stored in both tokens.
                let copy = try token.createCertificate(try Fixtures.alice.get(), in: other)
                #expect(try token.find([], in: other) == [copy])
                #expect(try token.find([], in: login) == [alice])
                // Closing all sessions of slot 1 leaves slot 0's open.
                #expect(try token.m.C_CloseAllSessions(1) == CKR_OK)
                #expect(try token.m.C_GetSessionInfo(other, &info) == CKR_SESSION_HANDLE_INVALID)
                #expect(try token.m.C_GetSessionInfo(login, &info) == CKR_OK)
            }
        }
    }
}
