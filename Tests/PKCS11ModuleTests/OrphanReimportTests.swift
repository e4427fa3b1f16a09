import CPKCS11
import Foundation
import Testing

// Taking up an orphan key again (KeyReimport.swift) gives a handle only to a
// caller who could have stored that key: one who is not logged in gets the error a new insert
// gives, and the stored key stays.

extension ModuleTests {
    @Suite("An orphan key is taken up again only by a caller who could store it")
    struct OrphanReimport {
        @Test("a caller not logged in who sends a stored public orphan key's template gets no handle to it")
        func notLoggedInCallerGetsNoHandle() throws {
            try withToken { token in
                try token.setPINs()
                let writer = try token.openSession()
                try token.logInUser(writer)
                let id = Attribute(CKA_ID, string: "orphan-public")
                let template = ecPrivateKeyTemplate(
                    scalar: randomP256Scalar(), label: "", extra: [id, flag(CKA_PRIVATE, false)])
                _ = try token.createObject(template, in: writer)
                try #require(try token.m.C_Logout(writer) == CKR_OK)
                try #require(try token.m.C_CloseSession(writer) == CKR_OK)
                // Another application: this process again, after C_Finalize, not logged in.
                try #require(try token.m.C_Finalize(nil) == CKR_OK)
                try #require(try token.m.C_Initialize(nil) == CKR_OK)
                for readWrite in [true, false] {
                    let session = try token.openSession(readWrite: readWrite)
                    let (rv, handle) = try token.create(template, in: session)
                    let expected = readWrite ? CKR_USER_NOT_LOGGED_IN : CKR_SESSION_READ_ONLY
                    #expect(rv == expected, "C_CreateObject returned \(rvName(rv))")
                    #expect(handle == 0)
                }
                let session = try token.openSession()
                let found = try token.find([Attribute(CKA_CLASS, ulong: CKO_PRIVATE_KEY), id], in: session)
                #expect(found.count == 1, "the stored key is still there, once")
                // Logged in, the same template takes it up again, as before (JavaInteropTests).
                try token.logInUser(session)
                let again = try token.createObject(template, in: session)
                #expect(
                    try token.find([Attribute(CKA_CLASS, ulong: CKO_PRIVATE_KEY), id], in: session) == [again]
                )
            }
        }
    }
}
