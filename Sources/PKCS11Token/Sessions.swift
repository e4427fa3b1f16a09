internal import CPKCS11
internal import KeychainCore

// Session management functions (v2.40 §5.6).

@c @implementation
func C_OpenSession(
    _ slotID: CK_SLOT_ID, _ flags: CK_FLAGS, _ pApplication: UnsafeMutableRawPointer?,
    _ notify: CK_NOTIFY?, _ phSession: UnsafeMutablePointer<CK_SESSION_HANDLE>?
) -> CK_RV {
    entry("C_OpenSession") { (state) throws(P11Error) in
        let slot = try state.slot(slotID)
        guard let phSession else { throw P11Error.argumentsBad }
        // Parallel sessions were retired in v2.x: the flag must be set (v2.40 §5.6).
        guard flags & CK_FLAGS(CKF_SERIAL_SESSION) != 0 else {
            throw P11Error(CKR_SESSION_PARALLEL_NOT_SUPPORTED, "CKF_SERIAL_SESSION must be set")
        }
        // The reason reaches the CK_RV (a damaged store is CKR_DEVICE_ERROR) and the trace.
        if let failure = slot.token.openError {
            var error = P11Error(failure)
            error.message =
                "the store of token '\(slot.token.configuration.name)' cannot be opened: \(failure.message)"
            throw error
        }
        if flags & CK_FLAGS(CKF_RW_SESSION) != 0, slot.token.isWriteProtected {
            throw P11Error(CKR_TOKEN_WRITE_PROTECTED, "token '\(slot.token.configuration.name)' is read-only")
        }
        if flags & CK_FLAGS(CKF_RW_SESSION) == 0, slot.token.loggedInUser == .securityOfficer {
            throw P11Error(
                CKR_SESSION_READ_WRITE_SO_EXISTS, "the SO is logged in: only R/W sessions can open")
        }
        let handle = Module.lock.withLock { () -> CK_SESSION_HANDLE? in
            // Handles are never reused; after 2^64 − 1 sessions there are none left.
            let handle = state.nextSession
            let (next, overflow) = handle.addingReportingOverflow(1)
            guard !overflow else { return nil }
            state.nextSession = next
            state.insert(Session(handle: handle, slot: slot, flags: flags))
            return handle
        }
        guard let handle else { throw P11Error(CKR_SESSION_COUNT, "no session handle is left") }
        phSession.pointee = handle
    }
}

/// Drops a session's operations and its session objects.
private func end(_ session: Session) {
    let objects = session.lock.withLock {
        session.endAllOperations()
        defer { session.objects = [] }
        return session.objects
    }
    session.token.discardSessionObjects(Array(objects))
}

@c @implementation
func C_CloseSession(_ hSession: CK_SESSION_HANDLE) -> CK_RV {
    stateSessionEntry("C_CloseSession", hSession) { (state, session) throws(P11Error) in
        let removed = Module.lock.withLock { state.remove(hSession) }
        guard removed != nil else { throw P11Error(CKR_SESSION_HANDLE_INVALID, "session already closed") }
        end(session)
        // Closing an application's last session with a token logs it out (v2.40 §5.6).
        if state.sessions(on: session.slot).isEmpty { session.token.logOut() }
    }
}

@c @implementation
func C_CloseAllSessions(_ slotID: CK_SLOT_ID) -> CK_RV {
    entry("C_CloseAllSessions") { (state) throws(P11Error) in
        let slot = try state.slot(slotID)
        let closed = Module.lock.withLock { state.removeAll(on: slot) }
        closed.forEach(end)
        slot.token.logOut()
    }
}

@c @implementation
func C_GetSessionInfo(_ hSession: CK_SESSION_HANDLE, _ pInfo: UnsafeMutablePointer<CK_SESSION_INFO>?)
    -> CK_RV
{
    sessionEntry("C_GetSessionInfo", hSession) { (session) throws(P11Error) in
        guard let pInfo else { throw P11Error.argumentsBad }
        var info = CK_SESSION_INFO()
        info.slotID = session.slot.id
        info.state = session.state
        info.flags = session.flags
        info.ulDeviceError = 0
        pInfo.pointee = info
    }
}

@c @implementation
func C_GetOperationState(
    _ hSession: CK_SESSION_HANDLE, _ pOperationState: UnsafeMutablePointer<CK_BYTE>?,
    _ pulOperationStateLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_GetOperationState", hSession) { (_) throws(P11Error) in
        throw P11Error(CKR_FUNCTION_NOT_SUPPORTED, "operation state cannot be saved")
    }
}

@c @implementation
func C_SetOperationState(
    _ hSession: CK_SESSION_HANDLE, _ pOperationState: UnsafeMutablePointer<CK_BYTE>?,
    _ ulOperationStateLen: CK_ULONG, _ hEncryptionKey: CK_OBJECT_HANDLE,
    _ hAuthenticationKey: CK_OBJECT_HANDLE
) -> CK_RV {
    sessionEntry("C_SetOperationState", hSession) { (_) throws(P11Error) in
        throw P11Error(CKR_FUNCTION_NOT_SUPPORTED, "operation state cannot be restored")
    }
}

/// C_Login and C_LoginUser (v2.40 §5.6; v3.0 §5.6.5, whose user name this token ignores).
private func logIn(_ state: ModuleState, _ session: Session, _ userType: CK_USER_TYPE, _ pin: [UInt8])
    throws(P11Error)
{
    let user: UserType
    switch userType {
    case CK_USER_TYPE(CKU_USER): user = .user
    case CK_USER_TYPE(CKU_SO):
        user = .securityOfficer
        // The SO works in R/W sessions only (v2.40 §5.6).
        if state.sessions(on: session.slot).contains(where: { !$0.isReadWrite }) {
            throw P11Error(CKR_SESSION_READ_ONLY_EXISTS, "close the R/O sessions before the SO logs in")
        }
    case CK_USER_TYPE(CKU_CONTEXT_SPECIFIC):
        // The user's PIN again, for the active operation whose key needs it before each use
        // (CKA_ALWAYS_AUTHENTICATE; v2.40 §4.9): the core's operation checks it.
        try session.lock.withLock { () throws(P11Error) in
            var signature: SignatureOperation?
            if case .signature(let operation) = session.operations.sign, operation.awaitsPIN {
                signature = operation
            }
            // The decryption's PIN is its core operation's (UseAuthentication).
            let decryption = session.decrypting.flatMap { $0.awaitsPIN ? $0.authentication : nil }
            guard signature != nil || decryption != nil else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "no operation needs a context-specific login")
            }
            // Both, when a signature and a decryption of such keys wait at once.
            try core { () throws(CoreError) in
                try signature?.authenticate(pin: pin)
                try decryption?.authenticate(pin: pin)
            }
        }
        return
    default:
        throw P11Error(CKR_USER_TYPE_INVALID, "user type \(userType) is not SO, USER or CONTEXT_SPECIFIC")
    }
    if user == .user, pin.isEmpty {
        // No PIN: the protected authentication path of an unlocked session (C_GetTokenInfo).
        try core { () throws(CoreError) in try session.token.logInWithSessionEntry() }
        return
    }
    try core { () throws(CoreError) in try session.token.logIn(user, pin: pin) }
}

@c @implementation
func C_Login(
    _ hSession: CK_SESSION_HANDLE, _ userType: CK_USER_TYPE, _ pPin: UnsafeMutablePointer<CK_UTF8CHAR>?,
    _ ulPinLen: CK_ULONG
) -> CK_RV {
    stateSessionEntry("C_Login", hSession) { (state, session) throws(P11Error) in
        try logIn(state, session, userType, try pin(pPin, ulPinLen))
    }
}

@c @implementation
func C_LoginUser(
    _ hSession: CK_SESSION_HANDLE, _ userType: CK_USER_TYPE, _ pPin: UnsafeMutablePointer<CK_UTF8CHAR>?,
    _ ulPinLen: CK_ULONG, _ pUsername: UnsafeMutablePointer<CK_UTF8CHAR>?, _ ulUsernameLen: CK_ULONG
) -> CK_RV {
    stateSessionEntry("C_LoginUser", hSession) { (state, session) throws(P11Error) in
        try logIn(state, session, userType, try pin(pPin, ulPinLen))
    }
}

/// C_Logout (v2.40 §5.6). The login is the application's, so the logout reaches every session
/// of it on the slot: "all private session objects from sessions belonging to the application
/// are destroyed", and of the operations that "may or may not" continue, this token ends every
/// one that uses a private key or a private object (a later call returns
/// CKR_OPERATION_NOT_INITIALIZED), so no key is used once its login is gone.
@c @implementation
func C_Logout(_ hSession: CK_SESSION_HANDLE) -> CK_RV {
    stateSessionEntry("C_Logout", hSession) { (state, session) throws(P11Error) in
        let token = session.token
        guard token.loggedInUser != nil else {
            throw P11Error(CKR_USER_NOT_LOGGED_IN, "nobody is logged in")
        }
        // Found while still logged in, when private objects are visible; the index lookup
        // unseals nothing.
        let privateSessionObjects = Set(
            (try? token.findObjects(
                [.private: [1], .token: [0]], context: AccessContext(readWrite: true, userLoggedIn: true)))
                ?? [])
        token.logOut()
        token.discardSessionObjects(Array(privateSessionObjects))
        for other in state.sessions(on: session.slot) {
            other.lock.withLock {
                other.endPrivateOperations()
                other.objects.subtract(privateSessionObjects)
            }
        }
    }
}

/// The operations C_SessionCancel can name (v3.0 §5.6, table 10's flags): each kind of the
/// session's slots, and the sign/verify-recover and message-based operations, which this token
/// never starts, so cancelling them has nothing to do. Any other flag names an operation that
/// is not a session's to cancel here: the call returns CKR_OPERATION_CANCEL_FAILED and
/// cancels nothing.
private let cancellable: CK_FLAGS = OperationKind.allCases.reduce(
    CK_FLAGS(CKF_SIGN_RECOVER) | CK_FLAGS(CKF_VERIFY_RECOVER) | 0x0000_001E  // CKF_MESSAGE_* (v3.0 §5.2)
) { $0 | $1.cancelFlag }

/// CKR_OPERATION_CANCEL_FAILED (v3.0), not in p11-kit's 2.40 header.
let operationCancelFailed: CK_RV = 0x0000_0202

@c @implementation
func C_SessionCancel(_ hSession: CK_SESSION_HANDLE, _ flags: CK_FLAGS) -> CK_RV {
    sessionEntry("C_SessionCancel", hSession) { (session) throws(P11Error) in
        guard flags & ~cancellable == 0 else {
            throw P11Error(
                operationCancelFailed,
                "flags 0x\(String(flags & ~cancellable, radix: 16)) name no operation a session can cancel")
        }
        session.cancel(OperationKind.allCases.filter { flags & $0.cancelFlag != 0 })
    }
}

@c @implementation
func C_GetFunctionStatus(_ hSession: CK_SESSION_HANDLE) -> CK_RV {
    sessionEntry("C_GetFunctionStatus", hSession) { (_) throws(P11Error) in
        throw P11Error(CKR_FUNCTION_NOT_PARALLEL, "legacy function (v2.40 §5.16)")
    }
}

@c @implementation
func C_CancelFunction(_ hSession: CK_SESSION_HANDLE) -> CK_RV {
    sessionEntry("C_CancelFunction", hSession) { (_) throws(P11Error) in
        throw P11Error(CKR_FUNCTION_NOT_PARALLEL, "legacy function (v2.40 §5.16)")
    }
}
