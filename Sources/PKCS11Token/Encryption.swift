internal import CPKCS11
internal import KeychainCore

// Encryption and decryption (v2.40 §5.8–5.9): the core's CipherOperation does the work (RSA
// on one whole message, AES part by part, SymmetricEncryption.swift); here the mechanism's
// parameter is read, the session's operation slot kept and the buffer convention run.

/// C_EncryptInit / C_DecryptInit: the parameter read by the registry's layout, then the
/// core's key-use check and operation. A session's last AES operation lends its keyed
/// context to the next (`Session.idleCipher`). No mechanism ends the active one.
private func startCipher(
    _ session: Session, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?, key handle: CK_OBJECT_HANDLE,
    encrypting: Bool
) throws(P11Error) {
    guard let mechanism = pMechanism?.pointee else {
        return session.cancel([encrypting ? .encrypt : .decrypt])
    }
    let parameters = try cipherParameters(mechanism, for: encrypting ? .encrypt : .decrypt)
    try session.lock.withLock { () throws(P11Error) in
        guard (encrypting ? session.encrypting : session.decrypting) == nil else {
            throw P11Error(CKR_OPERATION_ACTIVE, "\(encrypting ? "an encryption" : "a decryption") is active")
        }
        let previous = session.idleCipher
        session.idleCipher = nil
        let operation = try onKey(session, handle, .operation) { (reference) throws(CoreError) in
            try session.token.startCipher(
                reference, mechanism: UInt64(mechanism.mechanism), parameters: parameters,
                encrypting: encrypting,
                context: session.context, reusing: previous)
        }
        if encrypting { session.encrypting = operation } else { session.decrypting = operation }
    }
}

@c @implementation
func C_EncryptInit(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?, _ hKey: CK_OBJECT_HANDLE
) -> CK_RV {
    sessionEntry("C_EncryptInit", hSession) { (session) throws(P11Error) in
        try startCipher(session, pMechanism, key: hKey, encrypting: true)
    }
}

@c @implementation
func C_DecryptInit(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?, _ hKey: CK_OBJECT_HANDLE
) -> CK_RV {
    sessionEntry("C_DecryptInit", hSession) { (session) throws(P11Error) in
        try startCipher(session, pMechanism, key: hKey, encrypting: false)
    }
}

/// Runs an RSA operation to its end with the two-call convention (`writeOutput`). For
/// decryption the output length is only known afterwards: a length query reports the
/// modulus size, and a buffer too short for the plaintext keeps the operation. A ciphertext
/// that is not one modulus long is refused before either (the core's rule). A key that needs
/// the PIN for each use refuses the work until a context-specific login gave it.
private func finishCipher(
    _ session: Session, encrypting: Bool, _ operation: CipherOperation, _ extra: UnsafeRawBufferPointer,
    _ pOutput: UnsafeMutablePointer<CK_BYTE>?, _ pulOutputLen: UnsafeMutablePointer<CK_ULONG>
) throws(P11Error) {
    try core { () throws(CoreError) in
        try operation.checkCiphertext(length: operation.collected.count + extra.count)
    }
    let delivered = try writeOutput(
        into: pOutput, length: pulOutputLen, size: operation.outputLength, sizeIsExact: encrypting
    ) { () throws(P11Error) in
        try core { () throws(CoreError) in try operation.finishWholeMessage(extra) }
    }
    if delivered { end(session, encrypting: encrypting) }
}

/// Ends the session's encryption or decryption.
func end(_ session: Session, encrypting: Bool) {
    if encrypting { session.encrypting = nil } else { session.decrypting = nil }
}

/// Which call of an operation: C_Encrypt/C_Decrypt, an update, or the final call.
enum CipherStep {
    case single, update, final
}

private func cipherCall(
    _ name: StaticString, _ hSession: CK_SESSION_HANDLE, encrypting: Bool, step: CipherStep,
    _ pInput: UnsafeMutablePointer<CK_BYTE>?, _ ulInputLen: CK_ULONG,
    _ pOutput: UnsafeMutablePointer<CK_BYTE>?, _ pulOutputLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry(name, hSession) { (session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            let operation = encrypting ? session.encrypting : session.decrypting
            guard let operation else {
                throw P11Error(
                    CKR_OPERATION_NOT_INITIALIZED, "no \(encrypting ? "encryption" : "decryption") is active")
            }
            if !operation.isWholeMessage {
                try symmetricCall(
                    session, operation, encrypting: encrypting, step: step, pInput, ulInputLen, pOutput,
                    pulOutputLen)
                return
            }
            try session.keepingOnShortBuffer(
                { () throws(P11Error) in
                    guard let pulOutputLen else { throw P11Error.argumentsBad }
                    // RSA takes at most one modulus of input: what the parts add up to is bounded
                    // by it, so a host cannot make the module buffer without end.
                    let data = try input(
                        pInput, ulInputLen, limit: operation.roomLeft,
                        encrypting ? CKR_DATA_LEN_RANGE : CKR_ENCRYPTED_DATA_LEN_RANGE)
                    if step != .update {
                        try finishCipher(
                            session, encrypting: encrypting, operation, data, pOutput, pulOutputLen)
                    } else {
                        // RSA works on the whole message: parts are collected, nothing comes out yet.
                        operation.collect(data)
                        pulOutputLen.pointee = 0
                    }
                },
                otherwiseEnding: { end(session, encrypting: encrypting) })
        }
    }
}

@c @implementation
func C_Encrypt(
    _ hSession: CK_SESSION_HANDLE, _ pData: UnsafeMutablePointer<CK_BYTE>?, _ ulDataLen: CK_ULONG,
    _ pEncryptedData: UnsafeMutablePointer<CK_BYTE>?, _ pulEncryptedDataLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    cipherCall(
        "C_Encrypt", hSession, encrypting: true, step: .single, pData, ulDataLen, pEncryptedData,
        pulEncryptedDataLen)
}

@c @implementation
func C_EncryptUpdate(
    _ hSession: CK_SESSION_HANDLE, _ pPart: UnsafeMutablePointer<CK_BYTE>?, _ ulPartLen: CK_ULONG,
    _ pEncryptedPart: UnsafeMutablePointer<CK_BYTE>?, _ pulEncryptedPartLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    cipherCall(
        "C_EncryptUpdate", hSession, encrypting: true, step: .update, pPart, ulPartLen, pEncryptedPart,
        pulEncryptedPartLen)
}

@c @implementation
func C_EncryptFinal(
    _ hSession: CK_SESSION_HANDLE, _ pLastEncryptedPart: UnsafeMutablePointer<CK_BYTE>?,
    _ pulLastEncryptedPartLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    cipherCall(
        "C_EncryptFinal", hSession, encrypting: true, step: .final, nil, 0, pLastEncryptedPart,
        pulLastEncryptedPartLen)
}

@c @implementation
func C_Decrypt(
    _ hSession: CK_SESSION_HANDLE, _ pEncryptedData: UnsafeMutablePointer<CK_BYTE>?,
    _ ulEncryptedDataLen: CK_ULONG,
    _ pData: UnsafeMutablePointer<CK_BYTE>?, _ pulDataLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    cipherCall(
        "C_Decrypt", hSession, encrypting: false, step: .single, pEncryptedData, ulEncryptedDataLen, pData,
        pulDataLen)
}

@c @implementation
func C_DecryptUpdate(
    _ hSession: CK_SESSION_HANDLE, _ pEncryptedPart: UnsafeMutablePointer<CK_BYTE>?,
    _ ulEncryptedPartLen: CK_ULONG,
    _ pPart: UnsafeMutablePointer<CK_BYTE>?, _ pulPartLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    cipherCall(
        "C_DecryptUpdate", hSession, encrypting: false, step: .update, pEncryptedPart, ulEncryptedPartLen,
        pPart,
        pulPartLen)
}

@c @implementation
func C_DecryptFinal(
    _ hSession: CK_SESSION_HANDLE, _ pLastPart: UnsafeMutablePointer<CK_BYTE>?,
    _ pulLastPartLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    cipherCall("C_DecryptFinal", hSession, encrypting: false, step: .final, nil, 0, pLastPart, pulLastPartLen)
}
