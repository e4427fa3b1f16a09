import CPKCS11
import Testing

// A session's finished MAC is restarted by its next C_SignInit or C_VerifyInit with the same key
// object, without reading the key again while the store is unchanged. These tests change one
// thing at a time between two MACs and show the restart answers as a first use would.

private let jefe = Array("Jefe".utf8)
private let question = Array("what do ya want for nothing?".utf8)
/// RFC 4231 test case 2: HMAC-SHA-256 of `question` under `jefe`.
private let jefe256 = bytes(hex: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")

extension ModuleTests {
    @Suite("A restarted MAC answers as a first use would")
    struct MACRestart {
        @Test("A _GENERAL length, then the full MAC, then a shorter length: each has its own length")
        func lengthsInARow() throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(jefe, type: UInt(CKK_GENERIC_SECRET), in: session)
                let full = MechanismBox(CKM_SHA256_HMAC)
                for length in [16, 32, 16, 8, 32] {
                    let box = full
                    let general = MechanismBox(CKM_SHA256_HMAC_GENERAL)
                    general.setParameter(CK_ULONG(length))
                    let (rv, mac) = try token.mac(
                        length == 32 ? box : general, key: key, question, in: session)
                    #expect(rv == CKR_OK)
                    #expect(mac == Array(jefe256.prefix(length)), "length \(length)")
                }
            }
        }

        @Test("A key allowed CKM_SHA256_HMAC only: the same MAC through CKM_SHA256_HMAC_GENERAL is refused")
        func allowedMechanismsOnRestart() throws {
            try withLoggedInToken { token, session in
                let only256 = Attribute(
                    CKA_ALLOWED_MECHANISMS, withUnsafeBytes(of: CK_ULONG(CKM_SHA256_HMAC)) { Array($0) })
                let key = try token.createSecretKey(
                    jefe, type: UInt(CKK_GENERIC_SECRET), extra: [only256], in: session)
                let box = MechanismBox(CKM_SHA256_HMAC)
                #expect(try token.mac(box, key: key, question, in: session).1 == jefe256)
                // The kept MAC has the same key, algorithm and length: only the mechanism differs.
                let general = MechanismBox(CKM_SHA256_HMAC_GENERAL)
                general.setParameter(CK_ULONG(32))
                #expect(try token.mac(general, key: key, question, in: session).0 == CKR_MECHANISM_INVALID)
                #expect(try token.mac(box, key: key, question, in: session).1 == jefe256)
            }
        }

        @Test("A MAC signed, then checked with a key whose CKA_VERIFY is false: refused")
        func signThenVerifyWithoutVerify() throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(
                    jefe, type: UInt(CKK_GENERIC_SECRET), extra: [Attribute(CKA_VERIFY, bool: false)],
                    in: session)
                let box = MechanismBox(CKM_SHA256_HMAC)
                #expect(try token.mac(box, key: key, question, in: session).1 == jefe256)
                #expect(
                    try token.verifyMAC(box, key: key, question, jefe256, in: session)
                        == CKR_KEY_FUNCTION_NOT_PERMITTED)
                #expect(try token.mac(box, key: key, question, in: session).1 == jefe256)
            }
        }

        @Test("A key changed or destroyed through another session between two MACs: the next one sees it")
        func changedThroughAnotherSession() throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(
                    jefe, type: UInt(CKK_GENERIC_SECRET), extra: [Attribute(CKA_TOKEN, bool: true)],
                    in: session)
                let other = try token.openSession()
                let box = MechanismBox(CKM_SHA256_HMAC)
                #expect(try token.mac(box, key: key, question, in: session).1 == jefe256)
                #expect(try token.set([Attribute(CKA_SIGN, bool: false)], of: key, in: other) == CKR_OK)
                #expect(
                    try token.mac(box, key: key, question, in: session).0 == CKR_KEY_FUNCTION_NOT_PERMITTED)
                #expect(try token.set([Attribute(CKA_SIGN, bool: true)], of: key, in: other) == CKR_OK)
                #expect(try token.mac(box, key: key, question, in: session).1 == jefe256)
                #expect(try token.m.C_DestroyObject(other, key) == CKR_OK)
                #expect(try token.mac(box, key: key, question, in: session).0 == CKR_KEY_HANDLE_INVALID)
            }
        }

        @Test("A _GENERAL MAC, then the same mechanism given no parameter: refused as a first use is")
        func generalWithoutParameter() throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(jefe, type: UInt(CKK_GENERIC_SECRET), in: session)
                let general = MechanismBox(CKM_SHA256_HMAC_GENERAL)
                general.setParameter(CK_ULONG(16))
                #expect(
                    try token.mac(general, key: key, question, in: session).1 == Array(jefe256.prefix(16)))
                let bare = MechanismBox(CKM_SHA256_HMAC_GENERAL)
                #expect(try token.m.C_SignInit(session, &bare.mechanism, key) == CKR_MECHANISM_PARAM_INVALID)
                #expect(
                    try token.mac(general, key: key, question, in: session).1 == Array(jefe256.prefix(16)))
            }
        }

        @Test("Two keys in turn with one mechanism: each MAC is its own key's")
        func twoKeysInTurn() throws {
            try withLoggedInToken { token, session in
                let first = try token.createSecretKey(jefe, type: UInt(CKK_GENERIC_SECRET), in: session)
                let second = try token.createSecretKey(
                    Array(repeating: 0x0b, count: 20), type: UInt(CKK_GENERIC_SECRET), in: session)
                // RFC 4231 test case 1: "Hi There" under twenty 0x0b bytes.
                let hiThere = Array("Hi There".utf8)
                let expected = bytes(hex: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
                let box = MechanismBox(CKM_SHA256_HMAC)
                for _ in 0..<3 {
                    #expect(try token.mac(box, key: first, question, in: session).1 == jefe256)
                    #expect(try token.mac(box, key: second, hiThere, in: session).1 == expected)
                }
            }
        }

        @Test("A MAC signed, then verified, then signed again with the same key: each use answers")
        func signVerifySign() throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(jefe, type: UInt(CKK_GENERIC_SECRET), in: session)
                let box = MechanismBox(CKM_SHA256_HMAC)
                #expect(try token.mac(box, key: key, question, in: session).1 == jefe256)
                #expect(try token.verifyMAC(box, key: key, question, jefe256, in: session) == CKR_OK)
                #expect(try token.verifyMAC(box, key: key, question, jefe256, in: session) == CKR_OK)
                var wrong = jefe256
                wrong[0] ^= 1
                #expect(
                    try token.verifyMAC(box, key: key, question, wrong, in: session) == CKR_SIGNATURE_INVALID)
                #expect(try token.mac(box, key: key, question, in: session).1 == jefe256)
            }
        }

        @Test("C_Sign after C_SignUpdate of a MAC returns CKR_OPERATION_ACTIVE; the multi-part MAC goes on")
        func singlePartDuringMultiPart() throws {
            try withLoggedInToken { token, session in
                let key = try token.createSecretKey(jefe, type: UInt(CKK_GENERIC_SECRET), in: session)
                let box = MechanismBox(CKM_SHA256_HMAC)
                #expect(try token.m.C_SignInit(session, &box.mechanism, key) == CKR_OK)
                var first = Array(question.prefix(10))
                var rest = Array(question.dropFirst(10))
                #expect(try token.m.C_SignUpdate(session, &first, CK_ULONG(first.count)) == CKR_OK)
                var output = [UInt8](repeating: 0, count: 32)
                var length = CK_ULONG(output.count)
                #expect(
                    try token.m.C_Sign(session, &rest, CK_ULONG(rest.count), &output, &length)
                        == CKR_OPERATION_ACTIVE)
                #expect(try token.m.C_SignUpdate(session, &rest, CK_ULONG(rest.count)) == CKR_OK)
                length = CK_ULONG(output.count)
                #expect(try token.m.C_SignFinal(session, &output, &length) == CKR_OK)
                #expect(output == jefe256)
            }
        }
    }
}
