internal import CPKCS11
internal import KeychainCore
internal import KeychainCrypto

// Encryption and decryption (v2.40 §5.8–5.9), through OpenSSL 3 (KeychainCrypto.AsymmetricKey).

/// An encryption or decryption in progress (RSA is single-part; parts are collected).
final class CipherOperation {
    let key: AsymmetricKey
    let padding: EncryptionPadding
    var buffer: [UInt8] = []
    let outputLength: Int
    var needsContextLogin = false

    init(key: AsymmetricKey, padding: EncryptionPadding) {
        self.key = key
        self.padding = padding
        outputLength = (key.bits + 7) / 8
    }
}

// MARK: - Encryption and decryption (v2.40 §5.8–5.9): RSA, single-part

@c @implementation
func C_EncryptInit(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?, _ hKey: CK_OBJECT_HANDLE
) -> CK_RV {
    sessionEntry("C_EncryptInit", hSession) { (_, session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee else { throw P11Error.argumentsBad }
        let padding = try encryptionPadding(mechanism)
        try session.lock.withLock { () throws(P11Error) in
            guard session.encrypting == nil else {
                throw P11Error(CKR_OPERATION_ACTIVE, "an encryption is active")
            }
            let key = try operationKey(session, hKey, privateKey: false, type: .rsa, usage: .encrypt)
            session.encrypting = CipherOperation(key: key.key, padding: padding)
        }
    }
}

@c @implementation
func C_DecryptInit(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?, _ hKey: CK_OBJECT_HANDLE
) -> CK_RV {
    sessionEntry("C_DecryptInit", hSession) { (_, session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee else { throw P11Error.argumentsBad }
        let padding = try encryptionPadding(mechanism)
        try session.lock.withLock { () throws(P11Error) in
            guard session.decrypting == nil else {
                throw P11Error(CKR_OPERATION_ACTIVE, "a decryption is active")
            }
            let key = try operationKey(session, hKey, privateKey: true, type: .rsa, usage: .decrypt)
            let operation = CipherOperation(key: key.key, padding: padding)
            operation.needsContextLogin = key.alwaysAuthenticate
            session.decrypting = operation
        }
    }
}

/// Runs a cipher operation to its end with the two-call convention. For decryption the
/// output length is only known afterwards: a length query reports the modulus size.
private func finishCipher(
    _ session: Session, encrypting: Bool, _ operation: CipherOperation, _ extra: UnsafeRawBufferPointer,
    _ pOutput: UnsafeMutablePointer<CK_BYTE>?, _ pulOutputLen: UnsafeMutablePointer<CK_ULONG>
) throws(P11Error) {
    guard let pOutput else {
        pulOutputLen.pointee = CK_ULONG(operation.outputLength)
        return
    }
    guard !operation.needsContextLogin else {
        session.decrypting = nil
        throw P11Error(
            CKR_USER_NOT_LOGGED_IN, "the key needs a context-specific login before each decryption")
    }
    let input = operation.buffer + extra
    let output: [UInt8]
    do {
        output =
            encrypting
            ? try operation.key.encrypt(input, padding: operation.padding)
            : try operation.key.decrypt(input, padding: operation.padding)
    } catch {
        if encrypting { session.encrypting = nil } else { session.decrypting = nil }
        throw P11Error(encrypting ? CKR_DATA_LEN_RANGE : CKR_ENCRYPTED_DATA_INVALID, error.message)
    }
    guard pulOutputLen.pointee >= CK_ULONG(output.count) else {
        pulOutputLen.pointee = CK_ULONG(output.count)
        throw P11Error(CKR_BUFFER_TOO_SMALL, "the output needs \(output.count) bytes")
    }
    if encrypting { session.encrypting = nil } else { session.decrypting = nil }
    try writeBytes(output, to: pOutput, length: pulOutputLen)
}

private func cipherCall(
    _ name: StaticString, _ hSession: CK_SESSION_HANDLE, encrypting: Bool, final: Bool,
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
            guard let pulOutputLen else {
                if encrypting { session.encrypting = nil } else { session.decrypting = nil }
                throw P11Error.argumentsBad
            }
            let data = try input(pInput, ulInputLen)
            if final {
                try finishCipher(session, encrypting: encrypting, operation, data, pOutput, pulOutputLen)
            } else {
                // RSA works on the whole message: parts are collected, nothing comes out yet.
                operation.buffer += data
                pulOutputLen.pointee = 0
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
        "C_Encrypt", hSession, encrypting: true, final: true, pData, ulDataLen, pEncryptedData,
        pulEncryptedDataLen)
}

@c @implementation
func C_EncryptUpdate(
    _ hSession: CK_SESSION_HANDLE, _ pPart: UnsafeMutablePointer<CK_BYTE>?, _ ulPartLen: CK_ULONG,
    _ pEncryptedPart: UnsafeMutablePointer<CK_BYTE>?, _ pulEncryptedPartLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    cipherCall(
        "C_EncryptUpdate", hSession, encrypting: true, final: false, pPart, ulPartLen, pEncryptedPart,
        pulEncryptedPartLen)
}

@c @implementation
func C_EncryptFinal(
    _ hSession: CK_SESSION_HANDLE, _ pLastEncryptedPart: UnsafeMutablePointer<CK_BYTE>?,
    _ pulLastEncryptedPartLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    cipherCall(
        "C_EncryptFinal", hSession, encrypting: true, final: true, nil, 0, pLastEncryptedPart,
        pulLastEncryptedPartLen)
}

@c @implementation
func C_Decrypt(
    _ hSession: CK_SESSION_HANDLE, _ pEncryptedData: UnsafeMutablePointer<CK_BYTE>?,
    _ ulEncryptedDataLen: CK_ULONG,
    _ pData: UnsafeMutablePointer<CK_BYTE>?, _ pulDataLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    cipherCall(
        "C_Decrypt", hSession, encrypting: false, final: true, pEncryptedData, ulEncryptedDataLen, pData,
        pulDataLen)
}

@c @implementation
func C_DecryptUpdate(
    _ hSession: CK_SESSION_HANDLE, _ pEncryptedPart: UnsafeMutablePointer<CK_BYTE>?,
    _ ulEncryptedPartLen: CK_ULONG,
    _ pPart: UnsafeMutablePointer<CK_BYTE>?, _ pulPartLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    cipherCall(
        "C_DecryptUpdate", hSession, encrypting: false, final: false, pEncryptedPart, ulEncryptedPartLen,
        pPart,
        pulPartLen)
}

@c @implementation
func C_DecryptFinal(
    _ hSession: CK_SESSION_HANDLE, _ pLastPart: UnsafeMutablePointer<CK_BYTE>?,
    _ pulLastPartLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    cipherCall("C_DecryptFinal", hSession, encrypting: false, final: true, nil, 0, pLastPart, pulLastPartLen)
}
