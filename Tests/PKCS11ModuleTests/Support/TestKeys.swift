import CPKCS11
import Testing

/// DER of the OID of P-256 (prime256v1), CKA_EC_PARAMS of the EC keys the tests make.
let p256Parameters: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
/// DER of the OID id-Ed25519.
let ed25519Parameters: [UInt8] = [0x06, 0x03, 0x2B, 0x65, 0x70]

/// The PINs of `TestToken.setUpPINs`.
let testSecurityOfficerPIN = Array("so-pin-1234".utf8)
let testUserPIN = Array("user-pin-1234".utf8)

/// A generated key pair's handles.
struct KeyPair {
    var publicKey: CK_OBJECT_HANDLE
    var privateKey: CK_OBJECT_HANDLE
}

/// The kinds of key pair the tests generate.
enum TestKeyKind {
    case p256, rsa2048, ed25519
}

extension TestToken {
    /// Sets an SO PIN (first C_InitToken) and a user PIN (C_InitPIN as the SO), so that the
    /// token can hold private objects; leaves no session open and nobody logged in.
    func setUpPINs() throws {
        var so = testSecurityOfficerPIN
        var label = Array(padded("keys", to: 32).utf8)
        let rv = try m.C_InitToken(0, &so, CK_ULONG(so.count), &label)
        try #require(rv == CKR_OK, "C_InitToken returned \(name(of: rv))")
        let session = try openSession()
        try #require(try m.C_Login(session, CK_USER_TYPE(CKU_SO), &so, CK_ULONG(so.count)) == CKR_OK)
        var user = testUserPIN
        let initPIN = try m.C_InitPIN(session, &user, CK_ULONG(user.count))
        try #require(initPIN == CKR_OK, "C_InitPIN returned \(name(of: initPIN))")
        try #require(try m.C_CloseSession(session) == CKR_OK)
    }

    /// Logs the user in with `testUserPIN` (login is per application: every session sees it).
    func logIn(_ session: CK_SESSION_HANDLE) throws {
        var user = testUserPIN
        let rv = try m.C_Login(session, CK_USER_TYPE(CKU_USER), &user, CK_ULONG(user.count))
        try #require(rv == CKR_OK, "C_Login returned \(name(of: rv))")
    }

    /// A fresh store with PINs set, one R/W session and the user logged in.
    func loggedInSession() throws -> CK_SESSION_HANDLE {
        try setUpPINs()
        let session = try openSession()
        try logIn(session)
        return session
    }

    /// Generates a key pair that may sign, verify, encrypt and decrypt as its kind allows.
    /// `token` false makes session objects; `privatePublicKey` makes the public key a
    /// private object (CKA_PRIVATE=TRUE); `privateAttributes` are added to the private key's
    /// template.
    func generateKeyPair(
        _ kind: TestKeyKind, token: Bool = false, privatePublicKey: Bool = false,
        privateAttributes: [Attribute] = [], in session: CK_SESSION_HANDLE
    ) throws -> KeyPair {
        var mechanism = CK_MECHANISM()
        var publicTemplate = [
            Attribute(CKA_TOKEN, bool: token), Attribute(CKA_VERIFY, bool: true),
            Attribute(CKA_PRIVATE, bool: privatePublicKey),
        ]
        var privateTemplate =
            [
                Attribute(CKA_TOKEN, bool: token), Attribute(CKA_PRIVATE, bool: true),
                Attribute(CKA_SIGN, bool: true),
            ] + privateAttributes
        switch kind {
        case .p256:
            mechanism.mechanism = CK_MECHANISM_TYPE(CKM_EC_KEY_PAIR_GEN)
            publicTemplate.append(Attribute(CKA_EC_PARAMS, p256Parameters))
        case .rsa2048:
            mechanism.mechanism = CK_MECHANISM_TYPE(CKM_RSA_PKCS_KEY_PAIR_GEN)
            publicTemplate += [
                Attribute(CKA_MODULUS_BITS, ulong: 2048), Attribute(CKA_ENCRYPT, bool: true),
                Attribute(CKA_PUBLIC_EXPONENT, [0x01, 0x00, 0x01]),
            ]
            privateTemplate.append(Attribute(CKA_DECRYPT, bool: true))
        case .ed25519:
            mechanism.mechanism = CK_MECHANISM_TYPE(CKM_EC_EDWARDS_KEY_PAIR_GEN)
            publicTemplate.append(Attribute(CKA_EC_PARAMS, ed25519Parameters))
        }
        var pair = KeyPair(publicKey: 0, privateKey: 0)
        let generate = try m.C_GenerateKeyPair
        let rv = withTemplate(publicTemplate) { publicEntries, publicCount in
            withTemplate(privateTemplate) { privateEntries, privateCount in
                generate(
                    session, &mechanism, publicEntries, publicCount, privateEntries, privateCount,
                    &pair.publicKey, &pair.privateKey)
            }
        }
        try #require(rv == CKR_OK, "C_GenerateKeyPair returned \(name(of: rv))")
        return pair
    }

    /// C_SignInit with a mechanism that takes no parameter.
    func signInit(_ session: CK_SESSION_HANDLE, _ type: UInt, key: CK_OBJECT_HANDLE) throws -> CK_RV {
        var mechanism = CK_MECHANISM(mechanism: CK_MECHANISM_TYPE(type), pParameter: nil, ulParameterLen: 0)
        return try m.C_SignInit(session, &mechanism, key)
    }

    /// C_VerifyInit with a mechanism that takes no parameter.
    func verifyInit(_ session: CK_SESSION_HANDLE, _ type: UInt, key: CK_OBJECT_HANDLE) throws -> CK_RV {
        var mechanism = CK_MECHANISM(mechanism: CK_MECHANISM_TYPE(type), pParameter: nil, ulParameterLen: 0)
        return try m.C_VerifyInit(session, &mechanism, key)
    }

    /// C_EncryptInit or C_DecryptInit with CKM_RSA_PKCS.
    func cipherInit(_ session: CK_SESSION_HANDLE, encrypt: Bool, key: CK_OBJECT_HANDLE) throws -> CK_RV {
        var mechanism = CK_MECHANISM(
            mechanism: CK_MECHANISM_TYPE(CKM_RSA_PKCS), pParameter: nil, ulParameterLen: 0)
        return encrypt
            ? try m.C_EncryptInit(session, &mechanism, key) : try m.C_DecryptInit(session, &mechanism, key)
    }

    /// C_DigestInit with SHA-256.
    func digestInit(_ session: CK_SESSION_HANDLE) throws -> CK_RV {
        var mechanism = CK_MECHANISM(
            mechanism: CK_MECHANISM_TYPE(CKM_SHA256), pParameter: nil, ulParameterLen: 0)
        return try m.C_DigestInit(session, &mechanism)
    }

    /// C_Sign of `data` into a buffer of `capacity` bytes: the result, the bytes written and
    /// the length the module reported.
    func sign(_ session: CK_SESSION_HANDLE, _ data: [UInt8], capacity: Int = 512) throws
        -> (rv: CK_RV, signature: [UInt8], length: CK_ULONG)
    {
        var input = data
        var output = [UInt8](repeating: 0, count: capacity)
        var length = CK_ULONG(capacity)
        let rv = try m.C_Sign(session, &input, CK_ULONG(input.count), &output, &length)
        return (rv, Array(output.prefix(min(capacity, Int(clamping: length)))), length)
    }
}
