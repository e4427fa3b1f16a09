import CPKCS11
import Foundation
import Testing

// A 3-byte check value names a short key after a 2^24 search, so a key
// under 16 bytes has none on any path.

extension ModuleTests {
    @Suite("A short secret key has no check value to search")
    struct ShortKeyCheckValue {
        @Test(
            "Created, generated, derived, unwrapped and copied keys under 16 bytes read CKA_CHECK_VALUE empty"
        )
        func shortKeysHaveNoCheckValue() throws {
            try withLoggedInToken { token, session in
                var keys: [(String, CK_OBJECT_HANDLE)] = []
                let created = try token.createSecretKey(
                    [0x01, 0x02, 0x03], type: UInt(CKK_GENERIC_SECRET),
                    extra: [Attribute(CKA_TOKEN, bool: true)],
                    in: session)
                keys.append(("created", created))
                keys.append(
                    (
                        "created readable",
                        try token.createSecretKey(
                            [0x04, 0x05], type: UInt(CKK_GENERIC_SECRET), extra: extractable, in: session)
                    ))
                let (generated, key) = try token.generateSecretKey(
                    [Attribute(CKA_VALUE_LEN, ulong: 3), Attribute(CKA_TOKEN, bool: true)],
                    mechanism: UInt(CKM_GENERIC_SECRET_KEY_GEN), in: session)
                try #require(generated == CKR_OK, "\(name(of: generated))")
                keys.append(("generated", key))
                let base = try token.createSecretKey(
                    Array(repeating: 0x33, count: 32), type: UInt(CKK_GENERIC_SECRET), extra: derivingKey(),
                    in: session)
                let (derivedRV, derived) = try token.derive(
                    hkdfMechanism(CKM_HKDF_DERIVE), baseKey: base,
                    template: [
                        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY)),
                        Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_GENERIC_SECRET)),
                        Attribute(CKA_VALUE_LEN, ulong: 4),
                    ], in: session)
                try #require(derivedRV == CKR_OK, "\(name(of: derivedRV))")
                keys.append(("derived", derived))
                let wrappingKey = try token.createSecretKey(
                    Array(repeating: 0x44, count: 16),
                    extra: [Attribute(CKA_WRAP, bool: true), Attribute(CKA_UNWRAP, bool: true)], in: session)
                let short = try token.createSecretKey(
                    Array(repeating: 0x55, count: 8), type: UInt(CKK_GENERIC_SECRET),
                    extra: [Attribute(CKA_EXTRACTABLE, bool: true)], in: session)
                let (wrapRV, wrapped) = try token.wrap(
                    MechanismBox(CKM_AES_KEY_WRAP_PAD), wrappingKey: wrappingKey, key: short, in: session)
                try #require(wrapRV == CKR_OK, "\(name(of: wrapRV))")
                let (unwrapRV, unwrapped) = try token.unwrap(
                    MechanismBox(CKM_AES_KEY_WRAP_PAD), unwrappingKey: wrappingKey, wrapped,
                    template: [
                        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY)),
                        Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_GENERIC_SECRET)),
                    ], in: session)
                try #require(unwrapRV == CKR_OK, "\(name(of: unwrapRV))")
                keys.append(("unwrapped", unwrapped))
                let (copyRV, copy) = try token.copy(
                    created, with: [Attribute(CKA_TOKEN, bool: false)], in: session)
                try #require(copyRV == CKR_OK, "\(name(of: copyRV))")
                keys.append(("copied", copy))
                for (what, key) in keys {
                    #expect(try token.attribute(CKA_CHECK_VALUE, of: key, in: session) == [], "\(what)")
                }
                // A 16-byte key keeps its check value.
                let long = try token.createSecretKey(Array(repeating: 0x66, count: 16), in: session)
                #expect(try token.attribute(CKA_CHECK_VALUE, of: long, in: session)?.count == 3)
            }
        }

        @Test("A check value given for a short key is refused without being compared: no 2^24 oracle")
        func givenCheckValueOfAShortKeyIsRefused() throws {
            try withLoggedInToken { token, session in
                // A wrong guess, and the key's true check value (SHA-1 of 01 02 03: 70 37 80),
                // which the token once accepted and so confirmed.
                for guess: [UInt8] in [[0x00, 0x00, 0x00], [0x70, 0x37, 0x80]] {
                    let (rv, _) = try token.create(
                        [
                            Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY)),
                            Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_GENERIC_SECRET)),
                            Attribute(CKA_VALUE, [0x01, 0x02, 0x03]), Attribute(CKA_CHECK_VALUE, guess),
                        ], in: session)
                    #expect(rv == CKR_ATTRIBUTE_VALUE_INVALID, "\(name(of: rv))")
                }
            }
        }
    }
}
