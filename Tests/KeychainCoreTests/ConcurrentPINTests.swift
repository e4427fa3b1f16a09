import Dispatch
import Foundation
import KeychainCore
import Synchronization
import Testing

/// Runs `body` in `count` threads that start together; returns each one's error (nil: it
/// succeeded).
private func together(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) -> [CoreError?] {
    let results = Mutex<[CoreError?]>(Array(repeating: nil, count: count))
    let start = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    for index in 0..<count {
        done.enter()
        Thread {
            defer { done.leave() }
            start.wait()
            do {
                try body(index)
            } catch let error as CoreError {
                results.withLock { $0[index] = error }
            } catch {
                results.withLock { $0[index] = CoreError(.storageFailure, "\(error)") }
            }
        }.start()
    }
    for _ in 0..<count { start.signal() }
    done.wait()
    return results.withLock { $0 }
}

/// What the errors were, for failure messages.
private func tally(_ errors: [CoreError?]) -> String {
    var counts: [String: Int] = [:]
    for error in errors { counts[error.map { "\($0.code)" } ?? "success", default: 0] += 1 }
    return counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
}

/// Through the core by threads: an attempt is claimed before the slow check
/// and ends as a failure only when its PIN is wrong (ARCHITECTURE.md §6.4).
@Suite("PIN attempts of many threads at once")
struct ConcurrentPINTests {
    @Test("30 threads re-entering the right user PIN at once (context-specific logins) all succeed")
    func rightContextSpecificLogins() throws {
        try withToken(pinIterations: TestPIN.overlappingIterations) { token, _ in
            try logInUser(token)
            let errors = together(30) { _ in try token.reauthenticateUser(pin: bytes("user-pin-0000")) }
            #expect(errors.allSatisfy { $0 == nil }, "30 right PINs at once: \(tally(errors))")
            #expect(try token.authenticationState().userFailures == 0)
        }
    }

    @Test("30 tokens on one store logging in the SO with the right PIN at once all succeed")
    func rightSecurityOfficerLogins() throws {
        try withToken(pinIterations: TestPIN.overlappingIterations) { token, _ in
            try token.initialize(securityOfficerPIN: bytes("so-pin-0000"), label: "t")
            let tokens = (0..<30).map { _ in Token(configuration: token.configuration) }
            let errors = together(30) { index in
                try tokens[index].logIn(.securityOfficer, pin: bytes("so-pin-0000"))
            }
            #expect(errors.allSatisfy { $0 == nil }, "30 right SO PINs at once: \(tally(errors))")
            #expect(try token.authenticationState().securityOfficerFailures == 0)
        }
    }

    @Test("20 threads guessing wrong at once: exactly 10 wrong-PIN answers, 10 locked, and the count is 10")
    func twentyWrongGuesses() throws {
        try withToken(pinIterations: TestPIN.overlappingIterations) { token, _ in
            try logInUser(token)
            let errors = together(20) { _ in try token.reauthenticateUser(pin: bytes("wrong-pin")) }
            #expect(errors.filter { $0?.code == .pinIncorrect }.count == 10, "\(tally(errors))")
            #expect(errors.filter { $0?.code == .pinLocked }.count == 10, "\(tally(errors))")
            #expect(try token.authenticationState().userFailures == 10)
            expectKeychainError(.pinLocked) { try token.reauthenticateUser(pin: bytes("user-pin-0000")) }
        }
    }
}
