import CPKCS11
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A way of presenting a PIN: `wrong` presents a wrong one and `right` the right one, each
/// returning the module's answer. `so` says which PIN's count it moves.
struct GuessPath: Sendable, CustomTestStringConvertible {
    var path: String
    var so: Bool
    var wrong: @Sendable (TestToken, CK_SESSION_HANDLE) throws -> CK_RV
    var right: @Sendable (TestToken, CK_SESSION_HANDLE) throws -> CK_RV

    var testDescription: String { path }
}

extension TestToken {
    /// C_SetPIN from `old` to `new`.
    func changePIN(_ session: CK_SESSION_HANDLE, from old: String, to new: String) throws -> CK_RV {
        var oldBytes = Array(old.utf8)
        var newBytes = Array(new.utf8)
        return try m.C_SetPIN(
            session, &oldBytes, CK_ULONG(oldBytes.count), &newBytes, CK_ULONG(newBytes.count))
    }

    /// Logs the user in unless the application is logged in already (login is per application).
    func logInUserOnce(_ session: CK_SESSION_HANDLE) throws {
        let rv = try login(session, pin: coreUserPIN)
        try #require(rv == CKR_OK || rv == CKR_USER_ALREADY_LOGGED_IN, "C_Login returned \(rvName(rv))")
    }

    /// Logs the user in, makes a CKA_ALWAYS_AUTHENTICATE P-256 key and starts a signature with
    /// it, so that the next C_Login(CKU_CONTEXT_SPECIFIC) is the per-use PIN check.
    func startGuardedSignature(_ session: CK_SESSION_HANDLE) throws {
        try logInUserOnce(session)
        let key = try generatePair(.p256, privateExtra: [flag(CKA_ALWAYS_AUTHENTICATE, true)], in: session)
        try #require(try ecdsaSignInit(key.privateKey, in: session) == CKR_OK)
    }
}

/// "Ten wrong PINs lock it, however many threads or processes guess at once; right PINs never
/// lock" (README "PINs and private objects"; p11keychain(1) PINS; ARCHITECTURE.md §6.4): every way of
/// presenting a PIN counts a wrong one, and a right one through the same way clears the count.
enum GuessPaths {
    static let all: [GuessPath] = [
        GuessPath(
            path: "C_Login(CKU_USER)", so: false,
            wrong: { token, session in try token.login(session, pin: "0000") },
            right: { token, session in try token.login(session, pin: coreUserPIN) }),
        GuessPath(
            path: "C_SetPIN of the user PIN in a public session (old PIN checked)", so: false,
            wrong: { token, session in try token.changePIN(session, from: "0000", to: "4321") },
            right: { token, session in try token.changePIN(session, from: coreUserPIN, to: coreUserPIN) }),
        GuessPath(
            path: "C_Login(CKU_CONTEXT_SPECIFIC) for a CKA_ALWAYS_AUTHENTICATE key", so: false,
            wrong: { token, session in
                try token.startGuardedSignature(session)
                return try token.login(session, as: CK_USER_TYPE(CKU_CONTEXT_SPECIFIC), pin: "0000")
            },
            right: { token, session in
                try token.startGuardedSignature(session)
                return try token.login(session, as: CK_USER_TYPE(CKU_CONTEXT_SPECIFIC), pin: coreUserPIN)
            }),
        GuessPath(
            path: "C_Login(CKU_SO)", so: true,
            wrong: { token, session in try token.login(session, as: CK_USER_TYPE(CKU_SO), pin: "00000000") },
            right: { token, session in try token.login(session, as: CK_USER_TYPE(CKU_SO), pin: coreSOPIN) }),
        GuessPath(
            path: "C_SetPIN of the SO PIN as the SO (old PIN checked)", so: true,
            wrong: { token, session in
                try #require(try token.login(session, as: CK_USER_TYPE(CKU_SO), pin: coreSOPIN) == CKR_OK)
                return try token.changePIN(session, from: "00000000", to: "87654321")
            },
            right: { token, session in
                try #require(try token.login(session, as: CK_USER_TYPE(CKU_SO), pin: coreSOPIN) == CKR_OK)
                return try token.changePIN(session, from: coreSOPIN, to: coreSOPIN)
            }),
    ]
}

/// Forks `count` processes that each initialise the module, open a session, say so on a pipe
/// and wait at a gate; `release` then decides what happens: it gets the children's pids once
/// all are ready. Returns each child's exit status (nil: killed or crashed).
private func forkLoginProcesses(
    _ count: Int, token: TestToken, user: CK_USER_TYPE, pin: String, release: ([pid_t], Int32) -> Void
) throws -> [Int32?] {
    let initialize = try token.m.C_Initialize
    let openSession = try token.m.C_OpenSession
    let login = try token.m.C_Login
    let finalize = try token.m.C_Finalize
    var ready: [Int32] = [0, 0]
    var gate: [Int32] = [0, 0]
    guard pipe(&ready) == 0, pipe(&gate) == 0 else { throw ModuleLoadError(description: "pipe failed") }
    let pinBytes = UnsafeMutablePointer<UInt8>.allocate(capacity: pin.utf8.count)
    defer { pinBytes.deallocate() }
    for (index, byte) in pin.utf8.enumerated() { pinBytes[index] = byte }
    let pinLength = CK_ULONG(pin.utf8.count)
    let session = UnsafeMutablePointer<CK_SESSION_HANDLE>.allocate(capacity: 1)
    defer { session.deallocate() }
    let byte = UnsafeMutablePointer<UInt8>.allocate(capacity: 1)
    defer { byte.deallocate() }
    var children: [pid_t] = []
    for _ in 0..<count {
        fflush(nil)
        let pid = Glibc.fork()
        if pid == 0 {
            close(ready[0])
            close(gate[1])
            let prepared =
                initialize(nil) == CKR_OK && openSession(0, readWriteSession, nil, nil, session) == CKR_OK
            byte.pointee = 1
            _ = write(ready[1], byte, 1)
            _ = read(gate[0], byte, 1)  // end of file: the parent opened the gate
            guard prepared else { _exit(90) }
            let rv = login(session.pointee, user, pinBytes, pinLength)
            _ = finalize(nil)
            _exit(rv == CKR_OK ? 0 : rv == CKR_PIN_LOCKED ? 2 : rv == CKR_PIN_INCORRECT ? 1 : 3)
        }
        guard pid > 0 else { throw ModuleLoadError(description: "fork failed: errno \(errno)") }
        children.append(pid)
    }
    close(ready[1])
    close(gate[0])
    var readyCount = 0
    var one: UInt8 = 0
    while readyCount < count {
        let got = read(ready[0], &one, 1)
        if got < 0, errno == EINTR { continue }
        guard got == 1 else { break }
        readyCount += 1
    }
    close(ready[0])
    release(children, gate[1])
    let deadline = Date().addingTimeInterval(180)
    return children.map { pid in
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) != pid {
            if Date() > deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                return nil
            }
            usleep(5_000)
        }
        return status & 0x7f == 0 ? (status >> 8) & 0xff : nil
    }
}

extension ModuleTests.PromiseTests {
    @Test(
        "Every way of presenting a PIN counts a wrong one, and a right one through the same way clears the count",
        arguments: GuessPaths.all)
    func everyGuessIsCounted(path: GuessPath) throws {
        try withPromiseTokenLoggedOut { token, session in
            let low = CK_FLAGS(path.so ? CKF_SO_PIN_COUNT_LOW : CKF_USER_PIN_COUNT_LOW)
            let wrong = try path.wrong(token, session)
            #expect(wrong == CKR_PIN_INCORRECT, "\(path.path) with a wrong PIN returned \(rvName(wrong))")
            #expect(try token.tokenInfo().flags & low != 0, "\(path.path): the wrong PIN was not counted")
            _ = try token.m.C_CloseSession(session)
            let again = try token.openSession()
            let right = try path.right(token, again)
            #expect(right == CKR_OK, "\(path.path) with the right PIN returned \(rvName(right))")
            #expect(try token.tokenInfo().flags & low == 0, "\(path.path): the right PIN left the count")
        }
    }

    @Test(
        "Right PINs never lock: ten logins killed during the key derivation leave the PIN usable and uncounted",
        arguments: [false, true])
    func killedRightLoginsDoNotLock(so: Bool) throws {
        try withStore { token in
            // The kills must land inside the derivation: PINs set at the full cost, not the
            // floor scripts/test.sh gives every other test (a login then takes well over 40 ms).
            setenv("P11KEYCHAIN_PIN_ITERATIONS", "\(TestPIN.fullIterations)", 1)
            try #require(try token.m.C_Initialize(nil) == CKR_OK)
            try token.setPINs()
            try #require(try token.m.C_Finalize(nil) == CKR_OK)
            let user = CK_USER_TYPE(so ? CKU_SO : CKU_USER)
            let pin = so ? coreSOPIN : coreUserPIN
            for _ in 0..<10 {
                _ = try forkLoginProcesses(1, token: token, user: user, pin: pin) { children, gate in
                    close(gate)
                    usleep(40_000)  // inside the 600,000-iteration derivation
                    for child in children { kill(child, SIGKILL) }
                }
            }
            try #require(try token.m.C_Initialize(nil) == CKR_OK)
            let locked = CK_FLAGS(so ? CKF_SO_PIN_LOCKED : CKF_USER_PIN_LOCKED)
            #expect(try token.tokenInfo().flags & locked == 0, "ten killed right logins locked the PIN")
            let again = try token.openSession()
            let rv = try token.login(again, as: user, pin: pin)
            #expect(rv == CKR_OK, "the right PIN after ten killed logins returned \(rvName(rv))")
            let low = CK_FLAGS(so ? CKF_SO_PIN_COUNT_LOW : CKF_USER_PIN_COUNT_LOW)
            #expect(try token.tokenInfo().flags & low == 0, "killed right logins are still counted")
        }
    }

    @Test("Right PINs never lock: 30 processes logging in with the right user PIN at once all get CKR_OK")
    func concurrentRightLoginsAllSucceed() throws {
        try withToken(pinIterations: TestPIN.overlappingIterations) { token in
            try token.setPINs()
            try #require(try token.m.C_Finalize(nil) == CKR_OK)
            let statuses = try forkLoginProcesses(
                30, token: token, user: CK_USER_TYPE(CKU_USER), pin: coreUserPIN
            ) {
                _, gate in close(gate)
            }
            try #require(try token.m.C_Initialize(nil) == CKR_OK)
            let refused = statuses.filter { $0 != 0 }
            #expect(
                refused.isEmpty,
                "\(refused.count) of 30 right-PIN logins failed (exit statuses: 2 = CKR_PIN_LOCKED, 1 = CKR_PIN_INCORRECT, 3 = other, nil = crashed): \(refused)"
            )
            #expect(
                try token.tokenInfo().flags & CK_FLAGS(CKF_USER_PIN_LOCKED | CKF_USER_PIN_COUNT_LOW) == 0,
                "right PINs were counted")
        }
    }
}
