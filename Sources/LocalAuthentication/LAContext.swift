public import Foundation
internal import Keychain

#if canImport(Glibc)
    import Glibc
#endif

/// Apple's authentication context, on Linux (ARCHITECTURE.md §7.4). The device owner is the
/// keychain's user, and their passcode is the keychain PIN:
///
/// - `setCredential(_:type: .applicationPassword)` holds the PIN; the context given as
///   `kSecUseAuthenticationContext` then authenticates `SecItem…` and `SecKey…` calls as the
///   PIN given there does.
/// - `evaluatePolicy(.deviceOwnerAuthentication…)` asks for the PIN through the user's
///   pinentry program (as gpg-agent does: `PINENTRY_PROGRAM`, else `pinentry`), checks it
///   (a failure counts toward the lockout; a locked keychain is unlocked for this process) and
///   keeps it as the context's credential. Where nothing can ask (no pinentry, no terminal or
///   display, `interactionNotAllowed`) it fails with `LAError.notInteractive`.
/// - There is no biometry or watch: those policies fail with `biometryNotAvailable` or
///   `companionNotAvailable`.
open class LAContext: NSObject {
    private let lock = NSLock()
    private var credential: [UInt8]?
    private var invalidated = false

    /// True: evaluation fails with `LAError.notInteractive` rather than ask the user.
    open var interactionNotAllowed = false
    /// The reason shown when the user is asked, when the call does not give one.
    open var localizedReason = ""
    /// Stored as Apple's are; pinentry shows its own buttons.
    open var localizedFallbackTitle: String?
    open var localizedCancelTitle: String?
    /// Stored, as on Apple platforms; there is no biometry to reuse here.
    open var touchIDAuthenticationAllowableReuseDuration: TimeInterval = 0
    /// No biometry on Linux.
    open var biometryType: LABiometryType { .none }
    /// Nil: there is no biometric enrolment whose changes it would track.
    open var evaluatedPolicyDomainState: Data? { nil }

    public override init() { super.init() }

    deinit { wipe(&credential) }

    /// Whether `policy` can be evaluated: the device-owner policy when the keychain has a
    /// user PIN that is not locked (else `passcodeNotSet` or `authenticationFailed`).
    open func canEvaluatePolicy(_ policy: LAPolicy, error: UnsafeMutablePointer<NSError?>?) -> Bool {
        if let failure = precondition(for: policy) {
            error?.pointee = failure as NSError
            return false
        }
        return true
    }

    /// Authenticates the device owner for `policy`, then calls `reply` (before returning:
    /// asking runs on the caller's thread here).
    open func evaluatePolicy(
        _ policy: LAPolicy, localizedReason: String, reply: @escaping (Bool, (any Error)?) -> Void
    ) {
        do {
            try evaluate(policy, reason: localizedReason)
            reply(true, nil)
        } catch {
            reply(false, error)
        }
    }

    /// Authenticates the device owner for `policy`; throws an `LAError`.
    open func evaluatePolicy(_ policy: LAPolicy, localizedReason: String) async throws -> Bool {
        try evaluate(policy, reason: localizedReason)
        return true
    }

    /// Sets (or, with nil, clears) the credential; false after `invalidate()`.
    @discardableResult
    open func setCredential(_ credential: Data?, type: LACredentialType) -> Bool {
        lock.withLock {
            guard !invalidated else { return false }
            wipe(&self.credential)
            self.credential = credential.map { Array($0) }
            return true
        }
    }

    /// Whether a credential of `type` is set.
    open func isCredentialSet(_ type: LACredentialType) -> Bool {
        lock.withLock { credential != nil }
    }

    /// Ends the context: its credential is wiped and every later evaluation fails with
    /// `invalidContext`.
    open func invalidate() {
        lock.withLock {
            invalidated = true
            wipe(&credential)
        }
    }

    /// A copy of the PIN for `Security`'s calls (`kSecUseAuthenticationContext`), which the
    /// caller wipes; nil without a credential or after `invalidate()`.
    package func keychainPIN() -> [UInt8]? {
        lock.withLock { invalidated ? nil : credential }
    }

    /// Why `policy` cannot be evaluated now, or nil.
    private func precondition(for policy: LAPolicy) -> LAError? {
        if lock.withLock({ invalidated }) { return LAError(.invalidContext, "the context was invalidated") }
        switch policy {
        case .deviceOwnerAuthentication: break
        case .deviceOwnerAuthenticationWithBiometrics, .deviceOwnerAuthenticationWithBiometricsOrWatch:
            return LAError(.biometryNotAvailable, "there is no biometry on this system")
        case .deviceOwnerAuthenticationWithWatch, .deviceOwnerAuthenticationWithWristDetection:
            return LAError(.companionNotAvailable, "there is no paired watch on this system")
        }
        guard let status = try? Keychain().authenticationStatus, status.hasUserPIN else {
            return LAError(.passcodeNotSet, "the keychain has no user PIN: set one with p11keychain set-pin")
        }
        if status.isUserPINLocked {
            return LAError(.authenticationFailed, "the keychain's user PIN is locked after too many failures")
        }
        return nil
    }

    private func evaluate(_ policy: LAPolicy, reason: String) throws(LAError) {
        if let failure = precondition(for: policy) { throw failure }
        if var pin = keychainPIN() {
            defer { wipe(&pin) }
            try verify(pin)
            return
        }
        guard !interactionNotAllowed else {
            throw LAError(.notInteractive, "the context does not allow interaction (interactionNotAllowed)")
        }
        let description = reason.isEmpty ? localizedReason : reason
        switch Pinentry.askPIN(description: description, prompt: "PIN:") {
        case .cancelled: throw LAError(.userCancel, "the user cancelled the PIN entry")
        case .unavailable(let why): throw LAError(.notInteractive, why)
        case .pin(var pin):
            defer { wipe(&pin) }
            try verify(pin)
            _ = setCredential(Data(pin), type: .applicationPassword)
        }
    }

    private func verify(_ pin: [UInt8]) throws(LAError) {
        do {
            try Keychain().verifyUserPIN(pin)
        } catch {
            throw LAError(.authenticationFailed, error.message)
        }
    }
}

private func wipe(_ bytes: inout [UInt8]?) {
    guard var value = bytes else { return }
    wipe(&value)
    bytes = nil
}

/// Overwrites `bytes` in place (explicit_bzero: the compiler may not drop it).
func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
}
