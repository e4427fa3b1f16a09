internal import CPKCS11
internal import KeychainCore

#if canImport(Glibc)
    import Glibc
#endif

/// One open session (v2.40 §5.6) and its operation state.
final class Session: @unchecked Sendable {
    // @unchecked: `find`, the operations and `objects` are touched only with `lock` held.
    let handle: CK_SESSION_HANDLE
    let slot: Slot
    /// The slot's token, held here too: a constant of the session is borrowed by every call,
    /// where `slot.token` cost a retain and a release on each.
    let token: Token
    let flags: CK_FLAGS
    let lock = Lock()
    /// The session's operations, one slot per kind, with their lifetime rules.
    @exclusivity(unchecked) var operations = OperationSlots()
    /// The OpenSSL contexts of the session's last signature and MAC, which the next one with
    /// the same key and mechanism reuses; they hold keys, so they go at logout
    /// (`endPrivateOperations`). A constant, borrowed by every restart.
    let kept = KeptContexts()
    /// Session objects this session created and nobody destroyed yet: they vanish when it
    /// closes. C_DestroyObject and C_Logout remove theirs, so the set never outgrows the
    /// session objects that exist.
    var objects: Set<ObjectReference> = []
    /// This session's last AES operation, whose keyed OpenSSL context the next one with the
    /// same key, mode and direction takes over (`Token.startCipher`'s `reusing`).
    @exclusivity(unchecked) var idleCipher: CipherOperation?

    var find: (results: [ObjectReference], position: Int, sawPrivateObjects: Bool)? {
        get { operations.find }
        set { operations.find = newValue }
    }
    var encrypting: CipherOperation? {
        get { operations.encrypt }
        set { operations.encrypt = newValue }
    }
    var decrypting: CipherOperation? {
        get { operations.decrypt }
        set { operations.decrypt = newValue }
    }

    init(handle: CK_SESSION_HANDLE, slot: Slot, flags: CK_FLAGS) {
        self.handle = handle
        self.slot = slot
        token = slot.token
        self.flags = flags
    }

    var isReadWrite: Bool { flags & CK_FLAGS(CKF_RW_SESSION) != 0 }

    /// The session's rights now: R/W or R/O, and who is logged in to its token in this
    /// process (login is per application, v2.40 §5.6).
    var context: AccessContext {
        switch token.loggedInUser {
        case .user: AccessContext(readWrite: isReadWrite, userLoggedIn: true, securityOfficer: false)
        case .securityOfficer:
            AccessContext(readWrite: isReadWrite, userLoggedIn: false, securityOfficer: true)
        case nil: AccessContext(readWrite: isReadWrite, userLoggedIn: false, securityOfficer: false)
        }
    }

    /// CK_SESSION_INFO.state (v2.40 §5.6, table 9).
    var state: CK_STATE {
        switch (token.loggedInUser, isReadWrite) {
        case (.securityOfficer, _): CK_STATE(CKS_RW_SO_FUNCTIONS)
        case (.user, true): CK_STATE(CKS_RW_USER_FUNCTIONS)
        case (.user, false): CK_STATE(CKS_RO_USER_FUNCTIONS)
        case (nil, true): CK_STATE(CKS_RW_PUBLIC_SESSION)
        case (nil, false): CK_STATE(CKS_RO_PUBLIC_SESSION)
        }
    }
}

/// A slot and the token in it. Slot IDs are the configuration order (ARCHITECTURE.md §5).
final class Slot: Sendable {
    let id: CK_SLOT_ID
    let token: Token

    init(id: CK_SLOT_ID, token: Token) {
        self.id = id
        self.token = token
    }
}

/// Everything C_Initialize creates and C_Finalize drops.
final class ModuleState: @unchecked Sendable {
    // @unchecked: the session table and `nextSession` are touched only with `Module.lock`
    // held; `slots` never changes after init.
    let slots: [Slot]
    let processID: pid_t
    /// The open sessions by handle.
    @exclusivity(unchecked) private var sessions: [CK_SESSION_HANDLE: Session] = [:]
    /// The session the last lookup found, always an open one: most hosts make call after
    /// call on one session, and hashing its handle was 3 % of an HMAC's C_SignInit + C_Sign.
    @exclusivity(unchecked) private var recent: Session?
    var nextSession: CK_SESSION_HANDLE = 1

    init(configuration: Configuration) {
        slots = configuration.tokens.enumerated().map { index, token in
            Slot(id: CK_SLOT_ID(index), token: Token(configuration: token))
        }
        processID = getpid()
    }

    func slot(_ id: CK_SLOT_ID) throws(P11Error) -> Slot {
        guard !slots.isEmpty else {
            throw P11Error(CKR_SLOT_ID_INVALID, "no slot \(id): no token is configured")
        }
        return slots[try hostCount(id, limit: slots.count - 1, CKR_SLOT_ID_INVALID, what: "slot ID")]
    }

    /// The open sessions on `slot`.
    func sessions(on slot: Slot) -> [Session] {
        Module.lock.withLock { sessions.values.filter { $0.slot === slot } }
    }

    // The session table; every one of these is called with `Module.lock` held.

    /// The open session `handle` names.
    func lookUp(_ handle: CK_SESSION_HANDLE) -> Session? {
        if let recent, recent.handle == handle { return recent }
        let found = sessions[handle]
        if found != nil { recent = found }
        return found
    }

    func insert(_ session: Session) { sessions[session.handle] = session }

    /// Removes and returns the session `handle` names.
    func remove(_ handle: CK_SESSION_HANDLE) -> Session? {
        if recent?.handle == handle { recent = nil }
        return sessions.removeValue(forKey: handle)
    }

    /// Removes and returns every session on `slot`.
    func removeAll(on slot: Slot) -> [Session] {
        let closed = sessions.values.filter { $0.slot === slot }
        for session in closed { _ = remove(session.handle) }
        return closed
    }

}

/// Module-wide state and the lock that guards it.
///
/// Lock order: `Module.calls`, held shared for the whole of every call; then `Module.lock`,
/// held only to read or change the session table and the state pointer, never while taking
/// another lock; then a session's lock, then a token's lock.
enum Module {
    static var lock: SessionTableLock { SessionTableLock() }
    /// Keeps fork() out while a call runs (see `CallGate`).
    static var calls: CallGate { CallGate() }
    /// nil when not initialised. Guarded by `lock`.
    @exclusivity(unchecked) nonisolated(unsafe) static var state: ModuleState? {
        didSet { borrowedState = state.map { Unmanaged.passUnretained($0) } }
    }
    /// `state` without a reference of its own, for the session lookup every call on a session
    /// starts with (`session`): a strong read there cost a retain and a release a call.
    /// Guarded by `lock`, like `state`, which keeps the object alive while it is set.
    @exclusivity(unchecked) nonisolated(unsafe) private static var borrowedState: Unmanaged<ModuleState>?
    nonisolated(unsafe) private static var forkHandlersInstalled = false
    /// Messages already written by `reportOnce`. Guarded by `lock`.
    nonisolated(unsafe) private static var reported: Set<String> = []

    /// Writes `message` on standard error (or the log file) the first time this process meets
    /// it: a host that retries C_Initialize, or loads the module through several registrations,
    /// is told of one configuration error once, not once per call.
    static func reportOnce(_ message: String) {
        guard lock.withLock({ reported.insert(message).inserted }) else { return }
        Trace.always(message)
    }

    /// The session `handle` names, under one hold of `lock`: every call on a session starts
    /// here, and a second hold of the lock was a tenth of an HMAC's C_Sign.
    static func session(_ handle: CK_SESSION_HANDLE) throws(P11Error) -> Session {
        try lookUp(handle) { _, session in session }
    }

    /// The state and the session `handle` names, under one hold of `lock`, for the calls that
    /// change the session table or every session (`stateSessionEntry`).
    static func stateAndSession(_ handle: CK_SESSION_HANDLE) throws(P11Error) -> (ModuleState, Session) {
        try lookUp(handle) { state, session in (state.takeUnretainedValue(), session) }
    }

    /// `result` of the state, borrowed, and the session `handle` names, with `lock` held.
    @inline(__always)
    private static func lookUp<Result>(
        _ handle: CK_SESSION_HANDLE, _ result: (Unmanaged<ModuleState>, Session) -> Result
    ) throws(P11Error) -> Result {
        lock.lock()
        guard let state = borrowedState else {
            lock.unlock()
            throw P11Error(CKR_CRYPTOKI_NOT_INITIALIZED, "call C_Initialize first")
        }
        guard let session = state._withUnsafeGuaranteedRef({ $0.lookUp(handle) }) else {
            lock.unlock()
            throw P11Error(CKR_SESSION_HANDLE_INVALID, "no session \(handle)")
        }
        let value = result(state, session)
        lock.unlock()
        return value
    }

    /// The state of an initialised module in this process. After fork() the child sees
    /// CKR_CRYPTOKI_NOT_INITIALIZED until it calls C_Initialize (v2.40 §6.7.7): the fork
    /// handler drops the state in the child. (Comparing process IDs here instead cost two
    /// system calls a signature, 2 % of ECDSA's time.)
    static func current() throws(P11Error) -> ModuleState {
        let state = lock.withLock { Module.state }
        guard let state else {
            throw P11Error(CKR_CRYPTOKI_NOT_INITIALIZED, "call C_Initialize first")
        }
        return state
    }

    /// Installs pthread_atfork handlers once. glibc removes them when the module is
    /// dlclose'd, so a reloaded module installs its own again.
    static func installForkHandlers() {
        guard !forkHandlersInstalled else { return }
        forkHandlersInstalled = true
        pthread_atfork(
            {
                // Wait until no other thread is inside a call, so none holds a SQLite or
                // OpenSSL mutex that the child would find locked forever.
                Module.calls.close()
                Module.lock.lock()
            },
            {
                Module.lock.unlock()
                Module.calls.reopen()
            },
            {
                // The child owns the locks now (the prepare handler took them); start clean.
                // The parent's connections and sessions are abandoned, never closed: closing
                // a SQLite connection inherited across fork could disturb the parent's locks.
                p11k_reinitialize_locks_after_fork()
                if let state = Module.state {
                    _ = Unmanaged.passRetained(state)
                    Module.state = nil
                }
            })
    }
}

/// Keeps fork() out while any call runs: every entry point holds it shared for the whole call,
/// the pthread_atfork prepare handler exclusively.
///
/// SQLite guards process-global state with its own mutexes (the allocator's is taken on every
/// allocation, the VFS's on every file lock), and so does OpenSSL; none is fork-safe. A child
/// forked while another thread of the host was inside a call, holding one of them, deadlocked
/// on its first C_Initialize or C_OpenSession. With the gate closed, no thread of the module
/// is inside either library when the process forks. Writer-preferring, so that a stream of
/// calls on other threads cannot starve a fork; not recursive, so calls never nest.
///
/// The rwlock is a C static (p11/locks.c), initialised before any call and reached without
/// the once-check a Swift global costs on every access.
struct CallGate {
    /// Runs one call with the gate held shared.
    @inline(__always)
    func during<T>(_ body: () -> T) -> T {
        p11k_enter_call()
        defer { p11k_leave_call() }
        return body()
    }

    /// Waits for the calls in progress to end and keeps new ones out (fork prepare handler).
    func close() { p11k_close_call_gate() }

    /// Lets calls in again (fork parent handler).
    func reopen() { p11k_reopen_call_gate() }

    /// Runs `body` with no call in progress and none let in (C_Initialize, which sets what
    /// every call reads: the trace's switch and file).
    func excludingCalls<T>(_ body: () -> T) -> T {
        close()
        defer { reopen() }
        return body()
    }
}

/// The session table's lock (`Module.lock`): a C static mutex (p11/locks.c), for the reason
/// `CallGate`'s rwlock is one.
struct SessionTableLock {
    @inline(__always)
    func lock() { p11k_lock_session_table() }

    @inline(__always)
    func unlock() { p11k_unlock_session_table() }

    @inline(__always)
    func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// The shim every entry point goes through (STYLE habit 1): runs `body`, maps its error to a
/// CK_RV, traces the call. Outputs are written by `body` only once everything succeeded.
@inline(__always)
func entry(_ name: StaticString, _ body: (ModuleState) throws(P11Error) -> Void) -> CK_RV {
    Module.calls.during {
        do throws(P11Error) {
            let state = try Module.current()
            try body(state)
            Trace.call(name, CKR_OK, "")
            return CKR_OK
        } catch {
            Trace.call(name, error.rv, error.message)
            return error.rv
        }
    }
}

/// As `entry`, for a call on a session.
@inline(__always)
func sessionEntry(
    _ name: StaticString, _ handle: CK_SESSION_HANDLE, _ body: (Session) throws(P11Error) -> Void
) -> CK_RV {
    Module.calls.during {
        do throws(P11Error) {
            try body(try Module.session(handle))
            Trace.call(name, CKR_OK, "")
            return CKR_OK
        } catch {
            Trace.call(name, error.rv, error.message)
            return error.rv
        }
    }
}

/// As `sessionEntry`, for a call that also needs the module's state (the session table, the
/// other sessions).
func stateSessionEntry(
    _ name: StaticString, _ handle: CK_SESSION_HANDLE,
    _ body: (ModuleState, Session) throws(P11Error) -> Void
) -> CK_RV {
    Module.calls.during {
        do throws(P11Error) {
            let (state, session) = try Module.stateAndSession(handle)
            try body(state, session)
            Trace.call(name, CKR_OK, "")
            return CKR_OK
        } catch {
            Trace.call(name, error.rv, error.message)
            return error.rv
        }
    }
}

/// Runs a KeychainCore call, mapping its error.
@inline(__always)
func core<T>(_ body: () throws(CoreError) -> T) throws(P11Error) -> T {
    do {
        return try body()
    } catch {
        throw P11Error(error)
    }
}

// MARK: - General-purpose functions (v2.40 §5.4)

@c @implementation
func C_Initialize(_ pInitArgs: UnsafeMutableRawPointer?) -> CK_RV {
    if let pInitArgs {
        // A void* of the host's: read unaligned, as it carries no alignment promise.
        let args = pInitArgs.loadUnaligned(as: CK_C_INITIALIZE_ARGS.self)
        guard args.pReserved == nil else {
            Trace.call("C_Initialize", CKR_ARGUMENTS_BAD, "pReserved must be NULL")
            return CKR_ARGUMENTS_BAD
        }
        let callbacks = [
            args.CreateMutex == nil, args.DestroyMutex == nil, args.LockMutex == nil,
            args.UnlockMutex == nil,
        ]
        // All four mutex callbacks or none (v2.40 §5.4).
        guard callbacks.allSatisfy({ $0 }) || callbacks.allSatisfy({ !$0 }) else {
            Trace.call("C_Initialize", CKR_ARGUMENTS_BAD, "give all four mutex functions or none")
            return CKR_ARGUMENTS_BAD
        }
        // Callbacks without CKF_OS_LOCKING_OK ask us to lock with the application's
        // functions. Our pthread locks give the same guarantee to a threaded host, and no
        // thread is ever created by the module, so they are accepted as equivalent.
    }
    let configuration: Configuration
    do {
        configuration = try Configuration.load()
    } catch {
        Module.reportOnce("configuration error: \(error)")
        return CKR_GENERAL_ERROR
    }
    return Module.calls.excludingCalls {
        Module.lock.withLock {
            if let state = Module.state, state.processID == getpid() {
                Trace.call("C_Initialize", CKR_CRYPTOKI_ALREADY_INITIALIZED, "")
                return CKR_CRYPTOKI_ALREADY_INITIALIZED
            }
            Module.installForkHandlers()
            Trace.configure(enabled: configuration.debug, path: configuration.logFile)
            Module.state = ModuleState(configuration: configuration)
            Trace.call(
                "C_Initialize", CKR_OK,
                "\(configuration.tokens.count) token(s), config \(configuration.source ?? "none")")
            return CKR_OK
        }
    }
}

@c @implementation
func C_Finalize(_ pReserved: UnsafeMutableRawPointer?) -> CK_RV {
    entry("C_Finalize") { (_) throws(P11Error) in
        guard pReserved == nil else { throw P11Error(CKR_ARGUMENTS_BAD, "pReserved must be NULL") }
        Module.lock.withLock { Module.state = nil }
    }
}

/// Copies `text` into a fixed-size, blank-padded CK_UTF8CHAR field (no terminator),
/// cutting only at a character boundary.
func pad<T>(_ field: inout T, _ text: String) {
    withUnsafeMutableBytes(of: &field) { buffer in
        for index in buffer.indices { buffer[index] = UInt8(ascii: " ") }
        var utf8 = Array(text.utf8)
        if utf8.count > buffer.count {
            var end = buffer.count
            while end > 0, utf8[end] & 0xC0 == 0x80 { end -= 1 }
            utf8 = Array(utf8[..<end])
        }
        for (index, byte) in utf8.enumerated() { buffer[index] = byte }
    }
}

let libraryVersion = CK_VERSION(major: 0, minor: 1)

@c @implementation
func C_GetInfo(_ pInfo: UnsafeMutablePointer<CK_INFO>?) -> CK_RV {
    entry("C_GetInfo") { (_) throws(P11Error) in
        guard let pInfo else { throw P11Error.argumentsBad }
        var info = CK_INFO()
        info.cryptokiVersion = CK_VERSION(major: 2, minor: 40)
        pad(&info.manufacturerID, "p11keychain")
        info.flags = 0
        pad(&info.libraryDescription, "p11keychain SQLite token store")
        info.libraryVersion = libraryVersion
        pInfo.pointee = info
    }
}
