internal import CPKCS11
internal import KeychainCore
internal import KeychainCrypto

// Encryption and decryption (v2.40 §5.8–5.9), through OpenSSL 3: RSA (KeychainCrypto's
// AsymmetricKey, single-part) and AES (SymmetricCipher, multi-part, SymmetricEncryption.swift).

/// An encryption or decryption in progress.
final class CipherOperation {
    /// RSA works on one whole message: parts are collected in `buffer`.
    let key: AsymmetricKey?
    let padding: EncryptionPadding
    var buffer: [UInt8] = []
    let outputLength: Int
    /// AES, part by part (`SymmetricOperation`).
    let symmetric: SymmetricOperation?
    var needsContextLogin = false
    /// The key is a private object (or a private key): the operation ends at C_Logout
    /// (v2.40 §5.6).
    var usesPrivateObject = false

    init(key: AsymmetricKey, padding: EncryptionPadding) {
        self.key = key
        self.padding = padding
        outputLength = (key.bits + 7) / 8
        symmetric = nil
    }

    init(_ symmetric: SymmetricOperation) {
        key = nil
        padding = .pkcs1
        outputLength = 0
        self.symmetric = symmetric
    }
}

// MARK: - Encryption and decryption (v2.40 §5.8–5.9): RSA, single-part

@c @implementation
func C_EncryptInit(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?, _ hKey: CK_OBJECT_HANDLE
) -> CK_RV {
    sessionEntry("C_EncryptInit", hSession) { (_, session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee else { throw P11Error.argumentsBad }
        if let mode = try symmetricMode(mechanism) {
            try startSymmetric(session, mechanism, mode, key: hKey, encrypting: true)
            return
        }
        let padding = try encryptionPadding(mechanism)
        try session.lock.withLock { () throws(P11Error) in
            guard session.encrypting == nil else {
                throw P11Error(CKR_OPERATION_ACTIVE, "an encryption is active")
            }
            let key = try operationKey(
                session, hKey, for: .encrypt, type: .rsa, mechanism: mechanism.mechanism)
            let operation = CipherOperation(key: key.key, padding: padding)
            operation.usesPrivateObject = key.isPrivateObject
            session.encrypting = operation
        }
    }
}

@c @implementation
func C_DecryptInit(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?, _ hKey: CK_OBJECT_HANDLE
) -> CK_RV {
    sessionEntry("C_DecryptInit", hSession) { (_, session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee else { throw P11Error.argumentsBad }
        if let mode = try symmetricMode(mechanism) {
            try startSymmetric(session, mechanism, mode, key: hKey, encrypting: false)
            return
        }
        let padding = try encryptionPadding(mechanism)
        try session.lock.withLock { () throws(P11Error) in
            guard session.decrypting == nil else {
                throw P11Error(CKR_OPERATION_ACTIVE, "a decryption is active")
            }
            let key = try operationKey(
                session, hKey, for: .decrypt, type: .rsa, mechanism: mechanism.mechanism)
            let operation = CipherOperation(key: key.key, padding: padding)
            operation.needsContextLogin = key.alwaysAuthenticate
            operation.usesPrivateObject = true
            session.decrypting = operation
        }
    }
}

/// The CK_RV of a failed RSA step: input of a length the key never takes, or (decrypting) a
/// ciphertext of the right length that does not decrypt.
private func rsaFailure(_ error: CryptoError, encrypting: Bool) -> P11Error {
    if encrypting { return P11Error(CKR_DATA_LEN_RANGE, error.message) }
    return P11Error(
        error.code == .invalidInput ? CKR_ENCRYPTED_DATA_LEN_RANGE : CKR_ENCRYPTED_DATA_INVALID, error.message
    )
}

/// Runs a cipher operation to its end with the two-call convention (`writeOutput`). For
/// decryption the output length is only known afterwards: a length query reports the
/// modulus size, and a buffer too short for the plaintext keeps the operation. A ciphertext
/// that is not one modulus long is refused before either (the crypto layer's rule).
private func finishCipher(
    _ session: Session, encrypting: Bool, _ operation: CipherOperation, _ extra: UnsafeRawBufferPointer,
    _ pOutput: UnsafeMutablePointer<CK_BYTE>?, _ pulOutputLen: UnsafeMutablePointer<CK_ULONG>
) throws(P11Error) {
    if !encrypting, let key = operation.key {
        do throws(CryptoError) {
            try key.checkCiphertext(length: operation.buffer.count + extra.count)
        } catch {
            throw rsaFailure(error, encrypting: false)
        }
    }
    let delivered = try writeOutput(
        into: pOutput, length: pulOutputLen, size: operation.outputLength, sizeIsExact: encrypting
    ) { () throws(P11Error) in
        guard !operation.needsContextLogin else {
            session.decrypting = nil
            throw P11Error(
                CKR_USER_NOT_LOGGED_IN, "the key needs a context-specific login before each decryption")
        }
        let input = operation.buffer + extra
        guard let key = operation.key else { throw P11Error(CKR_GENERAL_ERROR, "no RSA key") }
        do throws(CryptoError) {
            return
                encrypting
                ? try key.encrypt(input, padding: operation.padding)
                : try key.decrypt(input, padding: operation.padding)
        } catch {
            end(session, encrypting: encrypting)
            throw rsaFailure(error, encrypting: encrypting)
        }
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
    sessionEntry(name, hSession) { (_, session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            let operation = encrypting ? session.encrypting : session.decrypting
            guard let operation else {
                throw P11Error(
                    CKR_OPERATION_NOT_INITIALIZED, "no \(encrypting ? "encryption" : "decryption") is active")
            }
            if let symmetric = operation.symmetric {
                try symmetricCall(
                    session, symmetric, encrypting: encrypting, step: step, pInput, ulInputLen, pOutput,
                    pulOutputLen)
                return
            }
            let data: UnsafeRawBufferPointer
            do throws(P11Error) {
                guard let pulOutputLen else { throw P11Error.argumentsBad }
                // RSA takes at most one modulus of input: what the parts add up to is bounded
                // by it, so a host cannot make the module buffer without end (issue 8).
                data = try input(
                    pInput, ulInputLen, limit: operation.outputLength - operation.buffer.count,
                    encrypting ? CKR_DATA_LEN_RANGE : CKR_ENCRYPTED_DATA_LEN_RANGE)
                if step != .update {
                    try finishCipher(session, encrypting: encrypting, operation, data, pOutput, pulOutputLen)
                } else {
                    // RSA works on the whole message: parts are collected, nothing comes out yet.
                    operation.buffer += data
                    pulOutputLen.pointee = 0
                }
            } catch {
                // Every failure but a length query or a short buffer ends the operation (v2.40 §5.8).
                if error.rv != CKR_BUFFER_TOO_SMALL { end(session, encrypting: encrypting) }
                throw error
            }
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
