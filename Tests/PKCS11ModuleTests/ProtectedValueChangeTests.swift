import CPKCS11
import Foundation
import Testing

// A data object whose access control needs the PIN for each use (a
// .userPresence password) does not change through PKCS#11, which has no way to give that PIN:
// neither C_SetAttributeValue nor C_CopyObject replaces its value or its identity.

extension ModuleTests {
    @Suite("A value guarded by the PIN for each use does not change through PKCS#11")
    struct ProtectedValueChanges {
        @Test("C_SetAttributeValue and C_CopyObject of a .userPresence password are CKR_USER_NOT_LOGGED_IN")
        func protectedPasswordDoesNotChange() throws {
            try withLoggedInToken { token, session in
                let userPresence = Attribute(
                    CK_ATTRIBUTE_TYPE(CKA_P11K_ACCESS_CONTROL),
                    ulong: CK_ULONG(P11K_ACCESS_CONTROL_USER_PRESENCE))
                let password = try token.createObject(
                    [
                        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_DATA)), flag(CKA_TOKEN, true),
                        flag(CKA_PRIVATE, true), Attribute(CKA_APPLICATION, string: "service"),
                        Attribute(CKA_LABEL, string: "guarded"), Attribute(CKA_VALUE, Array("secret".utf8)),
                        userPresence,
                    ], in: session)
                for change in [
                    [Attribute(CKA_VALUE, Array("replaced".utf8))], [Attribute(CKA_LABEL, string: "renamed")],
                    [Attribute(CKA_APPLICATION, string: "elsewhere")],
                ] {
                    let set = try token.set(change, of: password, in: session)
                    #expect(set == CKR_USER_NOT_LOGGED_IN, "C_SetAttributeValue returned \(rvName(set))")
                    let (copied, _) = try token.copy(password, with: change, in: session)
                    #expect(copied == CKR_USER_NOT_LOGGED_IN, "C_CopyObject returned \(rvName(copied))")
                }
                #expect(try token.string(CKA_LABEL, of: password, in: session) == "guarded")
                #expect(try token.probe(CKA_VALUE, of: password, in: session).0 == CKR_ATTRIBUTE_SENSITIVE)
                // A copy that changes nothing the PIN guards keeps the access control.
                let (rv, copy) = try token.copy(password, with: [flag(CKA_TOKEN, false)], in: session)
                try #require(rv == CKR_OK, "C_CopyObject returned \(rvName(rv))")
                #expect(try token.probe(CKA_VALUE, of: copy, in: session).0 == CKR_ATTRIBUTE_SENSITIVE)
            }
        }
    }
}
