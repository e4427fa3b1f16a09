import CPKCS11
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The digest mechanisms the token offers (ARCHITECTURE.md §8: SHA-1/2 digests).
let digestMechanisms: [CK_MECHANISM_TYPE] = [
    CK_MECHANISM_TYPE(CKM_SHA_1), CK_MECHANISM_TYPE(CKM_SHA224), CK_MECHANISM_TYPE(CKM_SHA256),
    CK_MECHANISM_TYPE(CKM_SHA384), CK_MECHANISM_TYPE(CKM_SHA512),
]

extension ModuleTests {
    @Suite("C_GetInfo, C_GetFunctionList and the v3.0 interfaces")
    struct GeneralInformation {
        @Test("C_GetInfo reports Cryptoki 2.40 and blank-padded texts")
        func info() throws {
            try withToken { token throws in
                var info = CK_INFO()
                #expect(try token.m.C_GetInfo(&info) == CKR_OK)
                #expect(info.cryptokiVersion.major == 2)
                #expect(info.cryptokiVersion.minor == 40)
                #expect(text(info.manufacturerID) == padded("p11keychain", to: 32))
                #expect(text(info.libraryDescription).hasPrefix("p11keychain"))
                #expect(text(info.libraryDescription).utf8.count == 32)
                #expect(!text(info.libraryDescription).contains("\0"))
                #expect(info.flags == 0)
            }
        }

        @Test("C_GetFunctionList gives the 2.40 list, whose own C_GetFunctionList gives it again")
        func functionList() throws {
            try withStore { token throws in
                let list = token.module.functions.pointer
                #expect(list.pointee.version.major == 2)
                #expect(list.pointee.version.minor == 40)
                var again: UnsafeMutablePointer<CK_FUNCTION_LIST>? = nil
                #expect(try token.m.C_GetFunctionList(&again) == CKR_OK)
                #expect(again.map { UnsafePointer($0) } == list)
            }
        }

        @Test("C_GetInterfaceList reports two \"PKCS 11\" interfaces, 3.0 then 2.40, with a size query")
        func interfaceList() throws {
            let module = try LoadedModule.load()
            var count: CK_ULONG = 0
            #expect(module.getInterfaceList(nil, &count) == CKR_OK)
            #expect(count == 2)
            var interfaces = [CK_INTERFACE](repeating: CK_INTERFACE(), count: 2)
            #expect(module.getInterfaceList(&interfaces, &count) == CKR_OK)
            try #require(count == 2)
            var versions: [(CK_BYTE, CK_BYTE)] = []
            for interface in interfaces {
                let name = try #require(interface.pInterfaceName.map { String(cString: $0) })
                #expect(name == "PKCS 11")
                let version = try #require(
                    interface.pFunctionList?.assumingMemoryBound(to: CK_VERSION.self).pointee)
                versions.append((version.major, version.minor))
            }
            #expect(versions.map(\.0) == [3, 2])
            #expect(versions.map(\.1) == [0, 40])
            #expect(
                interfaces[1].pFunctionList == UnsafeMutableRawPointer(mutating: module.functions.pointer))
        }

        @Test("C_GetInterfaceList with too small a buffer returns CKR_BUFFER_TOO_SMALL and the count")
        func interfaceListTooSmall() throws {
            let module = try LoadedModule.load()
            var interfaces = [CK_INTERFACE](repeating: CK_INTERFACE(), count: 1)
            var count: CK_ULONG = 1
            #expect(module.getInterfaceList(&interfaces, &count) == CKR_BUFFER_TOO_SMALL)
            #expect(count == 2)
            #expect(interfaces[0].pInterfaceName == nil)
        }

        @Test("C_GetInterface with a NULL name gives the 3.0 list")
        func interfaceWithoutName() throws {
            let module = try LoadedModule.load()
            let (rv, interface) = module.interface(named: nil, version: nil)
            #expect(rv == CKR_OK)
            let version = try #require(
                interface?.pFunctionList?.assumingMemoryBound(to: CK_VERSION.self).pointee)
            #expect(version.major == 3)
            #expect(version.minor == 0)
        }

        @Test("C_GetInterface(\"PKCS 11\", 2.40) gives the list C_GetFunctionList gives")
        func interfaceForVersion240() throws {
            let module = try LoadedModule.load()
            let (rv, interface) = module.interface(named: "PKCS 11", version: CK_VERSION(major: 2, minor: 40))
            #expect(rv == CKR_OK)
            #expect(interface?.pFunctionList == UnsafeMutableRawPointer(mutating: module.functions.pointer))
        }

        @Test("C_GetInterface refuses an unknown name or version", arguments: ["PKCS 12", "", "pkcs 11"])
        func unknownInterface(name: String) throws {
            let module = try LoadedModule.load()
            #expect(module.interface(named: name, version: nil).0 != CKR_OK)
            #expect(module.interface(named: name, version: nil).1 == nil)
            #expect(module.interface(named: "PKCS 11", version: CK_VERSION(major: 4, minor: 0)).0 != CKR_OK)
        }

        @Test("The 3.0 list works like the 2.40 list and its message functions are not supported")
        func version30List() throws {
            try withStore { token throws in
                let m3 = try token.module.functions30()
                #expect(m3.pointer.pointee.version.major == 3)
                #expect(try m3.C_Initialize(nil) == CKR_OK)
                var session: CK_SESSION_HANDLE = 0
                #expect(try m3.C_OpenSession(0, readWriteSession, nil, nil, &session) == CKR_OK)
                var mechanism = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(CKM_SHA256), pParameter: nil, ulParameterLen: 0)
                var input = [UInt8](repeating: 0, count: 64)
                var bytes = [UInt8](repeating: 0, count: 64)
                var length: CK_ULONG = 64
                let notSupported: [(String, CK_RV)] = [
                    ("C_MessageEncryptInit", try m3.C_MessageEncryptInit(session, &mechanism, 0)),
                    (
                        "C_EncryptMessage",
                        try m3.C_EncryptMessage(session, nil, 0, nil, 0, &input, 3, &bytes, &length)
                    ),
                    ("C_EncryptMessageBegin", try m3.C_EncryptMessageBegin(session, nil, 0, nil, 0)),
                    (
                        "C_EncryptMessageNext",
                        try m3.C_EncryptMessageNext(session, nil, 0, &input, 3, &bytes, &length, 0)
                    ),
                    ("C_MessageEncryptFinal", try m3.C_MessageEncryptFinal(session)),
                    ("C_MessageDecryptInit", try m3.C_MessageDecryptInit(session, &mechanism, 0)),
                    (
                        "C_DecryptMessage",
                        try m3.C_DecryptMessage(session, nil, 0, nil, 0, &input, 3, &bytes, &length)
                    ),
                    ("C_DecryptMessageBegin", try m3.C_DecryptMessageBegin(session, nil, 0, nil, 0)),
                    (
                        "C_DecryptMessageNext",
                        try m3.C_DecryptMessageNext(session, nil, 0, &input, 3, &bytes, &length, 0)
                    ),
                    ("C_MessageDecryptFinal", try m3.C_MessageDecryptFinal(session)),
                    ("C_MessageSignInit", try m3.C_MessageSignInit(session, &mechanism, 0)),
                    ("C_SignMessage", try m3.C_SignMessage(session, nil, 0, &input, 3, &bytes, &length)),
                    ("C_SignMessageBegin", try m3.C_SignMessageBegin(session, nil, 0)),
                    (
                        "C_SignMessageNext",
                        try m3.C_SignMessageNext(session, nil, 0, &input, 3, &bytes, &length)
                    ),
                    ("C_MessageSignFinal", try m3.C_MessageSignFinal(session)),
                    ("C_MessageVerifyInit", try m3.C_MessageVerifyInit(session, &mechanism, 0)),
                    ("C_VerifyMessage", try m3.C_VerifyMessage(session, nil, 0, &input, 3, &bytes, 3)),
                    ("C_VerifyMessageBegin", try m3.C_VerifyMessageBegin(session, nil, 0)),
                    (
                        "C_VerifyMessageNext",
                        try m3.C_VerifyMessageNext(session, nil, 0, &input, 3, &bytes, 3)
                    ),
                    ("C_MessageVerifyFinal", try m3.C_MessageVerifyFinal(session)),
                ]
                for (function, rv) in notSupported {
                    #expect(rv == CKR_FUNCTION_NOT_SUPPORTED, "\(function) returned \(name(of: rv))")
                }
                // The v3.0 session functions that are offered.
                #expect(
                    try m3.C_LoginUser(session, CK_USER_TYPE(CKU_USER), nil, 0, nil, 0)
                        == CKR_USER_PIN_NOT_INITIALIZED)
                #expect(try m3.C_DigestInit(session, &mechanism) == CKR_OK)
                #expect(try m3.C_SessionCancel(session, CK_FLAGS(CKF_DIGEST)) == CKR_OK)
                #expect(try m3.C_DigestFinal(session, &bytes, &length) == CKR_OPERATION_NOT_INITIALIZED)
                #expect(try m3.C_Finalize(nil) == CKR_OK)
            }
        }

        @Test("C_GetFunctionList, C_GetInterfaceList and C_GetInterface work before C_Initialize")
        func interfacesBeforeInitialize() throws {
            try withStore { token throws in
                var list: UnsafeMutablePointer<CK_FUNCTION_LIST>? = nil
                #expect(token.module.getFunctionList(&list) == CKR_OK)
                var count: CK_ULONG = 0
                #expect(token.module.getInterfaceList(nil, &count) == CKR_OK)
                #expect(token.module.interface(named: "PKCS 11", version: nil).0 == CKR_OK)
                var info = CK_INFO()
                #expect(try token.m.C_GetInfo(&info) == CKR_CRYPTOKI_NOT_INITIALIZED)
            }
        }
    }

    @Suite("Slots, tokens and mechanisms (v2.40 §5.5)")
    struct SlotsAndTokens {
        @Test("C_GetSlotList answers a size query, then lists slot 0")
        func slotList() throws {
            try withToken { token throws in
                for present in [CK_BBOOL(0), CK_BBOOL(1)] {
                    var count: CK_ULONG = 0
                    #expect(try token.m.C_GetSlotList(present, nil, &count) == CKR_OK)
                    #expect(count == 1)
                    var slots = [CK_SLOT_ID](repeating: 99, count: 4)
                    count = 4
                    #expect(try token.m.C_GetSlotList(present, &slots, &count) == CKR_OK)
                    #expect(count == 1)
                    #expect(slots[0] == 0)
                }
            }
        }

        @Test("C_GetSlotList with too small a buffer returns CKR_BUFFER_TOO_SMALL and the count")
        func slotListTooSmall() throws {
            try withToken { token throws in
                var slots = [CK_SLOT_ID](repeating: 99, count: 1)
                var count: CK_ULONG = 0
                #expect(try token.m.C_GetSlotList(0, &slots, &count) == CKR_BUFFER_TOO_SMALL)
                #expect(count == 1)
                #expect(slots[0] == 99)
            }
        }

        @Test("C_GetSlotInfo reports a present token and blank-padded texts")
        func slotInfo() throws {
            try withToken { token throws in
                var info = CK_SLOT_INFO()
                #expect(try token.m.C_GetSlotInfo(0, &info) == CKR_OK)
                #expect(info.flags & CK_FLAGS(CKF_TOKEN_PRESENT) != 0)
                #expect(info.flags & CK_FLAGS(CKF_REMOVABLE_DEVICE) == 0)
                #expect(text(info.manufacturerID) == padded("p11keychain", to: 32))
                #expect(text(info.slotDescription) == padded("p11keychain login", to: 64))
            }
        }

        @Test("C_GetTokenInfo reports token \"login\", initialised, with an RNG and no login required")
        func tokenInfo() throws {
            try withToken { token throws in
                let info = try token.tokenInfo()
                #expect(text(info.label) == padded("login", to: 32))
                #expect(text(info.manufacturerID) == padded("p11keychain", to: 32))
                #expect(info.flags & CK_FLAGS(CKF_TOKEN_INITIALIZED) != 0)
                #expect(info.flags & CK_FLAGS(CKF_RNG) != 0)
                #expect(info.flags & CK_FLAGS(CKF_LOGIN_REQUIRED) == 0)
                #expect(info.flags & CK_FLAGS(CKF_WRITE_PROTECTED) == 0)
                #expect(info.flags & CK_FLAGS(CKF_USER_PIN_INITIALIZED) == 0)
                let serial = text(info.serialNumber).trimmingCharacters(in: .whitespaces)
                #expect(!serial.isEmpty)
                #expect(info.ulSessionCount == 0)
                #expect(info.ulRwSessionCount == 0)
                #expect(info.ulMinPinLen <= info.ulMaxPinLen)
            }
        }

        @Test("The token's serial number is stable across C_Finalize and C_Initialize")
        func stableSerial() throws {
            try withToken { token throws in
                let first = text(try token.tokenInfo().serialNumber)
                #expect(try token.m.C_Finalize(nil) == CKR_OK)
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
                #expect(text(try token.tokenInfo().serialNumber) == first)
            }
        }

        @Test("The token is created on first use under P11KEYCHAIN_DIR, with a private file mode")
        func storeCreatedOnFirstUse() throws {
            try withStore { token throws in
                let nested = token.directory + "/not/yet/there"
                setenv("P11KEYCHAIN_DIR", nested, 1)
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
                let session = try token.openSession()
                _ = try token.createCertificate(try Fixtures.alice.get(), in: session)
                var status = stat()
                try #require(stat(nested + "/login.sqlite3", &status) == 0)
                #expect(status.st_mode & 0o077 == 0)
                try #require(stat(nested, &status) == 0)
                #expect(status.st_mode & 0o077 == 0)
            }
        }

        @Test(
            "Slot and token functions refuse an unknown slot with CKR_SLOT_ID_INVALID",
            arguments: [1, 42, CK_SLOT_ID.max])
        func invalidSlot(slot: CK_SLOT_ID) throws {
            try withToken { token throws in
                let m = token.m
                var slotInfo = CK_SLOT_INFO()
                var tokenInfo = CK_TOKEN_INFO()
                var mechanismInfo = CK_MECHANISM_INFO()
                var count: CK_ULONG = 0
                var session: CK_SESSION_HANDLE = 0
                let calls: [(String, CK_RV)] = [
                    ("C_GetSlotInfo", try m.C_GetSlotInfo(slot, &slotInfo)),
                    ("C_GetTokenInfo", try m.C_GetTokenInfo(slot, &tokenInfo)),
                    ("C_GetMechanismList", try m.C_GetMechanismList(slot, nil, &count)),
                    (
                        "C_GetMechanismInfo",
                        try m.C_GetMechanismInfo(slot, CK_MECHANISM_TYPE(CKM_SHA256), &mechanismInfo)
                    ),
                    ("C_OpenSession", try m.C_OpenSession(slot, readWriteSession, nil, nil, &session)),
                    ("C_CloseAllSessions", try m.C_CloseAllSessions(slot)),
                    ("C_InitToken", try m.C_InitToken(slot, nil, 0, nil)),
                ]
                for (function, rv) in calls {
                    #expect(rv == CKR_SLOT_ID_INVALID, "\(function) returned \(name(of: rv))")
                }
            }
        }

        @Test("C_GetMechanismList lists the five SHA digests, with a size query and a short buffer")
        func mechanismList() throws {
            try withToken { token throws in
                var count: CK_ULONG = 0
                #expect(try token.m.C_GetMechanismList(0, nil, &count) == CKR_OK)
                #expect(count >= 5)
                var short = [CK_MECHANISM_TYPE](repeating: 0, count: 1)
                var shortCount: CK_ULONG = 1
                #expect(try token.m.C_GetMechanismList(0, &short, &shortCount) == CKR_BUFFER_TOO_SMALL)
                #expect(shortCount == count)
                var mechanisms = [CK_MECHANISM_TYPE](repeating: 0, count: Int(count))
                #expect(try token.m.C_GetMechanismList(0, &mechanisms, &count) == CKR_OK)
                #expect(Set(digestMechanisms).isSubset(of: Set(mechanisms.prefix(Int(count)))))
            }
        }

        @Test("C_GetMechanismInfo reports CKF_DIGEST for each SHA mechanism", arguments: digestMechanisms)
        func mechanismInfo(mechanism: CK_MECHANISM_TYPE) throws {
            try withToken { token throws in
                var info = CK_MECHANISM_INFO()
                #expect(try token.m.C_GetMechanismInfo(0, mechanism, &info) == CKR_OK)
                #expect(info.flags & CK_FLAGS(CKF_DIGEST) != 0)
                #expect(info.flags & CK_FLAGS(CKF_SIGN) == 0)
            }
        }

        @Test(
            "C_GetMechanismInfo refuses an unknown mechanism with CKR_MECHANISM_INVALID",
            arguments: [CK_MECHANISM_TYPE(CKM_MD5), CK_MECHANISM_TYPE(CKM_DES3_CBC), 0x8000_1234])
        func unknownMechanism(mechanism: CK_MECHANISM_TYPE) throws {
            try withToken { token throws in
                var info = CK_MECHANISM_INFO()
                #expect(try token.m.C_GetMechanismInfo(0, mechanism, &info) == CKR_MECHANISM_INVALID)
            }
        }
    }
}
