internal import KeychainCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// Where a token's session unlock stands (`p11keychain status`).
public enum SessionUnlockState: Sendable, Equatable {
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
public struct SessionUnlockStatus: Sendable, Equatable {
    public var state: SessionUnlockState
    public var inUserDefaultKeyring: Bool
}

/// A keychain unlocked for the login session, as on macOS (DESIGN §12, issue 10 item 7).
///
/// `p11keychain unlock` checks the user PIN (counted like any C_Login) and leaves, in the
/// session keyring of the kernel's key retention service, a `user` key named after the token
/// (`SessionEntry.description(for:)`) whose payload is the key the PIN derives, never the PIN.
/// With it a process opens the token key (one AES-GCM open of the stored PIN record) without
/// the PIN and without the slow derivation. The rule, for every face:
///
/// - The Swift faces (Keychain, Security) follow the entry at each open of a keychain
///   (`followSessionUnlock`): it unlocks the token for this process as the PIN would, and
///   its removal (`p11keychain lock`, expiry, the session's end) locks it again. It is not a
///   PIN guess: no count moves. A process that locked the keychain itself (SecKeychainLock)
///   stays locked until it unlocks with the PIN.
/// - The PKCS#11 face keeps the spec's login semantics: C_Login is still needed, but in an
///   unlocked session its PIN is checked against the entry (a keyed hash of the PIN in the
///   payload) instead of by the slow derivation (`sessionVerdict`); the attempt is counted
///   before the check and cleared after a right PIN exactly as with the derivation.
///
/// An entry always answers for the PIN record as stored now: a changed or reset PIN, or a
/// re-initialised token, leaves a record the entry's key does not open, and the entry is
/// ignored. A locked PIN (too many failures) makes the entry unlock nothing.
extension Token {
    /// Checks the user PIN (counted as a C_Login) and stores this token's entry in the
    /// calling process's session keyring, valid for `timeout` seconds (nil: until `lock` or
    /// the session's end). The calling process itself is not unlocked.
    public func unlockSession(pin: [UInt8], timeout: UInt32?) throws(CoreError) -> SessionUnlockStatus {
        let keyring = try SessionKeyring.sessionKeyring()
        let opened = try unwrapTokenKey(.user, pin: pin)
        let expires = timeout.map { UInt64(max(time(nil), 0)) + UInt64($0) }
        let entry = try SessionEntry(pinKey: opened.pinKey, pin: SecretBytes(pin), expires: expires)
        let payload = entry.encoded
        _ = try SessionKeyring.store(
            payload, as: try sessionDescription(), in: keyring.id, timeout: timeout)
        return SessionUnlockStatus(
            state: .unlocked(expires: expires), inUserDefaultKeyring: keyring.isUserDefault)
    }

    /// Removes this token's entry from the session keyring, for every process of the session,
    /// and ends this process's login taken from it. Returns false when there was none.
    @discardableResult
    public func lockSession() throws(CoreError) -> Bool {
        let description = try sessionDescription()
        lock.withLock {
            if login?.sessionEntry != nil { endLogin() }  // as C_Logout would
        }
        guard let id = SessionKeyring.find(description) else { return false }
        SessionKeyring.remove(id)
        return true
    }

    /// Where this token's session unlock stands now.
    public func sessionUnlockStatus() throws(CoreError) -> SessionUnlockStatus {
        let keyring = try SessionKeyring.sessionKeyring()
        let state: SessionUnlockState
        if let found = try currentSessionEntry() {
            let opens = try lock.withLock { () throws(CoreError) in try openWithSession(found.entry) != nil }
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
    public func followSessionUnlock() {
        loginLock.withLock {
            // The keyring is read with `lock` free: naming the entry opens the store, which
            // takes it. `loginLock`, held throughout, keeps C_Login out meanwhile.
            let wantsEntry = lock.withLock { () -> Bool in
                if let current = login {
                    guard let id = current.sessionEntry, !SessionKeyring.isReadable(id) else { return false }
                    endLogin()  // as C_Logout would
                }
                return !sessionUnlockDeclined
            }
            // try? (both): fail closed. An entry that cannot be read, or does not open the
            // token key, leaves the keychain locked, as if there were none.
            guard wantsEntry, let found = try? currentSessionEntry() else { return }
            lock.withLock {
                guard login == nil, let opened = try? openWithSession(found.entry) else { return }
                login = Login(
                    user: .user, tokenKey: opened.tokenKey, epoch: opened.epoch, sessionEntry: found.id)
                sealClearKeys()
            }
        }
    }

    /// This process locks the keychain itself (SecKeychainLock): the session's entry no longer
    /// unlocks it in this process, until a login with the PIN.
    public func declineSessionUnlock() {
        lock.withLock { sessionUnlockDeclined = true }
    }

    /// What the session keyring says of `pin` for C_Login: right (with the token key it
    /// opens), wrong, or unknown (no current entry: the slow derivation decides). The caller
    /// has counted the attempt. An entry whose key opens the stored record was made with the
    /// token's current PIN, so a PIN whose keyed hash differs from the entry's is wrong.
    func sessionVerdict(pin: SecretBytes, record: PINRecord) throws(CoreError) -> SessionVerdict {
        guard let entry = try currentSessionEntry()?.entry,
            let tokenKey = try record.open(pinKey: entry.pinKey, user: .user)
        else { return .unknown }
        guard try entry.verifies(pin) else { return .wrong }
        return .right(tokenKey: tokenKey, pinKey: entry.pinKey)
    }

    enum SessionVerdict {
        case right(tokenKey: SecretBytes, pinKey: SecretBytes)
        case wrong
        case unknown
    }

    /// The token key and epoch `entry` opens from the stored user PIN record, or nil when it
    /// opens nothing (stale entry, no user PIN, a locked PIN). `lock` must be held.
    private func openWithSession(_ entry: SessionEntry) throws(CoreError)
        -> (tokenKey: SecretBytes, epoch: [UInt8]?)?
    {
        guard let stored = try storedUserPIN(), stored.failures < Token.maximumFailures,
            let tokenKey = try stored.record.open(pinKey: entry.pinKey, user: .user)
        else { return nil }
        return (tokenKey, stored.epoch)
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
        if let name = lock.withLock({ sessionEntryName }) { return name }
        let name = SessionEntry.description(serial: serialNumber, path: Token.resolved(configuration.path))
        lock.withLock { sessionEntryName = name }
        return name
    }

    private static func resolved(_ path: String) -> String {
        guard let real = realpath(path, nil) else { return path }
        defer { free(real) }
        return String(cString: real)
    }
}

/// The payload of a session keyring entry: version (1) ‖ expiry (UInt64 LE seconds since
/// 1970, 0: none; the kernel enforces it, this copy is for `status`) ‖ the PIN-derived key
/// (32) ‖ HMAC-SHA256 under that key of a label and the PIN (32), which checks a C_Login's
/// PIN without the slow derivation. The PIN itself is not in it.
struct SessionEntry {
    static let version: UInt8 = 1
    static let length = 1 + 8 + SecretBox.keyLength + 32
    private static let verifierLabel = Array("p11keychain session PIN check\u{0}".utf8)

    let expires: UInt64?
    let pinKey: SecretBytes
    let verifier: [UInt8]

    static func description(serial: String, path: String) -> String {
        "p11keychain:" + serial + ":" + path
    }

    init(pinKey: SecretBytes, pin: SecretBytes, expires: UInt64?) throws(CoreError) {
        self.pinKey = pinKey
        self.expires = expires
        verifier = try SessionEntry.mac(pin, key: pinKey)
    }

    /// Decodes a payload; nil when it is not one this version wrote.
    init?(_ payload: SecretBytes) {
        guard payload.count == SessionEntry.length else { return nil }
        let parts = payload.withUnsafeBytes { bytes -> (UInt8, UInt64, SecretBytes, [UInt8]) in
            let expiry = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 1, as: UInt64.self))
            let keyEnd = 9 + SecretBox.keyLength
            let key = SecretBytes(copying: UnsafeRawBufferPointer(rebasing: bytes[9..<keyEnd]))
            return (bytes[0], expiry, key, Array(bytes[keyEnd...]))
        }
        guard parts.0 == SessionEntry.version else { return nil }
        expires = parts.1 == 0 ? nil : parts.1
        pinKey = parts.2
        verifier = parts.3
    }

    /// The payload, in a self-wiping buffer.
    var encoded: SecretBytes {
        SecretBytes(count: SessionEntry.length) { buffer in
            buffer[0] = SessionEntry.version
            buffer.storeBytes(of: (expires ?? 0).littleEndian, toByteOffset: 1, as: UInt64.self)
            pinKey.withUnsafeBytes { key in
                UnsafeMutableRawBufferPointer(rebasing: buffer[9..<(9 + key.count)]).copyMemory(from: key)
            }
            let start = 9 + SecretBox.keyLength
            for (offset, byte) in verifier.enumerated() { buffer[start + offset] = byte }
        }
    }

    /// True when `pin` is the PIN this entry was made with (a comparison in constant time).
    func verifies(_ pin: SecretBytes) throws(CoreError) -> Bool {
        MessageAuthentication.isEqual(try SessionEntry.mac(pin, key: pinKey), verifier)
    }

    private static func mac(_ pin: SecretBytes, key: SecretBytes) throws(CoreError) -> [UInt8] {
        try CoreError.mapping {
            let mac = try MessageAuthentication(.hmac(.sha256), key: key)
            try verifierLabel.withUnsafeBytes { try mac.update($0) }
            try pin.withUnsafeBytes { try mac.update($0) }
            return try mac.finish()
        }
    }
}
