internal import KeychainCrypto
internal import KeychainStorage

/// Who logs in (PKCS#11 CKU_SO and CKU_USER).
public enum UserType: Sendable, Equatable {
    case securityOfficer
    case user
}

/// What a token's PINs allow right now, read from the store on every call so that another
/// process's C_InitPIN or failed login is seen at once (CK_TOKEN_INFO flags).
public struct AuthenticationState: Sendable, Equatable {
    public var label: String?
    public var hasSecurityOfficerPIN: Bool
    public var hasUserPIN: Bool
    public var userFailures: Int
    public var securityOfficerFailures: Int
    public var maximumFailures: Int

    public var isUserPINLocked: Bool { userFailures >= maximumFailures }
    public var isSecurityOfficerPINLocked: Bool { securityOfficerFailures >= maximumFailures }
}

/// A PIN's record in the store: how its key is derived, and the token key sealed under it.
/// Opening the sealed key is the PIN check (AES-GCM authenticates), so no separate verifier
/// exists to attack. Encoding: iterations (UInt32 LE) ‖ salt (16) ‖ sealed token key.
struct PINRecord {
    static let saltLength = 16
    var iterations: Int
    var salt: [UInt8]
    var sealedKey: [UInt8]

    var encoded: [UInt8] {
        withUnsafeBytes(of: UInt32(iterations).littleEndian) { Array($0) } + salt + sealedKey
    }

    init(iterations: Int, salt: [UInt8], sealedKey: [UInt8]) {
        self.iterations = iterations
        self.salt = salt
        self.sealedKey = sealedKey
    }

    init?(_ bytes: [UInt8]) {
        guard bytes.count > 4 + PINRecord.saltLength else { return nil }
        iterations = Int(bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) })
        salt = Array(bytes[4..<(4 + PINRecord.saltLength)])
        sealedKey = Array(bytes[(4 + PINRecord.saltLength)...])
    }

    /// Seals `tokenKey` under a fresh salt and `pin`. The slow part: one PBKDF2 run.
    static func make(pin: [UInt8], tokenKey: [UInt8], user: UserType) throws(KeychainError) -> PINRecord {
        try KeychainError.mapping {
            let salt = try SecureRandom.bytes(saltLength)
            let iterations = PasswordKeyDerivation.defaultIterations
            let key = try PasswordKeyDerivation.derive(
                password: pin, salt: salt, iterations: iterations, length: SecretBox.keyLength)
            let sealed = try SecretBox.seal(tokenKey, key: key, associatedData: associatedData(user))
            return PINRecord(iterations: iterations, salt: salt, sealedKey: sealed)
        }
    }

    /// The token key, or nil when `pin` is not this record's PIN.
    func open(pin: [UInt8], user: UserType) throws(KeychainError) -> [UInt8]? {
        let key = try KeychainError.mapping {
            try PasswordKeyDerivation.derive(
                password: pin, salt: salt, iterations: iterations, length: SecretBox.keyLength)
        }
        return try? SecretBox.open(sealedKey, key: key, associatedData: PINRecord.associatedData(user))
    }

    private static func associatedData(_ user: UserType) -> [UInt8] {
        Array((user == .user ? "p11keychain token key/user" : "p11keychain token key/so").utf8)
    }
}

/// Token initialisation, PINs and login (PKCS#11 v2.40 §5.5–5.6, DESIGN §6–§7).
///
/// A token created on first use has no PIN. Its first initialisation sets the security
/// officer's PIN (and label) and creates the token key; later ones need that PIN and wipe
/// the token. The SO sets the user PIN; the user PIN unlocks private objects. Every change of
/// the stored PIN records is one transaction, so a process killed during it leaves either the
/// old PINs or the new ones, never a token no PIN opens.
extension Token {
    /// PINs have 4 to 255 bytes (CK_TOKEN_INFO ulMinPinLen / ulMaxPinLen).
    public static let pinLengths = 4...255
    /// Failed logins before a PIN locks.
    public static let maximumFailures = 10

    private enum Key {
        static let label = "label"
        static let securityOfficerPIN = "so.pin"
        static let userPIN = "user.pin"
        static let securityOfficerFailures = "so.failures"
        static let userFailures = "user.failures"

        static func pin(_ user: UserType) -> String { user == .user ? userPIN : securityOfficerPIN }
        static func failures(_ user: UserType) -> String {
            user == .user ? userFailures : securityOfficerFailures
        }
    }

    /// The PIN state, as stored now.
    public func authenticationState() throws(KeychainError) -> AuthenticationState {
        try lock.withLock { () throws(KeychainError) in
            let store = try store()
            return try KeychainError.mapping {
                try store.read {
                    AuthenticationState(
                        label: try store.metadata(Key.label).map { String(decoding: $0, as: UTF8.self) },
                        hasSecurityOfficerPIN: try store.metadata(Key.securityOfficerPIN) != nil,
                        hasUserPIN: try store.metadata(Key.userPIN) != nil,
                        userFailures: Token.count(try store.metadata(Key.userFailures)),
                        securityOfficerFailures: Token.count(try store.metadata(Key.securityOfficerFailures)),
                        maximumFailures: Token.maximumFailures)
                }
            }
        }
    }

    /// Who is logged in to this token in this process.
    public var loggedInUser: UserType? { lock.withLock { login?.user } }

    private static func count(_ bytes: [UInt8]?) -> Int {
        guard let bytes, bytes.count == 4 else { return 0 }
        return Int(bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) })
    }

    private static func encode(count: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt32(clamping: count).littleEndian) { Array($0) }
    }

    private static func checkLength(_ pin: [UInt8]) throws(KeychainError) {
        guard pinLengths.contains(pin.count) else {
            throw KeychainError(
                .pinLengthRange, "a PIN has \(pinLengths.lowerBound) to \(pinLengths.upperBound) bytes")
        }
    }

    /// C_InitToken. The first call sets the SO PIN and label; later calls need the SO PIN and
    /// wipe every object and the user PIN. The caller checks that no session is open.
    public func initialize(securityOfficerPIN pin: [UInt8], label: String) throws(KeychainError) {
        try Token.checkLength(pin)
        if try authenticationState().hasSecurityOfficerPIN {
            // Proves the PIN (and counts a failure) before anything changes.
            _ = try unwrapTokenKey(.securityOfficer, pin: pin)
        }
        let tokenKey = try KeychainError.mapping { try SecureRandom.bytes(SecretBox.keyLength) }
        let record = try PINRecord.make(pin: pin, tokenKey: tokenKey, user: .securityOfficer)
        try lock.withLock { () throws(KeychainError) in
            let store = try store()
            try KeychainError.mapping {
                try store.write {
                    if try store.metadata(Key.securityOfficerPIN) != nil {
                        try store.deleteAllObjects()
                        try store.removeMetadata(Key.userPIN)
                    }
                    try store.setMetadata(Key.securityOfficerPIN, record.encoded)
                    try store.setMetadata(Key.securityOfficerFailures, Token.encode(count: 0))
                    try store.setMetadata(Key.userFailures, Token.encode(count: 0))
                    try store.setMetadata(Key.label, Array(label.utf8))
                }
            }
            login = nil
        }
    }

    /// C_InitPIN: the logged-in security officer sets (or resets, unlocking) the user PIN.
    public func initializeUserPIN(_ pin: [UInt8]) throws(KeychainError) {
        try Token.checkLength(pin)
        guard let current = lock.withLock({ login }), current.user == .securityOfficer else {
            throw KeychainError(.userNotLoggedIn, "only the security officer sets the user PIN: log in as SO")
        }
        let record = try PINRecord.make(pin: pin, tokenKey: current.tokenKey, user: .user)
        try lock.withLock { () throws(KeychainError) in
            let store = try store()
            try KeychainError.mapping {
                try store.write {
                    try store.setMetadata(Key.userPIN, record.encoded)
                    try store.setMetadata(Key.userFailures, Token.encode(count: 0))
                }
            }
        }
    }

    /// C_SetPIN: changes the PIN of whoever is logged in, else the user's.
    public func changePIN(from old: [UInt8], to new: [UInt8]) throws(KeychainError) {
        try Token.checkLength(new)
        let user = lock.withLock { login?.user } ?? .user
        let tokenKey = try unwrapTokenKey(user, pin: old)
        let record = try PINRecord.make(pin: new, tokenKey: tokenKey, user: user)
        try lock.withLock { () throws(KeychainError) in
            let store = try store()
            try KeychainError.mapping { try store.setMetadata(Key.pin(user), record.encoded) }
        }
    }

    /// C_Login: checks the PIN and keeps the token key for this process's sessions.
    public func logIn(_ user: UserType, pin: [UInt8]) throws(KeychainError) {
        if let current = lock.withLock({ login?.user }) {
            throw current == user
                ? KeychainError(.userAlreadyLoggedIn, "already logged in")
                : KeychainError(
                    .userAnotherAlreadyLoggedIn, "the other user type is logged in: log out first")
        }
        let tokenKey = try unwrapTokenKey(user, pin: pin)
        lock.withLock { login = (user, tokenKey) }
    }

    /// CKU_CONTEXT_SPECIFIC login: checks the user's PIN again (counting a failure) without
    /// changing who is logged in, for a key with CKA_ALWAYS_AUTHENTICATE.
    public func reauthenticateUser(pin: [UInt8]) throws(KeychainError) {
        guard lock.withLock({ login?.user }) == .user else {
            throw KeychainError(.userNotLoggedIn, "a context-specific login needs the user logged in")
        }
        _ = try unwrapTokenKey(.user, pin: pin)
    }

    /// C_Logout (and the end of the last session): forgets the token key.
    public func logOut() {
        lock.withLock {
            login = nil
            keyCache.removeAll()
            publicKeyCache.removeAll()
        }
    }

    /// Opens the token key with `pin`, counting a failure in the store (and clearing the
    /// count on success). The slow key derivation runs without the store locked.
    private func unwrapTokenKey(_ user: UserType, pin: [UInt8]) throws(KeychainError) -> [UInt8] {
        let state = try authenticationState()
        guard state.hasSecurityOfficerPIN || user == .user else {
            throw KeychainError(.pinIncorrect, "no SO PIN is set yet: C_InitToken sets it")
        }
        guard state.hasUserPIN || user == .securityOfficer else {
            throw KeychainError(
                .userPINNotInitialized, "no user PIN is set yet: the SO sets it with C_InitPIN")
        }
        let locked = user == .user ? state.isUserPINLocked : state.isSecurityOfficerPINLocked
        guard !locked else {
            throw KeychainError(
                .pinLocked,
                "PIN locked after \(Token.maximumFailures) failed attempts"
                    + (user == .user ? ": the SO must set a new one" : ""))
        }
        let recordBytes = try lock.withLock { () throws(KeychainError) in
            let store = try store()
            return try KeychainError.mapping { try store.metadata(Key.pin(user)) }
        }
        guard let recordBytes, let record = PINRecord(recordBytes) else {
            throw KeychainError(.storageCorrupt, "the stored PIN record is malformed")
        }
        let tokenKey = try record.open(pin: Array(pin), user: user)
        try lock.withLock { () throws(KeychainError) in
            let store = try store()
            // A store this process cannot write keeps no count (its PINs cannot change either).
            guard !store.isReadOnly else { return }
            try KeychainError.mapping {
                try store.write {
                    let failures =
                        tokenKey == nil ? Token.count(try store.metadata(Key.failures(user))) + 1 : 0
                    try store.setMetadata(Key.failures(user), Token.encode(count: failures))
                }
            }
        }
        guard let tokenKey else { throw KeychainError(.pinIncorrect, "wrong PIN") }
        return tokenKey
    }
}
