import CPKCS11
import Foundation
import Testing

/// An NSS trust object for `certificate` with one CK_TRUST value for all four purposes (what
/// NSS's certutil -M writes).
func promiseTrustTemplate(_ certificate: TestCertificate, _ value: UInt) throws -> [Attribute] {
    let fields = try DER.fields(of: certificate.der)
    let purposes = [
        CKA_NSS_TRUST_SERVER_AUTH, CKA_NSS_TRUST_CLIENT_AUTH, CKA_NSS_TRUST_EMAIL_PROTECTION,
        CKA_NSS_TRUST_CODE_SIGNING,
    ]
    return [
        Attribute(CKA_CLASS, ulong: CKO_NSS_TRUST), Attribute(CKA_TOKEN, bool: true),
        Attribute(CKA_ISSUER, fields.issuer), Attribute(CKA_SERIAL_NUMBER, fields.serial),
        Attribute(CKA_NSS_CERT_SHA1_HASH, certificate.sha1Fingerprint),
    ] + purposes.map { Attribute(CK_ATTRIBUTE_TYPE($0), ulong: CK_ULONG(value)) }
}

/// What the trust attacks start from: a CA the user distrusted for every purpose with the
/// PIN, and another certificate stored without trust; nobody logged in.
struct TrustVictims {
    var distrusted: CK_OBJECT_HANDLE
    var trustObject: CK_OBJECT_HANDLE
    var other: CK_OBJECT_HANDLE
    var otherCertificate: TestCertificate
}

/// A trust attack: the calls of a process of the same uid without the PIN.
struct TrustAttack: Sendable, CustomTestStringConvertible {
    var path: String
    var accepted: Set<CK_RV>
    var attack: @Sendable (TestToken, CK_SESSION_HANDLE, TrustVictims) throws -> CK_RV

    var testDescription: String { path }

    init(
        _ path: String, accepted: [UInt],
        _ attack: @escaping @Sendable (TestToken, CK_SESSION_HANDLE, TrustVictims) throws -> CK_RV
    ) {
        self.path = path
        self.accepted = Set(accepted.map { CK_RV($0) })
        self.attack = attack
    }
}

/// "Trust needs the PIN" (README "Trust": who may change trust; p11keychain(1)
/// add-trusted-cert / remove-trusted-cert --pin): once a user PIN is set, trust is changed,
/// added or removed only by the user or the SO logged in; CKA_TRUSTED TRUE is the SO's alone.
enum TrustPaths {
    static let notLoggedIn = [UInt(CKR_USER_NOT_LOGGED_IN)]

    static let all: [TrustAttack] = [
        TrustAttack("C_DestroyObject of the distrusted certificate", accepted: notLoggedIn) {
            token, session, victims in
            try token.m.C_DestroyObject(session, victims.distrusted)
        },
        TrustAttack("C_DestroyObject of its NSS trust object", accepted: notLoggedIn) {
            token, session, victims in
            try token.m.C_DestroyObject(session, victims.trustObject)
        },
        TrustAttack(
            "C_SetAttributeValue(CKA_NSS_TRUST_SERVER_AUTH=CKT_NSS_TRUSTED_DELEGATOR) of its trust object",
            accepted: notLoggedIn
        ) { token, session, victims in
            try token.set(
                [
                    Attribute(
                        CK_ATTRIBUTE_TYPE(CKA_NSS_TRUST_SERVER_AUTH),
                        ulong: CK_ULONG(CKT_NSS_TRUSTED_DELEGATOR))
                ], of: victims.trustObject, in: session)
        },
        TrustAttack(
            "C_CreateObject of an NSS trust object that makes the distrusted CA unspecified",
            accepted: notLoggedIn
        ) { token, session, _ in
            try token.create(
                try promiseTrustTemplate(try Fixtures.authority.get(), UInt(CKT_NSS_MUST_VERIFY_TRUST)),
                in: session
            ).0
        },
        TrustAttack(
            "C_CreateObject of an NSS trust object anchoring another certificate", accepted: notLoggedIn
        ) {
            token, session, victims in
            try token.create(
                try promiseTrustTemplate(victims.otherCertificate, UInt(CKT_NSS_TRUSTED_DELEGATOR)),
                in: session
            ).0
        },
        TrustAttack(
            "C_CreateObject of a certificate with CKA_TRUSTED=TRUE", accepted: [UInt(CKR_ATTRIBUTE_READ_ONLY)]
        ) { token, session, _ in
            let certificate = try Fixtures.carol.get()
            return try token.create(
                TestToken.certificateTemplate(certificate.der) + [flag(CKA_TRUSTED, true)], in: session
            ).0
        },
        TrustAttack(
            "C_SetAttributeValue(CKA_TRUSTED=TRUE) of another certificate",
            accepted: [UInt(CKR_ATTRIBUTE_READ_ONLY), UInt(CKR_USER_NOT_LOGGED_IN)]
        ) { token, session, victims in
            try token.set([flag(CKA_TRUSTED, true)], of: victims.other, in: session)
        },
    ]
}

extension ModuleTests.PromiseTests {
    @Test(
        "Trust needs the PIN: without a login no call distrusts, trusts or removes trust, and the distrust stays",
        arguments: TrustPaths.all)
    func trustNeedsThePIN(path: TrustAttack) throws {
        let authority = try Fixtures.authority.get()
        let other = try Fixtures.bob.get()
        try withPromiseToken { token, session in
            let distrusted = try token.createCertificate(authority, in: session)
            let trustObject = try token.createObject(
                try promiseTrustTemplate(authority, UInt(CKT_NSS_NOT_TRUSTED)), in: session)
            let otherHandle = try token.createCertificate(other, in: session)
            try #require(
                try token.attribute(CK_ATTRIBUTE_TYPE(CKA_X_DISTRUSTED), of: distrusted, in: session) == [1])
            try #require(try token.m.C_Logout(session) == CKR_OK)
            let victims = TrustVictims(
                distrusted: distrusted, trustObject: trustObject, other: otherHandle, otherCertificate: other)
            let rv = try path.attack(token, session, victims)
            #expect(
                path.accepted.contains(rv),
                "\(path.path): expected \(describe(path.accepted)), got \(promiseRVName(rv))")
            // What the user set with the PIN is what every process sees, logged in or not.
            let found = try token.find(
                [Attribute(CK_ATTRIBUTE_TYPE(CKA_X_DISTRUSTED), bool: true)], in: session)
            #expect(found == [distrusted], "\(path.path): the CA is no longer distrusted")
            #expect(
                try token.find([flag(CKA_TRUSTED, true)], in: session).isEmpty,
                "\(path.path): a certificate became trusted without the PIN")
        }
    }
}
