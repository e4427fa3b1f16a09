internal import CPKCS11
internal import KeychainCore

// Signing and verification (v2.40 §5.11–5.12), with a key pair's halves (the core's
// SignatureOperation) or a secret key's MAC (MACs.swift): this face reads the mechanism's
// parameters, keeps the operation in the session's slot and delivers the output.

/// C_SignInit (`.sign`) and C_VerifyInit (`.verify`): the mechanism looked up once, then a
/// MAC (MACs.swift) or a signature with a key pair's half. No mechanism ends the active one.
private func startSigning(
    _ session: Session, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?, key handle: CK_OBJECT_HANDLE,
    for usage: KeyUse
) throws(P11Error) {
    guard let mechanism = pMechanism?.pointee else {
        return session.cancel([usage == .sign ? .sign : .verify])
    }
    if mechanism.ulParameterLen == 0,
        try restartSignature(session, UInt64(mechanism.mechanism), key: handle, for: usage)
    {
        return
    }
    let registered = try core { () throws(CoreError) in
        try MechanismRegistry.require(UInt64(mechanism.mechanism), for: MechanismFunctions(usage))
    }
    if case .mac = registered.family {
        return try startMAC(session, mechanism, registered, key: handle, signing: usage == .sign)
    }
    try startSignature(session, mechanism, registered, key: handle, for: usage)
}

/// Starts a signature (`.sign`) or verification (`.verify`) of a key pair's half.
private func startSignature(
    _ session: Session, _ mechanism: CK_MECHANISM, _ registered: Mechanism, key handle: CK_OBJECT_HANDLE,
    for usage: KeyUse
) throws(P11Error) {
    let parameters = try signatureParameters(mechanism, layout: registered.parameter)
    let signing = try core { () throws(CoreError) in try SignatureMechanism(registered, parameters) }
    try session.lock.withLock { () throws(P11Error) in
        guard session.signingSlotIsFree(usage) else {
            throw P11Error(
                CKR_OPERATION_ACTIVE, "\(usage == .sign ? "a signature" : "a verification") is active")
        }
        let operation = try onKey(session, handle, .operation) { (reference) throws(CoreError) in
            try session.token.signatureOperation(
                reference, signing, for: usage, context: session.context, kept: session.kept)
        }
        session.startSigning(.signature(operation), for: usage)
    }
}

/// The session's last MAC, signature or verification of mechanism `type` (given no
/// parameter) with the key `handle` names, restarted by the core before the registry is asked
/// (`Token.restartedMAC`, `Token.restartedSignature`): true when it was. An active operation,
/// a handle that names no key, or an operation the core does not restart leaves the start to
/// the full path, which gives every answer a first use gives; a refusal of the key's use is
/// the core's answer.
private func restartSignature(
    _ session: Session, _ type: UInt64, key handle: CK_OBJECT_HANDLE, for usage: KeyUse
) throws(P11Error) -> Bool {
    try session.lock.withLock { () throws(P11Error) -> Bool in
        // A handle that names nothing is not refused here but left to the full path, so that
        // its answer and that answer's precedence over a bad mechanism are a first use's.
        guard session.signingSlotIsFree(usage),
            let reference = try? ObjectHandle.reference(handle, slot: session.slot)
        else { return false }
        let kept = session.kept
        let restarted = try mappingKeyErrors(.operation) { () throws(CoreError) -> SigningOperation? in
            let token = session.token
            let context = session.context
            if let mac = try token.restartedMAC(reference, type, for: usage, context: context, kept: kept) {
                return .mac(mac)
            }
            return try token.restartedSignature(
                reference, type, .none, for: usage, context: context, kept: kept
            )
            .map(SigningOperation.signature)
        }
        guard let restarted else { return false }
        session.startSigning(restarted, for: usage)
        return true
    }
}

extension Session {
    /// No signature (`.sign`) or verification (`.verify`) is active. `lock` is held.
    fileprivate func signingSlotIsFree(_ usage: KeyUse) -> Bool {
        (usage == .sign ? operations.sign : operations.verify) == nil
    }

    /// Makes `operation` the active signature or verification. `lock` is held.
    fileprivate func startSigning(_ operation: SigningOperation, for usage: KeyUse) {
        if usage == .sign {
            operations.sign = operation
        } else {
            operations.verify = operation
        }
    }
}

// MARK: - Signing (v2.40 §5.11)

@c @implementation
func C_SignInit(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?, _ hKey: CK_OBJECT_HANDLE
) -> CK_RV {
    sessionEntry("C_SignInit", hSession) { (session) throws(P11Error) in
        try startSigning(session, pMechanism, key: hKey, for: .sign)
    }
}

/// Finishes a signature with the two-call convention (`writeOutput`): a length query or a
/// short buffer keeps the operation; anything else ends it (v2.40 §5.2). `data` is the input
/// of a single-part C_Sign; nil signs the parts given.
///
/// A buffer that holds the signature, apart from the input, gets it written in place: no
/// array is made and copied.
private func deliverSignature(
    _ session: Session, _ operation: SignatureOperation, _ pSignature: UnsafeMutablePointer<CK_BYTE>?,
    _ pulSignatureLen: UnsafeMutablePointer<CK_ULONG>, data: UnsafeRawBufferPointer?
) throws(P11Error) {
    if let pSignature, pulSignatureLen.pointee >= CK_ULONG(operation.signatureLength),
        !partiallyOverlap(
            data ?? UnsafeRawBufferPointer(start: nil, count: 0), pSignature, operation.signatureLength,
            exactIsSafe: false)
    {
        session.operations.end(.sign)
        let output = UnsafeMutableRawBufferPointer(start: pSignature, count: operation.signatureLength)
        let written = try core { () throws(CoreError) in try operation.sign(data, into: output) }
        pulSignatureLen.pointee = CK_ULONG(written)
        return
    }
    try writeOutput(into: pSignature, length: pulSignatureLen, size: operation.signatureLength) {
        () throws(P11Error) in
        session.operations.end(.sign)
        return try core { () throws(CoreError) in try operation.sign(data) }
    }
}

@c @implementation
func C_Sign(
    _ hSession: CK_SESSION_HANDLE, _ pData: UnsafeMutablePointer<CK_BYTE>?, _ ulDataLen: CK_ULONG,
    _ pSignature: UnsafeMutablePointer<CK_BYTE>?, _ pulSignatureLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_Sign", hSession) { (session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            switch session.operations.sign {
            case nil: throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_SignInit first")
            case .mac:
                try signMAC(session, single: true, pData, ulDataLen, pSignature, pulSignatureLen)
            case .signature(let operation):
                let (data, pulSignatureLen) = try session.singlePartInput(
                    .sign, isMultiPart: operation.isMultiPart, pData, ulDataLen,
                    limit: min(operation.inputLimit, maximumDataLength), outputLength: pulSignatureLen)
                try deliverSignature(session, operation, pSignature, pulSignatureLen, data: data)
            }
        }
    }
}

/// Takes one part of a signature or verification (C_SignUpdate, C_VerifyUpdate); a part that
/// fails ends the operation.
private func updateSignature(
    _ session: Session, _ operation: SignatureOperation, _ kind: OperationKind,
    _ pPart: UnsafeMutablePointer<CK_BYTE>?, _ ulPartLen: CK_ULONG
) throws(P11Error) {
    try session.endingOnFailure(kind) { () throws(P11Error) in
        guard operation.takesParts else {
            throw P11Error(
                CKR_FUNCTION_NOT_SUPPORTED,
                kind == .sign
                    ? "EdDSA signs in one part only: use C_Sign"
                    : "EdDSA verifies in one part only: use C_Verify")
        }
        let part = try input(pPart, ulPartLen, limit: min(operation.remainingInput, maximumDataLength))
        try core { () throws(CoreError) in try operation.update(part) }
    }
}

@c @implementation
func C_SignUpdate(
    _ hSession: CK_SESSION_HANDLE, _ pPart: UnsafeMutablePointer<CK_BYTE>?, _ ulPartLen: CK_ULONG
)
    -> CK_RV
{
    sessionEntry("C_SignUpdate", hSession) { (session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            switch session.operations.sign {
            case nil: throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_SignInit first")
            case .mac(let mac): try updateMAC(session, mac, signing: true, pPart, ulPartLen)
            case .signature(let operation): try updateSignature(session, operation, .sign, pPart, ulPartLen)
            }
        }
    }
}

@c @implementation
func C_SignFinal(
    _ hSession: CK_SESSION_HANDLE, _ pSignature: UnsafeMutablePointer<CK_BYTE>?,
    _ pulSignatureLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_SignFinal", hSession) { (session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            switch session.operations.sign {
            case nil: throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_SignInit first")
            case .mac:
                try signMAC(session, single: false, nil, 0, pSignature, pulSignatureLen)
            case .signature(let operation):
                guard let pulSignatureLen else {
                    session.operations.end(.sign)
                    throw P11Error.argumentsBad
                }
                try deliverSignature(session, operation, pSignature, pulSignatureLen, data: nil)
            }
        }
    }
}

// MARK: - Verification (v2.40 §5.12)

@c @implementation
func C_VerifyInit(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?, _ hKey: CK_OBJECT_HANDLE
) -> CK_RV {
    sessionEntry("C_VerifyInit", hSession) { (session) throws(P11Error) in
        try startSigning(session, pMechanism, key: hKey, for: .verify)
    }
}

@c @implementation
func C_Verify(
    _ hSession: CK_SESSION_HANDLE, _ pData: UnsafeMutablePointer<CK_BYTE>?, _ ulDataLen: CK_ULONG,
    _ pSignature: UnsafeMutablePointer<CK_BYTE>?, _ ulSignatureLen: CK_ULONG
) -> CK_RV {
    sessionEntry("C_Verify", hSession) { (session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            switch session.operations.verify {
            case nil: throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_VerifyInit first")
            case .mac:
                try verifyMAC(session, single: true, pData, ulDataLen, pSignature, ulSignatureLen)
            case .signature(let operation):
                // Verification always ends the operation (v2.40 §5.12).
                session.operations.end(.verify)
                let data = try input(pData, ulDataLen, limit: min(operation.inputLimit, maximumDataLength))
                let signature = try input(pSignature, ulSignatureLen, CKR_SIGNATURE_LEN_RANGE)
                try core { () throws(CoreError) in try operation.verify(signature, of: data) }
            }
        }
    }
}

@c @implementation
func C_VerifyUpdate(
    _ hSession: CK_SESSION_HANDLE, _ pPart: UnsafeMutablePointer<CK_BYTE>?, _ ulPartLen: CK_ULONG
)
    -> CK_RV
{
    sessionEntry("C_VerifyUpdate", hSession) { (session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            switch session.operations.verify {
            case nil: throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_VerifyInit first")
            case .mac(let mac): try updateMAC(session, mac, signing: false, pPart, ulPartLen)
            case .signature(let operation): try updateSignature(session, operation, .verify, pPart, ulPartLen)
            }
        }
    }
}

@c @implementation
func C_VerifyFinal(
    _ hSession: CK_SESSION_HANDLE, _ pSignature: UnsafeMutablePointer<CK_BYTE>?, _ ulSignatureLen: CK_ULONG
) -> CK_RV {
    sessionEntry("C_VerifyFinal", hSession) { (session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            switch session.operations.verify {
            case nil: throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_VerifyInit first")
            case .mac:
                try verifyMAC(session, single: false, nil, 0, pSignature, ulSignatureLen)
            case .signature(let operation):
                session.operations.end(.verify)
                let signature = try input(pSignature, ulSignatureLen, CKR_SIGNATURE_LEN_RANGE)
                try core { () throws(CoreError) in try operation.verify(signature, of: nil) }
            }
        }
    }
}
