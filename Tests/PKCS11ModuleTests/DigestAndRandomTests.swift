import CPKCS11
import Testing

/// A FIPS 180-4 known answer: the digest of "abc" and of one million "a" (FIPS 180-2
/// appendices; the examples of the NIST Cryptographic Standards and Guidelines).
struct DigestVector: Sendable, CustomTestStringConvertible {
    let name: String
    let mechanism: CK_MECHANISM_TYPE
    let abc: String
    let millionA: String

    var testDescription: String { name }
    var length: Int { abc.count / 2 }

    static let all: [DigestVector] = [
        DigestVector(
            name: "SHA-1", mechanism: CK_MECHANISM_TYPE(CKM_SHA_1),
            abc: "a9993e364706816aba3e25717850c26c9cd0d89d",
            millionA: "34aa973cd4c4daa4f61eeb2bdbad27316534016f"),
        DigestVector(
            name: "SHA-224", mechanism: CK_MECHANISM_TYPE(CKM_SHA224),
            abc: "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7",
            millionA: "20794655980c91d8bbb4c1ea97618a4bf03f42581948b2ee4ee7ad67"),
        DigestVector(
            name: "SHA-256", mechanism: CK_MECHANISM_TYPE(CKM_SHA256),
            abc: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            millionA: "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
        DigestVector(
            name: "SHA-384", mechanism: CK_MECHANISM_TYPE(CKM_SHA384),
            abc: "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed"
                + "8086072ba1e7cc2358baeca134c825a7",
            millionA: "9d0e1809716474cb086e834e310a4a1ced149e9c00f248527972cec5704c2a5b"
                + "07b8b3dc38ecc4ebae97ddd87f3d8985"),
        DigestVector(
            name: "SHA-512", mechanism: CK_MECHANISM_TYPE(CKM_SHA512),
            abc: "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                + "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
            millionA: "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973eb"
                + "de0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b"),
    ]
}

private let abc = Array("abc".utf8)

/// A digest session: C_DigestInit and friends through the function list.
private struct Digester {
    let token: TestToken
    let session: CK_SESSION_HANDLE

    func initialize(_ mechanism: CK_MECHANISM_TYPE) throws -> CK_RV {
        var mechanism = CK_MECHANISM(mechanism: mechanism, pParameter: nil, ulParameterLen: 0)
        return try token.m.C_DigestInit(session, &mechanism)
    }

    func digest(_ data: [UInt8], capacity: Int) throws -> (CK_RV, [UInt8], CK_ULONG) {
        var data = data
        var output = [UInt8](repeating: 0, count: capacity)
        var length = CK_ULONG(capacity)
        let rv = try token.m.C_Digest(session, &data, CK_ULONG(data.count), &output, &length)
        return (rv, Array(output.prefix(Int(min(length, CK_ULONG(capacity))))), length)
    }

    func update(_ data: [UInt8]) throws -> CK_RV {
        var data = data
        return try token.m.C_DigestUpdate(session, &data, CK_ULONG(data.count))
    }

    func final(capacity: Int) throws -> (CK_RV, [UInt8], CK_ULONG) {
        var output = [UInt8](repeating: 0, count: capacity)
        var length = CK_ULONG(capacity)
        let rv = try token.m.C_DigestFinal(session, &output, &length)
        return (rv, Array(output.prefix(Int(min(length, CK_ULONG(capacity))))), length)
    }
}

/// Runs `body` with a digest session on a fresh token.
private func withDigester(_ body: (Digester) throws -> Void) throws {
    try withToken { token in
        try body(Digester(token: token, session: try token.openSession(readWrite: false)))
    }
}

extension ModuleTests {
    @Suite("Message digests (v2.40 §5.10)")
    struct Digests {
        @Test("C_Digest gives the FIPS 180 digest of \"abc\"", arguments: DigestVector.all)
        func singlePart(vector: DigestVector) throws {
            try withDigester { digester throws in
                #expect(try digester.initialize(vector.mechanism) == CKR_OK)
                let (rv, output, length) = try digester.digest(abc, capacity: 64)
                #expect(rv == CKR_OK)
                #expect(length == CK_ULONG(vector.length))
                #expect(hex(output) == vector.abc.uppercased())
                // The operation is over.
                #expect(try digester.digest(abc, capacity: 64).0 == CKR_OPERATION_NOT_INITIALIZED)
            }
        }

        @Test("C_DigestUpdate and C_DigestFinal give the FIPS 180 digests", arguments: DigestVector.all)
        func multiPart(vector: DigestVector) throws {
            try withDigester { digester throws in
                #expect(try digester.initialize(vector.mechanism) == CKR_OK)
                #expect(try digester.update(Array("a".utf8)) == CKR_OK)
                #expect(try digester.update([]) == CKR_OK)
                #expect(try digester.update(Array("bc".utf8)) == CKR_OK)
                let (rv, output, _) = try digester.final(capacity: 64)
                #expect(rv == CKR_OK)
                #expect(hex(output) == vector.abc.uppercased())

                #expect(try digester.initialize(vector.mechanism) == CKR_OK)
                let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 10_000)
                for _ in 0..<100 { #expect(try digester.update(chunk) == CKR_OK) }
                let (rv2, million, _) = try digester.final(capacity: 64)
                #expect(rv2 == CKR_OK)
                #expect(hex(million) == vector.millionA.uppercased())
                #expect(try digester.final(capacity: 64).0 == CKR_OPERATION_NOT_INITIALIZED)
            }
        }

        @Test("A NULL output buffer is a size query that keeps the operation", arguments: DigestVector.all)
        func sizeQuery(vector: DigestVector) throws {
            try withDigester { digester throws in
                #expect(try digester.initialize(vector.mechanism) == CKR_OK)
                var data = abc
                var length: CK_ULONG = 0
                #expect(try digester.token.m.C_Digest(digester.session, &data, 3, nil, &length) == CKR_OK)
                #expect(length == CK_ULONG(vector.length))
                let (rv, output, _) = try digester.digest(abc, capacity: vector.length)
                #expect(rv == CKR_OK)
                #expect(hex(output) == vector.abc.uppercased())

                #expect(try digester.initialize(vector.mechanism) == CKR_OK)
                #expect(try digester.update(abc) == CKR_OK)
                length = 0
                #expect(try digester.token.m.C_DigestFinal(digester.session, nil, &length) == CKR_OK)
                #expect(length == CK_ULONG(vector.length))
                #expect(hex(try digester.final(capacity: vector.length).1) == vector.abc.uppercased())
            }
        }

        @Test(
            "Too small a buffer returns CKR_BUFFER_TOO_SMALL and keeps the operation",
            arguments: DigestVector.all)
        func bufferTooSmall(vector: DigestVector) throws {
            try withDigester { digester throws in
                #expect(try digester.initialize(vector.mechanism) == CKR_OK)
                let (rv, _, length) = try digester.digest(abc, capacity: vector.length - 1)
                #expect(rv == CKR_BUFFER_TOO_SMALL)
                #expect(length == CK_ULONG(vector.length))
                let (rv2, output, _) = try digester.digest(abc, capacity: vector.length)
                #expect(rv2 == CKR_OK)
                #expect(hex(output) == vector.abc.uppercased())

                #expect(try digester.initialize(vector.mechanism) == CKR_OK)
                #expect(try digester.update(abc) == CKR_OK)
                let (rv3, _, length3) = try digester.final(capacity: 4)
                #expect(rv3 == CKR_BUFFER_TOO_SMALL)
                #expect(length3 == CK_ULONG(vector.length))
                let (rv4, output4, _) = try digester.final(capacity: 64)
                #expect(rv4 == CKR_OK)
                #expect(hex(output4) == vector.abc.uppercased())
            }
        }

        @Test("C_Digest after C_DigestUpdate returns CKR_OPERATION_ACTIVE; the multi-part digest goes on")
        func digestAfterUpdate() throws {
            try withDigester { digester throws in
                #expect(try digester.initialize(CK_MECHANISM_TYPE(CKM_SHA256)) == CKR_OK)
                #expect(try digester.update(Array("ab".utf8)) == CKR_OK)
                #expect(try digester.digest(Array("zzz".utf8), capacity: 32).0 == CKR_OPERATION_ACTIVE)
                #expect(try digester.update(Array("c".utf8)) == CKR_OK)
                #expect(hex(try digester.final(capacity: 32).1) == DigestVector.all[2].abc.uppercased())
            }
        }

        @Test("A second C_DigestInit returns CKR_OPERATION_ACTIVE and keeps the first digest")
        func digestInitTwice() throws {
            try withDigester { digester throws in
                #expect(try digester.initialize(CK_MECHANISM_TYPE(CKM_SHA_1)) == CKR_OK)
                #expect(try digester.initialize(CK_MECHANISM_TYPE(CKM_SHA256)) == CKR_OPERATION_ACTIVE)
                let (rv, output, _) = try digester.digest(abc, capacity: 64)
                #expect(rv == CKR_OK)
                #expect(hex(output) == DigestVector.all[0].abc.uppercased())
            }
        }

        @Test(
            "C_Digest, C_DigestUpdate, C_DigestKey and C_DigestFinal without C_DigestInit return CKR_OPERATION_NOT_INITIALIZED"
        )
        func digestWithoutInit() throws {
            try withDigester { digester throws in
                #expect(try digester.digest(abc, capacity: 64).0 == CKR_OPERATION_NOT_INITIALIZED)
                #expect(try digester.update(abc) == CKR_OPERATION_NOT_INITIALIZED)
                #expect(try digester.final(capacity: 64).0 == CKR_OPERATION_NOT_INITIALIZED)
                #expect(
                    try digester.token.m.C_DigestKey(digester.session, 1) == CKR_OPERATION_NOT_INITIALIZED)
            }
        }

        @Test("A digest mechanism with a parameter is refused with CKR_MECHANISM_PARAM_INVALID")
        func mechanismWithParameter() throws {
            try withDigester { digester throws in
                let parameter = UnsafeMutableRawPointer.allocate(byteCount: 8, alignment: 8)
                defer { parameter.deallocate() }
                parameter.storeBytes(of: 32, as: CK_ULONG.self)
                var mechanism = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(CKM_SHA256), pParameter: parameter,
                    ulParameterLen: CK_ULONG(MemoryLayout<CK_ULONG>.size))
                #expect(
                    try digester.token.m.C_DigestInit(digester.session, &mechanism)
                        == CKR_MECHANISM_PARAM_INVALID)
                // Nothing was started.
                #expect(try digester.initialize(CK_MECHANISM_TYPE(CKM_SHA256)) == CKR_OK)
            }
        }

        @Test(
            "A mechanism that does not digest is refused with CKR_MECHANISM_INVALID",
            arguments: [CK_MECHANISM_TYPE(CKM_MD5), CK_MECHANISM_TYPE(CKM_SHA256_RSA_PKCS), 0x8000_0001])
        func notADigest(mechanism: CK_MECHANISM_TYPE) throws {
            try withDigester { digester throws in
                #expect(try digester.initialize(mechanism) == CKR_MECHANISM_INVALID)
                #expect(try digester.update(abc) == CKR_OPERATION_NOT_INITIALIZED)
            }
        }

        @Test("Two sessions digest independently")
        func independentSessions() throws {
            try withToken { token throws in
                let first = Digester(token: token, session: try token.openSession())
                let second = Digester(token: token, session: try token.openSession())
                #expect(try first.initialize(CK_MECHANISM_TYPE(CKM_SHA_1)) == CKR_OK)
                #expect(try second.initialize(CK_MECHANISM_TYPE(CKM_SHA512)) == CKR_OK)
                #expect(try first.update(abc) == CKR_OK)
                #expect(try second.update(abc) == CKR_OK)
                #expect(hex(try second.final(capacity: 64).1) == DigestVector.all[4].abc.uppercased())
                #expect(hex(try first.final(capacity: 64).1) == DigestVector.all[0].abc.uppercased())
            }
        }
    }

    @Suite("Random numbers and the functions that need keys or PINs")
    struct RandomAndUnsupported {
        @Test("C_GenerateRandom accepts zero bytes")
        func zeroBytes() throws {
            try withToken { token throws in
                let session = try token.openSession(readWrite: false)
                #expect(try token.m.C_GenerateRandom(session, nil, 0) == CKR_OK)
                var byte: UInt8 = 0x5A
                #expect(try token.m.C_GenerateRandom(session, &byte, 0) == CKR_OK)
                #expect(byte == 0x5A)
            }
        }

        @Test("C_GenerateRandom fills 1 MiB with bytes that differ from call to call")
        func oneMebibyte() throws {
            try withToken { token throws in
                let session = try token.openSession(readWrite: false)
                var first = [UInt8](repeating: 0, count: 1 << 20)
                var second = [UInt8](repeating: 0, count: 1 << 20)
                #expect(try token.m.C_GenerateRandom(session, &first, CK_ULONG(first.count)) == CKR_OK)
                #expect(try token.m.C_GenerateRandom(session, &second, CK_ULONG(second.count)) == CKR_OK)
                #expect(first != second)
                // Every byte value shows up in a mebibyte of random data, and the last bytes were written.
                #expect(Set(first).count == 256)
                #expect(first.suffix(64) != [UInt8](repeating: 0, count: 64))
            }
        }

        @Test("C_GenerateRandom refuses a NULL buffer with a length: CKR_ARGUMENTS_BAD")
        func nullBuffer() throws {
            try withToken { token throws in
                let session = try token.openSession(readWrite: false)
                #expect(try token.m.C_GenerateRandom(session, nil, 16) == CKR_ARGUMENTS_BAD)
            }
        }

        @Test(
            "C_SeedRandom mixes the caller's bytes in and returns CKR_OK; random bytes still differ afterwards"
        )
        func seedRandom() throws {
            try withToken { token throws in
                let session = try token.openSession(readWrite: false)
                var seed: [UInt8] = [1, 2, 3, 4]
                #expect(try token.m.C_SeedRandom(session, &seed, 4) == CKR_OK)
                #expect(try token.m.C_SeedRandom(session, nil, 0) == CKR_OK)
                // A seed longer than the generator's additional input is mixed in too.
                var long = [UInt8](repeating: 0x5A, count: 100_000)
                #expect(try token.m.C_SeedRandom(session, &long, CK_ULONG(long.count)) == CKR_OK)
                // The same seed twice does not make the generator repeat itself.
                var first = [UInt8](repeating: 0, count: 32)
                var second = [UInt8](repeating: 0, count: 32)
                #expect(try token.m.C_SeedRandom(session, &seed, 4) == CKR_OK)
                #expect(try token.m.C_GenerateRandom(session, &first, 32) == CKR_OK)
                #expect(try token.m.C_SeedRandom(session, &seed, 4) == CKR_OK)
                #expect(try token.m.C_GenerateRandom(session, &second, 32) == CKR_OK)
                #expect(first != second)
                #expect(first != [UInt8](repeating: 0, count: 32))
            }
        }

        @Test(
            "C_SeedRandom refuses NULL with a length and wild lengths: CKR_ARGUMENTS_BAD; a bad session is refused"
        )
        func seedRandomBadArguments() throws {
            try withToken { token throws in
                let session = try token.openSession(readWrite: false)
                #expect(try token.m.C_SeedRandom(session, nil, 16) == CKR_ARGUMENTS_BAD)
                var seed: [UInt8] = [1]
                for length in [CK_ULONG.max, CK_ULONG(Int.max), CK_ULONG(1 << 20) + 1] {
                    #expect(
                        try token.m.C_SeedRandom(session, &seed, length) == CKR_ARGUMENTS_BAD,
                        "length \(length)")
                }
                #expect(try token.m.C_SeedRandom(session + 1000, &seed, 1) == CKR_SESSION_HANDLE_INVALID)
            }
        }

        @Test("On a token without keys, signing is refused and starts nothing")
        func signWithoutKeys() throws {
            try withToken { token throws in
                let m = token.m
                let session = try token.openSession()
                let certificate = try token.createCertificate(try Fixtures.alice.get(), in: session)
                var unknown = CK_MECHANISM(mechanism: 0x8000_1234, pParameter: nil, ulParameterLen: 0)
                var ecdsa = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(CKM_ECDSA), pParameter: nil, ulParameterLen: 0)
                var rsa = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(CKM_RSA_PKCS), pParameter: nil, ulParameterLen: 0)
                #expect(try m.C_SignInit(session, &unknown, certificate) == CKR_MECHANISM_INVALID)
                // A certificate is not a private key.
                let refused: [(String, CK_RV)] = [
                    ("C_SignInit", try m.C_SignInit(session, &ecdsa, certificate)),
                    ("C_DecryptInit", try m.C_DecryptInit(session, &rsa, certificate)),
                    ("C_SignInit(handle 0)", try m.C_SignInit(session, &ecdsa, 0)),
                ]
                for (function, rv) in refused {
                    #expect(rv == CKR_KEY_HANDLE_INVALID, "\(function) returned \(name(of: rv))")
                }
                // Nor a usable public key for these mechanisms.
                #expect(try m.C_VerifyInit(session, &ecdsa, 0) == CKR_KEY_HANDLE_INVALID)
                #expect(try m.C_EncryptInit(session, &rsa, certificate) != CKR_OK)
                var data = abc
                var signature = [UInt8](repeating: 0, count: 128)
                var length: CK_ULONG = 128
                #expect(
                    try m.C_Sign(session, &data, 3, &signature, &length) == CKR_OPERATION_NOT_INITIALIZED)
                #expect(try m.C_Verify(session, &data, 3, &signature, 64) == CKR_OPERATION_NOT_INITIALIZED)
                #expect(
                    try m.C_Encrypt(session, &data, 3, &signature, &length) == CKR_OPERATION_NOT_INITIALIZED)
            }
        }

        @Test(
            "Key functions the token does not offer are refused, and no operation is active without an init")
        func keyOperations() throws {
            try withToken { token throws in
                let m = token.m
                let session = try token.openSession()
                var mechanism = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(CKM_RSA_PKCS), pParameter: nil, ulParameterLen: 0)
                // CKM_RSA_PKCS generates, wraps and derives nothing.
                var generate = mechanism
                var unknown = CK_MECHANISM(mechanism: 0x8000_1234, pParameter: nil, ulParameterLen: 0)
                var data = [UInt8](repeating: 1, count: 32)
                var output = [UInt8](repeating: 0, count: 256)
                var length: CK_ULONG = 256
                var key: CK_OBJECT_HANDLE = 0
                var other: CK_OBJECT_HANDLE = 0
                let mechanismInvalid: [(String, CK_RV)] = [
                    ("C_SignRecoverInit", try m.C_SignRecoverInit(session, &mechanism, 1)),
                    ("C_VerifyRecoverInit", try m.C_VerifyRecoverInit(session, &mechanism, 1)),
                    ("C_GenerateKey", try m.C_GenerateKey(session, &generate, nil, 0, &key)),
                    (
                        "C_GenerateKeyPair",
                        try m.C_GenerateKeyPair(session, &unknown, nil, 0, nil, 0, &key, &other)
                    ),
                    ("C_WrapKey", try m.C_WrapKey(session, &mechanism, 1, 2, &output, &length)),
                    ("C_UnwrapKey", try m.C_UnwrapKey(session, &mechanism, 1, &data, 32, nil, 0, &key)),
                    ("C_DeriveKey", try m.C_DeriveKey(session, &mechanism, 1, nil, 0, &key)),
                ]
                for (function, rv) in mechanismInvalid {
                    #expect(rv == CKR_MECHANISM_INVALID, "\(function) returned \(name(of: rv))")
                }
                let notInitialized: [(String, CK_RV)] = [
                    ("C_Encrypt", try m.C_Encrypt(session, &data, 32, &output, &length)),
                    ("C_EncryptUpdate", try m.C_EncryptUpdate(session, &data, 32, &output, &length)),
                    ("C_EncryptFinal", try m.C_EncryptFinal(session, &output, &length)),
                    ("C_Decrypt", try m.C_Decrypt(session, &data, 32, &output, &length)),
                    ("C_DecryptUpdate", try m.C_DecryptUpdate(session, &data, 32, &output, &length)),
                    ("C_DecryptFinal", try m.C_DecryptFinal(session, &output, &length)),
                    ("C_SignUpdate", try m.C_SignUpdate(session, &data, 32)),
                    ("C_SignFinal", try m.C_SignFinal(session, &output, &length)),
                    ("C_SignRecover", try m.C_SignRecover(session, &data, 32, &output, &length)),
                    ("C_Verify", try m.C_Verify(session, &data, 32, &output, 64)),
                    ("C_VerifyUpdate", try m.C_VerifyUpdate(session, &data, 32)),
                    ("C_VerifyFinal", try m.C_VerifyFinal(session, &output, 64)),
                    ("C_VerifyRecover", try m.C_VerifyRecover(session, &data, 32, &output, &length)),
                    (
                        "C_DigestEncryptUpdate",
                        try m.C_DigestEncryptUpdate(session, &data, 32, &output, &length)
                    ),
                    (
                        "C_DecryptDigestUpdate",
                        try m.C_DecryptDigestUpdate(session, &data, 32, &output, &length)
                    ),
                    ("C_SignEncryptUpdate", try m.C_SignEncryptUpdate(session, &data, 32, &output, &length)),
                    (
                        "C_DecryptVerifyUpdate",
                        try m.C_DecryptVerifyUpdate(session, &data, 32, &output, &length)
                    ),
                ]
                for (function, rv) in notInitialized {
                    #expect(rv == CKR_OPERATION_NOT_INITIALIZED, "\(function) returned \(name(of: rv))")
                }
            }
        }

        @Test("C_Login returns CKR_USER_PIN_NOT_INITIALIZED and C_Logout CKR_USER_NOT_LOGGED_IN")
        func loginWithoutPIN() throws {
            try withToken { token throws in
                let session = try token.openSession()
                var pin = Array("1234".utf8)
                #expect(
                    try token.m.C_Login(session, CK_USER_TYPE(CKU_USER), &pin, 4)
                        == CKR_USER_PIN_NOT_INITIALIZED)
                #expect(try token.m.C_Login(session, 7, &pin, 4) == CKR_USER_TYPE_INVALID)
                #expect(try token.m.C_Logout(session) == CKR_USER_NOT_LOGGED_IN)
                var info = CK_SESSION_INFO()
                #expect(try token.m.C_GetSessionInfo(session, &info) == CKR_OK)
                #expect(info.state == CK_STATE(CKS_RW_PUBLIC_SESSION))
            }
        }

        @Test("C_GetFunctionStatus and C_CancelFunction return CKR_FUNCTION_NOT_PARALLEL")
        func legacyParallelFunctions() throws {
            try withToken { token throws in
                let session = try token.openSession()
                #expect(try token.m.C_GetFunctionStatus(session) == CKR_FUNCTION_NOT_PARALLEL)
                #expect(try token.m.C_CancelFunction(session) == CKR_FUNCTION_NOT_PARALLEL)
            }
        }

        @Test("Operation-state and slot-event functions return CKR_FUNCTION_NOT_SUPPORTED")
        func unsupportedFunctions() throws {
            try withToken { token throws in
                let m = token.m
                let session = try token.openSession()
                var state = [UInt8](repeating: 0, count: 64)
                var length: CK_ULONG = 64
                var slot: CK_SLOT_ID = 0
                let calls: [(String, CK_RV)] = [
                    ("C_GetOperationState", try m.C_GetOperationState(session, &state, &length)),
                    ("C_SetOperationState", try m.C_SetOperationState(session, &state, 64, 0, 0)),
                    ("C_WaitForSlotEvent", try m.C_WaitForSlotEvent(CK_FLAGS(CKF_DONT_BLOCK), &slot, nil)),
                ]
                for (function, rv) in calls {
                    #expect(rv == CKR_FUNCTION_NOT_SUPPORTED, "\(function) returned \(name(of: rv))")
                }
            }
        }

        @Test("C_InitToken with a session open returns CKR_SESSION_EXISTS; C_InitPIN needs the SO")
        func tokenInitializationGuards() throws {
            try withToken { token throws in
                let session = try token.openSession()
                _ = try token.createCertificate(try Fixtures.alice.get(), in: session)
                var pin = Array("12345678".utf8)
                var label = Array(padded("relabelled", to: 32).utf8)
                #expect(try token.m.C_InitToken(0, &pin, 8, &label) == CKR_SESSION_EXISTS)
                #expect(try token.m.C_InitPIN(session, &pin, 8) == CKR_USER_NOT_LOGGED_IN)
                // The token is untouched.
                #expect(try token.find([], in: session).count == 1)
                #expect(text(try token.tokenInfo().label) == padded("login", to: 32))
            }
        }
    }
}
