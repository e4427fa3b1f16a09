internal import KeychainCore

// The PAM helper's work (docs/pam.md): the two things pam_p11keychain.so asks for, in a
// process that already is the target user. Every rule is KeychainCore's (LoginKeychain.swift);
// this file opens the user's default keychain and turns the result into an exit status and
// one line for the system log.

/// What the helper did: its exit status (pam/include/pam_p11keychain.h, P11K_PAM_*).
enum HelperStatus: Int32 {
    case done = 0
    case created = 1
    case nothing = 2
    case failed = 3
}

/// Unlocks the user's login keychain for the session with `password` as its user PIN;
/// creates it first when it has no PIN.
func unlockLoginKeychain(home: String, password: [UInt8]) throws(CoreError) -> (HelperStatus, String) {
    let token = try loginKeychain(home)
    switch try token.unlockWithLoginPassword(password) {
    case .created: return (.created, "created the login keychain \(token.configuration.path)")
    case .unlocked: return (.done, "")
    }
}

/// Changes the login keychain's user PIN from the old password to the new one.
func changeLoginKeychain(home: String, from old: [UInt8], to new: [UInt8]) throws(CoreError)
    -> (HelperStatus, String)
{
    let token = try loginKeychain(home)
    guard try token.followLoginPasswordChange(from: old, to: new) else { return (.nothing, "") }
    return (.done, "changed the PIN of the login keychain \(token.configuration.path)")
}

/// The default keychain of the user whose home is `home`, as `p11keychain unlock` opens it
/// there: the configuration of that home (or the system's), its first token.
private func loginKeychain(_ home: String) throws(CoreError) -> Token {
    let configuration: Configuration
    do {
        configuration = try Configuration.load(environment: ["HOME": home])
    } catch {
        throw CoreError(.tokenNotPresent, "cannot read the configuration: \(error)")
    }
    guard let first = configuration.tokens.first else {
        throw CoreError(.tokenNotPresent, "the configuration names no token")
    }
    return Token(configuration: first)
}
