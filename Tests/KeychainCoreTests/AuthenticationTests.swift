import Foundation
import KeychainCore
import Testing

private let soPIN = bytes("so-pin-0000")
private let userPIN = bytes("user-pin-0000")

@Suite("PINs and login")
struct AuthenticationTests {
    @Test("a token made on first use has no PINs and no label until it is initialized")
    func newTokenHasNoPINs() throws {
        try withToken { token, _ in
            let fresh = try token.authenticationState()
            #expect(!fresh.hasSecurityOfficerPIN)
            #expect(!fresh.hasUserPIN)
            #expect(fresh.label == nil)
            #expect(fresh.userFailures == 0)
            #expect(fresh.maximumFailures == Token.maximumFailures)
            #expect(token.loggedInUser == nil)

            try token.initialize(securityOfficerPIN: soPIN, label: "My Token")
            let initialized = try token.authenticationState()
            #expect(initialized.hasSecurityOfficerPIN)
            #expect(!initialized.hasUserPIN)
            #expect(initialized.label == "My Token")
            // The state lives in the store: another Token on it (another process) sees it.
            #expect(try Token(configuration: token.configuration).authenticationState() == initialized)
        }
    }

    @Test("a PIN has 4 to 255 bytes", arguments: [0, 3, 4, 255, 256])
    func pinLengths(_ length: Int) throws {
        try withToken { token, _ in
            let pin = [UInt8](repeating: 0x31, count: length)
            if Token.pinLengths.contains(length) {
                try token.initialize(securityOfficerPIN: pin, label: "t")
                try token.logIn(.securityOfficer, pin: pin)
                #expect(token.loggedInUser == .securityOfficer)
            } else {
                expectKeychainError(.pinLengthRange) {
                    try token.initialize(securityOfficerPIN: pin, label: "t")
                }
                #expect(try !token.authenticationState().hasSecurityOfficerPIN)
            }
        }
    }

    @Test("nobody logs in before the PIN they need is set")
    func loginNeedsPINs() throws {
        try withToken { token, _ in
            expectKeychainError(.pinIncorrect, containing: "no SO PIN") {
                try token.logIn(.securityOfficer, pin: soPIN)
            }
            expectKeychainError(.userPINNotInitialized) { try token.logIn(.user, pin: userPIN) }
            expectKeychainError(.userNotLoggedIn, containing: "security officer") {
                try token.initializeUserPIN(userPIN)
            }
            try token.initialize(securityOfficerPIN: soPIN, label: "t")
            expectKeychainError(.userPINNotInitialized) { try token.logIn(.user, pin: userPIN) }
            #expect(token.loggedInUser == nil)
        }
    }

    @Test("one user type at a time, and only once")
    func oneLoginAtATime() throws {
        try withToken { token, _ in
            try logInUser(token)
            #expect(token.loggedInUser == .user)
            expectKeychainError(.userAlreadyLoggedIn) { try token.logIn(.user, pin: userPIN) }
            expectKeychainError(.userAnotherAlreadyLoggedIn) { try token.logIn(.securityOfficer, pin: soPIN) }
            token.logOut()
            #expect(token.loggedInUser == nil)
            try token.logIn(.securityOfficer, pin: soPIN)
            #expect(token.loggedInUser == .securityOfficer)
        }
    }

    @Test("a wrong PIN is counted in the store; the right one clears the count")
    func failuresAreCounted() throws {
        try withToken { token, _ in
            try logInUser(token)
            token.logOut()
            expectKeychainError(.pinIncorrect) { try token.logIn(.user, pin: bytes("wrong-pin")) }
            expectKeychainError(.pinIncorrect) { try token.logIn(.user, pin: bytes("wrong-pin")) }
            #expect(try token.authenticationState().userFailures == 2)
            #expect(try Token(configuration: token.configuration).authenticationState().userFailures == 2)
            #expect(token.loggedInUser == nil)
            try token.logIn(.user, pin: userPIN)
            #expect(try token.authenticationState().userFailures == 0)
        }
    }

    @Test("too many wrong PINs lock the user PIN, even against the right one, until the SO sets a new one")
    func pinLocks() throws {
        try withToken { token, _ in
            try logInUser(token)
            token.logOut()
            for _ in 0..<Token.maximumFailures {
                expectKeychainError(.pinIncorrect) { try token.logIn(.user, pin: bytes("wrong-pin")) }
            }
            #expect(try token.authenticationState().isUserPINLocked)
            expectKeychainError(.pinLocked, containing: "the SO must set a new one") {
                try token.logIn(.user, pin: userPIN)
            }
            try token.logIn(.securityOfficer, pin: soPIN)
            try token.initializeUserPIN(bytes("new-user-pin"))
            token.logOut()
            #expect(try !token.authenticationState().isUserPINLocked)
            try token.logIn(.user, pin: bytes("new-user-pin"))
        }
    }

    @Test("changing a PIN keeps the token key: private objects stay readable under the new PIN")
    func changePINKeepsObjects() throws {
        try withToken { token, _ in
            try logInUser(token)
            let secret = try token.createObject(
                dataTemplate(label: "secret", [.private: yes, .value: bytes("value")]), context: Contexts.user
            )
            expectKeychainError(.pinIncorrect) {
                try token.changePIN(from: bytes("wrong-pin"), to: bytes("x-pin"))
            }
            try token.changePIN(from: userPIN, to: bytes("new-user-pin"))
            token.logOut()
            expectKeychainError(.pinIncorrect) { try token.logIn(.user, pin: userPIN) }
            try token.logIn(.user, pin: bytes("new-user-pin"))
            #expect(try token.attributes(of: secret, context: Contexts.user).string(.value) == "value")
        }
    }

    @Test("initializing again needs the SO PIN, then wipes every object and the user PIN")
    func reinitializeWipes() throws {
        try withToken { token, _ in
            try logInUser(token)
            let object = try token.createObject(dataTemplate(label: "kept?"), context: Contexts.user)
            token.logOut()
            expectKeychainError(.pinIncorrect) {
                try token.initialize(securityOfficerPIN: bytes("wrong-pin"), label: "new")
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [object])
            #expect(try token.authenticationState().label == "test")

            try token.initialize(securityOfficerPIN: soPIN, label: "new")
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [])
            let state = try token.authenticationState()
            #expect(state.label == "new")
            #expect(!state.hasUserPIN)
            expectKeychainError(.userPINNotInitialized) { try token.logIn(.user, pin: userPIN) }
        }
    }
}
