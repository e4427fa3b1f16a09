import CPKCS11
import Foundation
import Testing

/// An NSS trust object's template for `certificate` (what NSS's certutil -M writes):
/// server auth, client auth, e-mail and code signing CK_TRUST values in that order.
private func nssTrustTemplate(
    _ certificate: TestCertificate, _ values: [CK_ULONG], token: Bool = true, extra: [Attribute] = []
) throws -> [Attribute] {
    let fields = try DER.fields(of: certificate.der)
    let types = [
        CKA_NSS_TRUST_SERVER_AUTH, CKA_NSS_TRUST_CLIENT_AUTH, CKA_NSS_TRUST_EMAIL_PROTECTION,
        CKA_NSS_TRUST_CODE_SIGNING,
    ]
    return [
        Attribute(CKA_CLASS, ulong: CKO_NSS_TRUST), Attribute(CKA_TOKEN, bool: token),
        Attribute(CKA_ISSUER, fields.issuer), Attribute(CKA_SERIAL_NUMBER, fields.serial),
        Attribute(CKA_NSS_CERT_SHA1_HASH, certificate.sha1Fingerprint),
        Attribute(CKA_NSS_TRUST_STEP_UP_APPROVED, bool: false),
    ] + zip(types, values).map { Attribute(CK_ATTRIBUTE_TYPE($0), ulong: CK_ULONG($1)) } + extra
}

/// What `certutil -t CT,C,C` asks for: a trusted CA for every purpose.
private let anchorValues = [CK_ULONG](repeating: CK_ULONG(CKT_NSS_TRUSTED_DELEGATOR), count: 4)

/// A digest of `bytes` by the openssl command (`-md5`, `-sha256`), independent of the module.
private func digest(_ algorithm: String, _ bytes: [UInt8]) throws -> [UInt8] {
    let path = NSTemporaryDirectory() + "p11keychain-digest-\(UUID().uuidString)"
    try Data(bytes).write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let result = try runCommand(TestCertificate.openssl, ["dgst", algorithm, "-r", path])
    return try hexBytes(String(result.standardOutput.prefix { $0 != " " }))
}

extension ModuleTests {
    @Suite("Trust objects: CKA_TRUSTED, NSS and PKCS#11 3.2 trust, all views of one stored trust")
    struct TrustObjects {
        @Test(
            "An NSS trust object created for a token certificate is found, read back and makes it CKA_TRUSTED"
        )
        func nssTrustRoundTrips() throws {
            let ca = try Fixtures.authority.get()
            try withToken { token throws in
                let session = try token.openSession()
                let certificate = try token.createCertificate(ca, in: session)
                #expect(try token.find([Attribute(CKA_CLASS, ulong: CKO_NSS_TRUST)], in: session).isEmpty)
                let trust = try token.createObject(try nssTrustTemplate(ca, anchorValues), in: session)
                #expect(trust != certificate)
                let fields = try DER.fields(of: ca.der)
                let found = try token.find(
                    [
                        Attribute(CKA_CLASS, ulong: CKO_NSS_TRUST), Attribute(CKA_ISSUER, fields.issuer),
                        Attribute(CKA_SERIAL_NUMBER, fields.serial),
                    ], in: session)
                #expect(found == [trust])
                for type in [
                    CKA_NSS_TRUST_SERVER_AUTH, CKA_NSS_TRUST_CLIENT_AUTH, CKA_NSS_TRUST_EMAIL_PROTECTION,
                    CKA_NSS_TRUST_CODE_SIGNING,
                ] {
                    #expect(
                        decodeULong(try token.attribute(CK_ATTRIBUTE_TYPE(type), of: trust, in: session))
                            == CK_ULONG(CKT_NSS_TRUSTED_DELEGATOR))
                }
                #expect(
                    try token.attribute(CK_ATTRIBUTE_TYPE(CKA_NSS_CERT_SHA1_HASH), of: trust, in: session)
                        == ca.sha1Fingerprint)
                #expect(
                    try token.attribute(CK_ATTRIBUTE_TYPE(CKA_NSS_CERT_MD5_HASH), of: trust, in: session)
                        == digest("-md5", ca.der))
                #expect(try token.attribute(CKA_ISSUER, of: trust, in: session) == fields.issuer)
                #expect(try token.attribute(CKA_TOKEN, of: trust, in: session) == [1])
                #expect(try token.string(CKA_LABEL, of: trust, in: session) == "Example Root CA")
                #expect(
                    try token.attribute(CKA_TRUSTED, of: certificate, in: session) == [1], "the same trust")
                #expect(try token.find([Attribute(CKA_TRUSTED, bool: true)], in: session) == [certificate])
            }
        }

        @Test("NSS trust values map to the keychain's and back: delegator, peer, distrust, must-verify")
        func nssTrustValuesRoundTrip() throws {
            let ca = try Fixtures.authority.get()
            try withToken { token throws in
                let session = try token.openSession()
                let certificate = try token.createCertificate(ca, in: session)
                let values = [
                    CKT_NSS_TRUSTED_DELEGATOR, CKT_NSS_TRUSTED, CKT_NSS_NOT_TRUSTED,
                    CKT_NSS_MUST_VERIFY_TRUST,
                ]
                .map { CK_ULONG($0) }
                let trust = try token.createObject(try nssTrustTemplate(ca, values), in: session)
                let read = try [
                    CKA_NSS_TRUST_SERVER_AUTH, CKA_NSS_TRUST_CLIENT_AUTH, CKA_NSS_TRUST_EMAIL_PROTECTION,
                    CKA_NSS_TRUST_CODE_SIGNING,
                ].map { decodeULong(try token.attribute(CK_ATTRIBUTE_TYPE($0), of: trust, in: session)) }
                #expect(read == values)
                #expect(
                    try token.attribute(CKA_TRUSTED, of: certificate, in: session) == [1],
                    "an anchor for server auth")
                #expect(
                    try token.attribute(CK_ATTRIBUTE_TYPE(CKA_X_DISTRUSTED), of: certificate, in: session)
                        == [0])
                // Changing one purpose keeps the others.
                let set = try token.m.C_SetAttributeValue
                let rv = withTemplate([
                    Attribute(
                        CK_ATTRIBUTE_TYPE(CKA_NSS_TRUST_SERVER_AUTH), ulong: CK_ULONG(CKT_NSS_NOT_TRUSTED))
                ]) { set(session, trust, $0, $1) }
                #expect(rv == CKR_OK, "\(name(of: rv))")
                #expect(
                    decodeULong(
                        try token.attribute(
                            CK_ATTRIBUTE_TYPE(CKA_NSS_TRUST_SERVER_AUTH), of: trust, in: session))
                        == CK_ULONG(CKT_NSS_NOT_TRUSTED))
                #expect(
                    decodeULong(
                        try token.attribute(
                            CK_ATTRIBUTE_TYPE(CKA_NSS_TRUST_CLIENT_AUTH), of: trust, in: session))
                        == CK_ULONG(CKT_NSS_TRUSTED))
                #expect(try token.attribute(CKA_TRUSTED, of: certificate, in: session) == [0])
            }
        }

        @Test("Destroying the trust object clears the certificate's trust everywhere; the certificate stays")
        func destroyingTrustClearsIt() throws {
            let ca = try Fixtures.authority.get()
            try withToken { token throws in
                let session = try token.openSession()
                let certificate = try token.createCertificate(ca, in: session)
                let trust = try token.createObject(try nssTrustTemplate(ca, anchorValues), in: session)
                #expect(try token.m.C_DestroyObject(session, trust) == CKR_OK)
                #expect(try token.find([Attribute(CKA_CLASS, ulong: CKO_NSS_TRUST)], in: session).isEmpty)
                #expect(try token.find([Attribute(CKA_CLASS, ulong: CKO_TRUST)], in: session).isEmpty)
                #expect(try token.attribute(CKA_TRUSTED, of: certificate, in: session) == [0])
                #expect(try token.attribute(CKA_VALUE, of: certificate, in: session) == ca.der)
            }
        }

        @Test("A trust object whose issuer and serial match no certificate is refused and stores nothing")
        func unmatchedTrustIsRefused() throws {
            let ca = try Fixtures.authority.get()
            let other = try Fixtures.bob.get()
            try withToken { token throws in
                let session = try token.openSession()
                _ = try token.createCertificate(ca, in: session)
                let (rv, _) = try token.create(try nssTrustTemplate(other, anchorValues), in: session)
                #expect(rv == CKR_ATTRIBUTE_VALUE_INVALID, "\(name(of: rv))")
                // A session trust object for a token certificate names no session certificate.
                let (session_rv, _) = try token.create(
                    try nssTrustTemplate(ca, anchorValues, token: false), in: session)
                #expect(session_rv == CKR_ATTRIBUTE_VALUE_INVALID, "\(name(of: session_rv))")
                #expect(try token.find([Attribute(CKA_CLASS, ulong: CKO_NSS_TRUST)], in: session).isEmpty)
                #expect(try token.find([Attribute(CKA_TRUSTED, bool: true)], in: session).isEmpty)
            }
        }

        @Test("A trust object whose SHA-1 hash is another certificate's is refused")
        func mismatchedHashIsRefused() throws {
            let ca = try Fixtures.authority.get()
            let other = try Fixtures.bob.get()
            try withToken { token throws in
                let session = try token.openSession()
                _ = try token.createCertificate(ca, in: session)
                let template = try nssTrustTemplate(ca, anchorValues).map { attribute in
                    attribute.type == CK_ATTRIBUTE_TYPE(CKA_NSS_CERT_SHA1_HASH)
                        ? Attribute(attribute.type, other.sha1Fingerprint) : attribute
                }
                let (rv, _) = try token.create(template, in: session)
                #expect(rv == CKR_ATTRIBUTE_VALUE_INVALID, "\(name(of: rv))")
                let (badValue, _) = try token.create(try nssTrustTemplate(ca, [12345, 0, 0, 0]), in: session)
                #expect(badValue == CKR_ATTRIBUTE_VALUE_INVALID, "\(name(of: badValue))")
                #expect(try token.find([Attribute(CKA_CLASS, ulong: CKO_NSS_TRUST)], in: session).isEmpty)
            }
        }

        @Test("With a user PIN set, trust objects need a login: CKR_USER_NOT_LOGGED_IN and nothing written")
        func trustWithoutLoginIsRefused() throws {
            let ca = try Fixtures.authority.get()
            try withToken { token throws in
                try token.setPINs()
                let session = try token.openSession()
                let certificate = try token.createCertificate(ca, in: session)
                let (rv, _) = try token.create(try nssTrustTemplate(ca, anchorValues), in: session)
                #expect(rv == CKR_USER_NOT_LOGGED_IN, "\(name(of: rv))")
                #expect(try token.attribute(CKA_TRUSTED, of: certificate, in: session) == [0])
                try token.logInUser(session)
                let trust = try token.createObject(try nssTrustTemplate(ca, anchorValues), in: session)
                #expect(try token.attribute(CKA_TRUSTED, of: certificate, in: session) == [1])
                #expect(try token.m.C_Logout(session) == CKR_OK)
                #expect(try token.m.C_DestroyObject(session, trust) == CKR_USER_NOT_LOGGED_IN)
                // Logged out, the anchor's seal cannot be verified: it does not count here
                // (KeychainCore TrustIntegrity), but it is still stored.
                #expect(try token.attribute(CKA_TRUSTED, of: certificate, in: session) == [0])
                try token.logInUser(session)
                #expect(
                    try token.attribute(CKA_TRUSTED, of: certificate, in: session) == [1], "still trusted")
            }
        }

        @Test(
            "CKA_TRUSTED TRUE is the SO's: refused to a user session, accepted from the SO, never changed by C_SetAttributeValue"
        )
        func trustedAttributeRules() throws {
            let ca = try Fixtures.authority.get()
            try withToken { token throws in
                try token.setPINs()
                let session = try token.openSession()
                let trusted = TestToken.certificateTemplate(ca.der) + [Attribute(CKA_TRUSTED, bool: true)]
                let (asPublic, _) = try token.create(trusted, in: session)
                #expect(asPublic == CKR_ATTRIBUTE_READ_ONLY, "\(name(of: asPublic))")
                try token.logInUser(session)
                let (asUser, _) = try token.create(trusted, in: session)
                #expect(asUser == CKR_ATTRIBUTE_READ_ONLY, "\(name(of: asUser))")
                #expect(try token.m.C_Logout(session) == CKR_OK)
                #expect(try token.login(session, as: CK_USER_TYPE(CKU_SO), pin: coreSOPIN) == CKR_OK)
                let certificate = try token.createObject(trusted, in: session)
                #expect(try token.attribute(CKA_TRUSTED, of: certificate, in: session) == [1])
                let set = try token.m.C_SetAttributeValue
                let rv = withTemplate([Attribute(CKA_TRUSTED, bool: false)]) {
                    set(session, certificate, $0, $1)
                }
                #expect(rv == CKR_ATTRIBUTE_READ_ONLY, "\(name(of: rv))")
                // The SO's anchor is an anchor for every purpose in both trust vocabularies.
                let nss = try token.find([Attribute(CKA_CLASS, ulong: CKO_NSS_TRUST)], in: session)
                #expect(nss.count == 1)
                let first = try #require(nss.first)
                #expect(
                    decodeULong(
                        try token.attribute(
                            CK_ATTRIBUTE_TYPE(CKA_NSS_TRUST_CODE_SIGNING), of: first, in: session))
                        == CK_ULONG(CKT_NSS_TRUSTED_DELEGATOR))
            }
        }

        @Test("The PKCS#11 3.2 CKO_TRUST view shows the same trust, with a SHA-256 hash of the certificate")
        func pkcs11TrustView() throws {
            let ca = try Fixtures.authority.get()
            try withToken { token throws in
                let session = try token.openSession()
                let certificate = try token.createCertificate(ca, in: session)
                _ = try token.createObject(
                    try nssTrustTemplate(
                        ca,
                        [
                            CKT_NSS_TRUSTED_DELEGATOR, CKT_NSS_NOT_TRUSTED, CKT_NSS_TRUST_UNKNOWN,
                            CKT_NSS_MUST_VERIFY_TRUST,
                        ].map { CK_ULONG($0) }),
                    in: session)
                let found = try token.find([Attribute(CKA_CLASS, ulong: CKO_TRUST)], in: session)
                #expect(found.count == 1)
                let trust = try #require(found.first)
                #expect(
                    decodeULong(try token.attribute(CKA_TRUST_SERVER_AUTH, of: trust, in: session))
                        == CKT_TRUST_ANCHOR)
                #expect(
                    decodeULong(try token.attribute(CKA_TRUST_CLIENT_AUTH, of: trust, in: session))
                        == CKT_NOT_TRUSTED)
                #expect(
                    decodeULong(try token.attribute(CKA_TRUST_CODE_SIGNING, of: trust, in: session))
                        == CKT_TRUST_UNKNOWN)
                #expect(
                    decodeULong(try token.attribute(CKA_NAME_HASH_ALGORITHM, of: trust, in: session))
                        == CKM_SHA256)
                let hash = try #require(try token.attribute(CKA_HASH_OF_CERTIFICATE, of: trust, in: session))
                #expect(hash == (try digest("-sha256", ca.der)))
                // Destroy through one view, and the other view and CKA_TRUSTED follow.
                #expect(try token.m.C_DestroyObject(session, trust) == CKR_OK)
                #expect(try token.find([Attribute(CKA_CLASS, ulong: CKO_NSS_TRUST)], in: session).isEmpty)
                #expect(try token.attribute(CKA_TRUSTED, of: certificate, in: session) == [0])
                // Create through the 3.2 view, with the hash it read.
                let fields = try DER.fields(of: ca.der)
                let template = [
                    Attribute(CKA_CLASS, ulong: CKO_TRUST), Attribute(CKA_TOKEN, bool: true),
                    Attribute(CKA_ISSUER, fields.issuer), Attribute(CKA_SERIAL_NUMBER, fields.serial),
                    Attribute(CKA_HASH_OF_CERTIFICATE, hash),
                    Attribute(CKA_NAME_HASH_ALGORITHM, ulong: CKM_SHA256),
                    Attribute(CKA_TRUST_EMAIL_PROTECTION, ulong: CKT_TRUST_ANCHOR),
                ]
                _ = try token.createObject(template, in: session)
                let nss = try #require(
                    try token.find([Attribute(CKA_CLASS, ulong: CKO_NSS_TRUST)], in: session).first)
                #expect(
                    decodeULong(
                        try token.attribute(
                            CK_ATTRIBUTE_TYPE(CKA_NSS_TRUST_EMAIL_PROTECTION), of: nss, in: session))
                        == CK_ULONG(CKT_NSS_TRUSTED_DELEGATOR))
                #expect(
                    decodeULong(
                        try token.attribute(
                            CK_ATTRIBUTE_TYPE(CKA_NSS_TRUST_SERVER_AUTH), of: nss, in: session))
                        == CK_ULONG(CKT_NSS_MUST_VERIFY_TRUST))
                // A 3.2 trust object that trusts needs its hash, and a wrong one is refused.
                let noHash = template.filter { $0.type != CKA_HASH_OF_CERTIFICATE }
                #expect(try token.create(noHash, in: session).0 == CKR_TEMPLATE_INCOMPLETE)
                let wrongHash =
                    noHash + [Attribute(CKA_HASH_OF_CERTIFICATE, [UInt8](repeating: 7, count: 32))]
                #expect(try token.create(wrongHash, in: session).0 == CKR_ATTRIBUTE_VALUE_INVALID)
            }
        }

        @Test("A certificate distrusted for every purpose carries CKA_X_DISTRUSTED, p11-kit's blocklist flag")
        func distrustIsBlocklisted() throws {
            let ca = try Fixtures.authority.get()
            try withToken { token throws in
                let session = try token.openSession()
                let certificate = try token.createCertificate(ca, in: session)
                #expect(
                    try token.attribute(CK_ATTRIBUTE_TYPE(CKA_X_DISTRUSTED), of: certificate, in: session)
                        == [0])
                _ = try token.createObject(
                    try nssTrustTemplate(ca, [CK_ULONG](repeating: CK_ULONG(CKT_NSS_NOT_TRUSTED), count: 4)),
                    in: session)
                #expect(
                    try token.attribute(CK_ATTRIBUTE_TYPE(CKA_X_DISTRUSTED), of: certificate, in: session)
                        == [1])
                #expect(
                    try token.find([Attribute(CK_ATTRIBUTE_TYPE(CKA_X_DISTRUSTED), bool: true)], in: session)
                        == [certificate])
            }
        }

        @Test(
            "An anchor for some purposes only gets p11-kit's stapled extendedKeyUsage extension listing them")
        func purposeExtensionForPartialAnchor() throws {
            let ca = try Fixtures.authority.get()
            try withToken { token throws in
                let session = try token.openSession()
                _ = try token.createCertificate(ca, in: session)
                let extensionClass = Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_X_CERTIFICATE_EXTENSION))
                let byKey = [extensionClass, Attribute(CKA_PUBLIC_KEY_INFO, ca.subjectPublicKeyInfo)]
                _ = try token.createObject(try nssTrustTemplate(ca, anchorValues), in: session)
                #expect(try token.find(byKey, in: session).isEmpty, "an anchor for every purpose needs none")
                let values = [
                    CKT_NSS_TRUSTED_DELEGATOR, CKT_NSS_MUST_VERIFY_TRUST, CKT_NSS_TRUSTED_DELEGATOR,
                    CKT_NSS_NOT_TRUSTED,
                ].map { CK_ULONG($0) }
                _ = try token.createObject(try nssTrustTemplate(ca, values), in: session)
                let found = try token.find(byKey, in: session)
                #expect(found.count == 1)
                let object = try #require(found.first)
                let value = try #require(try token.attribute(CKA_VALUE, of: object, in: session))
                let path = NSTemporaryDirectory() + "p11keychain-eku-\(UUID().uuidString)"
                try Data(value).write(to: URL(fileURLWithPath: path))
                defer { try? FileManager.default.removeItem(atPath: path) }
                let parsed = try runCommand(
                    TestCertificate.openssl, ["asn1parse", "-inform", "DER", "-in", path, "-strparse", "7"])
                #expect(parsed.status == 0, "\(parsed.standardError)")
                #expect(parsed.standardOutput.contains("TLS Web Server Authentication"))
                #expect(parsed.standardOutput.contains("E-mail Protection"))
                #expect(!parsed.standardOutput.contains("Client Authentication"))
                #expect(!parsed.standardOutput.contains("Code Signing"))
                #expect(try token.m.C_DestroyObject(session, object) == CKR_ACTION_PROHIBITED)
                let (rv, _) = try token.create(byKey + [Attribute(CKA_VALUE, value)], in: session)
                #expect(rv == CKR_ATTRIBUTE_VALUE_INVALID, "not created by callers: \(name(of: rv))")
            }
        }

        @Test("Trust stays with the certificate across sessions and re-initialisation of the module")
        func trustPersists() throws {
            let ca = try Fixtures.authority.get()
            try withToken { token throws in
                var session = try token.openSession()
                _ = try token.createCertificate(ca, in: session)
                _ = try token.createObject(try nssTrustTemplate(ca, anchorValues), in: session)
                #expect(try token.m.C_Finalize(nil) == CKR_OK)
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
                session = try token.openSession(readWrite: false)
                #expect(try token.find([Attribute(CKA_CLASS, ulong: CKO_NSS_TRUST)], in: session).count == 1)
                #expect(try token.find([], in: session).count == 3, "the certificate and its two trust views")
            }
        }
    }
}
