internal import KeychainCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// What the login did to the user's login keychain (`unlockWithLoginPassword`).
public enum LoginKeychainOutcome: Sendable, Equatable {
    /// The keychain existed; the login password, its user PIN, unlocked it for the session.
    case unlocked
    /// There was none: it was created with the login password as its user PIN, and unlocked.
    case created
}

/// The login keychain, unlocked by the login as on macOS (ARCHITECTURE.md §6.5, docs/pam.md):
/// the rules the PAM module follows, kept here so that no face decides them.
///
/// - The login password is the keychain's user PIN. A login unlocks the keychain for the login
///   session exactly as `p11keychain unlock` does (`unlockSession`): the same entry in the
///   session keyring, the same count of a wrong PIN.
/// - A store with no PIN at all (none yet, or never initialised) becomes the login keychain at
///   the first login: its user PIN is the password, and its security officer's PIN is random
///   and forgotten at once, so that no second secret exists that the password change would
///   leave behind. Such a keychain is never initialised again by `p11keychain init` (no one
///   knows the SO PIN); removing its file starts over.
/// - A password change re-wraps the token key under the new password (`changePIN`), so the
///   old one no longer unlocks; an unlock of this session made with the old password is
///   renewed with the new one, as it would otherwise go stale.
/// - The password is never stored: it only derives the PIN records, as any PIN does.
extension Token {
    /// Unlocks this token for the login session with the login password; a store with no PIN
    /// at all is first made the login keychain, with `password` as its user PIN.
    public func unlockWithLoginPassword(_ password: [UInt8]) throws(CoreError) -> LoginKeychainOutcome {
        guard Token.pinLengths.contains(password.count) else {
            throw CoreError(
                .pinLengthRange,
                "the login password has \(password.count) bytes; a keychain PIN has "
                    + "\(Token.pinLengths.lowerBound) to \(Token.pinLengths.upperBound)")
        }
        let state = try authenticationState()
        var outcome = LoginKeychainOutcome.unlocked
        if !state.hasSecurityOfficerPIN, !state.hasUserPIN {
            try makeLoginKeychain(userPIN: password)
            outcome = .created
        } else if !state.hasUserPIN {
            throw CoreError(
                .userPINNotInitialized,
                "the keychain has an SO PIN but no user PIN, so the login password cannot unlock it "
                    + "(set one: p11keychain set-pin --reset)")
        }
        _ = try unlockSession(pin: password, timeout: nil)
        return outcome
    }

    /// Follows a change of the login password: the user PIN changes from `old` to `new`
    /// (re-wrapping the token key), and a current unlock of this session made with the old
    /// password is renewed with the new one. Returns false, changing nothing, when there is
    /// no keychain at the configured path or it has no user PIN; a store is never created here.
    public func followLoginPasswordChange(from old: [UInt8], to new: [UInt8]) throws(CoreError) -> Bool {
        guard access(configuration.path, F_OK) == 0, try authenticationState().hasUserPIN else {
            return false
        }
        try changePIN(from: old, to: new)
        // try?: the PIN has changed; a session without a keyring simply has nothing to renew.
        if let status = try? sessionUnlockStatus(), status.state == .stale {
            _ = try unlockSession(pin: new, timeout: nil)
        }
        return true
    }

    /// Initialises the store with a random SO PIN, forgotten here, and `userPIN`.
    private func makeLoginKeychain(userPIN: [UInt8]) throws(CoreError) {
        let random = try CoreError.mapping { try SecureRandom.bytes(32) }
        var securityOfficerPIN = Array(random.map { String($0, radix: 16).leftPadded(2) }.joined().utf8)
        defer { for index in securityOfficerPIN.indices { securityOfficerPIN[index] = 0 } }
        try initialize(securityOfficerPIN: securityOfficerPIN, label: configuration.name)
        try logIn(.securityOfficer, pin: securityOfficerPIN)
        defer { logOut() }
        try initializeUserPIN(userPIN)
    }
}
