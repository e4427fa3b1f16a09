import CPKCS11
import Foundation
import Testing

/// The token objects a read-only session attacks: a public data object, a certificate and
/// keys that may wrap, unwrap and derive, made in a read-write session.
struct ReadOnlyTargets {
    var data: CK_OBJECT_HANDLE
    var certificate: CK_OBJECT_HANDLE
    var wrappingKey: CK_OBJECT_HANDLE
    var extractableKey: CK_OBJECT_HANDLE
    var derivingKey: CK_OBJECT_HANDLE
}

/// A call of a read-only session that would write a token object.
struct ReadOnlyAttack: Sendable, CustomTestStringConvertible {
    var path: String
    var attack: @Sendable (TestToken, CK_SESSION_HANDLE, ReadOnlyTargets) throws -> CK_RV

    var testDescription: String { path }

    init(
        _ path: String,
        _ attack: @escaping @Sendable (TestToken, CK_SESSION_HANDLE, ReadOnlyTargets) throws -> CK_RV
    ) {
        self.path = path
        self.attack = attack
    }
}

/// "A read-only session cannot change token objects" (PKCS#11 v2.40 §5.6, README "Read-only
/// stores": R/W sessions are refused, so every write goes through this rule): every call that
/// would create, change or destroy a token object, or change a PIN, is CKR_SESSION_READ_ONLY.
enum ReadOnlyPaths {
    static let onToken = [flag(CKA_TOKEN, true)]

    static let all: [ReadOnlyAttack] = [
        ReadOnlyAttack("C_CreateObject of a token data object") { token, session, _ in
            try token.create(
                [Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_DATA)), Attribute(CKA_VALUE, [1])] + onToken,
                in: session
            ).0
        },
        ReadOnlyAttack("C_CreateObject of a token certificate") { token, session, _ in
            try token.create(TestToken.certificateTemplate(try Fixtures.carol.get().der), in: session).0
        },
        ReadOnlyAttack("C_CreateObject of a token AES key") { token, session, _ in
            try token.create(
                [
                    Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY)),
                    Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_AES)), Attribute(CKA_VALUE, randomBytes(16)),
                ] + onToken, in: session
            ).0
        },
        ReadOnlyAttack("C_CopyObject {CKA_TOKEN=TRUE} of a token object") { token, session, targets in
            try token.copy(targets.data, with: onToken, in: session).0
        },
        ReadOnlyAttack("C_SetAttributeValue(CKA_LABEL) of a token data object") { token, session, targets in
            try token.set([Attribute(CKA_LABEL, string: "renamed")], of: targets.data, in: session)
        },
        ReadOnlyAttack("C_SetAttributeValue(CKA_LABEL) of a token certificate") { token, session, targets in
            try token.set([Attribute(CKA_LABEL, string: "renamed")], of: targets.certificate, in: session)
        },
        ReadOnlyAttack("C_DestroyObject of a token data object") { token, session, targets in
            try token.m.C_DestroyObject(session, targets.data)
        },
        ReadOnlyAttack("C_DestroyObject of a token key") { token, session, targets in
            try token.m.C_DestroyObject(session, targets.wrappingKey)
        },
        ReadOnlyAttack("C_GenerateKey of a token AES key") { token, session, _ in
            try token.generateSecretKey(
                [
                    Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY)),
                    Attribute(CKA_VALUE_LEN, ulong: 32),
                ] + onToken, in: session
            ).0
        },
        ReadOnlyAttack("C_GenerateKeyPair of a token P-256 pair") { token, session, _ in
            try token.generate(.p256, in: session).0
        },
        ReadOnlyAttack("C_UnwrapKey into a token key") { token, session, targets in
            let (wrapped, blob) = try token.wrap(
                MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: targets.wrappingKey, key: targets.extractableKey,
                in: session)
            try #require(wrapped == CKR_OK, "wrapping in the read-only session returned \(rvName(wrapped))")
            return try token.unwrap(
                MechanismBox(CKM_AES_KEY_WRAP), unwrappingKey: targets.wrappingKey, blob,
                template: readableSecretKey(type: UInt(CKK_AES)) + onToken, in: session
            ).0
        },
        ReadOnlyAttack("C_DeriveKey(CKM_HKDF_DERIVE) into a token key") { token, session, targets in
            try token.derive(
                rfc5869Mechanism(UInt(CKM_HKDF_DERIVE)), baseKey: targets.derivingKey,
                template: readableSecretKey(length: 32) + onToken, in: session
            ).0
        },
        ReadOnlyAttack("C_SetPIN of the user PIN") { token, session, _ in
            var old = Array(coreUserPIN.utf8)
            var new = Array("5678".utf8)
            return try token.m.C_SetPIN(session, &old, CK_ULONG(old.count), &new, CK_ULONG(new.count))
        },
        ReadOnlyAttack("C_CreateObject of an NSS trust object") { token, session, _ in
            try token.create(
                try promiseTrustTemplate(try Fixtures.authority.get(), UInt(CKT_NSS_TRUSTED_DELEGATOR)),
                in: session
            ).0
        },
    ]
}

extension ModuleTests.PromiseTests {
    @Test(
        "A read-only session cannot change token objects or PINs: CKR_SESSION_READ_ONLY and the token is as it was",
        arguments: ReadOnlyPaths.all)
    func readOnlySessionsChangeNothing(path: ReadOnlyAttack) throws {
        let authority = try Fixtures.authority.get()
        try withPromiseToken { token, session in
            let targets = ReadOnlyTargets(
                data: try token.createObject(
                    [
                        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_DATA)), flag(CKA_TOKEN, true),
                        flag(CKA_PRIVATE, false), Attribute(CKA_LABEL, string: "data"),
                        Attribute(CKA_VALUE, [7]),
                    ], in: session),
                certificate: try token.createCertificate(authority, in: session),
                wrappingKey: try token.createSecretKey(
                    randomBytes(32), extra: ReadOnlyPaths.onToken + attackerAttributes, in: session),
                extractableKey: try token.createSecretKey(
                    randomBytes(16), extra: ReadOnlyPaths.onToken + extractable, in: session),
                derivingKey: try token.createSecretKey(
                    randomBytes(32), type: UInt(CKK_GENERIC_SECRET),
                    extra: ReadOnlyPaths.onToken + [flag(CKA_DERIVE, true)], in: session))
            let tokenObjects = [flag(CKA_TOKEN, true)]
            let before = try token.find(tokenObjects, in: session).map {
                try token.read(CKA_LABEL, of: $0, in: session).1
            }
            let readOnly = try token.openSession(readWrite: false)
            let rv = try path.attack(token, readOnly, targets)
            #expect(
                rv == CKR_SESSION_READ_ONLY,
                "\(path.path): expected CKR_SESSION_READ_ONLY, got \(promiseRVName(rv))")
            let after = try token.find(tokenObjects, in: session).map {
                try token.read(CKA_LABEL, of: $0, in: session).1
            }
            #expect(after == before, "\(path.path): the token objects changed")
            // The user PIN is the one it was: a new process logs in with it.
            _ = try token.m.C_Logout(session)
            #expect(try token.login(session, pin: coreUserPIN) == CKR_OK)
        }
    }
}
