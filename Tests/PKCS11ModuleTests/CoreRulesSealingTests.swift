import CPKCS11
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A secret a test put into the token, and where it came from, for the raw scans.
private struct PlantedSecret {
    var what: String
    var bytes: [UInt8]
}

/// The scan of every store file: each planted secret that is in the clear somewhere, with the
/// files that hold it.
private func leaks(of secrets: [PlantedSecret], in token: TestToken) -> [String] {
    secrets.compactMap { secret in
        let files = token.storeFiles(containing: secret.bytes)
        return files.isEmpty ? nil : "\(secret.what) in \(files.joined(separator: ", "))"
    }
}

/// Exit codes of the forked process that re-initialises the token: which step failed.
private enum ReinitializeStep: Int32 {
    case initialize = 20
    case initToken
    case openSession
    case soLogin
    case initPIN
    case logout
    case finalize
}

/// The calls and memory of the process that re-initialises the token, prepared before the
/// fork: the child only calls C function pointers on memory allocated in advance.
private final class Reinitializer {
    let initialize: CK_C_Initialize
    let initToken: CK_C_InitToken
    let openSession: CK_C_OpenSession
    let login: CK_C_Login
    let initPIN: CK_C_InitPIN
    let logout: CK_C_Logout
    let finalize: CK_C_Finalize
    var soPIN: [UInt8]
    var newPIN: [UInt8]
    var label = Array(padded("login", to: 32).utf8)
    let session = UnsafeMutablePointer<CK_SESSION_HANDLE>.allocate(capacity: 1)

    init(_ m: FunctionTable<CK_FUNCTION_LIST>, soPIN: String, newPIN: String) throws {
        initialize = try m.C_Initialize
        initToken = try m.C_InitToken
        openSession = try m.C_OpenSession
        login = try m.C_Login
        initPIN = try m.C_InitPIN
        logout = try m.C_Logout
        finalize = try m.C_Finalize
        self.soPIN = Array(soPIN.utf8)
        self.newPIN = Array(newPIN.utf8)
    }

    deinit { session.deallocate() }

    /// What `pkcs11-tool --init-token --so-pin … --label login` and then `--login --login-type
    /// so --init-pin --pin NEW` do, in one process of its own: C_InitToken wipes the token and
    /// C_InitPIN gives it a new user PIN (and a new token key).
    func runChild() -> Int32 {
        if initialize(nil) != CKR_OK { return ReinitializeStep.initialize.rawValue }
        if initToken(0, &soPIN, CK_ULONG(soPIN.count), &label) != CKR_OK {
            return ReinitializeStep.initToken.rawValue
        }
        if openSession(0, readWriteSession, nil, nil, session) != CKR_OK {
            return ReinitializeStep.openSession.rawValue
        }
        if login(session.pointee, CK_USER_TYPE(CKU_SO), &soPIN, CK_ULONG(soPIN.count)) != CKR_OK {
            return ReinitializeStep.soLogin.rawValue
        }
        if initPIN(session.pointee, &newPIN, CK_ULONG(newPIN.count)) != CKR_OK {
            return ReinitializeStep.initPIN.rawValue
        }
        if logout(session.pointee) != CKR_OK { return ReinitializeStep.logout.rawValue }
        if finalize(nil) != CKR_OK { return ReinitializeStep.finalize.rawValue }
        return 0
    }
}

extension ModuleTests.CoreRulesTests {
    /// Every secret part of a private key is sealed at rest whatever
    /// CKA_PRIVATE says (ARCHITECTURE.md §3.6); where no token key exists, the key is refused.
    @Suite("No key byte is written in clear")
    struct NoKeyByteInClear {
        @Test(
            "Private keys with CKA_PRIVATE=FALSE, generated, imported or copied while logged in, leave no secret byte in any store file; they are found before login and sign after it"
        )
        func publicPrivateKeysAreSealed() throws {
            let rsa = try RSAParts.shared.get()
            try withLoggedInToken { token, session throws in
                let visible = flag(CKA_PRIVATE, false)
                let ecScalar = randomP256Scalar()
                let edSeed = (0..<32).map { _ in UInt8.random(in: 0...255) }
                let copiedScalar = randomP256Scalar()
                let secrets = [
                    PlantedSecret(what: "the imported EC scalar", bytes: ecScalar),
                    PlantedSecret(what: "the imported RSA private exponent", bytes: rsa.privateExponent),
                    PlantedSecret(what: "the imported RSA prime 1", bytes: rsa.prime1),
                    PlantedSecret(what: "the imported RSA prime 2", bytes: rsa.prime2),
                    PlantedSecret(what: "the imported Ed25519 seed", bytes: edSeed),
                    PlantedSecret(
                        what: "the scalar of the key copied with CKA_PRIVATE=FALSE", bytes: copiedScalar),
                ]
                let imports: [(String, [Attribute])] = [
                    ("EC", ecPrivateKeyTemplate(scalar: ecScalar, label: "visible-ec", extra: [visible])),
                    ("RSA", rsa.privateKeyTemplate(label: "visible-rsa", extra: [visible])),
                    (
                        "Ed25519",
                        ed25519PrivateKeyTemplate(seed: edSeed, label: "visible-ed25519", extra: [visible])
                    ),
                ]
                for (what, template) in imports {
                    let rv = try token.create(template, in: session).0
                    #expect(
                        rv == CKR_OK,
                        "C_CreateObject(\(what) private key, CKA_PRIVATE=FALSE) returned \(rvName(rv))")
                }
                let generated = try token.generatePair(
                    .p256, privateExtra: [visible], label: "visible-generated", in: session)
                // A private key imported as private, then copied into a key with CKA_PRIVATE=FALSE
                // (v2.40 §4.4: a copy may change CKA_PRIVATE).
                let source = try token.createObject(
                    ecPrivateKeyTemplate(scalar: copiedScalar, label: "hidden-source"), in: session)
                let (copied, _) = try token.copy(
                    source, with: [visible, Attribute(CKA_LABEL, string: "visible-copy")], in: session)
                #expect(copied == CKR_OK, "C_CopyObject {CKA_PRIVATE=FALSE} returned \(rvName(copied))")

                // With the store open (pages still in the -wal file), then after C_Finalize.
                try #require(try token.m.C_CloseAllSessions(0) == CKR_OK)
                #expect(
                    token.storeFiles(containing: rsa.modulus) != [],
                    "the scan does not see the public modulus")
                let whileOpen = leaks(of: secrets, in: token)
                #expect(
                    whileOpen.isEmpty,
                    "in the clear with the store open: \(whileOpen.joined(separator: "; "))")
                try #require(try token.m.C_Finalize(nil) == CKR_OK)
                let afterwards = leaks(of: secrets, in: token)
                #expect(
                    afterwards.isEmpty, "in the clear after C_Finalize: \(afterwards.joined(separator: "; "))"
                )

                // Found without login; each signs once the user is logged in.
                try #require(try token.m.C_Initialize(nil) == CKR_OK)
                let again = try token.openSession()
                let publicKeys = try token.find([Attribute(CKA_CLASS, ulong: CKO_PRIVATE_KEY)], in: again)
                let labels = try publicKeys.map { try token.string(CKA_LABEL, of: $0, in: again) ?? "" }
                    .sorted()
                #expect(
                    labels == [
                        "visible-copy", "visible-ec", "visible-ed25519", "visible-generated", "visible-rsa",
                    ],
                    "private keys C_FindObjects shows before C_Login")
                try token.logInUser(again)
                let signers: [(String, KeyKind)] = [
                    ("visible-copy", .p256), ("visible-ec", .p256), ("visible-ed25519", .ed25519),
                    ("visible-generated", .p256), ("visible-rsa", .rsa2048),
                ]
                for (label, kind) in signers {
                    let found = try token.find(
                        [Attribute(CKA_CLASS, ulong: CKO_PRIVATE_KEY), Attribute(CKA_LABEL, string: label)],
                        in: again)
                    guard let key = found.first else { continue }
                    let (signed, signature) = try token.sign(coreMessage, with: key, kind, in: again)
                    #expect(signed == CKR_OK, "signing with \(label) after login returned \(rvName(signed))")
                    if label == "visible-generated", signed == CKR_OK {
                        #expect(
                            try token.verify(
                                signature, over: coreMessage, with: generated.publicKey, kind, in: again)
                                == CKR_OK)
                    }
                }
            }
        }

        // A private object without a login is CKR_USER_NOT_LOGGED_IN, as the spec says; a key
        // that is not private is refused too, since its secret is sealed under the token key,
        // which only a user PIN can give: CKR_USER_PIN_NOT_INITIALIZED says to set one.
        @Test(
            "On a token with no user PIN, a private key is refused (CKR_USER_PIN_NOT_INITIALIZED when not private) and nothing is stored"
        )
        func noUserPINNoPrivateKey() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let scalar = randomP256Scalar()
                for isPrivate in [false, true] {
                    let template = ecPrivateKeyTemplate(
                        scalar: scalar, label: "no-pin", extra: [flag(CKA_PRIVATE, isPrivate)])
                    let created = try token.create(template, in: session).0
                    #expect(
                        created == (isPrivate ? CKR_USER_NOT_LOGGED_IN : CKR_USER_PIN_NOT_INITIALIZED),
                        "C_CreateObject(private key, CKA_PRIVATE=\(isPrivate)) returned \(rvName(created))")
                }
                for extra in [[flag(CKA_PRIVATE, false)], [flag(CKA_PRIVATE, true)], []] {
                    let generated = try token.generate(.p256, privateExtra: extra, in: session).0
                    let isPrivate = extra.first.map { $0.value == [1] } ?? true
                    #expect(
                        generated == (isPrivate ? CKR_USER_NOT_LOGGED_IN : CKR_USER_PIN_NOT_INITIALIZED),
                        "C_GenerateKeyPair(private template \(extra.isEmpty ? "without CKA_PRIVATE" : "with CKA_PRIVATE=\(extra[0].value == [1])")) returned \(rvName(generated))"
                    )
                }
                #expect(try token.find([], in: session) == [], "objects stored by refused creations")
                try #require(try token.m.C_Finalize(nil) == CKR_OK)
                #expect(token.storeFiles(containing: scalar) == [], "the refused scalar is in the store")
            }
        }

        @Test(
            "With a user PIN but nobody logged in, a private key with CKA_PRIVATE=FALSE is refused with CKR_USER_NOT_LOGGED_IN and nothing is stored"
        )
        func notLoggedInNoPrivateKey() throws {
            try withToken { token throws in
                try token.setPINs()
                let session = try token.openSession()
                let scalar = randomP256Scalar()
                let template = ecPrivateKeyTemplate(
                    scalar: scalar, label: "no-login", extra: [flag(CKA_PRIVATE, false)])
                let created = try token.create(template, in: session).0
                #expect(
                    created == CKR_USER_NOT_LOGGED_IN,
                    "C_CreateObject(private key, CKA_PRIVATE=FALSE) before login returned \(rvName(created))")
                let generated = try token.generate(
                    .p256, privateExtra: [flag(CKA_PRIVATE, false)], in: session
                ).0
                #expect(
                    generated == CKR_USER_NOT_LOGGED_IN,
                    "C_GenerateKeyPair(CKA_PRIVATE=FALSE) before login returned \(rvName(generated))")
                try token.logInUser(session)
                #expect(try token.find([], in: session) == [], "objects stored by refused creations")
                try #require(try token.m.C_Finalize(nil) == CKR_OK)
                #expect(token.storeFiles(containing: scalar) == [], "the refused scalar is in the store")
            }
        }
    }

    /// A process whose token another process re-initialised finds its
    /// login gone, and never writes an object that no later login can read.
    @Suite("Another process re-initialises the token")
    struct ReinitializedElsewhere {
        @Test(
            "After another process's C_InitToken and C_InitPIN, this process's private C_CreateObject is CKR_USER_NOT_LOGGED_IN; with the new PIN every private object reads"
        )
        func loginEndsWithTheToken() throws {
            try withLoggedInToken { token, session throws in
                _ = try token.createObject(
                    dataTemplate(label: "before", value: Array("wiped".utf8)) + [flag(CKA_PRIVATE, true)],
                    in: session)
                let newPIN = "98765"
                let other = try Reinitializer(token.m, soPIN: coreSOPIN, newPIN: newPIN)
                let outcome = try fork(timeout: 60) { other.runChild() }
                try #require(outcome == .exited(0), "the re-initialising process \(outcome)")

                let stale =
                    dataTemplate(label: "after", value: Array("stale".utf8)) + [flag(CKA_PRIVATE, true)]
                let created = try token.create(stale, in: session).0
                #expect(
                    created == CKR_USER_NOT_LOGGED_IN,
                    "C_CreateObject(private data object) after the re-initialisation returned \(rvName(created))"
                )
                let relogin = try token.login(session, pin: newPIN)
                #expect(relogin == CKR_OK, "C_Login with the new PIN returned \(rvName(relogin))")
                if relogin == CKR_USER_ALREADY_LOGGED_IN {
                    // The module still holds the old login: start a new one, to see what it wrote.
                    try #require(try token.m.C_Logout(session) == CKR_OK)
                    try #require(try token.login(session, pin: newPIN) == CKR_OK)
                }
                _ = try token.createObject(
                    dataTemplate(label: "fresh", value: Array("fresh".utf8)) + [flag(CKA_PRIVATE, true)],
                    in: session)
                let objects = try token.find([Attribute(CKA_CLASS, ulong: CKO_DATA)], in: session)
                var labels: [String] = []
                for object in objects {
                    let (named, _) = try token.probe(CKA_LABEL, of: object, in: session)
                    let label =
                        named == CKR_OK
                        ? try token.string(CKA_LABEL, of: object, in: session) ?? ""
                        : "(label: \(rvName(named)))"
                    labels.append(label)
                    let (read, _) = try token.probe(CKA_VALUE, of: object, in: session)
                    #expect(
                        read == CKR_OK,
                        "C_GetAttributeValue(CKA_VALUE) of data object '\(label)' returned \(rvName(read))")
                }
                #expect(labels.sorted() == ["fresh"], "the data objects after the re-initialisation")
            }
        }
    }
}
