import Foundation
import LocalAuthentication
import Security

// LocalAuthentication as Apple code uses it: a context holding the application password, or
// one the user authenticated, given to SecItem calls as kSecUseAuthenticationContext.

/// A context whose application password is `password` (Apple's LAContext.setCredential).
func passwordContext(_ password: String) -> LAContext {
    let context = LAContext()
    context.setCredential(password.data(using: .utf8), type: .applicationPassword)
    return context
}

/// Reads the protected secret of `account` (`saveProtectedSecret`) with `context`.
func readProtectedSecret(account: String, context: LAContext) -> (OSStatus, Data?) {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: "com.example.protected",
        kSecAttrAccount as String: account,
        kSecReturnData as String: true,
        kSecUseAuthenticationContext as String: context,
    ]
    var item: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &item)
    return (status, item as? Data)
}

/// The private key tagged `tag`, found with an LAContext.
func protectedKey(tag: Data, context: LAContext) -> SecKey? {
    let query: [String: Any] = [
        kSecClass as String: kSecClassKey,
        kSecAttrApplicationTag as String: tag,
        kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
        kSecReturnRef as String: true,
        kSecUseAuthenticationContext as String: context,
    ]
    var item: CFTypeRef?
    guard SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess else { return nil }
    return (item as! SecKey)
}

/// Asks the device owner (Apple's "Logging a User into Your App with Face ID or Touch ID"):
/// whether they authenticated, and the error if not.
func authenticateOwner(_ context: LAContext, reason: String) -> (Bool, Error?) {
    var error: NSError?
    guard context.canEvaluatePolicy(.deviceOwnerAuthentication, error: &error) else {
        return (false, error)
    }
    var outcome: (Bool, Error?) = (false, nil)
    let done = DispatchSemaphore(value: 0)
    context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: reason) { success, error in
        outcome = (success, error)
        done.signal()
    }
    done.wait()
    return outcome
}

/// Whether biometry can be used, and Apple's code when not.
func biometryAvailable() -> (Bool, Int?) {
    let context = LAContext()
    var error: NSError?
    let available = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error)
    return (available, error?.code)
}

/// The LAError code of an authentication that failed, Apple-style.
func failureReason(_ error: Error?) -> String {
    switch error {
    case LAError.userCancel?: return "cancelled"
    case LAError.notInteractive?: return "not interactive"
    case LAError.authenticationFailed?: return "failed"
    case LAError.invalidContext?: return "invalid"
    default: return "other"
    }
}
