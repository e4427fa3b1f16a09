import Foundation
import KeychainCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

private let soPIN = bytes("so-pin-login-0000")
private let oldPassword = bytes("old-login-password")
private let newPassword = bytes("new-login-password")

/// A token with an SO PIN and `oldPassword` as its user PIN, as a login keychain is.
private func makeLoginKeychain(_ token: Token) throws {
    try token.initialize(securityOfficerPIN: soPIN, label: "login")
    try token.logIn(.securityOfficer, pin: soPIN)
    try token.initializeUserPIN(oldPassword)
    token.logOut()
}

/// The rules the PAM module follows (LoginKeychain.swift). The unlock itself, which writes the
/// session keyring, is proven through pamtester (Tests/Integration/test_pam.sh).
@Suite("The login keychain")
struct LoginKeychainTests {
    @Test("a password change re-wraps the token key: the old password no longer logs in, the new one does")
    func passwordChangeRewrapsTheTokenKey() throws {
        try withToken { token, _ in
            try makeLoginKeychain(token)
            #expect(try token.followLoginPasswordChange(from: oldPassword, to: newPassword))
            let later = Token(configuration: token.configuration)
            expectKeychainError(.pinIncorrect) { try later.logIn(.user, pin: oldPassword) }
            try later.logIn(.user, pin: newPassword)
            #expect(later.loggedInUser == .user)
        }
    }

    @Test("a password change with a wrong old password changes nothing")
    func wrongOldPasswordChangesNothing() throws {
        try withToken { token, _ in
            try makeLoginKeychain(token)
            expectKeychainError(.pinIncorrect) {
                _ = try token.followLoginPasswordChange(from: newPassword, to: newPassword)
            }
            try Token(configuration: token.configuration).logIn(.user, pin: oldPassword)
        }
    }

    @Test("a password change where there is no keychain creates none")
    func passwordChangeWithoutKeychainCreatesNone() throws {
        try withToken { token, _ in
            let changed = try token.followLoginPasswordChange(from: oldPassword, to: newPassword)
            #expect(!changed)
            #expect(access(token.configuration.path, F_OK) != 0)
        }
    }

    @Test("a login password shorter than a PIN creates no keychain and unlocks nothing")
    func shortPasswordCreatesNothing() throws {
        try withToken { token, _ in
            expectKeychainError(.pinLengthRange) { _ = try token.unlockWithLoginPassword(bytes("abc")) }
            let state = try token.authenticationState()
            #expect(!state.hasSecurityOfficerPIN)
            #expect(!state.hasUserPIN)
        }
    }

    @Test("a keychain with an SO PIN but no user PIN is not taken over by the login")
    func keychainWithoutUserPINIsNotTakenOver() throws {
        try withToken { token, _ in
            try token.initialize(securityOfficerPIN: soPIN, label: "mine")
            expectKeychainError(.userPINNotInitialized) { _ = try token.unlockWithLoginPassword(oldPassword) }
            let state = try token.authenticationState()
            #expect(!state.hasUserPIN)
            #expect(state.label == "mine")
        }
    }
}
