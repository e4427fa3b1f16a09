import CPKCS11
import Foundation
import Testing

// A session keeps the keyed context of its last AES operation and its last MAC for the next
// one with the same key (for speed): these tests show the kept contexts change no
// answer, and skip no key-use check.

private let reuseKey = bytes(hex: "feffe9928665731c6d6a8f9467308308")
private let otherKey = bytes(hex: "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
/// Four AES blocks.
private let reuseMessage = (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 5) }

extension ModuleTests {
    @Suite("Kept AES and MAC contexts change no result and skip no check")
    struct KeptSecretKeyContexts {
        /// The AES operations of one session, back to back, with keys, modes, IV lengths and
        /// directions changing between them.
        private static func operations(_ aes: CK_OBJECT_HANDLE, _ other: CK_OBJECT_HANDLE)
            -> [(MechanismBox, CK_OBJECT_HANDLE, Bool)]
        {
            let iv = bytes(hex: "cafebabefacedbaddecaf888")
            let cbc = bytes(hex: "000102030405060708090a0b0c0d0e0f")
            return [
                (.gcm(iv: iv, aad: [], tagBits: 128), aes, true),
                (.gcm(iv: Array(iv.reversed()), aad: [], tagBits: 128), aes, true),
                (.gcm(iv: Array(iv.prefix(8)), aad: [1, 2, 3], tagBits: 96), aes, true),
                (.gcm(iv: iv + iv, aad: [], tagBits: 128), aes, true),
                (.gcm(iv: iv, aad: [], tagBits: 128), other, true),
                (.gcm(iv: iv, aad: [], tagBits: 128), aes, true),
                (MechanismBox(CKM_AES_CBC, parameter: cbc), aes, true),
                (MechanismBox(CKM_AES_CBC, parameter: Array(cbc.reversed())), aes, true),
                (MechanismBox(CKM_AES_CBC_PAD, parameter: cbc), aes, true),
                (MechanismBox(CKM_AES_ECB), aes, true),
                (MechanismBox(CKM_AES_ECB), aes, false),
                (MechanismBox(CKM_AES_CBC, parameter: cbc), aes, false),
                (MechanismBox(CKM_AES_ECB), aes, true),
            ]
        }

        @Test("Back-to-back AES operations in one session give what each gives in a fresh session")
        func backToBackAES() throws {
            try withLoggedInToken { token, session in
                let aes = try token.createSecretKey(
                    reuseKey, extra: [Attribute(CKA_TOKEN, bool: true)], in: session)
                let other = try token.createSecretKey(
                    otherKey, extra: [Attribute(CKA_TOKEN, bool: true)], in: session)
                var inOne: [[UInt8]] = []
                for (box, key, encrypt) in Self.operations(aes, other) {
                    let (rv, output) = try token.crypt(
                        box, key: key, reuseMessage, encrypt: encrypt, in: session)
                    #expect(rv == CKR_OK)
                    inOne.append(output)
                }
                for (index, (box, key, encrypt)) in Self.operations(aes, other).enumerated() {
                    let fresh = try token.openSession()
                    let (rv, output) = try token.crypt(
                        box, key: key, reuseMessage, encrypt: encrypt, in: fresh)
                    #expect(rv == CKR_OK)
                    #expect(output == inOne[index], "operation \(index)")
                    #expect(try token.m.C_CloseSession(fresh) == CKR_OK)
                }
                // And each GCM result opens again, in the session that made it.
                let iv = bytes(hex: "cafebabefacedbaddecaf888")
                let opened = try token.crypt(
                    .gcm(iv: Array(iv.prefix(8)), aad: [1, 2, 3], tagBits: 96), key: aes, inOne[2],
                    encrypt: false,
                    in: session)
                #expect(opened.0 == CKR_OK)
                #expect(opened.1 == reuseMessage)
            }
        }

        @Test("A C_Encrypt length query computes nothing: the ciphertext comes with the next call")
        func lengthQueryThenEncrypt() throws {
            try withLoggedInToken { token, session in
                let aes = try token.createSecretKey(reuseKey, in: session)
                let box = MechanismBox.gcm(iv: [UInt8](repeating: 7, count: 12), aad: [], tagBits: 128)
                let expected = try token.crypt(box, key: aes, reuseMessage, encrypt: true, in: session)
                #expect(try token.m.C_EncryptInit(session, &box.mechanism, aes) == CKR_OK)
                var input = reuseMessage
                var length: CK_ULONG = 0
                #expect(try token.m.C_Encrypt(session, &input, CK_ULONG(input.count), nil, &length) == CKR_OK)
                #expect(length == CK_ULONG(reuseMessage.count + 16))
                var output = [UInt8](repeating: 0, count: Int(length))
                length -= 1
                #expect(
                    try token.m.C_Encrypt(session, &input, CK_ULONG(input.count), &output, &length)
                        == CKR_BUFFER_TOO_SMALL)
                #expect(length == CK_ULONG(reuseMessage.count + 16))
                #expect(
                    try token.m.C_Encrypt(session, &input, CK_ULONG(input.count), &output, &length) == CKR_OK)
                #expect(output == expected.1)
                // In place: the output buffer is the input buffer.
                #expect(try token.m.C_EncryptInit(session, &box.mechanism, aes) == CKR_OK)
                var buffer = reuseMessage + [UInt8](repeating: 0, count: 16)
                length = CK_ULONG(buffer.count)
                let encrypt = try token.m.C_Encrypt
                let rv = buffer.withUnsafeMutableBufferPointer { pointer in
                    encrypt(
                        session, pointer.baseAddress, CK_ULONG(reuseMessage.count), pointer.baseAddress,
                        &length)
                }
                #expect(rv == CKR_OK)
                #expect(buffer == expected.1)
            }
        }

        @Test("A kept AES context or MAC does not outlive the key's CKA_ENCRYPT or CKA_SIGN")
        func keptContextsStillChecked() throws {
            try withLoggedInToken { token, session in
                let aes = try token.createSecretKey(
                    reuseKey, extra: [Attribute(CKA_TOKEN, bool: true)], in: session)
                let gcm = MechanismBox.gcm(iv: [UInt8](repeating: 1, count: 12), aad: [], tagBits: 128)
                #expect(try token.crypt(gcm, key: aes, reuseMessage, encrypt: true, in: session).0 == CKR_OK)
                #expect(try token.set([Attribute(CKA_ENCRYPT, bool: false)], of: aes, in: session) == CKR_OK)
                #expect(
                    try token.crypt(gcm, key: aes, reuseMessage, encrypt: true, in: session).0
                        == CKR_KEY_FUNCTION_NOT_PERMITTED)
                let hmac = try token.createSecretKey(
                    Array("Jefe".utf8), type: UInt(CKK_GENERIC_SECRET),
                    extra: [Attribute(CKA_TOKEN, bool: true)],
                    in: session)
                let box = MechanismBox(CKM_SHA256_HMAC)
                #expect(try token.mac(box, key: hmac, reuseMessage, in: session).0 == CKR_OK)
                #expect(try token.set([Attribute(CKA_SIGN, bool: false)], of: hmac, in: session) == CKR_OK)
                #expect(
                    try token.mac(box, key: hmac, reuseMessage, in: session).0
                        == CKR_KEY_FUNCTION_NOT_PERMITTED)
                #expect(try token.m.C_Logout(session) == CKR_OK)
                #expect(try token.mac(box, key: hmac, reuseMessage, in: session).0 == CKR_KEY_HANDLE_INVALID)
            }
        }

        @Test(
            "An AES key taken over from the last operation is checked for each new use, mechanism and change")
        func keptAESKeyCheckedPerUse() throws {
            try withLoggedInToken { token, session in
                let onlyGCM = Attribute(
                    CKA_ALLOWED_MECHANISMS, withUnsafeBytes(of: CK_ULONG(CKM_AES_GCM)) { Array($0) })
                let aes = try token.createSecretKey(
                    reuseKey,
                    extra: [Attribute(CKA_TOKEN, bool: true), Attribute(CKA_DECRYPT, bool: false), onlyGCM],
                    in: session)
                let gcm = MechanismBox.gcm(iv: [UInt8](repeating: 1, count: 12), aad: [], tagBits: 128)
                let (rv, sealed) = try token.crypt(gcm, key: aes, reuseMessage, encrypt: true, in: session)
                #expect(rv == CKR_OK)
                // Another direction: the key's CKA_DECRYPT is FALSE.
                #expect(
                    try token.crypt(gcm, key: aes, sealed, encrypt: false, in: session).0
                        == CKR_KEY_FUNCTION_NOT_PERMITTED)
                #expect(try token.crypt(gcm, key: aes, reuseMessage, encrypt: true, in: session).1 == sealed)
                // Another mechanism: not among CKA_ALLOWED_MECHANISMS.
                #expect(
                    try token.crypt(
                        MechanismBox(CKM_AES_ECB), key: aes, reuseMessage, encrypt: true, in: session
                    ).0
                        == CKR_MECHANISM_INVALID)
                #expect(try token.crypt(gcm, key: aes, reuseMessage, encrypt: true, in: session).1 == sealed)
                // Changed, then destroyed, through another session.
                let other = try token.openSession()
                #expect(try token.set([Attribute(CKA_ENCRYPT, bool: false)], of: aes, in: other) == CKR_OK)
                #expect(
                    try token.crypt(gcm, key: aes, reuseMessage, encrypt: true, in: session).0
                        == CKR_KEY_FUNCTION_NOT_PERMITTED)
                #expect(try token.set([Attribute(CKA_ENCRYPT, bool: true)], of: aes, in: other) == CKR_OK)
                #expect(try token.crypt(gcm, key: aes, reuseMessage, encrypt: true, in: session).1 == sealed)
                #expect(try token.m.C_DestroyObject(other, aes) == CKR_OK)
                #expect(
                    try token.crypt(gcm, key: aes, reuseMessage, encrypt: true, in: session).0
                        == CKR_KEY_HANDLE_INVALID)
            }
        }

        @Test("MACs in a row under changing keys and mechanisms each give RFC 4231's answer")
        func macsInARow() throws {
            try withLoggedInToken { token, session in
                let jefe = try token.createSecretKey(
                    Array("Jefe".utf8), type: UInt(CKK_GENERIC_SECRET), in: session)
                let elevens = try token.createSecretKey(
                    [UInt8](repeating: 0x0b, count: 20), type: UInt(CKK_GENERIC_SECRET), in: session)
                let question = Array("what do ya want for nothing?".utf8)
                let hiThere = Array("Hi There".utf8)
                // RFC 4231 test cases 2 (key "Jefe") and 1 (20 bytes of 0x0b).
                let jefe256 = bytes(hex: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
                let elevens256 = bytes(
                    hex: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
                let jefe512 = bytes(
                    hex: """
                        164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fd
                        caeab1a34d4a6b4b636e070a38bce737
                        """)
                let sha256 = MechanismBox(CKM_SHA256_HMAC)
                let sha512 = MechanismBox(CKM_SHA512_HMAC)
                let steps: [(MechanismBox, CK_OBJECT_HANDLE, [UInt8], [UInt8])] = [
                    (sha256, jefe, question, jefe256), (sha256, jefe, question, jefe256),
                    (sha256, elevens, hiThere, elevens256), (sha256, jefe, question, jefe256),
                    (sha512, jefe, question, jefe512), (sha256, jefe, question, jefe256),
                ]
                for (index, (box, key, data, expected)) in steps.enumerated() {
                    let (rv, mac) = try token.mac(
                        box, key: key, data, parts: index % 2 == 0 ? nil : [3], in: session)
                    #expect(rv == CKR_OK)
                    #expect(mac == expected, "step \(index)")
                    #expect(try token.verifyMAC(box, key: key, data, expected, in: session) == CKR_OK)
                }
                var wrong = jefe256
                wrong[31] ^= 0x80
                #expect(
                    try token.verifyMAC(sha256, key: jefe, question, wrong, in: session)
                        == CKR_SIGNATURE_INVALID)
                #expect(try token.mac(sha256, key: jefe, question, in: session).1 == jefe256)
            }
        }
    }
}
