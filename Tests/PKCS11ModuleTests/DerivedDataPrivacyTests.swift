import CPKCS11
import Foundation
import Testing

// Bytes derived from a key whose value never leaves are that key's secret:
// a private object, sealed, never in clear in the store.

extension ModuleTests {
    @Suite("Data derived from a sensitive key is private and sealed")
    struct DerivedDataPrivacy {
        @Test(
            "CKM_HKDF_DATA from a sensitive key with CKA_PRIVATE=FALSE is CKR_TEMPLATE_INCONSISTENT, and no derived byte reaches the store in clear"
        )
        func derivedDataFromASensitiveKeyIsPrivate() throws {
            try withLoggedInToken { token, session in
                let base = try token.createSecretKey(
                    Array(repeating: 0x5A, count: 32), type: UInt(CKK_GENERIC_SECRET), extra: derivingKey(),
                    in: session)
                let (refused, _) = try token.derive(
                    hkdfMechanism(CKM_HKDF_DATA), baseKey: base,
                    template: derivedDataTemplate([Attribute(CKA_PRIVATE, bool: false)]),
                    in: session)
                #expect(refused == CKR_TEMPLATE_INCONSISTENT, "\(name(of: refused))")
                // The same derivation as a private object (the default): the bytes, to look for.
                let (rv, data) = try token.derive(
                    hkdfMechanism(CKM_HKDF_DATA), baseKey: base, template: derivedDataTemplate(), in: session)
                try #require(rv == CKR_OK, "\(name(of: rv))")
                #expect(try token.bool(CKA_PRIVATE, of: data, in: session) == true)
                let derived = try #require(try token.attribute(CKA_VALUE, of: data, in: session))
                #expect(derived.count == 32)
                #expect(token.storeFiles(containing: derived).isEmpty, "derived bytes in the store in clear")
                // Another process's view: a session with nobody logged in finds no data object.
                #expect(try token.m.C_Logout(session) == CKR_OK)
                let anonymous = try token.openSession()
                #expect(
                    try token.find([Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_DATA))], in: anonymous).isEmpty)
            }
        }

        @Test(
            "A sensitive salt key makes the derived data private too; a readable base leaves the choice to the caller"
        )
        func saltKeyAndReadableBase() throws {
            try withLoggedInToken { token, session in
                let readable = try token.createSecretKey(
                    Array(repeating: 0x11, count: 32), type: UInt(CKK_GENERIC_SECRET),
                    extra: derivingKey(extractable),
                    in: session)
                let sensitiveSalt = try token.createSecretKey(
                    Array(repeating: 0x22, count: 32), type: UInt(CKK_GENERIC_SECRET), extra: derivingKey(),
                    in: session)
                let (refused, _) = try token.derive(
                    hkdfMechanism(CKM_HKDF_DATA, saltKey: sensitiveSalt), baseKey: readable,
                    template: derivedDataTemplate([Attribute(CKA_PRIVATE, bool: false)]), in: session)
                #expect(refused == CKR_TEMPLATE_INCONSISTENT, "\(name(of: refused))")
                // Both readable: the bytes could be computed from values the caller may read.
                let (rv, data) = try token.derive(
                    hkdfMechanism(CKM_HKDF_DATA), baseKey: readable,
                    template: derivedDataTemplate([Attribute(CKA_PRIVATE, bool: false)]), in: session)
                #expect(rv == CKR_OK, "\(name(of: rv))")
                #expect(try token.bool(CKA_PRIVATE, of: data, in: session) == false)
            }
        }
    }
}
