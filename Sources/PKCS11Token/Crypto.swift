internal import CPKCS11
internal import KeychainCore

// Message digesting (v2.40 §5.10), random numbers (§5.15) and the cryptographic functions
// whose mechanisms arrive with keys.

/// Delivers a digest's output with the two-call convention (`writeOutput`): a length query or a
/// short buffer leaves the operation active; anything else ends it.
private func finishDigest(
    _ session: Session, _ operation: DigestOperation, into buffer: UnsafeMutablePointer<CK_BYTE>?,
    length: UnsafeMutablePointer<CK_ULONG>, feeding data: UnsafeRawBufferPointer?
) throws(P11Error) {
    try writeOutput(into: buffer, length: length, size: operation.length) { () throws(P11Error) in
        session.operations.end(.digest)
        return try core { () throws(CoreError) in try operation.finish(data) }
    }
}

@c @implementation
func C_DigestInit(_ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?) -> CK_RV {
    sessionEntry("C_DigestInit", hSession) { (session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee else { return session.cancel([.digest]) }
        let type = UInt64(mechanism.mechanism)
        _ = try core { () throws(CoreError) in try MechanismRegistry.require(type, for: .digest) }
        guard mechanism.pParameter == nil, mechanism.ulParameterLen == 0 else {
            throw P11Error(CKR_MECHANISM_PARAM_INVALID, "digest mechanisms take no parameter")
        }
        let operation = try core { () throws(CoreError) in try DigestOperation(type, .none) }
        try session.lock.withLock { () throws(P11Error) in
            guard session.operations.digest == nil else {
                throw P11Error(CKR_OPERATION_ACTIVE, "a digest is already active")
            }
            session.operations.digest = operation
        }
    }
}

@c @implementation
func C_Digest(
    _ hSession: CK_SESSION_HANDLE, _ pData: UnsafeMutablePointer<CK_BYTE>?, _ ulDataLen: CK_ULONG,
    _ pDigest: UnsafeMutablePointer<CK_BYTE>?, _ pulDigestLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_Digest", hSession) { (session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            guard let operation = session.operations.digest else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_DigestInit first")
            }
            let (data, pulDigestLen) = try session.singlePartInput(
                .digest, isMultiPart: operation.isMultiPart, pData, ulDataLen, outputLength: pulDigestLen)
            try finishDigest(session, operation, into: pDigest, length: pulDigestLen, feeding: data)
        }
    }
}

@c @implementation
func C_DigestUpdate(
    _ hSession: CK_SESSION_HANDLE, _ pPart: UnsafeMutablePointer<CK_BYTE>?, _ ulPartLen: CK_ULONG
)
    -> CK_RV
{
    sessionEntry("C_DigestUpdate", hSession) { (session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            guard let operation = session.operations.digest else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_DigestInit first")
            }
            try session.endingOnFailure(.digest) { () throws(P11Error) in
                let part = try input(pPart, ulPartLen)
                try core { () throws(CoreError) in try operation.update(part) }
            }
        }
    }
}

@c @implementation
func C_DigestKey(_ hSession: CK_SESSION_HANDLE, _ hKey: CK_OBJECT_HANDLE) -> CK_RV {
    sessionEntry("C_DigestKey", hSession) { (session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            guard let operation = session.operations.digest else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_DigestInit first")
            }
            // A failed C_DigestKey ends the operation, as a failed update does.
            try session.endingOnFailure(.digest) { () throws(P11Error) in
                try onKey(session, hKey, .operation) { (reference) throws(CoreError) in
                    try session.token.digestKey(reference, into: operation, context: session.context)
                }
            }
        }
    }
}

@c @implementation
func C_DigestFinal(
    _ hSession: CK_SESSION_HANDLE, _ pDigest: UnsafeMutablePointer<CK_BYTE>?,
    _ pulDigestLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_DigestFinal", hSession) { (session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            guard let operation = session.operations.digest else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_DigestInit first")
            }
            guard let pulDigestLen else {
                session.operations.end(.digest)
                throw P11Error.argumentsBad
            }
            try finishDigest(session, operation, into: pDigest, length: pulDigestLen, feeding: nil)
        }
    }
}

/// The longest seed C_SeedRandom takes: far more than any entropy source gives at once.
let maximumSeedLength = 1 << 20

@c @implementation
func C_SeedRandom(
    _ hSession: CK_SESSION_HANDLE, _ pSeed: UnsafeMutablePointer<CK_BYTE>?, _ ulSeedLen: CK_ULONG
)
    -> CK_RV
{
    sessionEntry("C_SeedRandom", hSession) { (_) throws(P11Error) in
        // v2.40 §5.15: the caller's bytes are mixed into the generator, never in place of the
        // operating system's entropy (RandomNumbers.mix reseeds with them as additional
        // input). NULL with a length, or a length beyond any seed, is CKR_ARGUMENTS_BAD: the
        // function has no length error of its own.
        let seed = try input(pSeed, ulSeedLen, limit: maximumSeedLength, CKR_ARGUMENTS_BAD)
        try core { () throws(CoreError) in try RandomNumbers.mix(seed) }
    }
}

@c @implementation
func C_GenerateRandom(
    _ hSession: CK_SESSION_HANDLE, _ pRandomData: UnsafeMutablePointer<CK_BYTE>?, _ ulRandomLen: CK_ULONG
) -> CK_RV {
    sessionEntry("C_GenerateRandom", hSession) { (_) throws(P11Error) in
        guard ulRandomLen > 0 else { return }
        guard let pRandomData else { throw P11Error.argumentsBad }
        let count = try hostCount(ulRandomLen, limit: maximumDataLength, what: "a random length")
        try core { () throws(CoreError) in
            try RandomNumbers.fill(UnsafeMutableRawBufferPointer(start: pRandomData, count: count))
        }
    }
}

// MARK: - Functions no mechanism of this token offers
//
// Signing with recovery and the dual-function updates: each *Init refuses the mechanism (and
// given none, has no active operation to end); each operation reports that none was started.

private func refuseMechanism(_ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?, _ purpose: String)
    throws(P11Error)
{
    // No mechanism ends the active operation (v3.0), and none of these is ever active.
    guard let mechanism = pMechanism?.pointee else { return }
    throw P11Error(
        CKR_MECHANISM_INVALID,
        "mechanism \(mechanismName(mechanism.mechanism)) cannot \(purpose) on this token")
}

private func notStarted(_ what: String) -> P11Error {
    P11Error(CKR_OPERATION_NOT_INITIALIZED, "no \(what) operation is active")
}

@c @implementation
func C_SignRecoverInit(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?, _ hKey: CK_OBJECT_HANDLE
) -> CK_RV {
    sessionEntry("C_SignRecoverInit", hSession) { (_) throws(P11Error) in
        try refuseMechanism(pMechanism, "sign with recovery")
    }
}

@c @implementation
func C_SignRecover(
    _ hSession: CK_SESSION_HANDLE, _ pData: UnsafeMutablePointer<CK_BYTE>?, _ ulDataLen: CK_ULONG,
    _ pSignature: UnsafeMutablePointer<CK_BYTE>?, _ pulSignatureLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_SignRecover", hSession) { (_) throws(P11Error) in throw notStarted("sign-recover") }
}

@c @implementation
func C_VerifyRecoverInit(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?, _ hKey: CK_OBJECT_HANDLE
) -> CK_RV {
    sessionEntry("C_VerifyRecoverInit", hSession) { (_) throws(P11Error) in
        try refuseMechanism(pMechanism, "verify with recovery")
    }
}

@c @implementation
func C_VerifyRecover(
    _ hSession: CK_SESSION_HANDLE, _ pSignature: UnsafeMutablePointer<CK_BYTE>?, _ ulSignatureLen: CK_ULONG,
    _ pData: UnsafeMutablePointer<CK_BYTE>?, _ pulDataLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_VerifyRecover", hSession) { (_) throws(P11Error) in throw notStarted("verify-recover")
    }
}

@c @implementation
func C_DigestEncryptUpdate(
    _ hSession: CK_SESSION_HANDLE, _ pPart: UnsafeMutablePointer<CK_BYTE>?, _ ulPartLen: CK_ULONG,
    _ pEncryptedPart: UnsafeMutablePointer<CK_BYTE>?, _ pulEncryptedPartLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_DigestEncryptUpdate", hSession) { (_) throws(P11Error) in
        throw notStarted("encryption")
    }
}

@c @implementation
func C_DecryptDigestUpdate(
    _ hSession: CK_SESSION_HANDLE, _ pEncryptedPart: UnsafeMutablePointer<CK_BYTE>?,
    _ ulEncryptedPartLen: CK_ULONG, _ pPart: UnsafeMutablePointer<CK_BYTE>?,
    _ pulPartLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_DecryptDigestUpdate", hSession) { (_) throws(P11Error) in
        throw notStarted("decryption")
    }
}

@c @implementation
func C_SignEncryptUpdate(
    _ hSession: CK_SESSION_HANDLE, _ pPart: UnsafeMutablePointer<CK_BYTE>?, _ ulPartLen: CK_ULONG,
    _ pEncryptedPart: UnsafeMutablePointer<CK_BYTE>?, _ pulEncryptedPartLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_SignEncryptUpdate", hSession) { (_) throws(P11Error) in throw notStarted("signing") }
}

@c @implementation
func C_DecryptVerifyUpdate(
    _ hSession: CK_SESSION_HANDLE, _ pEncryptedPart: UnsafeMutablePointer<CK_BYTE>?,
    _ ulEncryptedPartLen: CK_ULONG, _ pPart: UnsafeMutablePointer<CK_BYTE>?,
    _ pulPartLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_DecryptVerifyUpdate", hSession) { (_) throws(P11Error) in
        throw notStarted("decryption")
    }
}
