import CPKCS11
import Foundation
import Testing

// A copy changes only what v2.40 §5.7 lets it change, and a trusted key's use
// and trust stay the security officer's. The attack: the SO's trusted, wrap-only key, copied
// or changed by the user to decrypt or unwrap, would give every CKA_WRAP_WITH_TRUSTED key out
// in clear (wrap under it, then C_Decrypt(CKM_AES_ECB) inverts AES key wrap).

private let trustedKeyValue = [UInt8](repeating: 0x5A, count: 32)
private let guardedKeyValue = [UInt8](repeating: 0xC3, count: 32)

extension TestToken {
    /// The SO, logged in in a new session, stores a trusted wrap-only AES token key (public:
    /// the SO makes no private objects), modifiable or not; the session is closed after.
    fileprivate func storeTrustedWrapKey(modifiable: Bool) throws -> CK_OBJECT_HANDLE {
        let session = try openSession()
        try #require(try login(session, as: CK_USER_TYPE(CKU_SO), pin: coreSOPIN) == CKR_OK)
        let key = try createSecretKey(
            trustedKeyValue,
            extra: [
                flag(CKA_TOKEN, true), flag(CKA_PRIVATE, false), flag(CKA_TRUSTED, true),
                flag(CKA_WRAP, true),
                flag(CKA_UNWRAP, false), flag(CKA_ENCRYPT, false), flag(CKA_DECRYPT, false),
                flag(CKA_MODIFIABLE, modifiable), Attribute(CKA_LABEL, string: "so-wrap"),
            ], in: session)
        try #require(try m.C_Logout(session) == CKR_OK)
        try #require(try m.C_CloseSession(session) == CKR_OK)
        return key
    }

    /// The user's extractable AES key that only a trusted key may wrap.
    fileprivate func storeGuardedKey(in session: CK_SESSION_HANDLE) throws -> CK_OBJECT_HANDLE {
        try createSecretKey(
            guardedKeyValue,
            extra: [
                flag(CKA_TOKEN, true), flag(CKA_EXTRACTABLE, true), flag(CKA_WRAP_WITH_TRUSTED, true),
                Attribute(CKA_LABEL, string: "guarded"),
            ], in: session)
    }
}

extension ModuleTests {
    @Suite("A copy changes only what the specification lets it, and trust stays the SO's")
    struct TrustedKeyCopies {
        @Test("the user's copy of the SO's unmodifiable trusted wrap key cannot turn on unwrap or decrypt")
        func unmodifiableTrustedKeyCopiesUnchanged() throws {
            try withToken { token in
                try token.setPINs()
                let trusted = try token.storeTrustedWrapKey(modifiable: false)
                let session = try token.openSession()
                try token.logInUser(session)
                let guarded = try token.storeGuardedKey(in: session)
                // The trusted key wraps the guarded key, as it should.
                #expect(
                    try token.wrap(
                        MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: trusted, key: guarded, in: session
                    )
                    .0 == CKR_OK)
                for change in [
                    [flag(CKA_UNWRAP, true)], [flag(CKA_DECRYPT, true)],
                    [flag(CKA_UNWRAP, true), flag(CKA_DECRYPT, true), flag(CKA_SENSITIVE, false)],
                    [Attribute(CKA_LABEL, string: "renamed")], [flag(CKA_EXTRACTABLE, true)],
                ] {
                    let (rv, _) = try token.copy(trusted, with: change, in: session)
                    #expect(rv == CKR_ATTRIBUTE_READ_ONLY, "C_CopyObject returned \(rvName(rv))")
                }
                // CKA_TOKEN, CKA_PRIVATE and what only tightens are still allowed, and the
                // user's copy is not trusted.
                let (rv, copy) = try token.copy(
                    trusted,
                    with: [flag(CKA_TOKEN, false), flag(CKA_SENSITIVE, true), flag(CKA_COPYABLE, false)],
                    in: session)
                try #require(rv == CKR_OK, "C_CopyObject returned \(rvName(rv))")
                #expect(try token.bool(CKA_TRUSTED, of: copy, in: session) == false)
                #expect(
                    try token.wrap(
                        MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: copy, key: guarded, in: session
                    ).0
                        == CKR_KEY_NOT_WRAPPABLE)
                #expect(try token.set([flag(CKA_DECRYPT, true)], of: trusted, in: session) != CKR_OK)
            }
        }

        @Test("the user's copy of a modifiable trusted key is untrusted, and neither gets a new use")
        func modifiableTrustedKeyCopyIsUntrusted() throws {
            try withToken { token in
                try token.setPINs()
                let trusted = try token.storeTrustedWrapKey(modifiable: true)
                let session = try token.openSession()
                try token.logInUser(session)
                let guarded = try token.storeGuardedKey(in: session)
                let (rv, copy) = try token.copy(
                    trusted, with: [Attribute(CKA_LABEL, string: "mine")], in: session)
                try #require(rv == CKR_OK, "C_CopyObject returned \(rvName(rv))")
                #expect(try token.bool(CKA_TRUSTED, of: copy, in: session) == false)
                #expect(try token.bool(CKA_TRUSTED, of: trusted, in: session) == true)
                let (wrapped, _) = try token.wrap(
                    MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: copy, key: guarded, in: session)
                #expect(
                    wrapped == CKR_KEY_NOT_WRAPPABLE, "C_WrapKey under the copy returned \(rvName(wrapped))")
                // The copy holds the trusted key's value: it gets no use the original could not.
                for use in [CKA_DECRYPT, CKA_UNWRAP, CKA_ENCRYPT] {
                    let (copied, _) = try token.copy(trusted, with: [flag(use, true)], in: session)
                    #expect(copied == CKR_ATTRIBUTE_READ_ONLY, "C_CopyObject returned \(rvName(copied))")
                    let set = try token.set([flag(use, true)], of: trusted, in: session)
                    #expect(set == CKR_ATTRIBUTE_READ_ONLY, "C_SetAttributeValue returned \(rvName(set))")
                }
                #expect(try token.bool(CKA_DECRYPT, of: trusted, in: session) == false)
                // A use the key has, or turning one off, is still the user's to change.
                #expect(try token.set([flag(CKA_WRAP, false)], of: trusted, in: session) == CKR_OK)
                #expect(
                    try token.set([flag(CKA_TRUSTED, true)], of: copy, in: session) == CKR_ATTRIBUTE_READ_ONLY
                )
            }
        }

        @Test("the security officer's copy of a trusted key stays trusted, and the SO may give it a use")
        func securityOfficerCopyStaysTrusted() throws {
            try withToken { token in
                try token.setPINs()
                let trusted = try token.storeTrustedWrapKey(modifiable: true)
                let session = try token.openSession()
                try #require(try token.login(session, as: CK_USER_TYPE(CKU_SO), pin: coreSOPIN) == CKR_OK)
                let (rv, copy) = try token.copy(
                    trusted, with: [Attribute(CKA_LABEL, string: "so-copy")], in: session)
                try #require(rv == CKR_OK, "C_CopyObject returned \(rvName(rv))")
                #expect(try token.bool(CKA_TRUSTED, of: copy, in: session) == true)
                #expect(try token.set([flag(CKA_UNWRAP, true)], of: trusted, in: session) == CKR_OK)
            }
        }
    }
}
