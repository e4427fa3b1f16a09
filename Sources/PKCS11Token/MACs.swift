internal import CPKCS11
internal import KeychainCore

// Message authentication codes through C_Sign* and C_Verify* (v2.40 §2.10.5 AES-CMAC,
// §2.20–2.24 HMAC; v3.0 §2.15), with the core's MACOperation: single- and multi-part through
// one path. A MAC takes the session's sign or verify slot, as a signature does.

/// C_SignInit / C_VerifyInit of a MAC mechanism: the key through the core's key-use check
/// (a secret key of a type the mechanism takes, CKA_SIGN/CKA_VERIFY, allowed mechanisms).
func startMAC(
    _ session: Session, _ mechanism: CK_MECHANISM, _ registered: Mechanism, key handle: CK_OBJECT_HANDLE,
    signing: Bool
) throws(P11Error) {
    let usage: KeyUse = signing ? .sign : .verify
    let parameters = try signatureParameters(mechanism, layout: registered.parameter)
    try session.lock.withLock { () throws(P11Error) in
        guard (signing ? session.operations.sign : session.operations.verify) == nil else {
            throw P11Error(CKR_OPERATION_ACTIVE, "\(signing ? "a signature" : "a verification") is active")
        }
        let operation = try onKey(session, handle, .operation) { (reference) throws(CoreError) in
            try session.token.macOperation(
                reference, registered, parameters, for: usage, context: session.context,
                kept: session.kept)
        }
        if signing {
            session.operations.sign = .mac(operation)
        } else {
            session.operations.verify = .mac(operation)
        }
    }
}

/// Feeds one part to a MAC (C_SignUpdate, C_VerifyUpdate); a part that fails ends the
/// operation. `session.lock` is held.
func updateMAC(
    _ session: Session, _ operation: MACOperation, signing: Bool, _ pPart: UnsafeMutablePointer<CK_BYTE>?,
    _ ulPartLen: CK_ULONG
) throws(P11Error) {
    try session.endingOnFailure(signing ? .sign : .verify) { () throws(P11Error) in
        let part = try input(pPart, ulPartLen)
        try core { () throws(CoreError) in try operation.update(part) }
    }
}

/// C_Sign (with `single`) or C_SignFinal of the session's MAC, with the two-call convention:
/// a length query or a short buffer keeps the operation. A C_Sign while parts were given is
/// refused and keeps the operation for its C_SignFinal, as a signature's and a digest's do
/// (`singlePartInput`). `session.lock` is held, and the sign slot holds a MAC.
///
/// The operation is moved out of its slot for the call and put back when the call leaves it
/// active: a copy of it cost a retain and two releases on every MAC.
func signMAC(
    _ session: Session, single: Bool, _ pData: UnsafeMutablePointer<CK_BYTE>?, _ ulDataLen: CK_ULONG,
    _ pSignature: UnsafeMutablePointer<CK_BYTE>?, _ pulSignatureLen: UnsafeMutablePointer<CK_ULONG>?
) throws(P11Error) {
    guard case .mac(let operation)? = session.operations.sign.take() else {
        throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_SignInit first")
    }
    var ended = false
    defer { if !ended { session.operations.sign = .mac(operation) } }
    if single, operation.isMultiPart {
        throw P11Error(CKR_OPERATION_ACTIVE, "a multi-part MAC is active: finish it with C_SignFinal")
    }
    try session.keepingOnShortBuffer(
        { () throws(P11Error) in
            guard let pulSignatureLen else { throw P11Error.argumentsBad }
            let data = single ? try input(pData, ulDataLen) : nil
            try writeOutput(into: pSignature, length: pulSignatureLen, exactly: operation.length) {
                (output) throws(P11Error) in
                ended = true
                try core { () throws(CoreError) in try operation.sign(data, into: output) }
            }
        },
        otherwiseEnding: { ended = true })
}

/// C_Verify (with `single`) or C_VerifyFinal of the session's MAC: always ends the operation
/// (moved out of its slot, as `signMAC` does); the MACs are compared in constant time.
/// `session.lock` is held, and the verify slot holds a MAC.
func verifyMAC(
    _ session: Session, single: Bool, _ pData: UnsafeMutablePointer<CK_BYTE>?, _ ulDataLen: CK_ULONG,
    _ pSignature: UnsafeMutablePointer<CK_BYTE>?, _ ulSignatureLen: CK_ULONG
) throws(P11Error) {
    guard case .mac(let operation)? = session.operations.verify.take() else {
        throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_VerifyInit first")
    }
    if single, operation.isMultiPart {
        throw P11Error(CKR_OPERATION_ACTIVE, "a multi-part MAC is active: finish it with C_VerifyFinal")
    }
    let data = single ? try input(pData, ulDataLen) : nil
    let signature = Array(try input(pSignature, ulSignatureLen, CKR_SIGNATURE_LEN_RANGE))
    try core { () throws(CoreError) in try operation.verify(signature, of: data) }
}
