internal import KeychainCrypto
internal import KeychainStorage

/// Who logs in (PKCS#11 CKU_SO and CKU_USER).
package enum UserType: Sendable, Equatable {
    case securityOfficer
    case user
}

/// What a token's PINs allow right now, read from the store on every call so that another
/// process's C_InitPIN or failed login is seen at once (CK_TOKEN_INFO flags).
package struct AuthenticationState: Sendable, Equatable {
    package var label: String?
    package var hasSecurityOfficerPIN: Bool
    package var hasUserPIN: Bool
    package var userFailures: Int
    package var securityOfficerFailures: Int
    package var maximumFailures: Int

    package var isUserPINLocked: Bool { userFailures >= maximumFailures }
    package var isSecurityOfficerPINLocked: Bool { securityOfficerFailures >= maximumFailures }
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

    /// Iteration counts a stored record may name: a record is a file's content, so its count
    /// is checked before any derivation (2^31 trapped a 32-bit conversion; 2^31 − 1 ran for
    /// minutes). The default is 600,000 (``Configuration/pinIterations``).
    static let iterationRange = PasswordKeyDerivation.iterationRange

    /// Decodes a stored record; nil when it is malformed or names an iteration count outside
    /// `iterationRange`.
    init?(_ bytes: [UInt8]) {
        guard bytes.count > 4 + PINRecord.saltLength else { return nil }
        let count = Int(bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) })
        guard PINRecord.iterationRange.contains(count) else { return nil }
        iterations = count
        salt = Array(bytes[4..<(4 + PINRecord.saltLength)])
        sealedKey = Array(bytes[(4 + PINRecord.saltLength)...])
    }

    /// Seals `tokenKey` under a fresh salt and `pin`, the key derived with `iterations`
    /// (the token's `pin-iterations`). The slow part: one PBKDF2 run.
    static func make(pin: SecretBytes, tokenKey: SecretBytes, user: UserType, iterations: Int)
        throws(CoreError) -> PINRecord
    {
        try CoreError.mapping {
            let salt = try SecureRandom.bytes(saltLength)
            let key = try PasswordKeyDerivation.derive(
                password: pin, salt: salt, iterations: iterations, length: SecretBox.keyLength)
            let sealed = try SecretBox.seal(tokenKey, key: key, associatedData: associatedData(user))
            return PINRecord(iterations: iterations, salt: salt, sealedKey: sealed)
        }
    }

    /// The token key and the PIN-derived key that opened it, or nil when `pin` is not this
    /// record's PIN. Only a tag that does not verify means a wrong PIN; any other failure is
    /// an error, never counted as a guess.
    func open(pin: SecretBytes, user: UserType) throws(CoreError) -> (
        tokenKey: SecretBytes, pinKey: SecretBytes
    )? {
        let key = try CoreError.mapping {
            try PasswordKeyDerivation.derive(
                password: pin, salt: salt, iterations: iterations, length: SecretBox.keyLength)
        }
        return try open(pinKey: key, user: user).map { ($0, key) }
    }

    /// The token key, or nil when `pinKey` is not the key this record's PIN derives: the fast
    /// half of `open(pin:user:)`, for a PIN-derived key kept in the session keyring
    /// (SessionUnlock.swift).
    func open(pinKey: SecretBytes, user: UserType) throws(CoreError) -> SecretBytes? {
        do {
            return try SecretBox.open(sealedKey, key: pinKey, associatedData: PINRecord.associatedData(user))
        } catch  where error.code == .wrongPassword {
            return nil
        } catch {
            throw CoreError(.storageCorrupt, "the stored PIN record does not open: \(error)")
        }
    }

    private static func associatedData(_ user: UserType) -> [UInt8] {
        Array((user == .user ? "p11keychain token key/user" : "p11keychain token key/so").utf8)
    }
}

/// A login of this process: who, the token key their PIN opened, and the token's epoch it
/// was opened for (a random value every C_InitToken replaces), so that a re-initialisation by
/// another process ends it.
struct Login {
    var user: UserType
    var tokenKey: SecretBytes
    var epoch: [UInt8]?
    /// The store's change count when the epoch was last found current (nil: check again).
    var checkedAt: UInt64?
    /// The session keyring entry this login was taken from (SessionUnlock.swift), nil for a
    /// login with the PIN: such a login ends when the entry goes (`p11keychain lock`).
    var sessionEntry: Int32? = nil
}

/// Token initialisation, PINs and login (PKCS#11 v2.40 §5.5–5.6, ARCHITECTURE.md §5, §6.2).
///
/// A token created on first use has no PIN. Its first initialisation sets the security
/// officer's PIN (and label) and creates the token key; later ones need that PIN and wipe
/// the token. The SO sets the user PIN; the user PIN unlocks private objects. Every change of
/// the stored PIN records is one transaction, so a process killed during it leaves either the
/// old PINs or the new ones, never a token no PIN opens.
extension Token {
    /// PINs have 4 to 255 bytes (CK_TOKEN_INFO ulMinPinLen / ulMaxPinLen).
    package static let pinLengths = 4...255
    /// Failed logins before a PIN locks.
    package static let maximumFailures = 10

    enum Key {
        static let label = "label"
        static let securityOfficerPIN = "so.pin"
        static let userPIN = "user.pin"
        static let securityOfficerFailures = "so.failures"
        static let userFailures = "user.failures"
        /// Random, replaced by every C_InitToken: a login remembers the one it was made for.
        static let epoch = "epoch"

        static func pin(_ user: UserType) -> String { user == .user ? userPIN : securityOfficerPIN }
        static func failures(_ user: UserType) -> String {
            user == .user ? userFailures : securityOfficerFailures
        }
    }

    /// The PIN state, as stored now.
    package func authenticationState() throws(CoreError) -> AuthenticationState {
        try withState { (state) throws(CoreError) in
            let store = try state.store()
            return try CoreError.mapping {
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

    /// Who is logged in to this token in this process. Every C_SignInit asks, so this reads
    /// nothing: whether another process has re-initialised the token since (`checkLogin`) is
    /// checked where it matters, before private objects are found, read or sealed.
    package var loggedInUser: UserType? { loggedIn.user }

    static func count(_ bytes: [UInt8]?) -> Int {
        guard let bytes, bytes.count == 4 else { return 0 }
        return Int(bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) })
    }

    static func encode(count: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt32(clamping: count).littleEndian) { Array($0) }
    }

    private static func checkLength(_ pin: [UInt8]) throws(CoreError) {
        guard pinLengths.contains(pin.count) else {
            throw CoreError(
                .pinLengthRange, "a PIN has \(pinLengths.lowerBound) to \(pinLengths.upperBound) bytes")
        }
    }

    /// C_InitToken. The first call sets the SO PIN and label; later calls need the SO PIN and
    /// wipe every object and the user PIN. The caller checks that no session is open.
    package func initialize(securityOfficerPIN pin: [UInt8], label: String) throws(CoreError) {
        try Token.checkLength(pin)
        if try authenticationState().hasSecurityOfficerPIN {
            // Proves the PIN (and counts a failure) before anything changes.
            _ = try unwrapTokenKey(.securityOfficer, pin: pin)
        }
        let tokenKey = try CoreError.mapping { try SecureRandom.secret(SecretBox.keyLength) }
        let record = try PINRecord.make(
            pin: SecretBytes(pin), tokenKey: tokenKey, user: .securityOfficer,
            iterations: configuration.pinIterations)
        let epoch = try CoreError.mapping { try SecureRandom.bytes(16) }
        try withState { (state) throws(CoreError) in
            let store = try state.store()
            try CoreError.mapping {
                try store.write {
                    if try store.metadata(Key.securityOfficerPIN) != nil {
                        try store.deleteAllObjects()
                        try store.removeMetadata(Key.userPIN)
                    }
                    try store.setMetadata(Key.securityOfficerPIN, record.encoded)
                    try store.setMetadata(Key.securityOfficerFailures, Token.encode(count: 0))
                    try store.setMetadata(Key.userFailures, Token.encode(count: 0))
                    try store.setMetadata(Key.label, Array(label.utf8))
                    try store.setMetadata(Key.epoch, epoch)
                }
            }
            state.endLogin()
        }
    }

    /// C_InitPIN: the logged-in security officer sets (or resets, unlocking) the user PIN.
    package func initializeUserPIN(_ pin: [UInt8]) throws(CoreError) {
        try Token.checkLength(pin)
        guard let current = withState({ state in state.authentication.login }),
            current.user == .securityOfficer
        else {
            throw CoreError(.userNotLoggedIn, "only the security officer sets the user PIN: log in as SO")
        }
        let record = try PINRecord.make(
            pin: SecretBytes(pin), tokenKey: current.tokenKey, user: .user,
            iterations: configuration.pinIterations)
        try withState { (state) throws(CoreError) in
            let store = try state.store()
            try CoreError.mapping {
                try store.write {
                    try store.setMetadata(Key.userPIN, record.encoded)
                    try store.setMetadata(Key.userFailures, Token.encode(count: 0))
                }
            }
        }
    }

    /// C_SetPIN: changes the PIN of whoever is logged in, else the user's.
    package func changePIN(from old: [UInt8], to new: [UInt8]) throws(CoreError) {
        try Token.checkLength(new)
        let user = withState { state in state.authentication.login?.user } ?? .user
        let tokenKey = try unwrapTokenKey(user, pin: old).tokenKey
        let record = try PINRecord.make(
            pin: SecretBytes(new), tokenKey: tokenKey, user: user,
            iterations: configuration.pinIterations)
        try withState { (state) throws(CoreError) in
            let store = try state.store()
            try CoreError.mapping { try store.setMetadata(Key.pin(user), record.encoded) }
        }
    }

    /// C_Login: checks the PIN and keeps the token key for this process's sessions. Logins
    /// of this process run one at a time (`logins`), so SO and user cannot both get in.
    package func logIn(_ user: UserType, pin: [UInt8]) throws(CoreError) {
        try logins.withLock { (locked) throws(CoreError) in
            if let current = locked.withLock({ (state: TokenState) -> UserType? in
                state.checkLogin()
                return state.authentication.login?.user
            }) {
                throw current == user
                    ? CoreError(.userAlreadyLoggedIn, "already logged in")
                    : CoreError(
                        .userAnotherAlreadyLoggedIn, "the other user type is logged in: log out first")
            }
            let opened = try unwrapTokenKey(user, pin: pin)
            locked.withLock { (state: TokenState) in
                state.authentication.login = Login(user: user, tokenKey: opened.tokenKey, epoch: opened.epoch)
                if user == .user { state.authentication.sessionUnlockDeclined = false }
                state.sealClearKeys()
            }
        }
    }

    /// CKU_CONTEXT_SPECIFIC login: checks the user's PIN again (counting a failure) without
    /// changing who is logged in, for a key with CKA_ALWAYS_AUTHENTICATE.
    package func reauthenticateUser(pin: [UInt8]) throws(CoreError) {
        guard loggedInUser == .user else {
            throw CoreError(.userNotLoggedIn, "a context-specific login needs the user logged in")
        }
        _ = try unwrapTokenKey(.user, pin: pin)
    }

    /// C_Logout (and the end of the last session): forgets the token key and every key parsed
    /// under it, and destroys this process's private session objects (v2.40 §5.6).
    package func logOut() {
        withState { state in
            state.endLogin()
            guard let sessionStore = state.objects.sessionStore else { return }
            let privateTerm = [StoredAttribute(AttributeType.private.rawValue, [1])]
            // The session store is this process's own, in memory: it fails only out of
            // memory, and C_Logout must still end the login (the token key is gone either way).
            if let ids = try? sessionStore.find(privateTerm) {
                for id in ids { _ = try? sessionStore.delete(id) }
            }
        }
    }

    /// Opens the token key with `pin`. The attempt is claimed before it is tried and ends as
    /// a failure (a wrong PIN) or a cleared count (a right one), so that the limit holds
    /// against any number of threads and processes guessing at once while right PINs never
    /// lock (PINAttempts.swift). A PIN is always checked by its derivation: nothing kept
    /// elsewhere (the session keyring's entry included) checks one faster.
    func unwrapTokenKey(_ user: UserType, pin: [UInt8]) throws(CoreError)
        -> (tokenKey: SecretBytes, epoch: [UInt8]?, pinKey: SecretBytes)
    {
        let attempt = try claimAttempt(user)
        let record = attempt.record
        var ended = false
        // An error that is no verdict (the crypto library) counts nothing. try?: a defer
        // cannot throw, and the error already on its way is the one to report; a claim left
        // behind holds no lock once `attempt` goes, so the next claim removes it (PINAttempts).
        defer { if !ended { try? finishAttempt(attempt, user, right: nil) } }
        let opened = try record.open(pin: SecretBytes(pin), user: user)
        ended = true
        try finishAttempt(attempt, user, right: opened != nil)
        guard let opened else {
            throw CoreError(.pinIncorrect, "wrong PIN")
        }
        return (opened.tokenKey, attempt.epoch, opened.pinKey)
    }

}

extension TokenState {
    /// Ends this process's login when another process has re-initialised the token since
    /// (its epoch changed): the objects the login was for are gone, and anything sealed under
    /// its token key could never be read again. Reads the store only when its change counter
    /// has moved since the last check, so the call costs a memory load on the signing path.
    func checkLogin() {
        guard authentication.login != nil, let store = objects.persistentStore else { return }
        checkLogin(changeCount: store.changeCount)
    }

    /// `checkLogin()` with the persistent store's change count the caller has just read (a
    /// find reads it once for this check and for what it keeps).
    func checkLogin(changeCount count: UInt64?) {
        guard let current = authentication.login, let store = objects.persistentStore else { return }
        if let count, count == current.checkedAt { return }
        // A read that fails (busy, I/O) proves nothing: the login stands, and the next check
        // (every seal forces one) reads again.
        guard let epoch = try? store.metadata(Token.Key.epoch) else { return }
        guard epoch == current.epoch else {
            endLogin()
            return
        }
        // Inside a transaction the epoch comes from its snapshot, which may predate `count`
        // (a re-initialisation committed after the snapshot began): it vouches for no count,
        // and the next check outside reads again.
        authentication.login?.checkedAt = store.isInTransaction ? nil : count
    }

    /// The token key of the current login, for sealing or opening values.
    /// Without one, the error says what the caller must do: log in, or first set a user PIN.
    ///
    /// Sealing reads the epoch again whatever the change counter says: a value sealed under
    /// a key another process's re-initialisation retired could never be opened again. Opening
    /// trusts the counter, as every other read does (ARCHITECTURE.md §4.3): a stale key opens nothing of
    /// the re-initialised store (AES-GCM refuses it), and an extra read of the store on every
    /// password read was a tenth of a `SecItemCopyMatching`.
    func currentTokenKey(toSeal: Bool) throws(CoreError) -> SecretBytes {
        if toSeal { authentication.login?.checkedAt = nil }
        checkLogin()
        if let login = authentication.login { return login.tokenKey }
        // Only picks which of two errors to throw: an unreadable store says "log in".
        let hasUserPIN = (try? store().metadata(Token.Key.userPIN)) != nil
        guard hasUserPIN || !toSeal else {
            throw CoreError(
                .userPINNotInitialized,
                "keys and private values are sealed under the token key, which the user PIN "
                    + "protects: set a user PIN first (C_InitPIN, or p11keychain set-pin)")
        }
        throw CoreError(
            .userNotLoggedIn,
            toSeal
                ? "keys and private values are sealed under the token key: log in first"
                : "the object's sealed values open only with a login")
    }

    /// Forgets the login and everything parsed or read under it (keys, private objects kept by
    /// finds).
    func endLogin() {
        authentication.login = nil
        keys.removeAll()
        objects.objectCache.removeAll()
    }

    /// The user's PIN record, the token's epoch and the user's failure count, as stored now;
    /// nil when no user PIN is set or its record is malformed.
    func storedUserPIN() throws(CoreError) -> (record: PINRecord, epoch: [UInt8]?, failures: Int)? {
        let store = try store()
        return try CoreError.mapping {
            try store.read { () throws -> (PINRecord, [UInt8]?, Int)? in
                guard let bytes = try store.metadata(Token.Key.userPIN), let record = PINRecord(bytes) else {
                    return nil
                }
                return (
                    record, try store.metadata(Token.Key.epoch),
                    Token.count(try store.metadata(Token.Key.userFailures))
                )
            }
        }
    }
}
