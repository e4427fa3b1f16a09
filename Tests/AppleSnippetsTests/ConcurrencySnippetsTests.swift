import Dispatch
import Foundation
import Security
import Testing

@Suite("Swift 6 signatures match Apple's", .serialized)
struct ConcurrencySnippetsTests {
    @Test("SecTrustEvaluateAsyncWithError takes a callback that captures non-Sendable state")
    func asynchronousEvaluationWithPlainState() throws {
        try withTrustKeychain {
            let trust = try makeTrust(
                try certificates("leaf", "intermediate"), policy: SecPolicyCreateBasicX509())
            SecTrustSetAnchorCertificates(trust, try certificates("root") as CFArray)
            let outcome = AsyncTrustRecord()
            let done = DispatchSemaphore(value: 0)
            #expect(evaluateAsync(trust, recordingIn: outcome, done: done) == errSecSuccess)
            #expect(done.wait(timeout: .now() + 30) == .success)
            #expect(outcome.trusted == true)
            #expect(!outcome.failed)
        }
    }
}
