import CPKCS11
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

// What the core-rule suites share: a token with PINs, key pairs of each type,
// signing and verifying, copies, imports from known parts and raw scans of the store files.
// Everything goes through the built module's function list, as a host's calls do.

/// The PINs the core-rule tests give the token.
let coreSOPIN = TestPIN.securityOfficer
let coreUserPIN = TestPIN.user

/// A CK_RV's name, including the login and sensitivity codes `name(of:)` does not know.
func rvName(_ rv: CK_RV) -> String {
    let more: [CK_RV: String] = [
        CK_RV(CKR_ATTRIBUTE_SENSITIVE): "CKR_ATTRIBUTE_SENSITIVE",
        CK_RV(CKR_KEY_HANDLE_INVALID): "CKR_KEY_HANDLE_INVALID",
        CK_RV(CKR_KEY_FUNCTION_NOT_PERMITTED): "CKR_KEY_FUNCTION_NOT_PERMITTED",
        CK_RV(CKR_KEY_TYPE_INCONSISTENT): "CKR_KEY_TYPE_INCONSISTENT",
        CK_RV(CKR_SIGNATURE_INVALID): "CKR_SIGNATURE_INVALID",
        CK_RV(CKR_PIN_INCORRECT): "CKR_PIN_INCORRECT",
        CK_RV(CKR_PIN_LOCKED): "CKR_PIN_LOCKED",
        CK_RV(CKR_USER_ALREADY_LOGGED_IN): "CKR_USER_ALREADY_LOGGED_IN",
        CK_RV(CKR_USER_ANOTHER_ALREADY_LOGGED_IN): "CKR_USER_ANOTHER_ALREADY_LOGGED_IN",
        CK_RV(CKR_SESSION_EXISTS): "CKR_SESSION_EXISTS",
    ]
    return more[rv] ?? name(of: rv)
}

/// A CK_BBOOL attribute's value in a template.
func flag(_ type: CK_ATTRIBUTE_TYPE, _ value: Bool) -> Attribute { Attribute(type, bool: value) }

/// The three key types the module generates, with what a test needs to make and use a pair.
enum KeyKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case rsa2048 = "RSA-2048"
    case p256 = "P-256"
    case ed25519 = "Ed25519"

    var testDescription: String { rawValue }

    /// DER OIDs of the curves (CKA_EC_PARAMS): prime256v1 and id-Ed25519.
    static let p256Parameters: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
    static let ed25519Parameters: [UInt8] = [0x06, 0x03, 0x2B, 0x65, 0x70]

    var generationMechanism: CK_MECHANISM_TYPE {
        switch self {
        case .rsa2048: CK_MECHANISM_TYPE(CKM_RSA_PKCS_KEY_PAIR_GEN)
        case .p256: CK_MECHANISM_TYPE(CKM_EC_KEY_PAIR_GEN)
        case .ed25519: CK_MECHANISM_TYPE(CKM_EC_EDWARDS_KEY_PAIR_GEN)
        }
    }

    /// A mechanism that hashes the message itself (or needs no hash), so any message signs.
    var signingMechanism: CK_MECHANISM_TYPE {
        switch self {
        case .rsa2048: CK_MECHANISM_TYPE(CKM_SHA256_RSA_PKCS)
        case .p256: CK_MECHANISM_TYPE(CKM_ECDSA_SHA256)
        case .ed25519: CK_MECHANISM_TYPE(CKM_EDDSA)
        }
    }

    /// The public template's generation parameters.
    var publicParameters: [Attribute] {
        switch self {
        case .rsa2048:
            [Attribute(CKA_MODULUS_BITS, ulong: 2048), Attribute(CKA_PUBLIC_EXPONENT, [0x01, 0x00, 0x01])]
        case .p256: [Attribute(CKA_EC_PARAMS, KeyKind.p256Parameters)]
        case .ed25519: [Attribute(CKA_EC_PARAMS, KeyKind.ed25519Parameters)]
        }
    }
}

/// The parts of an RSA-2048 private key made by the `openssl` command line (not by the
/// module), so that a test knows secret bytes to look for in the store.
struct RSAParts: Sendable {
    var modulus, publicExponent, privateExponent, prime1, prime2: [UInt8]
    var exponent1, exponent2, coefficient: [UInt8]

    /// One key per test process: generating RSA keys is slow.
    static let shared = Result { try RSAParts.generate() }

    static func generate() throws -> RSAParts {
        let directory = NSTemporaryDirectory() + "p11keychain-rsa-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for arguments in [
            ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "key.pem"],
            ["rsa", "-in", "key.pem", "-traditional", "-outform", "DER", "-out", "key.der"],
        ] {
            let result = try runCommand(TestCertificate.openssl, arguments, in: directory)
            guard result.status == 0 else {
                throw ModuleLoadError(
                    description: "openssl \(arguments.joined(separator: " ")) failed: \(result.standardError)"
                )
            }
        }
        // RSAPrivateKey (RFC 8017 §A.1.2): version, n, e, d, p, q, dP, dQ, qInv.
        let der = readFile(directory + "/key.der")
        guard let sequence = try DER.elements(der[...]).first else { throw DER.Malformed() }
        let integers = try DER.elements(try DER.contents(sequence)).map { element in
            // PKCS#11 big integers are unsigned: no leading zero byte.
            Array(try DER.contents(element).drop { $0 == 0 })
        }
        guard integers.count == 9 else { throw DER.Malformed() }
        return RSAParts(
            modulus: integers[1], publicExponent: integers[2], privateExponent: integers[3],
            prime1: integers[4], prime2: integers[5], exponent1: integers[6], exponent2: integers[7],
            coefficient: integers[8])
    }

    /// A C_CreateObject template of this key as a private key object, from its parts.
    func privateKeyTemplate(label: String, extra: [Attribute] = []) -> [Attribute] {
        [
            Attribute(CKA_CLASS, ulong: CKO_PRIVATE_KEY), Attribute(CKA_KEY_TYPE, ulong: CKK_RSA),
            Attribute(CKA_TOKEN, bool: true), Attribute(CKA_LABEL, string: label),
            Attribute(CKA_SIGN, bool: true), Attribute(CKA_MODULUS, modulus),
            Attribute(CKA_PUBLIC_EXPONENT, publicExponent), Attribute(CKA_PRIVATE_EXPONENT, privateExponent),
            Attribute(CKA_PRIME_1, prime1), Attribute(CKA_PRIME_2, prime2),
            Attribute(CKA_EXPONENT_1, exponent1),
            Attribute(CKA_EXPONENT_2, exponent2), Attribute(CKA_COEFFICIENT, coefficient),
        ] + extra
    }
}

/// A random P-256 private scalar below the group order (its first byte is at most 0x7F,
/// the order's is 0xFF) and not zero.
func randomP256Scalar() -> [UInt8] {
    var scalar = (0..<32).map { _ in UInt8.random(in: 0...255) }
    scalar[0] = UInt8.random(in: 0x01...0x7F)
    return scalar
}

/// A C_CreateObject template of a P-256 private key from its scalar (v2.40 §2.3.4).
func ecPrivateKeyTemplate(scalar: [UInt8], label: String, extra: [Attribute] = []) -> [Attribute] {
    [
        Attribute(CKA_CLASS, ulong: CKO_PRIVATE_KEY), Attribute(CKA_KEY_TYPE, ulong: CKK_EC),
        Attribute(CKA_TOKEN, bool: true), Attribute(CKA_LABEL, string: label),
        Attribute(CKA_SIGN, bool: true),
        Attribute(CKA_EC_PARAMS, KeyKind.p256Parameters), Attribute(CKA_VALUE, scalar),
    ] + extra
}

/// A C_CreateObject template of an Ed25519 private key from its 32-byte seed (v3.0 §2.3.7).
func ed25519PrivateKeyTemplate(seed: [UInt8], label: String, extra: [Attribute] = []) -> [Attribute] {
    [
        Attribute(CKA_CLASS, ulong: CKO_PRIVATE_KEY), Attribute(CKA_KEY_TYPE, ulong: CKK_EC_EDWARDS),
        Attribute(CKA_TOKEN, bool: true), Attribute(CKA_LABEL, string: label),
        Attribute(CKA_SIGN, bool: true),
        Attribute(CKA_EC_PARAMS, KeyKind.ed25519Parameters), Attribute(CKA_VALUE, seed),
    ] + extra
}

extension TestToken {
    // MARK: PINs and login

    /// What a user does once to enable private objects (ARCHITECTURE.md §5): C_InitToken sets the SO
    /// PIN (the label stays "login"), then the SO sets the user PIN with C_InitPIN. No
    /// session is left open and nobody is logged in afterwards.
    func setPINs(so: String = coreSOPIN, user: String = coreUserPIN) throws {
        var soPIN = Array(so.utf8)
        var label = Array(padded("login", to: 32).utf8)
        let initialized = try m.C_InitToken(0, &soPIN, CK_ULONG(soPIN.count), &label)
        try #require(initialized == CKR_OK, "C_InitToken returned \(rvName(initialized))")
        let session = try openSession()
        try #require(try login(session, as: CK_USER_TYPE(CKU_SO), pin: so) == CKR_OK)
        var userPIN = Array(user.utf8)
        let pinSet = try m.C_InitPIN(session, &userPIN, CK_ULONG(userPIN.count))
        try #require(pinSet == CKR_OK, "C_InitPIN returned \(rvName(pinSet))")
        try #require(try m.C_Logout(session) == CKR_OK)
        try #require(try m.C_CloseSession(session) == CKR_OK)
    }

    /// C_Login's result.
    func login(_ session: CK_SESSION_HANDLE, as user: CK_USER_TYPE = CK_USER_TYPE(CKU_USER), pin: String)
        throws -> CK_RV
    {
        var bytes = Array(pin.utf8)
        return try m.C_Login(session, user, &bytes, CK_ULONG(bytes.count))
    }

    /// Logs the user in, which must succeed.
    func logInUser(_ session: CK_SESSION_HANDLE, pin: String = coreUserPIN) throws {
        let rv = try login(session, pin: pin)
        try #require(rv == CKR_OK, "C_Login(CKU_USER) returned \(rvName(rv))")
    }

    // MARK: Keys

    /// C_GenerateKeyPair's result and handles; both halves are token objects unless the
    /// extra attributes say otherwise (later entries win over the defaults).
    func generate(
        _ kind: KeyKind, publicExtra: [Attribute] = [], privateExtra: [Attribute] = [],
        label: String = "core-rules", in session: CK_SESSION_HANDLE
    ) throws -> (CK_RV, KeyPair) {
        let publicTemplate = Self.merged(
            [
                Attribute(CKA_TOKEN, bool: true), Attribute(CKA_VERIFY, bool: true),
                Attribute(CKA_LABEL, string: label),
            ]
                + kind.publicParameters, publicExtra)
        let privateTemplate = Self.merged(
            [
                Attribute(CKA_TOKEN, bool: true), Attribute(CKA_SIGN, bool: true),
                Attribute(CKA_LABEL, string: label),
            ],
            privateExtra)
        var mechanism = CK_MECHANISM(mechanism: kind.generationMechanism, pParameter: nil, ulParameterLen: 0)
        var pair = KeyPair(publicKey: 0, privateKey: 0)
        let generateKeyPair = try m.C_GenerateKeyPair
        let rv = withTemplate(publicTemplate) { publicEntries, publicCount in
            withTemplate(privateTemplate) { privateEntries, privateCount in
                generateKeyPair(
                    session, &mechanism, publicEntries, publicCount, privateEntries, privateCount,
                    &pair.publicKey, &pair.privateKey)
            }
        }
        return (rv, pair)
    }

    /// Generates a key pair that must be accepted.
    func generatePair(
        _ kind: KeyKind, privateExtra: [Attribute] = [], label: String = "core-rules",
        in session: CK_SESSION_HANDLE
    ) throws -> KeyPair {
        let (rv, pair) = try generate(kind, privateExtra: privateExtra, label: label, in: session)
        try #require(rv == CKR_OK, "C_GenerateKeyPair(\(kind.rawValue)) returned \(rvName(rv))")
        return pair
    }

    /// `base` with each attribute of `extra` replacing the entry of the same type.
    private static func merged(_ base: [Attribute], _ extra: [Attribute]) -> [Attribute] {
        base.filter { entry in !extra.contains { $0.type == entry.type } } + extra
    }

    /// C_CopyObject's result and the new handle.
    func copy(_ object: CK_OBJECT_HANDLE, with attributes: [Attribute], in session: CK_SESSION_HANDLE)
        throws -> (CK_RV, CK_OBJECT_HANDLE)
    {
        let copyObject = try m.C_CopyObject
        var copied: CK_OBJECT_HANDLE = 0
        let rv = withTemplate(attributes) { copyObject(session, object, $0, $1, &copied) }
        return (rv, copied)
    }

    /// C_SetAttributeValue's result.
    func set(_ attributes: [Attribute], of object: CK_OBJECT_HANDLE, in session: CK_SESSION_HANDLE) throws
        -> CK_RV
    {
        let setValue = try m.C_SetAttributeValue
        return withTemplate(attributes) { setValue(session, object, $0, $1) }
    }

    /// C_GetAttributeValue of one attribute as a size query: its CK_RV and the length it
    /// reports (CK_UNAVAILABLE_INFORMATION for a sensitive value, v2.40 §5.7).
    func probe(_ type: CK_ATTRIBUTE_TYPE, of object: CK_OBJECT_HANDLE, in session: CK_SESSION_HANDLE)
        throws -> (CK_RV, CK_ULONG)
    {
        var entry = CK_ATTRIBUTE(type: type, pValue: nil, ulValueLen: 0)
        let rv = try m.C_GetAttributeValue(session, object, &entry, 1)
        return (rv, entry.ulValueLen)
    }

    /// A CK_BBOOL attribute, or nil when it cannot be read.
    func bool(_ type: CK_ATTRIBUTE_TYPE, of object: CK_OBJECT_HANDLE, in session: CK_SESSION_HANDLE) throws
        -> Bool?
    {
        try attribute(type, of: object, in: session).flatMap { $0.count == 1 ? $0[0] != 0 : nil }
    }

    /// Signs `message` with `key`: the CK_RV of the first call that failed (C_SignInit or
    /// C_Sign) and the signature.
    func sign(_ message: [UInt8], with key: CK_OBJECT_HANDLE, _ kind: KeyKind, in session: CK_SESSION_HANDLE)
        throws -> (CK_RV, [UInt8])
    {
        var mechanism = CK_MECHANISM(mechanism: kind.signingMechanism, pParameter: nil, ulParameterLen: 0)
        let started = try m.C_SignInit(session, &mechanism, key)
        guard started == CKR_OK else { return (started, []) }
        var input = message
        var signature = [UInt8](repeating: 0, count: 1024)
        var length = CK_ULONG(signature.count)
        let rv = try m.C_Sign(session, &input, CK_ULONG(input.count), &signature, &length)
        guard rv == CKR_OK, let count = Int(exactly: length), count <= signature.count else {
            return (rv, [])
        }
        return (rv, Array(signature.prefix(count)))
    }

    /// C_VerifyInit and C_Verify of `signature` over `message` with `key`: the first CK_RV
    /// that is not CKR_OK, or CKR_OK when the signature verifies.
    func verify(
        _ signature: [UInt8], over message: [UInt8], with key: CK_OBJECT_HANDLE, _ kind: KeyKind,
        in session: CK_SESSION_HANDLE
    ) throws -> CK_RV {
        var mechanism = CK_MECHANISM(mechanism: kind.signingMechanism, pParameter: nil, ulParameterLen: 0)
        let started = try m.C_VerifyInit(session, &mechanism, key)
        guard started == CKR_OK else { return started }
        var input = message
        var bytes = signature
        return try m.C_Verify(session, &input, CK_ULONG(input.count), &bytes, CK_ULONG(bytes.count))
    }

    // MARK: The store's files

    /// Every file of the store: `login.sqlite3` and whatever SQLite and the module keep
    /// beside it (`-wal`, `-shm`, `-changes`, journals).
    func storeFiles() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasPrefix("login.sqlite3") }.sorted().map { directory + "/" + $0 }
    }

    /// The store files that contain `secret` or its middle 16 bytes (in case it was stored
    /// cut or re-encoded around them), by file name.
    func storeFiles(containing secret: [UInt8]) -> [String] {
        let middle = secret.count >= 32 ? Array(secret[8..<24]) : secret
        return storeFiles().filter { path in
            let bytes = readFile(path)
            return occurs(secret, in: bytes) || occurs(middle, in: bytes)
        }.map { URL(fileURLWithPath: $0).lastPathComponent }
    }
}

/// Whether `needle` occurs in `haystack`.
func occurs(_ needle: [UInt8], in haystack: [UInt8]) -> Bool {
    guard let first = needle.first, needle.count <= haystack.count else { return needle.isEmpty }
    var index = haystack.startIndex
    let last = haystack.count - needle.count
    while index <= last {
        if haystack[index] == first, haystack[index..<index + needle.count].elementsEqual(needle) {
            return true
        }
        index += 1
    }
    return false
}

/// Runs `body` on a fresh token whose SO and user PINs are set, with a read-write session in
/// which the user is logged in.
func withLoggedInToken(_ body: (TestToken, CK_SESSION_HANDLE) throws -> Void) throws {
    try withToken { token throws in
        try token.setPINs()
        let session = try token.openSession()
        try token.logInUser(session)
        try body(token, session)
    }
}

/// The message the core-rule tests sign.
let coreMessage = Array("a key stays in the token and every copy of it works".utf8)
