import CPKCS11
import Foundation
import Testing

/// The private objects a logged-in user made before logging out, for the attacks of a process
/// of the same uid without the PIN.
struct PrivateVictims {
    var privateKey: CK_OBJECT_HANDLE
    var privateLabel: [UInt8]
    /// A sensitive P-256 key with CKA_PRIVATE=FALSE: found without a login, used only with one.
    var publicKey: CK_OBJECT_HANDLE
    var publicScalar: [UInt8]
    var data: CK_OBJECT_HANDLE
    var dataLabel: [UInt8]
    var dataValue: [UInt8]
}

extension TestToken {
    /// Makes the victims while logged in, then logs out.
    func privateVictims(in session: CK_SESSION_HANDLE) throws -> PrivateVictims {
        let label = "private-" + hex(randomBytes(8))
        let privateKey = try createObject(
            ecPrivateKeyTemplate(scalar: randomP256Scalar(), label: label, extra: [flag(CKA_DERIVE, true)]),
            in: session)
        let scalar = randomP256Scalar()
        let publicKey = try createObject(
            ecPrivateKeyTemplate(
                scalar: scalar, label: "not-private",
                extra: [flag(CKA_PRIVATE, false), flag(CKA_DERIVE, true)]), in: session)
        let dataLabel = "password-" + hex(randomBytes(8))
        let value = randomBytes(24)
        let data = try createObject(
            [
                Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_DATA)), flag(CKA_TOKEN, true),
                flag(CKA_PRIVATE, true),
                Attribute(CKA_LABEL, string: dataLabel), Attribute(CKA_VALUE, value),
            ], in: session)
        try #require(try m.C_Logout(session) == CKR_OK)
        return PrivateVictims(
            privateKey: privateKey, privateLabel: Array(label.utf8), publicKey: publicKey,
            publicScalar: scalar,
            data: data, dataLabel: Array(dataLabel.utf8), dataValue: value)
    }

    /// A token password (private data object) whose access control wants the user PIN for
    /// each use, as `SecAccessControlCreateWithFlags(.userPresence)` makes it.
    func guardedPassword(_ value: [UInt8], in session: CK_SESSION_HANDLE) throws -> CK_OBJECT_HANDLE {
        try createObject(
            [
                Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_DATA)), flag(CKA_TOKEN, true),
                flag(CKA_PRIVATE, true),
                Attribute(CKA_VALUE, value),
                Attribute(
                    CK_ATTRIBUTE_TYPE(CKA_P11K_ACCESS_CONTROL),
                    ulong: CK_ULONG(P11K_ACCESS_CONTROL_USER_PRESENCE)),
            ], in: session)
    }

    /// The labels of every object `template` finds.
    func labels(found template: [Attribute], in session: CK_SESSION_HANDLE) throws -> [UInt8] {
        try find(template, in: session).flatMap { try read(CKA_LABEL, of: $0, in: session).1 }
    }

    /// C_SignInit with CKM_ECDSA_SHA256.
    func ecdsaSignInit(_ key: CK_OBJECT_HANDLE, in session: CK_SESSION_HANDLE) throws -> CK_RV {
        try signInit(session, UInt(CKM_ECDSA_SHA256), key: key)
    }

    /// ECDH from `key` with a fresh peer point (CKD_NULL) into a readable session key.
    func ecdh(from key: CK_OBJECT_HANDLE, extra: [Attribute] = [], in session: CK_SESSION_HANDLE) throws
        -> CK_RV
    {
        let peer = bytes(
            hex:
                "046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c2964fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5"
        )
        let box = MechanismBox(CKM_ECDH1_DERIVE)
        let point = box.copy(peer)
        box.setParameter(
            CK_ECDH1_DERIVE_PARAMS(
                kdf: CK_ULONG(CKD_NULL), ulSharedDataLen: 0, pSharedData: nil,
                ulPublicDataLen: CK_ULONG(peer.count),
                pPublicData: point.baseAddress?.assumingMemoryBound(to: UInt8.self)))
        return try derive(box, baseKey: key, template: readableSecretKey(length: 32) + extra, in: session).0
    }
}

/// "Private objects are invisible until login; a key with CKA_PRIVATE=FALSE is found without a
/// login and used only with one" (README "PINs and private objects"; ARCHITECTURE.md §6.2, §6.3), attacked by a
/// process of the same uid without the PIN, holding the handles the user had.
enum WithoutLoginPaths {
    static let handleGone = [UInt(CKR_OBJECT_HANDLE_INVALID)]
    static let keyRefused = [UInt(CKR_KEY_HANDLE_INVALID), UInt(CKR_USER_NOT_LOGGED_IN)]
    static let notLoggedIn = [UInt(CKR_USER_NOT_LOGGED_IN)]
    /// An access-controlled item used without its per-use PIN: whichever refusal the core
    /// gives, never CKR_OK.
    static let perUsePINMissing = [
        UInt(CKR_USER_NOT_LOGGED_IN), UInt(CKR_ATTRIBUTE_READ_ONLY), UInt(CKR_ATTRIBUTE_SENSITIVE),
        UInt(CKR_ACTION_PROHIBITED), UInt(CKR_KEY_FUNCTION_NOT_PERMITTED),
    ]

    static let all: [Attack] = [
        Attack("C_FindObjects with an empty template", refusal: "no private object found", accepted: [0]) {
            token, session in
            let victims = try token.privateVictims(in: session)
            let labels = try token.labels(found: [], in: session)
            return AttackResult(rv: CK_RV(CKR_OK), secret: victims.privateLabel, obtained: labels)
        },
        Attack(
            "C_FindObjects {CKA_CLASS=CKO_DATA, CKA_LABEL} of a private data object",
            refusal: "nothing found", accepted: [0]
        ) { token, session in
            let victims = try token.privateVictims(in: session)
            let template = [
                Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_DATA)), Attribute(CKA_LABEL, victims.dataLabel),
            ]
            return AttackResult(
                rv: CK_RV(CKR_OK), secret: victims.dataLabel,
                obtained: try token.labels(found: template, in: session))
        },
        Attack(
            "C_GetAttributeValue(CKA_LABEL) of a private key's handle", refusal: "CKR_OBJECT_HANDLE_INVALID",
            accepted: handleGone
        ) { token, session in
            let victims = try token.privateVictims(in: session)
            let (rv, label) = try token.read(CKA_LABEL, of: victims.privateKey, in: session)
            return AttackResult(rv: rv, secret: victims.privateLabel, obtained: label)
        },
        Attack(
            "C_GetAttributeValue(CKA_VALUE) of a private data object's handle",
            refusal: "CKR_OBJECT_HANDLE_INVALID",
            accepted: handleGone
        ) { token, session in
            let victims = try token.privateVictims(in: session)
            let (rv, value) = try token.read(CKA_VALUE, of: victims.data, in: session)
            return AttackResult(rv: rv, secret: victims.dataValue, obtained: value)
        },
        Attack(
            "C_GetAttributeValue(CKA_VALUE) of a CKA_PRIVATE=FALSE private key",
            refusal: "CKR_ATTRIBUTE_SENSITIVE",
            accepted: [UInt(CKR_ATTRIBUTE_SENSITIVE)]
        ) { token, session in
            let victims = try token.privateVictims(in: session)
            let (rv, value) = try token.read(CKA_VALUE, of: victims.publicKey, in: session)
            return AttackResult(rv: rv, secret: victims.publicScalar, obtained: value)
        },
        Attack(
            "C_SignInit with a private key's handle", refusal: "CKR_KEY_HANDLE_INVALID", accepted: keyRefused
        ) { token, session in
            let victims = try token.privateVictims(in: session)
            return AttackResult(rv: try token.ecdsaSignInit(victims.privateKey, in: session), secret: [])
        },
        Attack(
            "C_SignInit with a CKA_PRIVATE=FALSE private key", refusal: "CKR_USER_NOT_LOGGED_IN",
            accepted: notLoggedIn
        ) { token, session in
            let victims = try token.privateVictims(in: session)
            return AttackResult(rv: try token.ecdsaSignInit(victims.publicKey, in: session), secret: [])
        },
        Attack(
            "C_DeriveKey(CKM_ECDH1_DERIVE) from a CKA_PRIVATE=FALSE private key",
            refusal: "CKR_USER_NOT_LOGGED_IN",
            accepted: notLoggedIn
        ) { token, session in
            let victims = try token.privateVictims(in: session)
            return AttackResult(rv: try token.ecdh(from: victims.publicKey, in: session), secret: [])
        },
        Attack(
            "C_CopyObject {CKA_TOKEN=FALSE} of a CKA_PRIVATE=FALSE private key, then C_SignInit with the copy",
            refusal: "CKR_USER_NOT_LOGGED_IN", accepted: notLoggedIn
        ) { token, session in
            let victims = try token.privateVictims(in: session)
            let (rv, copy) = try token.copy(victims.publicKey, with: [flag(CKA_TOKEN, false)], in: session)
            guard rv == CKR_OK else { return AttackResult(rv: rv, secret: []) }
            return AttackResult(rv: try token.ecdsaSignInit(copy, in: session), secret: [])
        },
        Attack(
            "C_CopyObject {CKA_TOKEN=FALSE} of a private key's handle", refusal: "CKR_OBJECT_HANDLE_INVALID",
            accepted: handleGone
        ) { token, session in
            let victims = try token.privateVictims(in: session)
            return AttackResult(
                rv: try token.copy(victims.privateKey, with: [flag(CKA_TOKEN, false)], in: session).0,
                secret: [])
        },
        Attack(
            "C_SetAttributeValue(CKA_LABEL) of a private key's handle", refusal: "CKR_OBJECT_HANDLE_INVALID",
            accepted: handleGone
        ) { token, session in
            let victims = try token.privateVictims(in: session)
            let rv = try token.set(
                [Attribute(CKA_LABEL, string: "renamed")], of: victims.privateKey, in: session)
            try token.logInUser(session)
            #expect(try token.read(CKA_LABEL, of: victims.privateKey, in: session).1 == victims.privateLabel)
            return AttackResult(rv: rv, secret: [])
        },
        Attack(
            "C_DestroyObject of a private key's handle", refusal: "CKR_OBJECT_HANDLE_INVALID",
            accepted: handleGone
        ) { token, session in
            let victims = try token.privateVictims(in: session)
            let rv = try token.m.C_DestroyObject(session, victims.privateKey)
            try token.logInUser(session)
            #expect(
                try token.find([Attribute(CKA_LABEL, victims.privateLabel)], in: session).count == 1,
                "the private key is gone")
            return AttackResult(rv: rv, secret: [])
        },
        Attack(
            "C_CreateObject of a CKA_PRIVATE=FALSE key's parts again (the orphan re-import), then C_DestroyObject of the handle it gives",
            refusal: "CKR_USER_NOT_LOGGED_IN, and the other writer's key stays", accepted: notLoggedIn
        ) { token, session in
            let victims = try token.privateVictims(in: session)
            let (rv, handle) = try token.create(
                ecPrivateKeyTemplate(
                    scalar: victims.publicScalar, label: "not-private",
                    extra: [flag(CKA_PRIVATE, false), flag(CKA_DERIVE, true)]), in: session)
            if rv == CKR_OK { _ = try token.m.C_DestroyObject(session, handle) }
            try token.logInUser(session)
            #expect(
                try token.read(CKA_LABEL, of: victims.publicKey, in: session).0 == CKR_OK,
                "the other writer's key was destroyed through the re-import's handle")
            return AttackResult(rv: rv, secret: [])
        },
        Attack(
            "C_SetAttributeValue(CKA_VALUE) of a password whose access control wants the PIN for each use, logged in without it",
            refusal: "refused: the per-use PIN was not given", accepted: perUsePINMissing
        ) { token, session in
            let secret = randomBytes(24)
            let password = try token.guardedPassword(secret, in: session)
            let rv = try token.set([Attribute(CKA_VALUE, randomBytes(24))], of: password, in: session)
            return AttackResult(rv: rv, secret: [])
        },
        Attack(
            "C_GetAttributeValue(CKA_VALUE) of a password whose access control wants the PIN for each use, logged in without it",
            refusal: "CKR_ATTRIBUTE_SENSITIVE", accepted: [UInt(CKR_ATTRIBUTE_SENSITIVE)]
        ) { token, session in
            let secret = randomBytes(24)
            let password = try token.guardedPassword(secret, in: session)
            let (rv, value) = try token.read(CKA_VALUE, of: password, in: session)
            return AttackResult(rv: rv, secret: secret, obtained: value)
        },
        Attack(
            "C_CopyObject {CKA_PRIVATE=FALSE} of a password whose access control wants the PIN for each use, then read the copy after C_Logout",
            refusal: "refused",
            accepted: perUsePINMissing + [UInt(CKR_TEMPLATE_INCONSISTENT), UInt(CKR_ATTRIBUTE_VALUE_INVALID)]
        ) { token, session in
            let secret = randomBytes(24)
            let password = try token.guardedPassword(secret, in: session)
            let (rv, _) = try token.copy(password, with: [flag(CKA_PRIVATE, false)], in: session)
            let obtained = try token.valuesReadableWithoutLogin(in: session)
            return AttackResult(rv: rv, secret: secret, obtained: obtained)
        },
    ]
}

extension ModuleTests.PromiseTests {
    @Test(
        "Without the PIN, private objects are invisible and no private key is used, whatever the handle or call",
        arguments: WithoutLoginPaths.all)
    func privateObjectsNeedTheLogin(path: Attack) throws {
        try withPromiseToken { token, session in
            let result = try path.attack(token, session)
            #expect(
                path.accepted.contains(result.rv),
                "\(path.path): expected \(path.refusal) (\(describe(path.accepted))), got \(promiseRVName(result.rv))"
            )
            #expect(!result.leaked, "\(path.path): a process without the PIN obtained a private value")
        }
    }
}
