import Foundation
import KeychainCore
import Testing

@Suite("Trust settings kept with each certificate")
struct TrustSettingsTests {
    /// A token with one CA certificate stored.
    private func withCertificate(
        _ body: (Token, ObjectReference, TestCertificate, TemporaryDirectory) throws -> Void
    ) throws {
        try withToken { token, directory throws in
            let ca = try TestCertificate.make("ca", subject: "/CN=Trust Root", authority: true, in: directory)
            let reference = try token.createObject(certificateTemplate(ca.der), context: Contexts.readWrite)
            try body(token, reference, ca, directory)
        }
    }

    @Test("a new certificate has no trust settings and reads as neither trusted nor distrusted")
    func newCertificateIsUnspecified() throws {
        try withCertificate { token, reference, _, _ throws in
            #expect(try token.trustSettings(ofCertificate: reference) == .unspecified)
            let attributes = try token.attributes(of: reference, context: Contexts.readOnly)
            #expect(attributes.bool(.trusted) == false)
            #expect(attributes.bool(.distrusted) == false)
            #expect(try token.certificatesWithTrustSettings().isEmpty)
        }
    }

    @Test("settings written are read back, per purpose, with unset purposes following any")
    func settingsRoundTrip() throws {
        try withCertificate { token, reference, ca, _ throws in
            let settings = TrustSettings([.serverAuth: .trustedAnchor, .any: .distrusted])
            try token.setTrustSettings(settings, ofCertificate: reference, context: Contexts.readWrite)
            let read = try token.trustSettings(ofCertificate: reference)
            #expect(read == settings)
            #expect(read.disposition(for: .serverAuth) == .trustedAnchor)
            #expect(read.disposition(for: .codeSigning) == .distrusted, "falls back to any")
            #expect(try token.trustSettings(ofCertificateDER: ca.der) == settings)
            let listed = try token.certificatesWithTrustSettings()
            #expect(listed.count == 1)
            #expect(listed.first?.der == ca.der)
            #expect(listed.first?.settings == settings)
        }
    }

    @Test("CKA_TRUSTED reads TRUE exactly while the certificate is an anchor for some purpose")
    func trustedFollowsSettings() throws {
        try withCertificate { token, reference, _, _ throws in
            try token.setTrustSettings(
                TrustSettings([.emailProtection: .trustedAnchor]), ofCertificate: reference,
                context: Contexts.readWrite)
            #expect(try token.attributes(of: reference, context: Contexts.readOnly).bool(.trusted) == true)
            #expect(
                try token.findObjects([.trusted: yes], context: Contexts.readOnly) == [reference],
                "found by CKA_TRUSTED")
            try token.setTrustSettings(.unspecified, ofCertificate: reference, context: Contexts.readWrite)
            #expect(try token.attributes(of: reference, context: Contexts.readOnly).bool(.trusted) == false)
            #expect(try token.certificatesWithTrustSettings().isEmpty, "cleared settings are not listed")
        }
    }

    @Test("a certificate distrusted for every purpose carries p11-kit's CKA_X_DISTRUSTED")
    func distrustedForEveryPurposeIsBlocklisted() throws {
        try withCertificate { token, reference, _, _ throws in
            try token.setTrustSettings(
                .distrustedForAnyPurpose, ofCertificate: reference, context: Contexts.readWrite)
            var attributes = try token.attributes(of: reference, context: Contexts.readOnly)
            #expect(attributes.bool(.distrusted) == true)
            #expect(attributes.bool(.trusted) == false)
            try token.setTrustSettings(
                TrustSettings([.any: .distrusted, .clientAuth: .trustedPeer]), ofCertificate: reference,
                context: Contexts.readWrite)
            attributes = try token.attributes(of: reference, context: Contexts.readOnly)
            #expect(attributes.bool(.distrusted) == false, "trusted for one purpose: not a blocklist entry")
        }
    }

    @Test("only the SO may create a certificate with CKA_TRUSTED, and it makes an anchor for any purpose")
    func trustedAtCreationNeedsTheSecurityOfficer() throws {
        try withToken { token, directory throws in
            let ca = try TestCertificate.make("ca", subject: "/CN=SO Root", authority: true, in: directory)
            expectKeychainError(.attributeReadOnly, containing: "security officer") {
                _ = try token.createObject(
                    certificateTemplate(ca.der, [.trusted: yes]), context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.readOnly).isEmpty, "nothing stored")
            let reference = try token.createObject(
                certificateTemplate(ca.der, [.trusted: yes]), context: Contexts.securityOfficer)
            #expect(try token.trustSettings(ofCertificate: reference) == .anchorForAnyPurpose)
            #expect(try token.certificatesWithTrustSettings().map(\.der) == [ca.der])
        }
    }

    @Test("CKA_TRUSTED and CKA_X_DISTRUSTED cannot be changed as attributes, and the settings stay hidden")
    func derivedTrustAttributesAreReadOnly() throws {
        try withCertificate { token, reference, _, _ throws in
            expectKeychainError(.attributeReadOnly) {
                try token.updateObject(reference, with: [.trusted: yes], context: Contexts.securityOfficer)
            }
            expectKeychainError(.attributeReadOnly) {
                try token.updateObject(reference, with: [.distrusted: yes], context: Contexts.readWrite)
            }
            let readings = try token.read(
                [AttributeType(0x8050_4B20), AttributeType(0x8050_4B21)], of: reference,
                context: Contexts.readOnly)
            #expect(readings == [.absent, .absent], "the stored form is not an attribute callers see")
        }
    }

    @Test("a trust setting on a certificate not in the keychain is refused and writes nothing")
    func settingOnAbsentCertificateIsRefused() throws {
        try withCertificate { token, _, _, directory throws in
            let other = try TestCertificate.make(
                "other", subject: "/CN=Elsewhere", authority: true, in: directory)
            expectKeychainError(.objectNotFound, containing: "not in this keychain") {
                try token.setTrustSettings(
                    .anchorForAnyPurpose, ofCertificateDER: other.der, context: Contexts.readWrite)
            }
            expectKeychainError(.attributeValueInvalid) {
                try token.setTrustSettings(
                    .anchorForAnyPurpose, ofCertificateDER: [1, 2, 3], context: Contexts.readWrite)
            }
            #expect(try token.certificatesWithTrustSettings().isEmpty)
        }
    }

    @Test("trust settings belong to certificates: a data object is refused")
    func settingOnDataObjectIsRefused() throws {
        try withToken { token, _ throws in
            let data = try token.createObject(
                dataTemplate(label: "not a certificate"), context: Contexts.readWrite)
            expectKeychainError(.objectNotFound, containing: "certificates") {
                try token.setTrustSettings(
                    .anchorForAnyPurpose, ofCertificate: data, context: Contexts.readWrite)
            }
        }
    }

    @Test("a read-only session cannot change trust, and nothing is written")
    func readOnlySessionIsRefused() throws {
        try withCertificate { token, reference, _, _ throws in
            expectKeychainError(.sessionReadOnly) {
                try token.setTrustSettings(
                    .anchorForAnyPurpose, ofCertificate: reference, context: Contexts.readOnly)
            }
            #expect(try token.trustSettings(ofCertificate: reference) == .unspecified)
        }
    }

    @Test("with a user PIN set, trust changes need the user or the SO logged in")
    func userPINMakesTrustNeedALogin() throws {
        try withCertificate { token, reference, _, _ throws in
            try logInUser(token)
            token.logOut()
            expectKeychainError(.userNotLoggedIn, containing: "log in") {
                try token.setTrustSettings(
                    .anchorForAnyPurpose, ofCertificate: reference, context: Contexts.readWrite)
            }
            #expect(try token.trustSettings(ofCertificate: reference) == .unspecified, "nothing half-written")
            // A context that claims a login the token does not have is not enough either.
            expectKeychainError(.userNotLoggedIn) {
                try token.setTrustSettings(
                    .anchorForAnyPurpose, ofCertificate: reference, context: Contexts.user)
            }
            try token.logIn(.user, pin: bytes("user-pin-0000"))
            try token.setTrustSettings(.anchorForAnyPurpose, ofCertificate: reference, context: Contexts.user)
            #expect(try token.trustSettings(ofCertificate: reference) == .anchorForAnyPurpose)
            token.logOut()
            try token.logIn(.securityOfficer, pin: bytes("so-pin-0000"))
            try token.setTrustSettings(
                .distrustedForAnyPurpose, ofCertificate: reference, context: Contexts.securityOfficer)
            #expect(try token.trustSettings(ofCertificate: reference) == .distrustedForAnyPurpose)
        }
    }

    @Test("the settings are seen by another connection to the same store at once")
    func settingsAreSharedAcrossConnections() throws {
        try withCertificate { token, reference, ca, directory throws in
            try token.setTrustSettings(
                TrustSettings([.serverAuth: .trustedAnchor]), ofCertificate: reference,
                context: Contexts.readWrite)
            let other = Token(
                configuration: TokenConfiguration(name: "test", path: directory.file("token.sqlite3")))
            #expect(
                try other.trustSettings(ofCertificateDER: ca.der)
                    == TrustSettings([.serverAuth: .trustedAnchor]))
        }
    }

    @Test(
        "settings that mean the same are equal, and unspecified entries are not kept",
        arguments: TrustDisposition.allCases)
    func normalisedSettings(_ disposition: TrustDisposition) {
        var settings = TrustSettings([.codeSigning: disposition, .any: .unspecified])
        #expect(settings.disposition(for: .codeSigning) == disposition)
        #expect(settings.isUnspecified == (disposition == .unspecified))
        settings.set(.unspecified, for: .codeSigning)
        #expect(settings == .unspecified)
        // Written straight into the dictionary, an unspecified entry still means none.
        settings.dispositions[.serverAuth] = .unspecified
        #expect(settings == .unspecified)
        #expect(settings.isUnspecified)
        #expect(settings.disposition(for: .serverAuth) == .unspecified)
    }
}
