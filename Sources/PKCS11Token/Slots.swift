internal import CPKCS11
internal import KeychainCore
internal import KeychainCrypto

// Slot and token management functions (v2.40 §5.5).

@c @implementation
func C_GetSlotList(
    _ tokenPresent: CK_BBOOL, _ pSlotList: UnsafeMutablePointer<CK_SLOT_ID>?,
    _ pulCount: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    entry("C_GetSlotList") { (state) throws(P11Error) in
        guard let pulCount else { throw P11Error.argumentsBad }
        let slots = state.slots.filter { tokenPresent == 0 || $0.token.isPresent }
        try writeArray(slots.map(\.id), to: pSlotList, count: pulCount)
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

/// CK_UNAVAILABLE_INFORMATION: not imported from the header (DESIGN §9).
let unavailableInformation = CK_ULONG.max

@c @implementation
func C_GetTokenInfo(_ slotID: CK_SLOT_ID, _ pInfo: UnsafeMutablePointer<CK_TOKEN_INFO>?) -> CK_RV {
    entry("C_GetTokenInfo") { (state) throws(P11Error) in
        let slot = try state.slot(slotID)
        guard let pInfo else { throw P11Error.argumentsBad }
        try core { () throws(KeychainError) in try slot.token.open() }
        let counts = Module.lock.withLock {
            state.sessions.values.filter { $0.slot === slot }.reduce(into: (all: 0, readWrite: 0)) {
                $0.all += 1
                if $1.isReadWrite { $0.readWrite += 1 }
            }
        }
        var info = CK_TOKEN_INFO()
        pad(&info.label, slot.token.configuration.name)
        pad(&info.manufacturerID, "p11keychain")
        pad(&info.model, "SQLite store")
        pad(&info.serialNumber, slot.token.serialNumber)
        // A token created on first use is ready for public objects: initialised, no PIN
        // needed (DESIGN §6).
        var flags = CK_FLAGS(CKF_TOKEN_INITIALIZED | CKF_RNG)
        if slot.token.isWriteProtected { flags |= CK_FLAGS(CKF_WRITE_PROTECTED) }
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

/// The mechanisms of this token and what each does (v2.40 §5.5 C_GetMechanismInfo).
enum Mechanisms {
    static let digests: [(type: CK_MECHANISM_TYPE, algorithm: DigestAlgorithm)] = [
        (CK_MECHANISM_TYPE(CKM_SHA_1), .sha1),
        (CK_MECHANISM_TYPE(CKM_SHA224), .sha224),
        (CK_MECHANISM_TYPE(CKM_SHA256), .sha256),
        (CK_MECHANISM_TYPE(CKM_SHA384), .sha384),
        (CK_MECHANISM_TYPE(CKM_SHA512), .sha512),
    ]

    static func info(_ type: CK_MECHANISM_TYPE) -> CK_MECHANISM_INFO? {
        guard digests.contains(where: { $0.type == type }) else { return nil }
        return CK_MECHANISM_INFO(ulMinKeySize: 0, ulMaxKeySize: 0, flags: CK_FLAGS(CKF_DIGEST))
    }
}

@c @implementation
func C_GetMechanismList(
    _ slotID: CK_SLOT_ID, _ pMechanismList: UnsafeMutablePointer<CK_MECHANISM_TYPE>?,
    _ pulCount: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    entry("C_GetMechanismList") { (state) throws(P11Error) in
        _ = try state.slot(slotID)
        guard let pulCount else { throw P11Error.argumentsBad }
        try writeArray(Mechanisms.digests.map(\.type), to: pMechanismList, count: pulCount)
    }
}

@c @implementation
func C_GetMechanismInfo(
    _ slotID: CK_SLOT_ID, _ type: CK_MECHANISM_TYPE, _ pInfo: UnsafeMutablePointer<CK_MECHANISM_INFO>?
) -> CK_RV {
    entry("C_GetMechanismInfo") { (state) throws(P11Error) in
        _ = try state.slot(slotID)
        guard let pInfo else { throw P11Error.argumentsBad }
        guard let info = Mechanisms.info(type) else {
            throw P11Error(CKR_MECHANISM_INVALID, "mechanism 0x\(String(type, radix: 16)) is not supported")
        }
        pInfo.pointee = info
    }
}

// PINs and token initialisation arrive with private objects (issue 4). Until then the token
// has no PIN to set, and says so with the spec's code for an unsupported function.

@c @implementation
func C_InitToken(
    _ slotID: CK_SLOT_ID, _ pPin: UnsafeMutablePointer<CK_UTF8CHAR>?, _ ulPinLen: CK_ULONG,
    _ pLabel: UnsafeMutablePointer<CK_UTF8CHAR>?
) -> CK_RV {
    entry("C_InitToken") { (state) throws(P11Error) in
        _ = try state.slot(slotID)
        throw P11Error(CKR_FUNCTION_NOT_SUPPORTED, "token initialisation is not available yet")
    }
}

@c @implementation
func C_InitPIN(
    _ hSession: CK_SESSION_HANDLE, _ pPin: UnsafeMutablePointer<CK_UTF8CHAR>?, _ ulPinLen: CK_ULONG
) -> CK_RV {
    sessionEntry("C_InitPIN", hSession) { (_, _) throws(P11Error) in
        throw P11Error(CKR_FUNCTION_NOT_SUPPORTED, "PINs are not available yet")
    }
}

@c @implementation
func C_SetPIN(
    _ hSession: CK_SESSION_HANDLE, _ pOldPin: UnsafeMutablePointer<CK_UTF8CHAR>?,
    _ ulOldLen: CK_ULONG, _ pNewPin: UnsafeMutablePointer<CK_UTF8CHAR>?, _ ulNewLen: CK_ULONG
) -> CK_RV {
    sessionEntry("C_SetPIN", hSession) { (_, _) throws(P11Error) in
        throw P11Error(CKR_FUNCTION_NOT_SUPPORTED, "PINs are not available yet")
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
