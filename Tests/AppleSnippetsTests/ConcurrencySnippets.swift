import Dispatch
import Foundation
import Security

// Apple-style code as Swift 6 compiles it against Apple's SDK: what these signatures accept
// or refuse there, they accept or refuse here (the file is compiled in language modes 6 and 5).

/// A plain class an app keeps an outcome in (not Sendable, as most view models are).
final class AsyncTrustRecord {
    var trusted: Bool?
    var failed = false
}

/// The callback captures non-Sendable state: Apple's `SecTrustWithErrorCallback` is not
/// `@Sendable`, so this compiles in Swift 6 there, and must here.
func evaluateAsync(_ trust: SecTrust, recordingIn outcome: AsyncTrustRecord, done: DispatchSemaphore)
    -> OSStatus
{
    SecTrustEvaluateAsyncWithError(trust, DispatchQueue(label: "trust")) { _, trusted, error in
        outcome.trusted = trusted
        outcome.failed = error != nil
        done.signal()
    }
}
