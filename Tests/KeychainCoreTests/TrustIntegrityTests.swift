import Foundation
import KeychainCore
import KeychainStorage
import Testing

/// Trust needs the PIN, and keeps needing it at rest: removing a
/// certificate removes its trust, and a writer of the store file cannot make an anchor.
@Suite("Trust settings are bound to the PIN")
struct TrustIntegrityTests {
    /// A token with both PINs, the user logged out, and one CA certificate stored.
    private func withProtectedCertificate(
        _ body: (Token, ObjectReference, TestCertificate, TemporaryDirectory) throws -> Void
    ) throws {
        try withToken { token, directory throws in
            let ca = try TestCertificate.make(
                "ca", subject: "/CN=Sealed Root", authority: true, in: directory)
            let reference = try token.createObject(certificateTemplate(ca.der), context: Contexts.readWrite)
            try logInUser(token)
            token.logOut()
            try body(token, reference, ca, directory)
        }
    }

    /// Another connection to the same store, as another process would open it.
    private func reopened(_ directory: TemporaryDirectory) -> Token {
        Token(configuration: testConfiguration(path: directory.file("token.sqlite3")))
    }

    @Test("a distrusted certificate is not deleted without the PIN, so its distrust cannot be undone")
    func deletingADistrustedCertificateNeedsTheLogin() throws {
        try withProtectedCertificate { token, reference, ca, _ throws in
            try token.logIn(.user, pin: bytes("user-pin-0000"))
            try token.setTrustSettings(
                .distrustedForAnyPurpose, ofCertificate: reference, context: Contexts.user)
            token.logOut()
            expectKeychainError(.userNotLoggedIn, containing: "log in") {
                try token.destroyObject(reference, context: Contexts.readWrite)
            }
            expectKeychainError(.userNotLoggedIn) {
                _ = try token.destroyObjects([reference], context: Contexts.readWrite)
            }
            #expect(
                try token.trustSettings(ofCertificateDER: ca.der) == .distrustedForAnyPurpose, "still there")
            try token.logIn(.user, pin: bytes("user-pin-0000"))
            try token.destroyObject(reference, context: Contexts.user)
            expectKeychainError(.objectNotFound) { _ = try token.trustSettings(ofCertificateDER: ca.der) }
        }
    }

    @Test("a certificate without trust settings, or on a token without a user PIN, is deleted as before")
    func deletingWithoutTrustNeedsNoLogin() throws {
        try withProtectedCertificate { token, reference, _, _ throws in
            try token.destroyObject(reference, context: Contexts.readWrite)
        }
        try withToken { token, directory throws in
            let ca = try TestCertificate.make("ca", subject: "/CN=Open Root", authority: true, in: directory)
            let reference = try token.createObject(certificateTemplate(ca.der), context: Contexts.readWrite)
            try token.setTrustSettings(
                .distrustedForAnyPurpose, ofCertificate: reference, context: Contexts.readWrite)
            try token.destroyObject(reference, context: Contexts.readWrite)
        }
    }

    @Test("an anchor added while the user-PIN record was renamed away is not trusted once it is back")
    func anchorAddedWithTheRecordHiddenIsNotTrusted() throws {
        try withProtectedCertificate { _, reference, ca, directory throws in
            // A writer of the file: the user-PIN record renamed away, an anchor added as on a
            // token with no user PIN, the record put back.
            let file = try ObjectStore(path: directory.file("token.sqlite3"), create: false)
            let record = try #require(try file.metadata("user.pin"))
            try file.write {
                try file.setMetadata("hidden", record)
                try file.removeMetadata("user.pin")
            }
            let attacker = reopened(directory)
            try attacker.setTrustSettings(
                .anchorForAnyPurpose, ofCertificate: reference, context: Contexts.readWrite)
            try file.write {
                try file.setMetadata("user.pin", record)
                try file.removeMetadata("hidden")
            }

            let locked = reopened(directory)
            #expect(try locked.trustSettings(ofCertificateDER: ca.der) == .unspecified, "locked process")
            #expect(try locked.certificatesWithTrustSettings().isEmpty)
            #expect(try locked.attributes(of: reference, context: Contexts.readOnly).bool(.trusted) == false)
            let user = reopened(directory)
            try user.logIn(.user, pin: bytes("user-pin-0000"))
            #expect(
                try user.trustSettings(ofCertificateDER: ca.der) == .unspecified, "no seal: not an anchor")
        }
    }

    @Test(
        "an anchor set with the PIN counts where the token key verifies it; a locked process trusts no grant")
    func sealedAnchorsNeedTheTokenKeyToCount() throws {
        try withProtectedCertificate { token, reference, ca, directory throws in
            try token.logIn(.user, pin: bytes("user-pin-0000"))
            let settings = TrustSettings([.serverAuth: .trustedAnchor, .codeSigning: .distrusted])
            try token.setTrustSettings(settings, ofCertificate: reference, context: Contexts.user)
            #expect(try token.trustSettings(ofCertificateDER: ca.der) == settings)
            #expect(try token.attributes(of: reference, context: Contexts.user).bool(.trusted) == true)

            let locked = reopened(directory)
            #expect(
                try locked.trustSettings(ofCertificateDER: ca.der)
                    == TrustSettings([.codeSigning: .distrusted]),
                "a locked process keeps the distrust and drops the grant it cannot verify")
            let other = reopened(directory)
            try other.logIn(.user, pin: bytes("user-pin-0000"))
            #expect(
                try other.trustSettings(ofCertificateDER: ca.der) == settings, "another login verifies it")
        }
    }

    @Test("a seal copied onto another certificate, or settings changed in the file, verify nothing")
    func forgedSealsAreRefused() throws {
        try withProtectedCertificate { token, reference, ca, directory throws in
            let other = try TestCertificate.make(
                "other", subject: "/CN=Other Root", authority: true, in: directory)
            let otherReference = try token.createObject(
                certificateTemplate(other.der), context: Contexts.readWrite)
            try token.logIn(.user, pin: bytes("user-pin-0000"))
            try token.setTrustSettings(
                TrustSettings([.serverAuth: .trustedAnchor]), ofCertificate: reference, context: Contexts.user
            )
            try token.setTrustSettings(
                TrustSettings([.serverAuth: .distrusted]), ofCertificate: otherReference,
                context: Contexts.user)
            token.logOut()

            // The anchor's settings and seal rows onto the other certificate, and the first
            // certificate's settings widened to every purpose: each a writer of the file's forgery.
            let file = try ObjectStore(path: directory.file("token.sqlite3"), create: false)
            let settingsType: UInt64 = 0x8050_4B40
            let sealType: UInt64 = 0x8050_4B42
            let anchor = try #require(try file.attributes(of: reference.rowID))
            let moved = anchor.filter { $0.type == settingsType || $0.type == sealType }
            #expect(moved.count == 2, "the anchor has its settings and a seal")
            try file.write {
                try file.update(otherReference.rowID, attributes: moved)
                try file.update(
                    reference.rowID, attributes: [StoredAttribute(settingsType, [1, 1, 1, 1, 1])])
            }
            let user = reopened(directory)
            try user.logIn(.user, pin: bytes("user-pin-0000"))
            #expect(
                try user.trustSettings(ofCertificateDER: other.der) == .unspecified, "seal of another DER")
            #expect(
                try user.trustSettings(ofCertificateDER: ca.der) == .unspecified,
                "settings changed in the file")
        }
    }
}
