internal import CPKCS11
internal import KeychainCore
internal import KeychainCrypto

// Signing and verification (v2.40 §5.11–5.12), through OpenSSL 3 (KeychainCrypto.AsymmetricKey).

/// A signature or verification in progress on a session.
final class SignatureOperation {
    let key: AsymmetricKey
    let scheme: SignatureScheme
    /// Hashes the parts of a multi-part operation of a hashing mechanism; made by the first
    /// C_SignUpdate, as a single-part C_Sign hashes in one call.
    private var digest: Digest?
    /// True for a hashing mechanism: the key then signs a digest the token computed.
    /// Collects the parts of a multi-part operation of a raw mechanism.
    var buffer: [UInt8] = []
    var isMultiPart = false
    let signatureLength: Int
    /// The key has CKA_ALWAYS_AUTHENTICATE and the user has not yet given the PIN for this
    /// operation (C_Login with CKU_CONTEXT_SPECIFIC, v2.40 §4.9).
    var needsContextLogin = false
    /// The key is a private object: the operation ends at C_Logout (v2.40 §5.6).
    var usesPrivateObject = false

    /// CKM_EDDSA names no curve: the key decides between Ed25519 and Ed448 (v3.0 §2.3.14).
    init(key: AsymmetricKey, scheme: SignatureScheme) throws(P11Error) {
        self.key = key
        switch key.algorithm {
        case .rsa(let bits): signatureLength = (bits + 7) / 8
        case .ec(let curve): signatureLength = 2 * ((curve.bits + 7) / 8)
        case .ed25519, nil: signatureLength = 64
        case .ed448: signatureLength = 114
        case .x25519, .x448:
            throw P11Error(
                CKR_KEY_TYPE_INCONSISTENT, "X25519 and X448 keys agree on secrets; they do not sign")
        }
        self.scheme = scheme.signsWholeMessage && key.algorithm == .ed448 ? .ed448 : scheme
    }

    var isHashing: Bool { scheme.messageDigest != nil }

    /// The most input one operation takes. A hashing mechanism (and EdDSA, which hashes
    /// inside) takes any message, part by part; a raw one signs what it is given, so its input
    /// is bounded by what the key can take: one modulus for RSA (PKCS #1 v1.5 and PSS), and
    /// for raw ECDSA `maximumRawECDSAInput`. Parts beyond it are refused with
    /// CKR_DATA_LEN_RANGE instead of being collected without end (issue 8).
    var inputLimit: Int {
        if isHashing || scheme.signsWholeMessage { return maximumDataLength }
        if case .rsa = key.algorithm { return signatureLength }
        return SignatureOperation.maximumRawECDSAInput
    }

    /// Raw ECDSA signs a digest: the longest is 64 bytes (SHA-512), and OpenSSL uses only as
    /// many leading bits as the curve's order has. 1024 bytes leaves room for any digest.
    static let maximumRawECDSAInput = 1024

    /// Reads one part of the input (C_SignUpdate, C_VerifyUpdate) within `inputLimit`.
    func update(_ pointer: UnsafeMutablePointer<CK_BYTE>?, _ length: CK_ULONG) throws(P11Error) {
        isMultiPart = true
        guard let algorithm = scheme.messageDigest else {
            buffer += try input(pointer, length, limit: inputLimit - buffer.count)
            return
        }
        let part = try input(pointer, length)
        do throws(CryptoError) {
            let digest: Digest
            if let existing = self.digest {
                digest = existing
            } else {
                digest = try Digest(algorithm)
                self.digest = digest
            }
            try digest.update(part)
        } catch {
            throw P11Error(CKR_FUNCTION_FAILED, error.message)
        }
    }

    /// What the key signs: the digest of the parts, or the collected input.
    func finalInput() throws(P11Error) -> [UInt8] {
        guard let algorithm = scheme.messageDigest else { return buffer }
        guard let digest else { return algorithm.hash([]) }  // no part at all: the empty message
        do {
            return try digest.finish()
        } catch {
            throw P11Error(CKR_FUNCTION_FAILED, error.message)
        }
    }
}

// MARK: - Signing (v2.40 §5.11)

@c @implementation
func C_SignInit(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?, _ hKey: CK_OBJECT_HANDLE
) -> CK_RV {
    sessionEntry("C_SignInit", hSession) { (_, session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee else { throw P11Error.argumentsBad }
        if isMACMechanism(mechanism.mechanism) {
            return try startMAC(session, mechanism, key: hKey, signing: true)
        }
        let (scheme, type) = try signatureScheme(mechanism, for: .sign)
        try session.lock.withLock { () throws(P11Error) in
            guard session.signing == nil, session.macSigning == nil else {
                throw P11Error(CKR_OPERATION_ACTIVE, "a signature is active")
            }
            let key = try operationKey(session, hKey, for: .sign, type: type, mechanism: mechanism.mechanism)
            let operation = try SignatureOperation(key: key.key, scheme: scheme)
            operation.needsContextLogin = key.alwaysAuthenticate
            operation.usesPrivateObject = true
            session.signing = operation
        }
    }
}

/// Finishes a signature with the two-call convention (`writeOutput`): a length query or a short
/// buffer keeps the operation; anything else ends it (v2.40 §5.2).
private func deliverSignature(
    _ session: Session, _ operation: SignatureOperation, _ pSignature: UnsafeMutablePointer<CK_BYTE>?,
    _ pulSignatureLen: UnsafeMutablePointer<CK_ULONG>, input: () throws(P11Error) -> [UInt8]
) throws(P11Error) {
    try writeOutput(into: pSignature, length: pulSignatureLen, size: operation.signatureLength) {
        () throws(P11Error) in
        session.signing = nil
        guard !operation.needsContextLogin else {
            throw P11Error(
                CKR_USER_NOT_LOGGED_IN, "the key needs a context-specific login before each signature")
        }
        return try sign(session, operation, try input())
    }
}

/// Signs `data`: the digest for a hashing mechanism, the data as given otherwise.
private func sign(_ session: Session, _ operation: SignatureOperation, _ data: [UInt8]) throws(P11Error)
    -> [UInt8]
{
    do throws(CryptoError) {
        if operation.scheme.signsWholeMessage {
            return try operation.key.sign(data, scheme: operation.scheme)
        }
        let signer: SigningContext
        if let idle = session.idleSigner(for: operation) {
            signer = idle
        } else {
            signer = try SigningContext(key: operation.key, scheme: operation.scheme)
        }
        let signature = try signer.sign(hash: data)
        session.lastSigner = signer
        return signature
    } catch {
        // A context that failed is not trusted with the next signature.
        session.lastSigner = nil
        throw P11Error(error.code == .invalidInput ? CKR_DATA_LEN_RANGE : CKR_FUNCTION_FAILED, error.message)
    }
}

@c @implementation
func C_Sign(
    _ hSession: CK_SESSION_HANDLE, _ pData: UnsafeMutablePointer<CK_BYTE>?, _ ulDataLen: CK_ULONG,
    _ pSignature: UnsafeMutablePointer<CK_BYTE>?, _ pulSignatureLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_Sign", hSession) { (_, session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            if let mac = session.macSigning {
                return try signMAC(session, mac, single: true, pData, ulDataLen, pSignature, pulSignatureLen)
            }
            guard let operation = session.signing else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_SignInit first")
            }
            guard !operation.isMultiPart else {
                throw P11Error(
                    CKR_OPERATION_ACTIVE, "a multi-part signature is active: finish it with C_SignFinal")
            }
            guard let pulSignatureLen else {
                session.signing = nil
                throw P11Error.argumentsBad
            }
            let data: UnsafeRawBufferPointer
            do throws(P11Error) {
                data = try input(pData, ulDataLen, limit: operation.inputLimit)
            } catch {
                session.signing = nil
                throw error
            }
            try deliverSignature(session, operation, pSignature, pulSignatureLen) { () throws(P11Error) in
                // Hashing mechanisms hash here; raw ones sign the data as given.
                guard let algorithm = operation.scheme.messageDigest else { return Array(data) }
                return algorithm.hash(data)
            }
        }
    }
}

@c @implementation
func C_SignUpdate(
    _ hSession: CK_SESSION_HANDLE, _ pPart: UnsafeMutablePointer<CK_BYTE>?, _ ulPartLen: CK_ULONG
)
    -> CK_RV
{
    sessionEntry("C_SignUpdate", hSession) { (_, session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            if let mac = session.macSigning {
                return try updateMAC(session, mac, signing: true, pPart, ulPartLen)
            }
            guard let operation = session.signing else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_SignInit first")
            }
            do throws(P11Error) {
                guard !operation.scheme.signsWholeMessage else {
                    throw P11Error(CKR_FUNCTION_NOT_SUPPORTED, "EdDSA signs in one part only: use C_Sign")
                }
                try operation.update(pPart, ulPartLen)
            } catch {
                session.signing = nil
                throw error
            }
        }
    }
}

@c @implementation
func C_SignFinal(
    _ hSession: CK_SESSION_HANDLE, _ pSignature: UnsafeMutablePointer<CK_BYTE>?,
    _ pulSignatureLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_SignFinal", hSession) { (_, session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            if let mac = session.macSigning {
                return try signMAC(session, mac, single: false, nil, 0, pSignature, pulSignatureLen)
            }
            guard let operation = session.signing else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_SignInit first")
            }
            guard let pulSignatureLen else {
                session.signing = nil
                throw P11Error.argumentsBad
            }
            try deliverSignature(session, operation, pSignature, pulSignatureLen) { () throws(P11Error) in
                try operation.finalInput()
            }
        }
    }
}

// MARK: - Verification (v2.40 §5.12)

@c @implementation
func C_VerifyInit(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?, _ hKey: CK_OBJECT_HANDLE
) -> CK_RV {
    sessionEntry("C_VerifyInit", hSession) { (_, session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee else { throw P11Error.argumentsBad }
        if isMACMechanism(mechanism.mechanism) {
            return try startMAC(session, mechanism, key: hKey, signing: false)
        }
        let (scheme, type) = try signatureScheme(mechanism, for: .verify)
        try session.lock.withLock { () throws(P11Error) in
            guard session.verifying == nil, session.macVerifying == nil else {
                throw P11Error(CKR_OPERATION_ACTIVE, "a verification is active")
            }
            let key = try operationKey(
                session, hKey, for: .verify, type: type, mechanism: mechanism.mechanism)
            let operation = try SignatureOperation(key: key.key, scheme: scheme)
            operation.usesPrivateObject = key.isPrivateObject
            session.verifying = operation
        }
    }
}

private func checkSignature(_ operation: SignatureOperation, _ signature: [UInt8], _ input: [UInt8])
    throws(P11Error)
{
    guard signature.count == operation.signatureLength else {
        throw P11Error(
            CKR_SIGNATURE_LEN_RANGE, "a signature of this key has \(operation.signatureLength) bytes")
    }
    let valid: Bool
    do {
        valid =
            operation.isHashing
            ? try operation.key.verifyHash(signature, input: input, scheme: operation.scheme)
            : try operation.key.verify(signature, message: input, scheme: operation.scheme)
    } catch {
        throw P11Error(CKR_DATA_LEN_RANGE, error.message)
    }
    guard valid else { throw P11Error(CKR_SIGNATURE_INVALID, "the signature does not verify") }
}

@c @implementation
func C_Verify(
    _ hSession: CK_SESSION_HANDLE, _ pData: UnsafeMutablePointer<CK_BYTE>?, _ ulDataLen: CK_ULONG,
    _ pSignature: UnsafeMutablePointer<CK_BYTE>?, _ ulSignatureLen: CK_ULONG
) -> CK_RV {
    sessionEntry("C_Verify", hSession) { (_, session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            if let mac = session.macVerifying {
                return try verifyMAC(session, mac, single: true, pData, ulDataLen, pSignature, ulSignatureLen)
            }
            guard let operation = session.verifying else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_VerifyInit first")
            }
            // Verification always ends the operation (v2.40 §5.12).
            session.verifying = nil
            let data = try input(pData, ulDataLen, limit: operation.inputLimit)
            let signature = Array(try input(pSignature, ulSignatureLen, CKR_SIGNATURE_LEN_RANGE))
            var message = Array(data)
            if let algorithm = operation.scheme.messageDigest {
                message = algorithm.hash(data)
            }
            try checkSignature(operation, signature, message)
        }
    }
}

@c @implementation
func C_VerifyUpdate(
    _ hSession: CK_SESSION_HANDLE, _ pPart: UnsafeMutablePointer<CK_BYTE>?, _ ulPartLen: CK_ULONG
)
    -> CK_RV
{
    sessionEntry("C_VerifyUpdate", hSession) { (_, session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            if let mac = session.macVerifying {
                return try updateMAC(session, mac, signing: false, pPart, ulPartLen)
            }
            guard let operation = session.verifying else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_VerifyInit first")
            }
            do throws(P11Error) {
                guard !operation.scheme.signsWholeMessage else {
                    throw P11Error(
                        CKR_FUNCTION_NOT_SUPPORTED, "EdDSA verifies in one part only: use C_Verify")
                }
                try operation.update(pPart, ulPartLen)
            } catch {
                session.verifying = nil
                throw error
            }
        }
    }
}

@c @implementation
func C_VerifyFinal(
    _ hSession: CK_SESSION_HANDLE, _ pSignature: UnsafeMutablePointer<CK_BYTE>?, _ ulSignatureLen: CK_ULONG
) -> CK_RV {
    sessionEntry("C_VerifyFinal", hSession) { (_, session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
            if let mac = session.macVerifying {
                return try verifyMAC(session, mac, single: false, nil, 0, pSignature, ulSignatureLen)
            }
            guard let operation = session.verifying else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_VerifyInit first")
            }
            session.verifying = nil
            let signature = Array(try input(pSignature, ulSignatureLen, CKR_SIGNATURE_LEN_RANGE))
            try checkSignature(operation, signature, try operation.finalInput())
        }
    }
}
