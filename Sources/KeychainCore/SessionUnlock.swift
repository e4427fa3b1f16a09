internal import KeychainCrypto
internal import KeychainStorage

#if canImport(Glibc)
    import Glibc
#endif

/// Where a token's session unlock stands (`p11keychain status`).
package enum SessionUnlockState: Sendable, Equatable {
    /// No entry for this token in the session keyring (never unlocked, locked, expired).
    case locked
    /// Unlocked for the session until `expires` (seconds since 1970), or until
    /// `p11keychain lock` or the session's end when nil.
    case unlocked(expires: UInt64?)
    /// An entry exists but no longer opens the token: its user PIN was changed or reset, or
    /// the token re-initialised, since the unlock. It unlocks nothing; unlock again.
    case stale
}

/// A token's session unlock as `p11keychain status` shows it: its state, and whether the
/// keyring is only the user's default session keyring (no login session keyring exists).
package struct SessionUnlockStatus: Sendable, Equatable {
    package var state: SessionUnlockState
    package var inUserDefaultKeyring: Bool
}

/// A keychain unlocked for the login session, as on macOS (ARCHITECTURE.md §6.5).
///
/// `p11keychain unlock` checks the user PIN (counted like any C_Login) and leaves, in the
/// session keyring of the kernel's key retention service, a `user` key named after the token
/// (`SessionEntry.description(for:)`) whose payload is the key the PIN derives, never the PIN,
/// readable only by processes of the owning uid in that session (SessionKeyring.swift). With
/// it a process opens the token key (one AES-GCM open of the stored PIN record) without the
/// PIN and without the slow derivation. The entry holds nothing else: no hash or check of the
/// PIN, so whoever reads it can test a PIN guess no faster than the PIN's own derivation
/// (a keyed hash of the PIN in the entry let a 4-digit PIN fall in 0.04 s).
/// The rule, for every face:
///
/// - The Swift faces (Keychain, Security) follow the entry at each open of a keychain
///   (`followSessionUnlock`): it unlocks the token for this process as the PIN would, and
///   its removal (`p11keychain lock`, expiry, the session's end) locks it again. It is not a
///   PIN guess: no count moves. A process that locked the keychain itself (SecKeychainLock)
///   stays locked until it unlocks with the PIN.
/// - The PKCS#11 face keeps the spec's login semantics: C_Login is still needed. In an
///   unlocked session the token reports a protected authentication path
///   (CKF_PROTECTED_AUTHENTICATION_PATH), and a C_Login(CKU_USER) with no PIN logs in through
///   the entry (`logInWithSessionEntry`), as a pinpad reader's login would; a C_Login with a
///   PIN checks that PIN by the derivation, counted as always.
///
/// An entry always answers for the PIN record as stored now: a changed or reset PIN, or a
/// re-initialised token, leaves a record the entry's key does not open, and the entry is
/// ignored. A locked PIN (too many failures) makes the entry unlock nothing.
extension Token {
    /// Checks the user PIN (counted as a C_Login) and stores this token's entry in the
    /// calling process's session keyring, valid for `timeout` seconds (nil: until `lock` or
    /// the session's end). The calling process itself is not unlocked.
    package func unlockSession(pin: [UInt8], timeout: UInt32?) throws(CoreError) -> SessionUnlockStatus {
        let keyring = try SessionKeyring.sessionKeyring()
        let opened = try unwrapTokenKey(.user, pin: pin)
        let expires = timeout.map { UInt64(max(time(nil), 0)) + UInt64($0) }
        let entry = SessionEntry(pinKey: opened.pinKey, expires: expires)
        let payload = entry.encoded
        _ = try SessionKeyring.store(
            payload, as: try sessionDescription(), in: keyring.id, timeout: timeout)
        return SessionUnlockStatus(
            state: .unlocked(expires: expires), inUserDefaultKeyring: keyring.isUserDefault)
    }

    /// Removes this token's entry from the session keyring, for every process of the session,
    /// and ends this process's login taken from it. Returns false when there was none.
    @discardableResult
    package func lockSession() throws(CoreError) -> Bool {
        let description = try sessionDescription()
        withState { state in
            if state.authentication.login?.sessionEntry != nil { state.endLogin() }  // as C_Logout would
        }
        guard let id = SessionKeyring.find(description) else { return false }
        SessionKeyring.remove(id)
        return true
    }

    /// Where this token's session unlock stands now.
    package func sessionUnlockStatus() throws(CoreError) -> SessionUnlockStatus {
        let keyring = try SessionKeyring.sessionKeyring()
        let state: SessionUnlockState
        if let found = try currentSessionEntry() {
            let opens = try withState { (state) throws(CoreError) in
                try state.openWithSession(found.entry) != nil
            }
            state = opens ? .unlocked(expires: found.entry.expires) : .stale
        } else {
            state = .locked
        }
        return SessionUnlockStatus(state: state, inUserDefaultKeyring: keyring.isUserDefault)
    }

    /// The Swift faces' rule, at each open of a keychain: a login taken from the session
    /// keyring ends when its entry is gone; with no login, a current entry logs the user in
    /// (no PIN, no count). A login with the PIN, or a process that locked the keychain itself,
    /// is left as it is. Costs one system call when nothing changes. Never fails: an entry
    /// that cannot be read or does not open unlocks nothing.
    package func followSessionUnlock() {
        logins.withLock { locked in
            // The keyring is read with the state's lock free: naming the entry opens the store, which
            // takes it. `logins`, held throughout, keeps C_Login out meanwhile.
            let wantsEntry = locked.withLock { (state: TokenState) -> Bool in
                if let current = state.authentication.login {
                    guard let id = current.sessionEntry, !SessionKeyring.isReadable(id) else { return false }
                    state.endLogin()  // as C_Logout would
                }
                return !state.authentication.sessionUnlockDeclined
            }
            // try? (both): fail closed. An entry that cannot be read, or does not open the
            // token key, leaves the keychain locked, as if there were none.
            guard wantsEntry, let found = try? currentSessionEntry() else { return }
            locked.withLock { (state: TokenState) in
                guard state.authentication.login == nil, let opened = try? state.openWithSession(found.entry)
                else { return }
                state.authentication.login = Login(
                    user: .user, tokenKey: opened.tokenKey, epoch: opened.epoch, sessionEntry: found.id)
                state.sealClearKeys()
            }
        }
    }

    /// This process locks the keychain itself (SecKeychainLock): the session's entry no longer
    /// unlocks it in this process, until a login with the PIN.
    package func declineSessionUnlock() {
        withState { state in state.authentication.sessionUnlockDeclined = true }
    }

    /// True when the session keyring holds a current entry for this token (it may still be
    /// stale): what CK_TOKEN_INFO's protected authentication path reports. One keyring search.
    package var hasSessionUnlock: Bool {
        // try?: a store that cannot be opened has no entry to name; C_GetTokenInfo reports
        // the store's own error elsewhere, and this flag only says whether to offer the path.
        guard let description = try? sessionDescription() else { return false }
        return SessionKeyring.find(description) != nil
    }

    /// C_Login(CKU_USER) with no PIN in an unlocked session: logs the user in with the token
    /// key the session keyring's entry opens. Not a PIN guess (no count moves); without a
    /// current entry that opens the stored record, `pinIncorrect`, and nothing changes. Logins
    /// of this process run one at a time (`logins`), as with the PIN.
    package func logInWithSessionEntry() throws(CoreError) {
        try logins.withLock { (locked) throws(CoreError) in
            if let current = locked.withLock({ (state: TokenState) -> UserType? in
                state.checkLogin()
                return state.authentication.login?.user
            }) {
                throw current == .user
                    ? CoreError(.userAlreadyLoggedIn, "already logged in")
                    : CoreError(
                        .userAnotherAlreadyLoggedIn, "the other user type is logged in: log out first")
            }
            guard let found = try currentSessionEntry(),
                let opened = try locked.withLock({ (state: TokenState) throws(CoreError) in
                    try state.openWithSession(found.entry)
                })
            else {
                // Not a guess either way: an empty PIN is never a PIN (`pinLengths`).
                if try locked.withLock({ (state: TokenState) throws(CoreError) in
                    try state.storedUserPIN()
                }) == nil {
                    throw CoreError(
                        .userPINNotInitialized, "no user PIN is set yet: the SO sets it with C_InitPIN")
                }
                throw CoreError(
                    .pinIncorrect,
                    "a login without a PIN needs this session unlocked (p11keychain unlock): give the PIN")
            }
            locked.withLock { (state: TokenState) in
                // Not tied to the entry (`sessionEntry` nil): a C_Login lasts until C_Logout,
                // as one with the PIN does.
                state.authentication.login = Login(
                    user: .user, tokenKey: opened.tokenKey, epoch: opened.epoch)
                state.authentication.sessionUnlockDeclined = false
                state.sealClearKeys()
            }
        }
    }

    /// This token's entry in the session keyring, read now, or nil.
    private func currentSessionEntry() throws(CoreError) -> (id: Int32, entry: SessionEntry)? {
        guard let id = SessionKeyring.find(try sessionDescription()),
            let payload = SessionKeyring.read(id, count: SessionEntry.length),
            let entry = SessionEntry(payload)
        else { return nil }
        return (id, entry)
    }

    /// The entry's name: the store's serial number and its resolved path, so that two tokens
    /// (or a store re-created at the same path) never share one. Made once, when the store
    /// first opens: the serial never changes, and the path is resolved to the file this token
    /// opened (a keychain whose path comes to name another file gets another `Token`). The
    /// Swift faces look the entry up at every open of a keychain; resolving the path each time
    /// was a system call per directory.
    func sessionDescription() throws(CoreError) -> String {
        try open()
        if let name = withState({ state in state.authentication.sessionEntryName }) { return name }
        let name = SessionEntry.description(
            serial: serialNumber, path: Token.entryLocation(configuration.path))
        withState { state in state.authentication.sessionEntryName = name }
        return name
    }

    /// A server store by its printable location (host, port, database, user: never a password
    /// the connection string holds, since anything of this user's may read the keyring entry's
    /// name); with the token's serial number that still names one store. A file by its
    /// resolved path.
    private static func entryLocation(_ location: String) -> String {
        ObjectStore.isServerLocation(location) ? ObjectStore.printable(location) : resolved(location)
    }

    private static func resolved(_ path: String) -> String {
        guard let real = realpath(path, nil) else { return path }
        defer { free(real) }
        return String(cString: real)
    }
}

/// The payload of a session keyring entry: version (2) ‖ expiry (UInt64 LE seconds since
/// 1970, 0: none; the kernel enforces it, this copy is for `status`) ‖ the PIN-derived key
/// (32). Nothing in it checks a PIN faster than the derivation does; version 1 also held a
/// keyed hash of the PIN, and is no longer read (such an entry unlocks nothing: unlock again).
struct SessionEntry {
    static let version: UInt8 = 2
    static let length = 1 + 8 + SecretBox.keyLength

    let expires: UInt64?
    let pinKey: SecretBytes

    static func description(serial: String, path: String) -> String {
        "p11keychain:" + serial + ":" + path
    }

    init(pinKey: SecretBytes, expires: UInt64?) {
        self.pinKey = pinKey
        self.expires = expires
    }

    /// Decodes a payload; nil when it is not one this version wrote.
    init?(_ payload: SecretBytes) {
        guard payload.count == SessionEntry.length else { return nil }
        let parts = payload.withUnsafeBytes { bytes -> (UInt8, UInt64, SecretBytes) in
            let expiry = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 1, as: UInt64.self))
            let key = SecretBytes(copying: UnsafeRawBufferPointer(rebasing: bytes[9..<SessionEntry.length]))
            return (bytes[0], expiry, key)
        }
        guard parts.0 == SessionEntry.version else { return nil }
        expires = parts.1 == 0 ? nil : parts.1
        pinKey = parts.2
    }

    /// The payload, in a self-wiping buffer.
    var encoded: SecretBytes {
        SecretBytes(count: SessionEntry.length) { buffer in
            buffer[0] = SessionEntry.version
            buffer.storeBytes(of: (expires ?? 0).littleEndian, toByteOffset: 1, as: UInt64.self)
            pinKey.withUnsafeBytes { key in
                UnsafeMutableRawBufferPointer(rebasing: buffer[9..<(9 + key.count)]).copyMemory(from: key)
            }
        }
    }
}

extension TokenState {
    /// The token key and epoch `entry` opens from the stored user PIN record, or nil when it
    /// opens nothing (stale entry, no user PIN, a locked PIN).
    fileprivate func openWithSession(_ entry: SessionEntry) throws(CoreError)
        -> (tokenKey: SecretBytes, epoch: [UInt8]?)?
    {
        guard let stored = try storedUserPIN(), stored.failures < Token.maximumFailures,
            let tokenKey = try stored.record.open(pinKey: entry.pinKey, user: .user)
        else { return nil }
        return (tokenKey, stored.epoch)
    }
}
