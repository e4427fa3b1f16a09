internal import KeychainCore

extension Keychain {
    /// Checks the user PIN as a login does (a failure counted toward the lockout): unlocks
    /// the keychain for this process when it is locked, else checks the PIN again without
    /// changing anything (PKCS#11's context-specific login). What LocalAuthentication's
    /// `evaluatePolicy` does with the PIN the user typed.
    ///
    /// - Throws: ``KeychainError/Code/authFailed`` for a wrong or locked PIN;
    ///   ``KeychainError/Code/notAvailable`` when no user PIN is set.
    public func verifyUserPIN(_ pin: [UInt8]) throws(KeychainError) {
        guard isUnlocked else {
            try unlock(pin: String(decoding: pin, as: UTF8.self))
            return
        }
        try KeychainError.mapping { () throws(CoreError) in try token.reauthenticateUser(pin: pin) }
    }
}
