import CPKCS11
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

// What the promise suites (Tests/SECURITY.md) share: a token with both PINs set
// that costs one key derivation instead of four, and the rows of the attack tables.

/// One way an attacker tries to break a promise: a row of a promise's table. `path` names
/// the calls, `refusal` the answer the promise expects, `accepted` the return codes that
/// count as that refusal. A row's `attack` returns the first CK_RV that was not CKR_OK (or
/// CKR_OK) and whatever bytes the attacker obtained on the way, which the test searches for
/// the victim's secret.
struct Attack: Sendable, CustomTestStringConvertible {
    var path: String
    var refusal: String
    var accepted: Set<CK_RV>
    var attack: @Sendable (TestToken, CK_SESSION_HANDLE) throws -> AttackResult

    var testDescription: String { path }

    init(
        _ path: String, refusal: String, accepted: [UInt],
        _ attack: @escaping @Sendable (TestToken, CK_SESSION_HANDLE) throws -> AttackResult
    ) {
        self.path = path
        self.refusal = refusal
        self.accepted = Set(accepted.map { CK_RV($0) })
        self.attack = attack
    }
}

/// What one attack got: the module's answer, the victim's secret and every byte the attacker
/// obtained (read values, wrapped blobs, store files).
struct AttackResult {
    var rv: CK_RV
    var secret: [UInt8]
    var obtained: [UInt8] = []

    /// Whether the secret, or 16 bytes from inside a long one, is among the obtained bytes.
    var leaked: Bool {
        guard !secret.isEmpty else { return false }
        let middle = secret.count >= 32 ? Array(secret[8..<24]) : secret
        return occurs(secret, in: obtained) || occurs(middle, in: obtained)
    }
}

/// A store with both PINs set (coreSOPIN, coreUserPIN), made once per test process: setting
/// them costs three PBKDF2 runs (at the run's cost: 600,000 iterations in a bare `swift test`),
/// so each promise row copies the files instead and pays only for its own logins.
private enum PINStoreTemplate {
    /// The directory holding the template's files, made on first use and removed when the
    /// test process exits. nonisolated(unsafe): read and written only by `installPINStore`,
    /// which runs inside `withStore`, under the package's environment lock.
    nonisolated(unsafe) static var directory: String?

    /// Removes the template's directory at exit.
    static func removeAtExit() {
        atexit {
            if let directory = PINStoreTemplate.directory {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
    }
}

extension TestToken {
    /// Puts a copy of the PIN'd template store (made on first use) in this test's directory,
    /// the module not initialised. The copy is owned by this uid with mode 0600, as a store the
    /// module itself makes.
    fileprivate func installPINStore() throws {
        if PINStoreTemplate.directory == nil {
            try #require(try m.C_Initialize(nil) == CKR_OK)
            try setPINs()
            try #require(try m.C_Finalize(nil) == CKR_OK)
            let template = NSTemporaryDirectory() + "p11keychain-promise-template-\(getpid())"
            try? FileManager.default.removeItem(atPath: template)
            try FileManager.default.createDirectory(atPath: template, withIntermediateDirectories: true)
            for path in storeFiles() {
                let name = URL(fileURLWithPath: path).lastPathComponent
                try FileManager.default.copyItem(atPath: path, toPath: template + "/" + name)
            }
            PINStoreTemplate.directory = template
            PINStoreTemplate.removeAtExit()
            return
        }
        guard let template = PINStoreTemplate.directory else { return }
        for name in try FileManager.default.contentsOfDirectory(atPath: template) {
            let target = directory + "/" + name
            try FileManager.default.copyItem(atPath: template + "/" + name, toPath: target)
            chmod(target, 0o600)
        }
    }
}

/// Runs `body` on a fresh token whose SO and user PINs are set (a copy of one template store),
/// with a read-write session in which the user is logged in, the module configured with
/// `configuration` when given. Holds the environment lock.
func withPromiseToken(
    configuration: String? = nil, _ body: (TestToken, CK_SESSION_HANDLE) throws -> Void
) throws {
    try withStore { token throws in
        try token.installPINStore()
        if let configuration { try token.configure(configuration) }
        let rv = try token.m.C_Initialize(nil)
        try #require(rv == CKR_OK, "C_Initialize returned \(rvName(rv))")
        let session = try token.openSession()
        try token.logInUser(session)
        try body(token, session)
    }
}

/// Runs `body` on a fresh token with both PINs set and a read-write session, nobody logged in.
func withPromiseTokenLoggedOut(_ body: (TestToken, CK_SESSION_HANDLE) throws -> Void) throws {
    try withStore { token throws in
        try token.installPINStore()
        let rv = try token.m.C_Initialize(nil)
        try #require(rv == CKR_OK, "C_Initialize returned \(rvName(rv))")
        try body(token, try token.openSession())
    }
}

/// The name of a return code for the promise tables, including the key codes `rvName`
/// does not know.
func promiseRVName(_ rv: CK_RV) -> String {
    let more: [CK_RV: String] = [
        CK_RV(CKR_KEY_UNEXTRACTABLE): "CKR_KEY_UNEXTRACTABLE",
        CK_RV(CKR_KEY_NOT_WRAPPABLE): "CKR_KEY_NOT_WRAPPABLE",
        CK_RV(CKR_KEY_INDIGESTIBLE): "CKR_KEY_INDIGESTIBLE",
        CK_RV(CKR_KEY_SIZE_RANGE): "CKR_KEY_SIZE_RANGE",
        CK_RV(CKR_WRAPPING_KEY_HANDLE_INVALID): "CKR_WRAPPING_KEY_HANDLE_INVALID",
        CK_RV(CKR_WRAPPING_KEY_TYPE_INCONSISTENT): "CKR_WRAPPING_KEY_TYPE_INCONSISTENT",
        CK_RV(CKR_ENCRYPTED_DATA_LEN_RANGE): "CKR_ENCRYPTED_DATA_LEN_RANGE",
        CK_RV(CKR_ENCRYPTED_DATA_INVALID): "CKR_ENCRYPTED_DATA_INVALID",
        CK_RV(CKR_DATA_LEN_RANGE): "CKR_DATA_LEN_RANGE",
        CK_RV(CKR_PIN_LEN_RANGE): "CKR_PIN_LEN_RANGE",
        CK_RV(CKR_OPERATION_NOT_INITIALIZED): "CKR_OPERATION_NOT_INITIALIZED",
    ]
    return more[rv] ?? rvName(rv)
}

/// The accepted refusals as text: "CKR_KEY_UNEXTRACTABLE or CKR_MECHANISM_INVALID".
func describe(_ accepted: Set<CK_RV>) -> String {
    accepted.sorted().map(promiseRVName).joined(separator: " or ")
}

extension TestToken {
    /// Every byte of every file of the store, concatenated: what a reader of the files gets.
    func storeBytes() -> [UInt8] {
        storeFiles().flatMap { readFile($0) }
    }

    /// Logs out, then reads CKA_VALUE of every object a session without login finds: what a
    /// process of the same uid without the PIN gets. Logs the user back in afterwards.
    func valuesReadableWithoutLogin(in session: CK_SESSION_HANDLE) throws -> [UInt8] {
        _ = try m.C_Logout(session)
        defer { _ = try? login(session, pin: coreUserPIN) }
        var bytes: [UInt8] = []
        for object in try find([], in: session) {
            var entry = CK_ATTRIBUTE(type: CK_ATTRIBUTE_TYPE(CKA_VALUE), pValue: nil, ulValueLen: 0)
            guard try m.C_GetAttributeValue(session, object, &entry, 1) == CKR_OK,
                entry.ulValueLen != unavailableInformation
            else { continue }
            bytes += try attribute(CKA_VALUE, of: object, in: session) ?? []
        }
        return bytes
    }

    /// CKA_VALUE of `object` when it can be read (nothing otherwise).
    func readableValue(of object: CK_OBJECT_HANDLE, in session: CK_SESSION_HANDLE) throws -> [UInt8] {
        let (rv, length) = try probe(CKA_VALUE, of: object, in: session)
        guard rv == CKR_OK, length != unavailableInformation else { return [] }
        return try attribute(CKA_VALUE, of: object, in: session) ?? []
    }
}

/// `template` with each attribute of `extra` replacing the entry of the same type (a template
/// naming one type twice is CKR_TEMPLATE_INCONSISTENT).
func overriding(_ template: [Attribute], with extra: [Attribute]) -> [Attribute] {
    template.filter { entry in !extra.contains { $0.type == entry.type } } + extra
}
