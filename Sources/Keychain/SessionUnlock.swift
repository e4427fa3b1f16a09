internal import KeychainCore

/// Whether a keychain is unlocked for the login session, and until when.
public struct SessionUnlockStatus: Hashable, Sendable {
    /// Where it stands.
    public enum State: Hashable, Sendable {
        /// Not unlocked for the session: never, or locked again, or expired.
        case locked
        /// Unlocked for every process of the session, until `expires` (seconds since 1970),
        /// or until ``Keychain/lockSession()`` or the session's end when nil.
        case unlocked(expires: UInt64?)
        /// Unlocked once, but the user PIN changed (or the keychain was re-initialized) since:
        /// it unlocks nothing until it is unlocked again.
        case stale
    }

    /// Where it stands.
    public let state: State
    /// True when the calling process has no session keyring of its own (no login session
    /// made one: a service started without PAM, a container) and the kernel lends it the
    /// user's default session keyring, which every such process of the user shares.
    public let inUserDefaultKeyring: Bool

    /// True when the keychain is unlocked for the session.
    public var isUnlocked: Bool {
        if case .unlocked = state { return true }
        return false
    }
}

/// A keychain unlocked for the whole login session, as the login keychain is on macOS
/// (ARCHITECTURE.md §6.5): `p11keychain unlock` calls ``unlockForSession(pin:timeout:)``, and every
/// process of that session then finds the keychain unlocked when it opens it, with no
/// `unlock(pin:)` or `SecKeychainUnlock`, until ``lockSession()``, the timeout or logout.
///
/// What lets a process in is kept in the Linux kernel's session keyring, never on disk, and
/// only processes of that session can read it. The PKCS#11 module still wants C_Login, as
/// the standard says; in an unlocked session it checks the PIN without the slow derivation.
extension Keychain {
    /// Checks the user PIN and unlocks the keychain for every process of the calling
    /// process's login session, for `timeout` seconds or until ``lockSession()`` or the
    /// session ends. This process itself stays as it was.
    ///
    /// - Throws: ``KeychainError/Code/authFailed`` for a wrong PIN (counted) or a locked
    ///   PIN; ``KeychainError/Code/notAvailable`` when no user PIN is set or the kernel has
    ///   no key retention service for this process.
    @discardableResult
    public func unlockForSession(pin: String, timeout: UInt32? = nil) throws(KeychainError)
        -> SessionUnlockStatus
    {
        do {
            return SessionUnlockStatus(try token.unlockSession(pin: Array(pin.utf8), timeout: timeout))
        } catch  where error.code == .unsupported {
            throw KeychainError(.notAvailable, error.message)
        } catch {
            throw loginError(error, user: .user)
        }
    }

    /// Locks the keychain for every process of the login session again (and for this one,
    /// if the session unlocked it). Returns false when it was not unlocked for the session.
    @discardableResult
    public func lockSession() throws(KeychainError) -> Bool {
        try KeychainError.mapping { () throws(CoreError) in try token.lockSession() }
    }

    /// Whether the keychain is unlocked for the login session, and until when.
    public var sessionUnlockStatus: SessionUnlockStatus {
        get throws(KeychainError) {
            do {
                return SessionUnlockStatus(try token.sessionUnlockStatus())
            } catch  where error.code == .unsupported {
                throw KeychainError(.notAvailable, error.message)
            } catch {
                throw KeychainError(error)
            }
        }
    }
}

extension SessionUnlockStatus {
    init(_ status: KeychainCore.SessionUnlockStatus) {
        switch status.state {
        case .locked: state = .locked
        case .unlocked(let expires): state = .unlocked(expires: expires)
        case .stale: state = .stale
        }
        inUserDefaultKeyring = status.inUserDefaultKeyring
    }
}
