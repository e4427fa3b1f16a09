import CPKCS11
import Testing

extension ModuleTests {
    /// C_Sign writes a signature straight into a buffer that holds it; the result must be the
    /// same signature the copying path gives, whatever the buffer (exactly long enough, longer,
    /// or the input's own bytes), and a session signs again and again with its kept context.
    @Suite("C_Sign into the caller's buffer")
    struct SignatureInPlace {
        @Test(
            "a signature written in place verifies, with a buffer exactly its length or longer, each time",
            arguments: [(TestKeyKind.p256, CKM_ECDSA_SHA256, 64), (.rsa2048, CKM_SHA256_RSA_PKCS, 256)])
        func signaturesInPlaceVerify(_ kind: TestKeyKind, _ type: UInt, _ size: Int) throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(kind, in: session)
                for (round, capacity) in [size, size + 7, size].enumerated() {
                    var data = [UInt8](repeating: UInt8(round), count: 20 + round)
                    #expect(try token.signInit(session, type, key: pair.privateKey) == CKR_OK)
                    let signed = try token.sign(session, data, capacity: capacity)
                    #expect(signed.rv == CKR_OK && signed.length == CK_ULONG(size))
                    var signature = signed.signature
                    #expect(try token.verifyInit(session, type, key: pair.publicKey) == CKR_OK)
                    #expect(
                        try token.m.C_Verify(
                            session, &data, CK_ULONG(data.count), &signature, CK_ULONG(size)) == CKR_OK)
                }
            }
        }

        @Test(
            "a raw signature whose buffer is its own input is the signature of the input",
            arguments: [(TestKeyKind.p256, CKM_ECDSA, 64), (.rsa2048, CKM_RSA_PKCS, 256)])
        func signatureOverItsInput(_ kind: TestKeyKind, _ type: UInt, _ size: Int) throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(kind, in: session)
                let message = [UInt8](repeating: 0x5A, count: 32)
                var buffer = message + [UInt8](repeating: 0, count: size - message.count)
                var length = CK_ULONG(size)
                #expect(try token.signInit(session, type, key: pair.privateKey) == CKR_OK)
                let sign = try token.m.C_Sign
                let rv = buffer.withUnsafeMutableBufferPointer { bytes in
                    sign(session, bytes.baseAddress, 32, bytes.baseAddress, &length)
                }
                #expect(rv == CKR_OK && length == CK_ULONG(size))
                var input = message
                #expect(try token.verifyInit(session, type, key: pair.publicKey) == CKR_OK)
                #expect(try token.m.C_Verify(session, &input, 32, &buffer, CK_ULONG(size)) == CKR_OK)
            }
        }
    }
}
