internal import CPKCS11
internal import KeychainCore

// A session's active operations (v2.40 §5.6): one slot per kind, and every rule of when an
// operation ends written here once: at its last call (by the function that finishes it), at
// C_SessionCancel, at C_Logout (those that use a private key or object) and at C_CloseSession.

/// What C_Sign* or C_Verify* runs: a signature with a key pair's half, or a MAC.
enum SigningOperation {
    case signature(SignatureOperation)
    case mac(MACOperation)

    var usesPrivateObject: Bool {
        switch self {
        case .signature(let operation): operation.usesPrivateObject
        case .mac(let operation): operation.usesPrivateObject
        }
    }
}

/// The kinds of operation a session runs at once, one of each.
enum OperationKind: CaseIterable {
    case find, digest, sign, verify, encrypt, decrypt

    /// The C_SessionCancel flag (v3.0 §5.6, table 10) that names the kind.
    var cancelFlag: CK_FLAGS {
        switch self {
        case .find: 0x0000_0040  // CKF_FIND_OBJECTS (v3.0; not in p11-kit's 2.40 header)
        case .digest: CK_FLAGS(CKF_DIGEST)
        case .sign: CK_FLAGS(CKF_SIGN)
        case .verify: CK_FLAGS(CKF_VERIFY)
        case .encrypt: CK_FLAGS(CKF_ENCRYPT)
        case .decrypt: CK_FLAGS(CKF_DECRYPT)
        }
    }
}

/// A session's operation slots. Its session's `lock` guards every use.
struct OperationSlots {
    /// The active search: its results, how many were returned, and whether it ran with the
    /// user logged in (its results may then name private objects, so it ends at C_Logout).
    var find: (results: [ObjectReference], position: Int, sawPrivateObjects: Bool)?
    var digest: DigestOperation?
    var sign: SigningOperation?
    var verify: SigningOperation?
    var encrypt: CipherOperation?
    var decrypt: CipherOperation?

    /// Ends the operation of `kind`.
    mutating func end(_ kind: OperationKind) {
        switch kind {
        case .find: find = nil
        case .digest: digest = nil
        case .sign: sign = nil
        case .verify: verify = nil
        case .encrypt: encrypt = nil
        case .decrypt: decrypt = nil
        }
    }

    /// Ends every operation (C_CloseSession).
    mutating func endAll() {
        OperationKind.allCases.forEach { end($0) }
    }

    /// Ends every operation that uses a private key or a key that is a private object, and any
    /// search that could see private objects (handles of private objects become invalid at
    /// logout, v2.40 §5.6).
    mutating func endPrivate() {
        if sign?.usesPrivateObject == true { sign = nil }
        if verify?.usesPrivateObject == true { verify = nil }
        if encrypt?.usesPrivateObject == true { encrypt = nil }
        decrypt = nil
        if find?.sawPrivateObjects == true { find = nil }
    }
}

extension Session {
    /// Ends every operation and forgets the kept and idle contexts (C_CloseSession). `lock`
    /// must be held.
    func endAllOperations() {
        operations.endAll()
        kept.removeAll()
        idleCipher = nil
    }

    /// Ends the active operations of `kinds`, if any: C_SessionCancel with their flags, and an
    /// *Init given no mechanism, which v3.0 makes the way to end its kind's active operation
    /// (each *Init's description). Ending what is not active does nothing and is no error, as
    /// in C_SessionCancel. Takes `lock`.
    func cancel(_ kinds: some Sequence<OperationKind>) {
        lock.withLock {
            for kind in kinds { operations.end(kind) }
        }
    }

    /// Ends every operation that uses a private key or a private object (`endPrivate`), and
    /// forgets the kept and idle contexts, which hold keys (C_Logout, v2.40 §5.6). `lock` must
    /// be held.
    func endPrivateOperations() {
        operations.endPrivate()
        kept.removeAll()
        idleCipher = nil
    }

    /// Runs one step of the operation of `kind` (a part, a key digested); a failure ends the
    /// operation (v2.40 §5.10–5.12) and is rethrown. `lock` is held.
    func endingOnFailure<Result>(_ kind: OperationKind, _ step: () throws(P11Error) -> Result)
        throws(P11Error)
        -> Result
    {
        do throws(P11Error) {
            return try step()
        } catch {
            operations.end(kind)
            throw error
        }
    }

    /// Runs a call that delivers output by the two-call convention (v2.40 §5.2): every
    /// failure but CKR_BUFFER_TOO_SMALL ends the operation through `end` (v2.40 §5.8–5.9),
    /// and is rethrown; a short buffer keeps it for the call with a larger one. `lock` is held.
    func keepingOnShortBuffer<Result>(
        _ call: () throws(P11Error) -> Result, otherwiseEnding end: () -> Void
    ) throws(P11Error) -> Result {
        do throws(P11Error) {
            return try call()
        } catch {
            if error.rv != CKR_BUFFER_TOO_SMALL { end() }
            throw error
        }
    }

    /// The input of a single-part call (C_Digest, C_Sign) to the operation of `kind`, and where
    /// its output's length goes. Refused while the operation has taken parts, which stays
    /// active for its Final call; a missing length or bad input ends it. `lock` is held.
    func singlePartInput(
        _ kind: OperationKind, isMultiPart: Bool, _ pData: UnsafeMutablePointer<CK_BYTE>?,
        _ ulDataLen: CK_ULONG,
        limit: Int = maximumDataLength, outputLength pulOutputLen: UnsafeMutablePointer<CK_ULONG>?
    ) throws(P11Error) -> (data: UnsafeRawBufferPointer, outputLength: UnsafeMutablePointer<CK_ULONG>) {
        guard !isMultiPart else {
            let (what, final) = kind == .digest ? ("digest", "C_DigestFinal") : ("signature", "C_SignFinal")
            throw P11Error(CKR_OPERATION_ACTIVE, "a multi-part \(what) is active: finish it with \(final)")
        }
        return try endingOnFailure(kind) { () throws(P11Error) in
            guard let pulOutputLen else { throw P11Error.argumentsBad }
            return (try input(pData, ulDataLen, limit: limit), pulOutputLen)
        }
    }
}
