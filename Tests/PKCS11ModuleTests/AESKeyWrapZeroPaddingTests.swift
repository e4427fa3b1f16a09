import CPKCS11
import Testing

// CKM_AES_KEY_WRAP pads a key whose length is not a multiple of 8 with
// zeros (v2.40 §2.14.3), and C_UnwrapKey's CKA_VALUE_LEN cuts the padding off again (v2.40
// §2.8.4), as SoftHSM2 and OpenSC's p11test expect.

extension ModuleTests {
    @Suite("CKM_AES_KEY_WRAP zero-pads keys that are not a multiple of 8 bytes")
    struct AESKeyWrapZeroPadding {
        @Test(
            "A 13-byte generic secret wraps to 24 bytes and unwraps with CKA_VALUE_LEN=13 to the same value and check value"
        )
        func thirteenBytes() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let value = Array("thirteen byte".utf8)
                try #require(value.count == 13)
                let secret = try token.createSecretKey(
                    value, type: UInt(CKK_GENERIC_SECRET), extra: extractable, in: session)
                let kek = try token.createSecretKey(
                    [UInt8](repeating: 0x5A, count: 16),
                    extra: [Attribute(CKA_WRAP, bool: true), Attribute(CKA_UNWRAP, bool: true)], in: session)
                let (rv, wrapped) = try token.wrap(
                    MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: kek, key: secret, in: session)
                #expect(rv == CKR_OK, "\(name(of: rv))")
                #expect(wrapped.count == 24)

                let (unwrapRV, unwrapped) = try token.unwrap(
                    MechanismBox(CKM_AES_KEY_WRAP), unwrappingKey: kek, wrapped,
                    template: readableSecretKey(length: 13), in: session)
                try #require(unwrapRV == CKR_OK, "\(name(of: unwrapRV))")
                #expect(try token.attribute(CKA_VALUE, of: unwrapped, in: session) == value)
                #expect(decodeULong(try token.attribute(CKA_VALUE_LEN, of: unwrapped, in: session)) == 13)
                let checkValue = try token.attribute(CKA_CHECK_VALUE, of: secret, in: session)
                #expect(checkValue != nil)
                #expect(try token.attribute(CKA_CHECK_VALUE, of: unwrapped, in: session) == checkValue)

                // Without CKA_VALUE_LEN the value keeps the three zeros it was padded with.
                let (plainRV, padded) = try token.unwrap(
                    MechanismBox(CKM_AES_KEY_WRAP), unwrappingKey: kek, wrapped,
                    template: readableSecretKey(),
                    in: session)
                #expect(plainRV == CKR_OK)
                #expect(try token.attribute(CKA_VALUE, of: padded, in: session) == value + [0, 0, 0])
            }
        }

        @Test(
            "A key shorter than 16 bytes once padded stays CKR_KEY_SIZE_RANGE (RFC 3394 wraps two blocks or more)"
        )
        func tooShort() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let secret = try token.createSecretKey(
                    [1, 2, 3, 4, 5], type: UInt(CKK_GENERIC_SECRET), extra: extractable, in: session)
                let kek = try token.createSecretKey(
                    [UInt8](repeating: 0x5A, count: 32), extra: [Attribute(CKA_WRAP, bool: true)], in: session
                )
                var length: CK_ULONG = 0
                let box = MechanismBox(CKM_AES_KEY_WRAP)
                let rv = try token.m.C_WrapKey(session, &box.mechanism, kek, secret, nil, &length)
                #expect(rv == CKR_KEY_SIZE_RANGE, "\(name(of: rv))")
            }
        }
    }
}
