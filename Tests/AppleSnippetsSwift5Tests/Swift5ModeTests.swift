import Foundation
import LocalAuthentication
import Testing

// The Apple-style snippets of AppleSnippetsTests (LocalAuthentication, typed values,
// SecIdentityCreateWithCertificate, the trust callback), linked here unchanged and compiled in
// Swift 5 language mode; AppleSnippetsTests compiles the same files in Swift 6 mode.

@Suite("The Apple-style snippets compile and run in Swift 5 language mode")
struct Swift5ModeTests {
    @Test("biometry is not available, with Apple's code")
    func biometryIsNotAvailable() {
        let (available, code) = biometryAvailable()
        #expect(!available)
        #expect(code == LAError.Code.biometryNotAvailable.rawValue)
    }

    @Test("an invalidated context fails as invalidContext")
    func invalidatedContext() {
        let context = LAContext()
        context.invalidate()
        #expect(failureReason(authenticateOwner(context, reason: "r").1) == "invalid")
    }
}
