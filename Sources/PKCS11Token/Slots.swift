internal import CPKCS11
internal import KeychainCore

// Slot and token management functions (v2.40 §5.5).

@c @implementation
func C_GetSlotList(
    _ tokenPresent: CK_BBOOL, _ pSlotList: UnsafeMutablePointer<CK_SLOT_ID>?,
    _ pulCount: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    entry("C_GetSlotList") { (state) throws(P11Error) in
        guard let pulCount else { throw P11Error.argumentsBad }
        let slots = state.slots.filter { tokenPresent == 0 || $0.token.isPresent }
        // A host that lists tokens (p11tool) never opens a session: the trace says here why a
        // token is absent (a store another user may write, a FIFO, a damaged file…).
        if Trace.enabled {
            for slot in state.slots {
                guard let failure = slot.token.openError else { continue }
                Trace.always(
                    "slot \(slot.id): the store of token '\(slot.token.configuration.name)' cannot be opened: "
                        + failure.message)
            }
        }
        try writeOutput(into: pSlotList, length: pulCount, size: slots.count) { slots.map(\.id) }
    }
}

@c @implementation
func C_GetSlotInfo(_ slotID: CK_SLOT_ID, _ pInfo: UnsafeMutablePointer<CK_SLOT_INFO>?) -> CK_RV {
    entry("C_GetSlotInfo") { (state) throws(P11Error) in
        let slot = try state.slot(slotID)
        guard let pInfo else { throw P11Error.argumentsBad }
        var info = CK_SLOT_INFO()
        pad(&info.slotDescription, "p11keychain \(slot.token.configuration.name)")
        pad(&info.manufacturerID, "p11keychain")
        info.flags = slot.token.isPresent ? CK_FLAGS(CKF_TOKEN_PRESENT) : 0
        info.hardwareVersion = libraryVersion
        info.firmwareVersion = libraryVersion
        pInfo.pointee = info
    }
}

/// CK_UNAVAILABLE_INFORMATION: not imported from the header (ARCHITECTURE.md §11.1).
let unavailableInformation = CK_ULONG.max

@c @implementation
func C_GetTokenInfo(_ slotID: CK_SLOT_ID, _ pInfo: UnsafeMutablePointer<CK_TOKEN_INFO>?) -> CK_RV {
    entry("C_GetTokenInfo") { (state) throws(P11Error) in
        let slot = try state.slot(slotID)
        guard let pInfo else { throw P11Error.argumentsBad }
        try core { () throws(CoreError) in try slot.token.open() }
        let authentication = try core { () throws(CoreError) in try slot.token.authenticationState() }
        let counts = state.sessions(on: slot).reduce(into: (all: 0, readWrite: 0)) {
            $0.all += 1
            if $1.isReadWrite { $0.readWrite += 1 }
        }
        var info = CK_TOKEN_INFO()
        pad(&info.label, authentication.label ?? slot.token.configuration.name)
        pad(&info.manufacturerID, "p11keychain")
        pad(&info.model, "SQLite store")
        pad(&info.serialNumber, slot.token.serialNumber)
        // A token created on first use is ready for public objects: initialised, no PIN
        // needed (ARCHITECTURE.md §5).
        var flags = CK_FLAGS(CKF_TOKEN_INITIALIZED | CKF_RNG)
        if slot.token.isWriteProtected { flags |= CK_FLAGS(CKF_WRITE_PROTECTED) }
        flags |= pinFlags(authentication)
        // Unlocked for the login session (`p11keychain unlock`): the user logs in with no
        // PIN, through the session keyring, as through a pinpad (KeychainCore SessionUnlock).
        if authentication.hasUserPIN, slot.token.hasSessionUnlock {
            flags |= CK_FLAGS(CKF_PROTECTED_AUTHENTICATION_PATH)
        }
        info.flags = flags
        info.ulMaxSessionCount = 0  // CK_EFFECTIVELY_INFINITE
        info.ulSessionCount = CK_ULONG(counts.all)
        info.ulMaxRwSessionCount = 0
        info.ulRwSessionCount = CK_ULONG(counts.readWrite)
        info.ulMaxPinLen = 255
        info.ulMinPinLen = 4
        info.ulTotalPublicMemory = unavailableInformation
        info.ulFreePublicMemory = unavailableInformation
        info.ulTotalPrivateMemory = unavailableInformation
        info.ulFreePrivateMemory = unavailableInformation
        info.hardwareVersion = libraryVersion
        info.firmwareVersion = libraryVersion
        pad(&info.utcTime, "")
        pInfo.pointee = info
    }
}

/// CK_TOKEN_INFO flags of the PINs: a user PIN makes login required (private objects exist
/// only behind it); the failure counts show as COUNT_LOW, FINAL_TRY and LOCKED.
private func pinFlags(_ state: AuthenticationState) -> CK_FLAGS {
    var flags: CK_FLAGS = 0
    if state.hasUserPIN { flags |= CK_FLAGS(CKF_LOGIN_REQUIRED | CKF_USER_PIN_INITIALIZED) }
    func counter(_ failures: Int, low: UInt, finalTry: UInt, locked: UInt) -> CK_FLAGS {
        if failures >= state.maximumFailures { return CK_FLAGS(locked) }
        if failures == state.maximumFailures - 1 { return CK_FLAGS(finalTry | low) }
        return failures > 0 ? CK_FLAGS(low) : 0
    }
    flags |= counter(
        state.userFailures, low: CKF_USER_PIN_COUNT_LOW, finalTry: CKF_USER_PIN_FINAL_TRY,
        locked: CKF_USER_PIN_LOCKED)
    flags |= counter(
        state.securityOfficerFailures, low: CKF_SO_PIN_COUNT_LOW, finalTry: CKF_SO_PIN_FINAL_TRY,
        locked: CKF_SO_PIN_LOCKED)
    return flags
}

/// C_GetMechanismInfo of a registry mechanism (KeychainCore's `MechanismRegistry`) on a token:
/// its CKF_* flags less the uses the configuration turns off (`rsa-pkcs1-decryption = no`), and
/// its key sizes with the smallest RSA key raised to the token's `rsa-minimum-bits`.
private func mechanismInfo(_ mechanism: Mechanism, on token: Token) -> CK_MECHANISM_INFO {
    var flags: UInt = 0
    let functions: [(MechanismFunctions, UInt)] = [
        (.encrypt, CKF_ENCRYPT), (.decrypt, CKF_DECRYPT), (.digest, CKF_DIGEST), (.sign, CKF_SIGN),
        (.verify, CKF_VERIFY), (.generate, CKF_GENERATE), (.generateKeyPair, CKF_GENERATE_KEY_PAIR),
        (.wrap, CKF_WRAP), (.unwrap, CKF_UNWRAP), (.derive, CKF_DERIVE),
    ]
    let turnedOff = token.usesTurnedOff(for: mechanism.type).reduce(into: MechanismFunctions()) {
        $0.insert(MechanismFunctions($1))
    }
    for (function, flag) in functions where mechanism.functions.subtracting(turnedOff).contains(function) {
        flags |= flag
    }
    if mechanism.takesNamedCurves { flags |= UInt(CKF_EC_F_P | CKF_EC_NAMEDCURVE | CKF_EC_UNCOMPRESS) }
    let sizes = mechanism.keySizes(on: token)
    return CK_MECHANISM_INFO(
        ulMinKeySize: CK_ULONG(clamping: sizes?.lowerBound ?? 0),
        ulMaxKeySize: CK_ULONG(clamping: sizes?.upperBound ?? 0), flags: CK_FLAGS(flags))
}

@c @implementation
func C_GetMechanismList(
    _ slotID: CK_SLOT_ID, _ pMechanismList: UnsafeMutablePointer<CK_MECHANISM_TYPE>?,
    _ pulCount: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    entry("C_GetMechanismList") { (state) throws(P11Error) in
        _ = try state.slot(slotID)
        guard let pulCount else { throw P11Error.argumentsBad }
        let registry = MechanismRegistry.all
        try writeOutput(into: pMechanismList, length: pulCount, size: registry.count) {
            registry.map { CK_MECHANISM_TYPE($0.type) }
        }
    }
}

@c @implementation
func C_GetMechanismInfo(
    _ slotID: CK_SLOT_ID, _ type: CK_MECHANISM_TYPE, _ pInfo: UnsafeMutablePointer<CK_MECHANISM_INFO>?
) -> CK_RV {
    entry("C_GetMechanismInfo") { (state) throws(P11Error) in
        let slot = try state.slot(slotID)
        guard let pInfo else { throw P11Error.argumentsBad }
        guard let mechanism = MechanismRegistry.mechanism(UInt64(type)) else {
            throw P11Error(CKR_MECHANISM_INVALID, "mechanism \(mechanismName(type)) is not supported")
        }
        let info = mechanismInfo(mechanism, on: slot.token)
        pInfo.pointee = info
    }
}

/// Reads a PIN argument: NULL is allowed only with length zero (there is no protected
/// authentication path).
func pin(_ pointer: UnsafeMutablePointer<CK_UTF8CHAR>?, _ length: CK_ULONG) throws(P11Error) -> [UInt8] {
    guard length > 0 else { return [] }
    guard let pointer else { throw P11Error(CKR_ARGUMENTS_BAD, "PIN is NULL with length \(length)") }
    let count = try hostCount(length, limit: 4096, CKR_PIN_LEN_RANGE, what: "a PIN length")
    return Array(UnsafeBufferPointer(start: pointer, count: count))
}

@c @implementation
func C_InitToken(
    _ slotID: CK_SLOT_ID, _ pPin: UnsafeMutablePointer<CK_UTF8CHAR>?, _ ulPinLen: CK_ULONG,
    _ pLabel: UnsafeMutablePointer<CK_UTF8CHAR>?
) -> CK_RV {
    entry("C_InitToken") { (state) throws(P11Error) in
        let slot = try state.slot(slotID)
        guard let pLabel else { throw P11Error.argumentsBad }
        let soPIN = try pin(pPin, ulPinLen)
        // The label is 32 bytes, blank-padded (v2.40 §5.5).
        var label = Array(UnsafeBufferPointer(start: pLabel, count: 32))
        while label.last == UInt8(ascii: " ") || label.last == 0 { label.removeLast() }
        guard state.sessions(on: slot).isEmpty else {
            throw P11Error(CKR_SESSION_EXISTS, "close every session of the slot before C_InitToken")
        }
        guard !slot.token.isWriteProtected else {
            throw P11Error(CKR_TOKEN_WRITE_PROTECTED, "token '\(slot.token.configuration.name)' is read-only")
        }
        try core { () throws(CoreError) in
            try slot.token.initialize(
                securityOfficerPIN: soPIN, label: String(decoding: label, as: UTF8.self))
        }
    }
}

@c @implementation
func C_InitPIN(
    _ hSession: CK_SESSION_HANDLE, _ pPin: UnsafeMutablePointer<CK_UTF8CHAR>?, _ ulPinLen: CK_ULONG
) -> CK_RV {
    sessionEntry("C_InitPIN", hSession) { (session) throws(P11Error) in
        let userPIN = try pin(pPin, ulPinLen)
        guard session.state == CK_STATE(CKS_RW_SO_FUNCTIONS) else {
            throw P11Error(CKR_USER_NOT_LOGGED_IN, "C_InitPIN needs a R/W session with the SO logged in")
        }
        try core { () throws(CoreError) in try session.token.initializeUserPIN(userPIN) }
    }
}

@c @implementation
func C_SetPIN(
    _ hSession: CK_SESSION_HANDLE, _ pOldPin: UnsafeMutablePointer<CK_UTF8CHAR>?,
    _ ulOldLen: CK_ULONG, _ pNewPin: UnsafeMutablePointer<CK_UTF8CHAR>?, _ ulNewLen: CK_ULONG
) -> CK_RV {
    sessionEntry("C_SetPIN", hSession) { (session) throws(P11Error) in
        let old = try pin(pOldPin, ulOldLen)
        let new = try pin(pNewPin, ulNewLen)
        guard session.isReadWrite else {
            throw P11Error(CKR_SESSION_READ_ONLY, "C_SetPIN needs a R/W session")
        }
        try core { () throws(CoreError) in try session.token.changePIN(from: old, to: new) }
    }
}

@c @implementation
func C_WaitForSlotEvent(
    _ flags: CK_FLAGS, _ pSlot: UnsafeMutablePointer<CK_SLOT_ID>?, _ pReserved: UnsafeMutableRawPointer?
) -> CK_RV {
    // Tokens are files: they are never inserted or removed, so there is no event to wait for.
    entry("C_WaitForSlotEvent") { (_) throws(P11Error) in
        throw P11Error(CKR_FUNCTION_NOT_SUPPORTED, "slots have no events")
    }
}
