import CPKCS11
import Foundation
import Testing

// Apple's access control through PKCS#11: CKA_P11K_ACCESS_CONTROL belongs only to
// the objects whose use the token guards, and a private key that needs the PIN for each use
// never leaves the token, whatever path makes it.

/// CKA_P11K_ACCESS_CONTROL with `.userPresence`.
private let userPresence = Attribute(
    CK_ATTRIBUTE_TYPE(CKA_P11K_ACCESS_CONTROL), ulong: CK_ULONG(P11K_ACCESS_CONTROL_USER_PRESENCE))

extension ModuleTests {
    @Suite("Access control that needs the PIN for each use")
    struct AccessControl {
        @Test("a private key needing the PIN for each use is refused unless sensitive and not extractable")
        func protectedKeyStaysInToken() throws {
            try withLoggedInToken { token, session in
                for extra in [
                    [flag(CKA_SENSITIVE, false)], [flag(CKA_EXTRACTABLE, true)],
                    [flag(CKA_SENSITIVE, false), flag(CKA_EXTRACTABLE, true)],
                ] {
                    let (rv, _) = try token.generate(.p256, privateExtra: [userPresence] + extra, in: session)
                    #expect(rv == CKR_TEMPLATE_INCONSISTENT, "C_GenerateKeyPair returned \(rvName(rv))")
                }
                // By default it is sensitive and not extractable: its value neither reads nor wraps.
                let pair = try token.generatePair(.p256, privateExtra: [userPresence], in: session)
                #expect(
                    try token.probe(CKA_VALUE, of: pair.privateKey, in: session).0 == CKR_ATTRIBUTE_SENSITIVE)
                let wrappingKey = try token.createSecretKey(
                    Array(repeating: 7, count: 32),
                    extra: [flag(CKA_WRAP, true), flag(CKA_UNWRAP, true)], in: session)
                let (wrapped, _) = try token.wrap(
                    MechanismBox(CKM_AES_KEY_WRAP_KWP), wrappingKey: wrappingKey, key: pair.privateKey,
                    in: session)
                #expect(wrapped == CKR_KEY_UNEXTRACTABLE)
                // Imported keys obey the same rule.
                let imported = ecPrivateKeyTemplate(
                    scalar: randomP256Scalar(), label: "imported",
                    extra: [userPresence, flag(CKA_EXTRACTABLE, true), flag(CKA_SENSITIVE, false)])
                #expect(try token.create(imported, in: session).0 == CKR_TEMPLATE_INCONSISTENT)
                // Neither flag loosens later.
                #expect(
                    try token.set([flag(CKA_EXTRACTABLE, true)], of: pair.privateKey, in: session)
                        == CKR_ATTRIBUTE_READ_ONLY)
            }
        }

        @Test("access control belongs to private keys and data objects, not to secret keys or certificates")
        func onlyGuardedClassesTakeIt() throws {
            try withLoggedInToken { token, session in
                let (secret, _) = try token.generateSecretKey(
                    [
                        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY)),
                        Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_AES)),
                        Attribute(CKA_VALUE_LEN, ulong: 32),
                        flag(CKA_ENCRYPT, true), userPresence,
                    ], in: session)
                #expect(secret == CKR_ATTRIBUTE_TYPE_INVALID, "C_GenerateKey returned \(rvName(secret))")
                let (publicKey, _) = try token.generate(.p256, publicExtra: [userPresence], in: session)
                #expect(
                    publicKey == CKR_ATTRIBUTE_TYPE_INVALID, "C_GenerateKeyPair returned \(rvName(publicKey))"
                )
                let data = [
                    Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_DATA)), flag(CKA_TOKEN, false),
                    flag(CKA_PRIVATE, true), Attribute(CKA_VALUE, [1, 2, 3]), userPresence,
                ]
                #expect(try token.create(data, in: session).0 == CKR_OK)
            }
        }
    }
}
