import CPKCS11
import Dispatch
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// How a guessing process's C_Login ended, as its exit status.
enum Guess: Int32, CustomStringConvertible {
    case accepted = 0
    case incorrect = 1
    case locked = 2
    case otherReturnCode = 3
    case setupFailed = 4

    var description: String {
        switch self {
        case .accepted: "CKR_OK"
        case .incorrect: "CKR_PIN_INCORRECT"
        case .locked: "CKR_PIN_LOCKED"
        case .otherReturnCode: "another CK_RV"
        case .setupFailed: "C_Initialize or C_OpenSession failed"
        }
    }
}

/// One process that guesses a PIN (the user's unless told): the calls and memory it uses, prepared before the
/// fork (the child only calls C function pointers on memory allocated in advance).
final class Guesser {
    let initialize: CK_C_Initialize
    let openSession: CK_C_OpenSession
    let login: CK_C_Login
    let finalize: CK_C_Finalize
    var pin: [UInt8]
    let user: CK_USER_TYPE
    let session = UnsafeMutablePointer<CK_SESSION_HANDLE>.allocate(capacity: 1)
    let byte = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)

    init(_ m: FunctionTable<CK_FUNCTION_LIST>, pin: String, user: CK_USER_TYPE = CK_USER_TYPE(CKU_USER))
        throws
    {
        initialize = try m.C_Initialize
        openSession = try m.C_OpenSession
        login = try m.C_Login
        finalize = try m.C_Finalize
        self.pin = Array(pin.utf8)
        self.user = user
    }

    deinit {
        session.deallocate()
        byte.deallocate()
    }

    /// The child: initialises the module and opens a session, says so on `ready`, waits until
    /// `gate` closes (every guesser is then ready), and guesses once.
    func runChild(ready: Int32, gate: Int32) -> Int32 {
        let prepared =
            initialize(nil) == CKR_OK
            // The SO logs in only in a R/W session (v2.40 §5.6).
            && openSession(0, user == CKU_SO ? readWriteSession : readOnlySession, nil, nil, session)
                == CKR_OK
        byte.pointee = 1
        _ = write(ready, byte, 1)
        close(ready)
        _ = read(gate, byte, 1)  // returns at end of file: the parent closed the gate
        guard prepared else { return Guess.setupFailed.rawValue }
        let rv = login(session.pointee, user, &pin, CK_ULONG(pin.count))
        _ = finalize(nil)
        switch rv {
        case CK_RV(CKR_OK): return Guess.accepted.rawValue
        case CK_RV(CKR_PIN_INCORRECT): return Guess.incorrect.rawValue
        case CK_RV(CKR_PIN_LOCKED): return Guess.locked.rawValue
        default: return Guess.otherReturnCode.rawValue
        }
    }
}

/// Forks one process per guesser, lets them all call C_Login at the same moment, and returns
/// each one's outcome (nil: it crashed or was still running after `timeout` seconds).
func race(_ guessers: [Guesser], timeout: Double = 120) throws -> [Guess?] {
    var ready: [Int32] = [0, 0]
    var gate: [Int32] = [0, 0]
    guard pipe(&ready) == 0, pipe(&gate) == 0 else { throw ModuleLoadError(description: "pipe failed") }
    var children: [pid_t] = []
    for guesser in guessers {
        fflush(nil)
        let pid = Glibc.fork()
        if pid == 0 {
            close(ready[0])
            close(gate[1])
            _exit(guesser.runChild(ready: ready[1], gate: gate[0]))
        }
        guard pid > 0 else { throw ModuleLoadError(description: "fork failed: errno \(errno)") }
        children.append(pid)
    }
    close(ready[1])
    close(gate[0])
    // Every child writes one byte when it is ready (or closes its end when it dies).
    var readyCount = 0
    var byte: UInt8 = 0
    while readyCount < guessers.count {
        let count = read(ready[0], &byte, 1)
        if count < 0, errno == EINTR { continue }
        guard count == 1 else { break }
        readyCount += 1
    }
    close(ready[0])
    close(gate[1])  // opens the gate: every child guesses now
    let deadline = Date().addingTimeInterval(timeout)
    var outcomes: [pid_t: Guess?] = [:]
    while outcomes.count < children.count {
        for pid in children where outcomes[pid] == nil {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                // WIFEXITED / WEXITSTATUS are macros Swift does not import.
                let guess: Guess? = status & 0x7f == 0 ? Guess(rawValue: (status >> 8) & 0xff) : nil
                outcomes[pid] = .some(guess)
            } else if Date() > deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                outcomes[pid] = .some(nil)
            }
        }
        usleep(5_000)
    }
    return children.map { outcomes[$0] ?? nil }
}

/// How many outcomes are `guess`.
func count(_ guess: Guess, in outcomes: [Guess?]) -> Int {
    outcomes.filter { $0 == guess }.count
}

/// The outcomes as text for failure messages: "10 CKR_PIN_INCORRECT, 20 CKR_PIN_LOCKED".
func tally(_ outcomes: [Guess?]) -> String {
    var counts: [String: Int] = [:]
    for outcome in outcomes { counts[outcome.map(\.description) ?? "crashed or hung", default: 0] += 1 }
    return counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
}

/// Results of the two login threads of one round.
private final class RoundResults: Sendable {
    private let results = Mutex<[CK_RV]>([])

    func append(_ rv: CK_RV) { results.withLock { $0.append(rv) } }
    var all: [CK_RV] { results.withLock { $0 } }
}

extension TestToken {
    /// The user PIN is locked (CKF_USER_PIN_LOCKED) and even the right PIN is refused.
    fileprivate func expectUserPINLocked(_ what: String) throws {
        let session = try openSession()
        let rv = try login(session, pin: coreUserPIN)
        #expect(rv == CKR_PIN_LOCKED, "\(what): C_Login with the right PIN returned \(rvName(rv))")
        if rv == CKR_OK { _ = try m.C_Logout(session) }
        #expect(
            try tokenInfo().flags & CK_FLAGS(CKF_USER_PIN_LOCKED) != 0,
            "\(what): CKF_USER_PIN_LOCKED is not set")
        _ = try m.C_CloseSession(session)
    }
}

extension ModuleTests.CoreRulesTests {
    /// A PIN guess is counted before it is tried (the lock check and the
    /// increment are one write transaction), so the limit of 10 holds against any number of
    /// processes; SO and user logins exclude each other atomically.
    @Suite("PIN guesses are counted before the guess")
    struct PINGuessesCounted {
        @Test(
            "30 processes guessing a wrong user PIN at once get exactly 10 CKR_PIN_INCORRECT and 20 CKR_PIN_LOCKED; then the right PIN is refused"
        )
        func thirtyParallelGuesses() throws {
            try withToken(pinIterations: TestPIN.overlappingIterations) { token throws in
                try token.setPINs()
                try #require(try token.m.C_Finalize(nil) == CKR_OK)
                let guessers = try (0..<30).map { _ in try Guesser(token.m, pin: "9999") }
                let outcomes = try race(guessers)
                try #require(try token.m.C_Initialize(nil) == CKR_OK)
                #expect(count(.incorrect, in: outcomes) == 10, "30 wrong guesses at once: \(tally(outcomes))")
                #expect(count(.locked, in: outcomes) == 20, "30 wrong guesses at once: \(tally(outcomes))")
                try token.expectUserPINLocked("after 30 wrong guesses at once")
            }
        }

        /// With 9 failures counted, one guess is left. Whichever of the 12 processes claims
        /// the one free attempt first decides the rest (the others wait for it), and each case
        /// is exact:
        /// - a wrong guess first: the count reaches 10 before any other guess is tried, so
        ///   exactly 1 CKR_PIN_INCORRECT and 11 CKR_PIN_LOCKED (the right PIN among them), and
        ///   the PIN stays locked;
        /// - the right guess first: its success clears the count, and the others are counted
        ///   from 0. So one CKR_OK, n CKR_PIN_INCORRECT (n ≤ 10), 11 − n CKR_PIN_LOCKED, and the
        ///   counter ends at exactly n: the PIN locks after exactly 10 − n more wrong guesses.
        /// A guess that is tried without being counted first breaks every one of these.
        @Test(
            "With one try left, 12 processes at once (one with the right PIN) are allowed exactly the guesses the counter allows"
        )
        func lastTryInParallel() throws {
            try withToken(pinIterations: TestPIN.overlappingIterations) { token throws in
                try token.setPINs()
                let session = try token.openSession()
                for attempt in 1...9 {
                    let rv = try token.login(session, pin: "9999")
                    try #require(
                        rv == CKR_PIN_INCORRECT, "wrong PIN number \(attempt) returned \(rvName(rv))")
                }
                try #require(try token.m.C_Finalize(nil) == CKR_OK)
                let guessers = try (0..<12).map { index in
                    try Guesser(token.m, pin: index == 5 ? coreUserPIN : "9999")
                }
                let outcomes = try race(guessers)
                try #require(try token.m.C_Initialize(nil) == CKR_OK)
                let accepted = count(.accepted, in: outcomes)
                let incorrect = count(.incorrect, in: outcomes)
                let locked = count(.locked, in: outcomes)
                #expect(
                    accepted + incorrect + locked == 12, "12 guesses with one try left: \(tally(outcomes))")
                #expect(accepted <= 1, "12 guesses with one try left: \(tally(outcomes))")
                if accepted == 0 {
                    #expect(incorrect == 1 && locked == 11, "no guess accepted: \(tally(outcomes))")
                } else {
                    #expect(
                        incorrect <= 10 && locked == 11 - incorrect,
                        "the right guess accepted: \(tally(outcomes))")
                    // The counter holds exactly the failures after the reset.
                    let probe = try token.openSession()
                    var moreFailures = 0
                    while moreFailures <= 10 {
                        let rv = try token.login(probe, pin: "9999")
                        if rv != CKR_PIN_INCORRECT {
                            #expect(rv == CKR_PIN_LOCKED, "a later wrong guess returned \(rvName(rv))")
                            break
                        }
                        moreFailures += 1
                    }
                    #expect(
                        moreFailures == 10 - incorrect,
                        "after \(tally(outcomes)): \(moreFailures) more wrong guesses before the lock")
                }
                try token.expectUserPINLocked("after the last try was used")
            }
        }

        @Test(
            "An SO login and a user login in two threads at once never both succeed: one gets CKR_USER_ANOTHER_ALREADY_LOGGED_IN (50 rounds)"
        )
        func soAndUserExcludeEachOther() throws {
            try withToken(pinIterations: TestPIN.overlappingIterations) { token throws in
                try token.setPINs()
                let soSession = try token.openSession()
                let userSession = try token.openSession()
                let login = try token.m.C_Login
                let logout = try token.m.C_Logout
                var failures: [String] = []
                for round in 1...50 {
                    let results = RoundResults()
                    let start = DispatchSemaphore(value: 0)
                    let done = DispatchGroup()
                    let attempts: [(CK_SESSION_HANDLE, CK_USER_TYPE, String)] = [
                        (soSession, CK_USER_TYPE(CKU_SO), coreSOPIN),
                        (userSession, CK_USER_TYPE(CKU_USER), coreUserPIN),
                    ]
                    for (session, user, pin) in attempts {
                        done.enter()
                        Thread {
                            defer { done.leave() }
                            var bytes = Array(pin.utf8)
                            start.wait()
                            results.append(login(session, user, &bytes, CK_ULONG(bytes.count)))
                        }.start()
                    }
                    start.signal()
                    start.signal()
                    try #require(done.wait(timeout: .now() + 60) == .success, "round \(round): a login hung")
                    let rvs = results.all.sorted()
                    if rvs != [CK_RV(CKR_OK), CK_RV(CKR_USER_ANOTHER_ALREADY_LOGGED_IN)].sorted() {
                        failures.append("round \(round): \(rvs.map(rvName).joined(separator: " and "))")
                    }
                    // Log out whoever is logged in (both, if the module let both in).
                    for session in [soSession, userSession, soSession] { _ = logout(session) }
                }
                #expect(
                    failures.isEmpty,
                    "\(failures.count) of 50 rounds: \(failures.prefix(5).joined(separator: "; "))")
            }
        }
    }
}
