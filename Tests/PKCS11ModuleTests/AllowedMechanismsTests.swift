import CPKCS11
import Foundation
import Testing

// Pkcs11-provider reads CKA_ALLOWED_MECHANISMS of every key; an
// empty list given would read as no list and allow everything.

extension ModuleTests {
    @Suite("Every key has CKA_ALLOWED_MECHANISMS, never an empty list")
    struct AllowedMechanismsOfEveryKey {
        @Test("Created, generated, derived, unwrapped and copied keys of every class read an empty list")
        func everyKeyAnswersAllowedMechanisms() throws {
            try withLoggedInToken { token, session in
                var keys: [(String, CK_OBJECT_HANDLE)] = []
                let secret = try token.createSecretKey(
                    Array(repeating: 0x01, count: 16), extra: [Attribute(CKA_EXTRACTABLE, bool: true)],
                    in: session)
                keys.append(("created secret", secret))
                let (generated, generatedKey) = try token.generateSecretKey(
                    [Attribute(CKA_VALUE_LEN, ulong: 16)], in: session)
                try #require(generated == CKR_OK)
                keys.append(("generated secret", generatedKey))
                for kind in KeyKind.allCases {
                    let pair = try token.generatePair(kind, in: session)
                    keys += [("\(kind) public", pair.publicKey), ("\(kind) private", pair.privateKey)]
                    let (copyRV, copy) = try token.copy(pair.privateKey, with: [], in: session)
                    try #require(copyRV == CKR_OK, "\(name(of: copyRV))")
                    keys.append(("\(kind) private copy", copy))
                }
                let base = try token.createSecretKey(
                    Array(repeating: 0x02, count: 32), type: UInt(CKK_GENERIC_SECRET), extra: derivingKey(),
                    in: session)
                let (derivedRV, derived) = try token.derive(
                    hkdfMechanism(CKM_HKDF_DERIVE), baseKey: base, template: readableSecretKey(length: 32),
                    in: session
                )
                try #require(derivedRV == CKR_OK)
                keys.append(("derived", derived))
                let wrappingKey = try token.createSecretKey(
                    Array(repeating: 0x04, count: 16), extra: wrapUsages, in: session)
                let (wrapRV, wrapped) = try token.wrap(
                    MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: wrappingKey, key: secret, in: session)
                try #require(wrapRV == CKR_OK, "\(name(of: wrapRV))")
                let (unwrapRV, unwrapped) = try token.unwrap(
                    MechanismBox(CKM_AES_KEY_WRAP), unwrappingKey: wrappingKey, wrapped,
                    template: readableSecretKey(type: UInt(CKK_AES)), in: session)
                try #require(unwrapRV == CKR_OK, "\(name(of: unwrapRV))")
                keys.append(("unwrapped", unwrapped))
                for (what, key) in keys {
                    #expect(
                        try token.attribute(CKA_ALLOWED_MECHANISMS, of: key, in: session) == [], "\(what)")
                }
                // A list given is the list read, and it binds.
                let listed = try token.createSecretKey(
                    Array(repeating: 0x03, count: 16),
                    extra: [Attribute(CKA_ALLOWED_MECHANISMS, encode(CK_ULONG(CKM_AES_GCM)))], in: session)
                #expect(
                    try token.attribute(CKA_ALLOWED_MECHANISMS, of: listed, in: session)
                        == encode(CK_ULONG(CKM_AES_GCM)))
                let (cbc, _) = try token.crypt(
                    MechanismBox(CKM_AES_CBC_PAD, parameter: Array(repeating: 0, count: 16)), key: listed,
                    [1, 2, 3], encrypt: true, in: session)
                #expect(cbc == CKR_MECHANISM_INVALID, "\(name(of: cbc))")
            }
        }

        @Test(
            "An empty or ragged CKA_ALLOWED_MECHANISMS is CKR_ATTRIBUTE_VALUE_INVALID on create, generate, unwrap, derive, copy and set",
            arguments: [[UInt8](), [0x01, 0x02, 0x03, 0x04, 0x05], encode(CK_ULONG(CKM_AES_GCM)) + [0x01]])
        func emptyOrRaggedListIsRefused(list: [UInt8]) throws {
            try withLoggedInToken { token, session in
                let bad = Attribute(CKA_ALLOWED_MECHANISMS, list)
                var results: [(String, CK_RV)] = []
                let (created, _) = try token.create(
                    [
                        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY)),
                        Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_AES)),
                        Attribute(CKA_VALUE, Array(repeating: 0x01, count: 16)), bad,
                    ], in: session)
                results.append(("create", created))
                let (generated, _) = try token.generateSecretKey(
                    [Attribute(CKA_VALUE_LEN, ulong: 16), bad], in: session)
                results.append(("generate", generated))
                let (pairRV, _) = try token.generate(.p256, privateExtra: [bad], in: session)
                results.append(("generate pair", pairRV))
                let key = try token.createSecretKey(
                    Array(repeating: 0x02, count: 16),
                    extra: [Attribute(CKA_EXTRACTABLE, bool: true)] + wrapUsages,
                    in: session)
                let (_, wrapped) = try token.wrap(
                    MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: key, key: key, in: session)
                let (unwrapped, _) = try token.unwrap(
                    MechanismBox(CKM_AES_KEY_WRAP), unwrappingKey: key, wrapped,
                    template: readableSecretKey(type: UInt(CKK_AES)) + [bad], in: session)
                results.append(("unwrap", unwrapped))
                let base = try token.createSecretKey(
                    Array(repeating: 0x03, count: 32), type: UInt(CKK_GENERIC_SECRET), extra: derivingKey(),
                    in: session)
                let (derived, _) = try token.derive(
                    hkdfMechanism(CKM_HKDF_DERIVE), baseKey: base,
                    template: readableSecretKey(length: 32) + [bad],
                    in: session)
                results.append(("derive", derived))
                let (copied, _) = try token.copy(key, with: [bad], in: session)
                results.append(("copy", copied))
                results.append(("set", try token.set([bad], of: key, in: session)))
                for (path, rv) in results {
                    #expect(rv == CKR_ATTRIBUTE_VALUE_INVALID, "\(path): \(name(of: rv))")
                }
            }
        }
    }
}
