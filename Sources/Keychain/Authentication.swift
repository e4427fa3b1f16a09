internal import KeychainCore

/// A keychain's PINs and lock state, as stored now (PKCS#11's CK_TOKEN_INFO flags).
///
/// A new keychain has no PIN: it holds certificates, which need none. Private items (keys,
/// generic passwords) need a user PIN, which the security officer (SO) sets:
///
///     let keychain = try Keychain()
///     try keychain.initialize(securityOfficerPIN: "12345678", label: "login")  // once
///     try keychain.setUserPIN("1234", securityOfficerPIN: "12345678")
///     try keychain.unlock(pin: "1234")
public struct AuthenticationStatus: Hashable, Sendable {
    /// True when this process has unlocked the keychain with the user PIN.
    public let isUnlocked: Bool
    /// True once the keychain has been initialized: an SO PIN exists.
    public let hasSecurityOfficerPIN: Bool
    /// True once the SO has set a user PIN: private items can be stored.
    public let hasUserPIN: Bool
    /// Failed unlocks since the last successful one, counted in the store for every process.
    public let failedUnlockAttempts: Int
    /// Failed SO logins since the last successful one.
    public let failedSecurityOfficerAttempts: Int
    /// Failed attempts after which a PIN locks.
    public let maximumFailedAttempts: Int
    /// The token label set by ``Keychain/initialize(securityOfficerPIN:label:)``, if any.
    public let label: String?

    /// True when too many wrong PINs locked the user PIN: only the SO can set a new one
    /// (``Keychain/setUserPIN(_:securityOfficerPIN:)``).
    public var isUserPINLocked: Bool { failedUnlockAttempts >= maximumFailedAttempts }
    /// True when too many wrong SO PINs locked the SO PIN for good.
    public var isSecurityOfficerPINLocked: Bool { failedSecurityOfficerAttempts >= maximumFailedAttempts }
}

/// Unlocking, locking and PIN management (ARCHITECTURE.md §5, §6.2; PKCS#11 C_Login, C_Logout, C_InitToken,
/// C_InitPIN, C_SetPIN). The PINs are the token's: the PKCS#11 module asks for the same ones.
///
/// Unlocking is per process and per store: once any `Keychain` on a store is unlocked,
/// every `Keychain` of the process on that store sees its private items, until one of them
/// locks it or the process ends. Other processes stay locked until they unlock themselves,
/// unless the keychain is unlocked for the login session (SessionUnlock.swift): then every
/// process of the session finds it unlocked when it opens it.
/// Each PIN check runs a slow key derivation (PBKDF2, 600,000 rounds) on purpose.
extension Keychain {
    /// The PIN state as stored now, and whether this process has unlocked the keychain.
    public var authenticationStatus: AuthenticationStatus {
        get throws(KeychainError) {
            let state = try KeychainError.mapping { () throws(CoreError) in
                try token.authenticationState()
            }
            return AuthenticationStatus(
                isUnlocked: token.loggedInUser == .user, hasSecurityOfficerPIN: state.hasSecurityOfficerPIN,
                hasUserPIN: state.hasUserPIN, failedUnlockAttempts: state.userFailures,
                failedSecurityOfficerAttempts: state.securityOfficerFailures,
                maximumFailedAttempts: state.maximumFailures, label: state.label)
        }
    }

    /// True when this process has unlocked the keychain: private items are visible.
    public var isUnlocked: Bool { token.loggedInUser == .user }

    /// Unlocks the keychain with the user PIN, for this process: keys, identities and generic
    /// passwords become visible and usable.
    ///
    /// Unlocking a keychain this process has already unlocked does nothing and does not check
    /// the PIN again (as PKCS#11's C_Login answers CKR_USER_ALREADY_LOGGED_IN).
    ///
    /// - Throws: ``KeychainError/Code/authFailed`` for a wrong PIN (the failure is counted
    ///   in the store; the message says how many attempts are left) or a PIN locked after too
    ///   many failures; ``KeychainError/Code/notAvailable`` when no user PIN is set yet.
    public func unlock(pin: String) throws(KeychainError) {
        guard token.loggedInUser != .user else { return }
        do {
            try token.logIn(.user, pin: Array(pin.utf8))
        } catch {
            throw loginError(error, user: .user)
        }
    }

    /// Locks the keychain for this process: private items become invisible again. Locking a
    /// locked keychain does nothing. An unlock for the login session
    /// (``unlockForSession(pin:timeout:)``) no longer unlocks it in this process, until
    /// ``unlock(pin:)``; other processes of the session stay unlocked (``lockSession()``
    /// locks them all).
    public func lock() {
        token.declineSessionUnlock()
        if token.loggedInUser == .user { token.logOut() }
    }

    /// Initializes the keychain (PKCS#11 C_InitToken).
    ///
    /// The first initialization of a keychain sets its security officer's PIN and its label;
    /// nothing stored is lost. Every later one must present that SO PIN, and then **erases
    /// every item and the user PIN**: the keychain starts empty, with the new SO PIN and
    /// label. Either way the keychain is left locked.
    ///
    /// - Parameters:
    ///   - securityOfficerPIN: 4 to 255 bytes of UTF-8.
    ///   - label: The token label PKCS#11 applications show (at most 32 bytes are shown).
    /// - Throws: ``KeychainError/Code/authFailed`` when an SO PIN is set and this is not it
    ///   (counted as a failure); ``KeychainError/Code/parameter`` for a PIN of the wrong length.
    public func initialize(securityOfficerPIN: String, label: String) throws(KeychainError) {
        lock()
        do {
            try token.initialize(securityOfficerPIN: Array(securityOfficerPIN.utf8), label: label)
        } catch {
            throw loginError(error, user: .securityOfficer)
        }
    }

    /// Sets the user PIN with the security officer's PIN (PKCS#11 C_InitPIN): the first user
    /// PIN of a keychain, or a new one after the old one was forgotten or locked. Items are
    /// kept. The keychain is left locked (the SO's login, which this needs, excludes the
    /// user's).
    ///
    /// - Throws: ``KeychainError/Code/authFailed`` for a wrong or locked SO PIN;
    ///   ``KeychainError/Code/notAvailable`` when the keychain was never initialized (no SO
    ///   PIN); ``KeychainError/Code/parameter`` for a PIN of the wrong length.
    public func setUserPIN(_ pin: String, securityOfficerPIN: String) throws(KeychainError) {
        guard Token.pinLengths.contains(pin.utf8.count) else {
            throw KeychainError(.parameter, Keychain.pinLengthMessage)
        }
        lock()
        do {
            try token.logIn(.securityOfficer, pin: Array(securityOfficerPIN.utf8))
        } catch {
            throw loginError(error, user: .securityOfficer)
        }
        defer { token.logOut() }
        try KeychainError.mapping { () throws(CoreError) in
            try token.initializeUserPIN(Array(pin.utf8))
        }
    }

    /// Changes the user PIN (PKCS#11 C_SetPIN). Works locked or unlocked and leaves the lock
    /// state as it was.
    ///
    /// - Throws: ``KeychainError/Code/authFailed`` when `old` is wrong (counted) or the PIN
    ///   is locked; ``KeychainError/Code/parameter`` for a new PIN of the wrong length.
    public func changePIN(from old: String, to new: String) throws(KeychainError) {
        guard token.loggedInUser != .securityOfficer else {
            throw KeychainError(.parameter, "the security officer is logged in; try again")
        }
        do {
            try token.changePIN(from: Array(old.utf8), to: Array(new.utf8))
        } catch {
            throw loginError(error, user: .user)
        }
    }

    /// Changes the security officer's PIN. The keychain is left locked.
    ///
    /// - Throws: ``KeychainError/Code/authFailed`` when `old` is wrong (counted) or locked;
    ///   ``KeychainError/Code/notAvailable`` when the keychain was never initialized.
    public func changeSecurityOfficerPIN(from old: String, to new: String) throws(KeychainError) {
        guard Token.pinLengths.contains(new.utf8.count) else {
            throw KeychainError(.parameter, Keychain.pinLengthMessage)
        }
        lock()
        do {
            try token.logIn(.securityOfficer, pin: Array(old.utf8))
        } catch {
            throw loginError(error, user: .securityOfficer)
        }
        defer { token.logOut() }
        do {
            try token.changePIN(from: Array(old.utf8), to: Array(new.utf8))
        } catch {
            throw loginError(error, user: .securityOfficer)
        }
    }

    private static var pinLengthMessage: String {
        "a PIN has \(Token.pinLengths.lowerBound) to \(Token.pinLengths.upperBound) bytes"
    }

    /// A login failure as the Swift API reports it: what went wrong and what to do, with the
    /// attempts left after a wrong PIN.
    func loginError(_ error: CoreError, user: UserType) -> KeychainError {
        let who = user == .user ? "PIN" : "security officer PIN"
        switch error.code {
        case .pinIncorrect:
            if user == .securityOfficer, (try? token.authenticationState().hasSecurityOfficerPIN) == false {
                return KeychainError(
                    .notAvailable, "the keychain has no security officer PIN yet: initialize it first")
            }
            guard let state = try? token.authenticationState() else {
                return KeychainError(.authFailed, "wrong \(who)")
            }
            let failures = user == .user ? state.userFailures : state.securityOfficerFailures
            let left = max(0, state.maximumFailures - failures)
            return KeychainError(
                .authFailed,
                left == 0
                    ? "wrong \(who); it is now locked after \(state.maximumFailures) failed attempts"
                    : "wrong \(who) (\(left) attempt\(left == 1 ? "" : "s") left before it locks)")
        case .pinLocked:
            return KeychainError(
                .authFailed,
                user == .user
                    ? "the PIN is locked after too many failed attempts: the security officer must set a "
                        + "new one"
                    : "the security officer PIN is locked after too many failed attempts")
        case .userPINNotInitialized:
            return KeychainError(
                .notAvailable, "the keychain has no user PIN yet: the security officer sets one (setUserPIN)")
        case .userAlreadyLoggedIn, .userAnotherAlreadyLoggedIn:
            return KeychainError(.parameter, "another login of this process is in progress; try again")
        default:
            return KeychainError(error)
        }
    }
}
