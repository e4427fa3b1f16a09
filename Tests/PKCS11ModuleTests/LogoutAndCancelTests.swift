import CPKCS11
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// CKF_FIND_OBJECTS and CKR_OPERATION_CANCEL_FAILED of v3.0, which p11-kit's 2.40 header lacks.
private let findObjectsFlag: CK_FLAGS = 0x0000_0040
private let operationCancelFailed: CK_RV = 0x0000_0202

/// The six operations a session can have active, each with the flag C_SessionCancel names it by.
private enum Operation: CaseIterable, CustomStringConvertible {
    case find, digest, sign, verify, encrypt, decrypt

    var flag: CK_FLAGS {
        switch self {
        case .find: findObjectsFlag
        case .digest: CK_FLAGS(CKF_DIGEST)
        case .sign: CK_FLAGS(CKF_SIGN)
        case .verify: CK_FLAGS(CKF_VERIFY)
        case .encrypt: CK_FLAGS(CKF_ENCRYPT)
        case .decrypt: CK_FLAGS(CKF_DECRYPT)
        }
    }

    var description: String {
        switch self {
        case .find: "find"
        case .digest: "digest"
        case .sign: "sign"
        case .verify: "verify"
        case .encrypt: "encrypt"
        case .decrypt: "decrypt"
        }
    }
}

/// A logged-in session with an EC and an RSA key pair, and calls that start and probe each
/// operation.
private struct Operations {
    let token: TestToken
    let session: CK_SESSION_HANDLE
    let ec: KeyPair
    let rsa: KeyPair

    init(_ token: TestToken) throws {
        self.token = token
        session = try token.loggedInSession()
        ec = try token.generateKeyPair(.p256, in: session)
        rsa = try token.generateKeyPair(.rsa2048, in: session)
    }

    func start(_ operation: Operation) throws -> CK_RV {
        switch operation {
        case .find:
            let initialize = try token.m.C_FindObjectsInit
            return withTemplate([]) { initialize(session, $0, $1) }
        case .digest: return try token.digestInit(session)
        case .sign: return try token.signInit(session, CKM_ECDSA_SHA256, key: ec.privateKey)
        case .verify: return try token.verifyInit(session, CKM_ECDSA_SHA256, key: ec.publicKey)
        case .encrypt: return try token.cipherInit(session, encrypt: true, key: rsa.publicKey)
        case .decrypt: return try token.cipherInit(session, encrypt: false, key: rsa.privateKey)
        }
    }

    /// The *Init of `operation` given no mechanism, which ends it (v3.0); nil for a search,
    /// which C_FindObjectsFinal ends.
    func initWithoutMechanism(_ operation: Operation) throws -> CK_RV? {
        let key = CK_OBJECT_HANDLE(CK_INVALID_HANDLE)
        switch operation {
        case .find: return nil
        case .digest: return try token.m.C_DigestInit(session, nil)
        case .sign: return try token.m.C_SignInit(session, nil, key)
        case .verify: return try token.m.C_VerifyInit(session, nil, key)
        case .encrypt: return try token.m.C_EncryptInit(session, nil, key)
        case .decrypt: return try token.m.C_DecryptInit(session, nil, key)
        }
    }

    /// A call that continues `operation` without ending it: CKR_OK while it is active,
    /// CKR_OPERATION_NOT_INITIALIZED once it was cancelled.
    func probe(_ operation: Operation) throws -> CK_RV {
        var part: [UInt8] = [1, 2, 3]
        var output = [UInt8](repeating: 0, count: 16)
        var length: CK_ULONG = 16
        switch operation {
        case .find:
            var handles = [CK_OBJECT_HANDLE](repeating: 0, count: 1)
            var count: CK_ULONG = 0
            return try token.m.C_FindObjects(session, &handles, 0, &count)
        case .digest: return try token.m.C_DigestUpdate(session, &part, 3)
        case .sign: return try token.m.C_SignUpdate(session, &part, 3)
        case .verify: return try token.m.C_VerifyUpdate(session, &part, 3)
        case .encrypt: return try token.m.C_EncryptUpdate(session, &part, 3, &output, &length)
        case .decrypt: return try token.m.C_DecryptUpdate(session, &part, 3, &output, &length)
        }
    }
}

extension ModuleTests {
    @Suite("C_Logout, C_SessionCancel and an *Init with no mechanism end operations (v2.40 §5.6, v3.0)")
    struct LogoutAndCancel {
        @Test(
            "C_Logout ends signing in every session of the application: C_Sign returns CKR_OPERATION_NOT_INITIALIZED"
        )
        func logoutEndsSigning() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let other = try token.openSession()
                let pair = try token.generateKeyPair(.p256, in: session)
                #expect(try token.signInit(session, CKM_ECDSA_SHA256, key: pair.privateKey) == CKR_OK)
                #expect(try token.signInit(other, CKM_ECDSA, key: pair.privateKey) == CKR_OK)
                // The length query keeps the operation; then the login ends.
                var data = [UInt8](repeating: 1, count: 32)
                var length: CK_ULONG = 0
                #expect(try token.m.C_Sign(other, &data, 32, nil, &length) == CKR_OK)
                #expect(length == 64)
                #expect(try token.m.C_Logout(other) == CKR_OK)
                // "It may or may not be possible to continue those operations" (v2.40 §5.6): this
                // token ends them, so no private key is used without a login.
                #expect(try token.sign(session, data).rv == CKR_OPERATION_NOT_INITIALIZED)
                #expect(try token.sign(other, data).rv == CKR_OPERATION_NOT_INITIALIZED)
            }
        }

        @Test("C_Logout ends decryption, and verification and encryption with a private public key")
        func logoutEndsPrivateKeyOperations() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let rsa = try token.generateKeyPair(.rsa2048, privatePublicKey: true, in: session)
                let ec = try token.generateKeyPair(.p256, in: session)
                let verifier = try token.openSession()
                #expect(try token.cipherInit(session, encrypt: false, key: rsa.privateKey) == CKR_OK)
                #expect(try token.cipherInit(session, encrypt: true, key: rsa.publicKey) == CKR_OK)
                #expect(try token.verifyInit(session, CKM_SHA256_RSA_PKCS, key: rsa.publicKey) == CKR_OK)
                // A verification with a public (not private) key goes on after the logout.
                #expect(try token.verifyInit(verifier, CKM_ECDSA_SHA256, key: ec.publicKey) == CKR_OK)
                #expect(try token.m.C_Logout(session) == CKR_OK)
                var part: [UInt8] = [1, 2, 3]
                var output = [UInt8](repeating: 0, count: 256)
                var length: CK_ULONG = 256
                #expect(
                    try token.m.C_DecryptUpdate(session, &part, 3, &output, &length)
                        == CKR_OPERATION_NOT_INITIALIZED)
                #expect(
                    try token.m.C_EncryptUpdate(session, &part, 3, &output, &length)
                        == CKR_OPERATION_NOT_INITIALIZED)
                #expect(try token.m.C_VerifyUpdate(session, &part, 3) == CKR_OPERATION_NOT_INITIALIZED)
                #expect(try token.m.C_VerifyUpdate(verifier, &part, 3) == CKR_OK)
            }
        }

        @Test("C_Logout ends a search that ran logged in; one that ran logged out goes on")
        func logoutEndsPrivateSearches() throws {
            try withToken { token throws in
                try token.setUpPINs()
                let publicSearch = try token.openSession()
                let initialize = try token.m.C_FindObjectsInit
                _ = try token.createObject(dataTemplate(label: "public", value: [1]), in: publicSearch)
                #expect(withTemplate([]) { initialize(publicSearch, $0, $1) } == CKR_OK)
                let session = try token.openSession()
                try token.logIn(session)
                _ = try token.createObject(
                    dataTemplate(label: "private", value: [2]) + [Attribute(CKA_PRIVATE, bool: true)],
                    in: session)
                #expect(withTemplate([]) { initialize(session, $0, $1) } == CKR_OK)
                #expect(try token.m.C_Logout(session) == CKR_OK)
                var handles = [CK_OBJECT_HANDLE](repeating: 0, count: 4)
                var count: CK_ULONG = 0
                #expect(
                    try token.m.C_FindObjects(session, &handles, 4, &count) == CKR_OPERATION_NOT_INITIALIZED)
                #expect(try token.m.C_FindObjects(publicSearch, &handles, 4, &count) == CKR_OK)
                #expect(count == 1)
            }
        }

        @Test("C_Logout destroys private session objects; public session objects and token objects stay")
        func logoutDestroysPrivateSessionObjects() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let other = try token.openSession()
                let privateData = try token.createObject(
                    dataTemplate(label: "private", value: [1], token: false) + [
                        Attribute(CKA_PRIVATE, bool: true)
                    ],
                    in: other)
                let publicData = try token.createObject(
                    dataTemplate(label: "public", value: [2], token: false), in: other)
                let pair = try token.generateKeyPair(.p256, in: session)
                let tokenData = try token.createObject(
                    dataTemplate(label: "kept", value: [3]) + [Attribute(CKA_PRIVATE, bool: true)],
                    in: session)
                #expect(try token.m.C_Logout(session) == CKR_OK)
                try token.logIn(session)
                let found = Set(try token.find([], in: session))
                #expect(!found.contains(privateData))
                #expect(!found.contains(pair.privateKey))
                #expect(found.contains(publicData))
                #expect(found.contains(pair.publicKey))
                #expect(found.contains(tokenData))
                var query = CK_ATTRIBUTE(type: CK_ATTRIBUTE_TYPE(CKA_LABEL), pValue: nil, ulValueLen: 0)
                #expect(
                    try token.m.C_GetAttributeValue(session, privateData, &query, 1)
                        == CKR_OBJECT_HANDLE_INVALID)
                #expect(
                    try token.signInit(session, CKM_ECDSA, key: pair.privateKey) == CKR_KEY_HANDLE_INVALID)
            }
        }

        /// With all six operations active, `cancel` (which must return CKR_OK) ends
        /// `operation` and no other, and `operation` can start again.
        fileprivate func expectOnlyEnded(_ operation: Operation, by cancel: (Operations) throws -> CK_RV?)
            throws
        {
            try withToken { token throws in
                let operations = try Operations(token)
                for each in Operation.allCases {
                    let rv = try operations.start(each)
                    try #require(rv == CKR_OK, "starting \(each): \(name(of: rv))")
                }
                let rv = try #require(try cancel(operations))
                #expect(rv == CKR_OK, "ending \(operation): \(name(of: rv))")
                for each in Operation.allCases {
                    let rv = try operations.probe(each)
                    let expected = each == operation ? CKR_OPERATION_NOT_INITIALIZED : CKR_OK
                    #expect(rv == expected, "\(each) after ending \(operation): \(name(of: rv))")
                }
                #expect(try operations.start(operation) == CKR_OK)
            }
        }

        @Test("C_SessionCancel cancels exactly the operations its flags name", arguments: Operation.allCases)
        fileprivate func sessionCancel(operation: Operation) throws {
            try expectOnlyEnded(operation) { try $0.token.m30.C_SessionCancel($0.session, operation.flag) }
        }

        @Test("C_SessionCancel with every flag at once ends every operation; on none active it succeeds")
        func sessionCancelAll() throws {
            try withToken { token throws in
                let operations = try Operations(token)
                for each in Operation.allCases { #expect(try operations.start(each) == CKR_OK) }
                let all = Operation.allCases.reduce(CK_FLAGS(0)) { $0 | $1.flag }
                #expect(try token.m30.C_SessionCancel(operations.session, all) == CKR_OK)
                for each in Operation.allCases {
                    #expect(try operations.probe(each) == CKR_OPERATION_NOT_INITIALIZED, "\(each)")
                }
                #expect(try token.m30.C_SessionCancel(operations.session, all) == CKR_OK)
            }
        }

        @Test(
            "An *Init given no mechanism (pMechanism NULL) ends exactly its own operation, which can start again",
            arguments: Operation.allCases.filter { $0 != .find })
        fileprivate func initWithoutMechanismCancels(operation: Operation) throws {
            try expectOnlyEnded(operation) { try $0.initWithoutMechanism(operation) }
        }

        @Test("An *Init given no mechanism ends its own session's operation, never another session's")
        func initWithoutMechanismStaysInItsSession() throws {
            try withToken { token throws in
                let operations = try Operations(token)
                let other = try token.openSession()
                #expect(try operations.start(.sign) == CKR_OK)
                #expect(try token.signInit(other, CKM_ECDSA_SHA256, key: operations.ec.privateKey) == CKR_OK)
                let none = CK_OBJECT_HANDLE(CK_INVALID_HANDLE)
                #expect(try token.m.C_SignInit(other, nil, none) == CKR_OK)
                #expect(try operations.probe(.sign) == CKR_OK, "the first session's signature goes on")
                var part: [UInt8] = [1]
                #expect(try token.m.C_SignUpdate(other, &part, 1) == CKR_OPERATION_NOT_INITIALIZED)
            }
        }

        @Test("An *Init given no mechanism on nothing active succeeds and starts nothing, recover ones too")
        func initWithoutMechanismOnNothing() throws {
            try withToken { token throws in
                let operations = try Operations(token)
                let session = operations.session
                for operation in Operation.allCases where operation != .find {
                    let rv = try #require(try operations.initWithoutMechanism(operation))
                    #expect(rv == CKR_OK, "\(operation): \(name(of: rv))")
                    #expect(try operations.probe(operation) == CKR_OPERATION_NOT_INITIALIZED, "\(operation)")
                }
                let key = CK_OBJECT_HANDLE(CK_INVALID_HANDLE)
                #expect(try token.m.C_SignRecoverInit(session, nil, key) == CKR_OK)
                #expect(try token.m.C_VerifyRecoverInit(session, nil, key) == CKR_OK)
                // A bad session handle still comes first.
                #expect(try token.m.C_SignInit(session + 1000, nil, key) == CKR_SESSION_HANDLE_INVALID)
            }
        }

        @Test(
            "C_SessionCancel of an operation this token cannot cancel returns CKR_OPERATION_CANCEL_FAILED and cancels nothing",
            arguments: [CKF_GENERATE_KEY_PAIR, CKF_WRAP, CKF_DERIVE, CKF_GENERATE])
        func sessionCancelFails(flag: UInt) throws {
            try withToken { token throws in
                let session = try token.openSession()
                #expect(try token.digestInit(session) == CKR_OK)
                let rv = try token.m30.C_SessionCancel(session, CK_FLAGS(flag) | CK_FLAGS(CKF_DIGEST))
                #expect(rv == operationCancelFailed, "flag 0x\(String(flag, radix: 16)): \(name(of: rv))")
                var part: [UInt8] = [1]
                #expect(try token.m.C_DigestUpdate(session, &part, 1) == CKR_OK)
            }
        }

        @Test("A session object created and destroyed leaves nothing behind: 100,000 of them cost no memory")
        func sessionObjectBookkeepingIsBounded() throws {
            try withStore { token throws in
                // Measured in a forked child, whose only thread is the one running this loop, so
                // that no other test's allocations blur the heap's size.
                let create = try token.m.C_CreateObject
                let destroy = try token.m.C_DestroyObject
                let initialize = try token.m.C_Initialize
                let open = try token.m.C_OpenSession
                let template = dataTemplate(label: "short-lived", value: [1, 2, 3], token: false)
                let outcome = try withTemplate(template) { entries, count in
                    try fork(timeout: 120) {
                        guard initialize(nil) == CKR_OK else { return 2 }
                        var session: CK_SESSION_HANDLE = 0
                        guard open(0, readWriteSession, nil, nil, &session) == CKR_OK else { return 3 }
                        var object: CK_OBJECT_HANDLE = 0
                        func cycle(_ rounds: Int) -> Bool {
                            for _ in 0..<rounds {
                                guard create(session, entries, count, &object) == CKR_OK,
                                    destroy(session, object) == CKR_OK
                                else { return false }
                            }
                            return true
                        }
                        // 60,000 first settle the heap and the session store's tables; the
                        // next 40,000 are measured. (Not under the address sanitizer: its
                        // quarantine keeps every freed block, scripts/test.sh.)
                        _ = residentBytes()  // its own first call costs memory too
                        guard cycle(60_000) else { return 4 }
                        let before = residentBytes()
                        guard cycle(40_000) else { return 4 }
                        let after = residentBytes()
                        // 40,000 references kept would be ≥ 640 kB (16 bytes each).
                        return after > before + 160_000 ? 1 : 0
                    }
                }
                #expect(outcome == .exited(0), "child \(outcome) (1: the heap grew by more than 160 kB)")
            }
        }
    }
}

/// This process's anonymous resident memory in bytes (RssAnon of /proc/self/status): the
/// heap and stacks, not the code and data pages of the libraries, which the first call of a
/// function pages in. Glibc does not import mallinfo2.
private func residentBytes() -> Int {
    let status = String(decoding: readFile("/proc/self/status"), as: UTF8.self)
    for line in status.split(separator: "\n") where line.hasPrefix("RssAnon:") {
        let fields = line.split(separator: " ")
        if fields.count > 1, let kilobytes = Int(fields[1]) { return kilobytes * 1024 }
    }
    return 0
}

extension TestToken {
    /// The v3.0 function list, for C_SessionCancel.
    var m30: FunctionTable<CK_FUNCTION_LIST_3_0> {
        get throws { try module.functions30() }
    }
}
