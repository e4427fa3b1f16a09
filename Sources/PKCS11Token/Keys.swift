internal import CPKCS11
internal import KeychainCore
internal import KeychainCrypto

// Key pair generation (v2.40 §5.14), signing and verification (§5.11–5.12), encryption and
// decryption (§5.8–5.9), through OpenSSL 3 (KeychainCrypto.AsymmetricKey).

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

    init(key: AsymmetricKey, scheme: SignatureScheme) throws(P11Error) {
        self.key = key
        self.scheme = scheme
        switch key.algorithm {
        case .rsa(let bits): signatureLength = (bits + 7) / 8
        case .ec(let curve): signatureLength = 2 * ((curve.bits + 7) / 8)
        case .ed25519, nil: signatureLength = 64
        }
    }

    var isHashing: Bool { scheme.messageDigest != nil }

    func update(_ part: UnsafeRawBufferPointer) throws(P11Error) {
        isMultiPart = true
        guard let algorithm = scheme.messageDigest else {
            buffer += part
            return
        }
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

/// The hashing signature mechanisms, each family in the order of `digests`.
private enum SignatureMechanisms {
    static let digests: [DigestAlgorithm] = [.sha1, .sha224, .sha256, .sha384, .sha512]
    static let rsaPKCS = [
        CKM_SHA1_RSA_PKCS, CKM_SHA224_RSA_PKCS, CKM_SHA256_RSA_PKCS, CKM_SHA384_RSA_PKCS, CKM_SHA512_RSA_PKCS,
    ].map(CK_MECHANISM_TYPE.init)
    static let rsaPSS = [
        CKM_SHA1_RSA_PKCS_PSS, CKM_SHA224_RSA_PKCS_PSS, CKM_SHA256_RSA_PKCS_PSS, CKM_SHA384_RSA_PKCS_PSS,
        CKM_SHA512_RSA_PKCS_PSS,
    ].map(CK_MECHANISM_TYPE.init)
    static let ecdsa = [
        CKM_ECDSA_SHA1, CKM_ECDSA_SHA224, CKM_ECDSA_SHA256, CKM_ECDSA_SHA384, CKM_ECDSA_SHA512,
    ]
    .map(CK_MECHANISM_TYPE.init)

    /// The digest of `type` when it belongs to `family`.
    static func digest(of type: CK_MECHANISM_TYPE, in family: [CK_MECHANISM_TYPE]) -> DigestAlgorithm? {
        family.firstIndex(of: type).map { digests[$0] }
    }
}

/// A mechanism's signature scheme and the key type it needs, from its type and parameters.
private func signatureScheme(_ mechanism: CK_MECHANISM) throws(P11Error) -> (SignatureScheme, KeyType) {
    let type = mechanism.mechanism
    func noParameter() throws(P11Error) {
        guard mechanism.pParameter == nil || mechanism.ulParameterLen == 0 else {
            throw P11Error(
                CKR_MECHANISM_PARAM_INVALID, "mechanism 0x\(String(type, radix: 16)) takes no parameter")
        }
    }
    // Built once: a dictionary made on every C_SignInit was 2 % of an ECDSA signature.
    let hashed = SignatureMechanisms.digest(of: type, in: SignatureMechanisms.rsaPKCS)
    let pss = SignatureMechanisms.digest(of: type, in: SignatureMechanisms.rsaPSS)
    let ecdsa = SignatureMechanisms.digest(of: type, in: SignatureMechanisms.ecdsa)
    if type == CK_MECHANISM_TYPE(CKM_RSA_PKCS) {
        try noParameter()
        return (.rsaPKCS1(nil), .rsa)
    }
    if let digest = hashed {
        try noParameter()
        return (.rsaPKCS1(digest), .rsa)
    }
    if type == CK_MECHANISM_TYPE(CKM_RSA_PKCS_PSS) || pss != nil {
        let parameters = try pssParameters(mechanism)
        if let digest = pss, digest != parameters.hash {
            throw P11Error(CKR_MECHANISM_PARAM_INVALID, "hashAlg differs from the mechanism's hash")
        }
        return (
            .rsaPSS(
                digest: pss, hash: parameters.hash, mgf1: parameters.mgf1, saltLength: parameters.salt),
            .rsa
        )
    }
    if type == CK_MECHANISM_TYPE(CKM_ECDSA) {
        try noParameter()
        return (.ecdsa(nil), .ec)
    }
    if let digest = ecdsa {
        try noParameter()
        return (.ecdsa(digest), .ec)
    }
    if type == CK_MECHANISM_TYPE(CKM_EDDSA) {
        // Pure Ed25519 only: CK_EDDSA_PARAMS asking for Ed25519ph or a context is refused.
        if let parameter = mechanism.pParameter, mechanism.ulParameterLen > 0 {
            let flag = parameter.load(as: CK_BBOOL.self)
            let contextLength =
                mechanism.ulParameterLen >= CK_ULONG(2 * MemoryLayout<CK_ULONG>.size)
                ? parameter.load(fromByteOffset: MemoryLayout<CK_ULONG>.size, as: CK_ULONG.self) : 0
            guard flag == 0, contextLength == 0 else {
                throw P11Error(
                    CKR_MECHANISM_PARAM_INVALID, "only pure Ed25519 is supported (no prehash, no context)")
            }
        }
        return (.ed25519, .ecEdwards)
    }
    throw P11Error(CKR_MECHANISM_INVALID, "mechanism 0x\(String(type, radix: 16)) cannot sign or verify")
}

/// The digest a CKM_SHA*/CKG_MGF1_SHA* code names.
private func digestAlgorithm(hash code: CK_ULONG) -> DigestAlgorithm? {
    Mechanisms.digests.first { $0.type == code }?.algorithm
}

private func mgf1Algorithm(_ code: CK_ULONG) -> DigestAlgorithm? {
    switch code {
    case CK_ULONG(CKG_MGF1_SHA1): .sha1
    case CK_ULONG(CKG_MGF1_SHA224): .sha224
    case CK_ULONG(CKG_MGF1_SHA256): .sha256
    case CK_ULONG(CKG_MGF1_SHA384): .sha384
    case CK_ULONG(CKG_MGF1_SHA512): .sha512
    default: nil
    }
}

private func pssParameters(_ mechanism: CK_MECHANISM) throws(P11Error)
    -> (hash: DigestAlgorithm, mgf1: DigestAlgorithm, salt: Int)
{
    guard let pointer = mechanism.pParameter,
        mechanism.ulParameterLen == CK_ULONG(MemoryLayout<CK_RSA_PKCS_PSS_PARAMS>.size)
    else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "PSS needs CK_RSA_PKCS_PSS_PARAMS") }
    let parameters = pointer.loadUnaligned(as: CK_RSA_PKCS_PSS_PARAMS.self)
    guard let hash = digestAlgorithm(hash: parameters.hashAlg), let mgf1 = mgf1Algorithm(parameters.mgf),
        parameters.sLen <= 1024
    else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "unsupported PSS hash, MGF or salt length") }
    return (hash, mgf1, Int(parameters.sLen))
}

private func encryptionPadding(_ mechanism: CK_MECHANISM) throws(P11Error) -> EncryptionPadding {
    switch mechanism.mechanism {
    case CK_MECHANISM_TYPE(CKM_RSA_PKCS):
        return .pkcs1
    case CK_MECHANISM_TYPE(CKM_RSA_PKCS_OAEP):
        guard let pointer = mechanism.pParameter,
            mechanism.ulParameterLen == CK_ULONG(MemoryLayout<CK_RSA_PKCS_OAEP_PARAMS>.size)
        else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "OAEP needs CK_RSA_PKCS_OAEP_PARAMS") }
        let parameters = pointer.loadUnaligned(as: CK_RSA_PKCS_OAEP_PARAMS.self)
        guard let hash = digestAlgorithm(hash: parameters.hashAlg), let mgf1 = mgf1Algorithm(parameters.mgf)
        else {
            throw P11Error(CKR_MECHANISM_PARAM_INVALID, "unsupported OAEP hash or MGF")
        }
        var label: [UInt8] = []
        if parameters.ulSourceDataLen > 0 {
            guard parameters.source == CK_ULONG(CKZ_DATA_SPECIFIED), let source = parameters.pSourceData,
                parameters.ulSourceDataLen <= 65536
            else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "OAEP label is malformed") }
            label = Array(UnsafeRawBufferPointer(start: source, count: Int(parameters.ulSourceDataLen)))
        }
        return .oaep(hash: hash, mgf1: mgf1, label: label)
    default:
        throw P11Error(
            CKR_MECHANISM_INVALID,
            "mechanism 0x\(String(mechanism.mechanism, radix: 16)) cannot encrypt or decrypt")
    }
}

/// Loads a key for an operation, checking its class, type and usage flag.
private func operationKey(
    _ session: Session, _ handle: CK_OBJECT_HANDLE, privateKey: Bool, type: KeyType, usage: AttributeType
) throws(P11Error) -> (key: AsymmetricKey, alwaysAuthenticate: Bool) {
    let reference: ObjectReference
    do {
        reference = try ObjectHandle.reference(handle, slot: session.slot)
    } catch {
        throw P11Error(CKR_KEY_HANDLE_INVALID, "handle \(handle) names no key")
    }
    let loaded: (key: AsymmetricKey, attributes: AttributeSet)
    do throws(KeychainError) {
        loaded =
            privateKey
            ? try session.slot.token.privateKey(reference, context: session.context)
            : try session.slot.token.publicKey(reference, context: session.context)
    } catch  where error.code == .objectNotFound {
        throw P11Error(CKR_KEY_HANDLE_INVALID, error.message)
    } catch {
        throw P11Error(error)
    }
    guard loaded.attributes.ulong(.keyType) == type.rawValue else {
        throw P11Error(CKR_KEY_TYPE_INCONSISTENT, "the key's type does not fit the mechanism")
    }
    guard loaded.attributes.bool(usage) == true else {
        throw P11Error(CKR_KEY_FUNCTION_NOT_PERMITTED, "the key's usage attribute \(usage) is false")
    }
    return (loaded.key, loaded.attributes.bool(.alwaysAuthenticate) == true)
}

@c @implementation
func C_GenerateKeyPair(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?,
    _ pPublicKeyTemplate: UnsafeMutablePointer<CK_ATTRIBUTE>?, _ ulPublicKeyAttributeCount: CK_ULONG,
    _ pPrivateKeyTemplate: UnsafeMutablePointer<CK_ATTRIBUTE>?, _ ulPrivateKeyAttributeCount: CK_ULONG,
    _ phPublicKey: UnsafeMutablePointer<CK_OBJECT_HANDLE>?,
    _ phPrivateKey: UnsafeMutablePointer<CK_OBJECT_HANDLE>?
) -> CK_RV {
    sessionEntry("C_GenerateKeyPair", hSession) { (_, session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee, let phPublicKey, let phPrivateKey else {
            throw P11Error.argumentsBad
        }
        let publicTemplate = try readTemplate(pPublicKeyTemplate, ulPublicKeyAttributeCount)
        let privateTemplate = try readTemplate(pPrivateKeyTemplate, ulPrivateKeyAttributeCount)
        let kind: KeyPairKind
        switch mechanism.mechanism {
        case CK_MECHANISM_TYPE(CKM_RSA_PKCS_KEY_PAIR_GEN):
            guard let bits = publicTemplate.ulong(.modulusBits) else {
                throw P11Error(CKR_TEMPLATE_INCOMPLETE, "RSA generation needs CKA_MODULUS_BITS")
            }
            guard (2048...4096).contains(bits) else {
                throw P11Error(CKR_KEY_SIZE_RANGE, "RSA keys have 2048 to 4096 bits")
            }
            // Only F4: other exponents are refused rather than silently replaced.
            if let exponent = publicTemplate[.publicExponent],
                exponent.drop(while: { $0 == 0 }) != [0x01, 0x00, 0x01]
            {
                throw P11Error(CKR_ATTRIBUTE_VALUE_INVALID, "only the public exponent 65537 is supported")
            }
            kind = .rsa(bits: Int(bits))
        case CK_MECHANISM_TYPE(CKM_EC_KEY_PAIR_GEN):
            guard let parameters = publicTemplate[.ecParams] ?? privateTemplate[.ecParams] else {
                throw P11Error(CKR_TEMPLATE_INCOMPLETE, "EC generation needs CKA_EC_PARAMS")
            }
            guard EllipticCurve(parameters: parameters) != nil else {
                throw P11Error(CKR_CURVE_NOT_SUPPORTED, "only P-256, P-384 and P-521 are supported")
            }
            kind = .ec(curveParameters: parameters)
        case CK_MECHANISM_TYPE(CKM_EC_EDWARDS_KEY_PAIR_GEN):
            let parameters =
                publicTemplate[.ecParams] ?? privateTemplate[.ecParams] ?? Edwards25519.parameters
            // The OID id-Ed25519, or the PrintableString "edwards25519" of v3.0 §2.3.5.
            let printable: [UInt8] = [0x13, 0x0C] + Array("edwards25519".utf8)
            guard parameters == Edwards25519.parameters || parameters == printable else {
                throw P11Error(CKR_CURVE_NOT_SUPPORTED, "only Ed25519 is supported")
            }
            kind = .ed25519(curveParameters: parameters)
        default:
            throw P11Error(
                CKR_MECHANISM_INVALID,
                "mechanism 0x\(String(mechanism.mechanism, radix: 16)) generates no key pair")
        }
        let references = try core { () throws(KeychainError) in
            try session.slot.token.generateKeyPair(
                kind, publicTemplate: publicTemplate, privateTemplate: privateTemplate,
                context: session.context)
        }
        session.lock.withLock {
            for reference in [references.publicKey, references.privateKey] where reference.isSessionObject {
                session.objects.append(reference)
            }
        }
        phPublicKey.pointee = ObjectHandle.make(references.publicKey, slot: session.slot)
        phPrivateKey.pointee = ObjectHandle.make(references.privateKey, slot: session.slot)
    }
}

// MARK: - Signing (v2.40 §5.11)

@c @implementation
func C_SignInit(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?, _ hKey: CK_OBJECT_HANDLE
) -> CK_RV {
    sessionEntry("C_SignInit", hSession) { (_, session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee else { throw P11Error.argumentsBad }
        let (scheme, type) = try signatureScheme(mechanism)
        try session.lock.withLock { () throws(P11Error) in
            guard session.signing == nil else {
                throw P11Error(CKR_OPERATION_ACTIVE, "a signature is active")
            }
            let key = try operationKey(session, hKey, privateKey: true, type: type, usage: .sign)
            let operation = try SignatureOperation(key: key.key, scheme: scheme)
            operation.needsContextLogin = key.alwaysAuthenticate
            session.signing = operation
        }
    }
}

/// Finishes a signature with the two-call convention: a length query or a short buffer keeps
/// the operation; anything else ends it (v2.40 §5.2).
private func deliverSignature(
    _ session: Session, _ operation: SignatureOperation, _ pSignature: UnsafeMutablePointer<CK_BYTE>?,
    _ pulSignatureLen: UnsafeMutablePointer<CK_ULONG>, input: () throws(P11Error) -> [UInt8]
) throws(P11Error) {
    let length = CK_ULONG(operation.signatureLength)
    guard let pSignature else {
        pulSignatureLen.pointee = length
        return
    }
    guard pulSignatureLen.pointee >= length else {
        pulSignatureLen.pointee = length
        throw P11Error(CKR_BUFFER_TOO_SMALL, "a signature needs \(length) bytes")
    }
    guard !operation.needsContextLogin else {
        session.signing = nil
        throw P11Error(CKR_USER_NOT_LOGGED_IN, "the key needs a context-specific login before each signature")
    }
    session.signing = nil
    let data = try input()
    let signature: [UInt8]
    do throws(CryptoError) {
        if operation.scheme == .ed25519 {
            signature = try operation.key.sign(data, scheme: .ed25519)
        } else {
            // The input is the digest for a hashing mechanism, the data as given otherwise.
            let signer: SigningContext
            if let idle = session.idleSigner(for: operation) {
                signer = idle
            } else {
                signer = try SigningContext(key: operation.key, scheme: operation.scheme)
            }
            signature = try signer.sign(hash: data)
            session.lastSigner = signer
        }
    } catch {
        // A context that failed is not trusted with the next signature.
        session.lastSigner = nil
        throw P11Error(error.code == .invalidInput ? CKR_DATA_LEN_RANGE : CKR_FUNCTION_FAILED, error.message)
    }
    try writeBytes(signature, to: pSignature, length: pulSignatureLen)
}

@c @implementation
func C_Sign(
    _ hSession: CK_SESSION_HANDLE, _ pData: UnsafeMutablePointer<CK_BYTE>?, _ ulDataLen: CK_ULONG,
    _ pSignature: UnsafeMutablePointer<CK_BYTE>?, _ pulSignatureLen: UnsafeMutablePointer<CK_ULONG>?
) -> CK_RV {
    sessionEntry("C_Sign", hSession) { (_, session) throws(P11Error) in
        try session.lock.withLock { () throws(P11Error) in
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
                data = try input(pData, ulDataLen)
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
            guard let operation = session.signing else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_SignInit first")
            }
            do throws(P11Error) {
                guard operation.scheme != .ed25519 else {
                    throw P11Error(CKR_FUNCTION_NOT_SUPPORTED, "EdDSA signs in one part only: use C_Sign")
                }
                try operation.update(try input(pPart, ulPartLen))
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
        let (scheme, type) = try signatureScheme(mechanism)
        try session.lock.withLock { () throws(P11Error) in
            guard session.verifying == nil else {
                throw P11Error(CKR_OPERATION_ACTIVE, "a verification is active")
            }
            let key = try operationKey(session, hKey, privateKey: false, type: type, usage: .verify)
            session.verifying = try SignatureOperation(key: key.key, scheme: scheme)
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
            guard let operation = session.verifying else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_VerifyInit first")
            }
            // Verification always ends the operation (v2.40 §5.12).
            session.verifying = nil
            let data = try input(pData, ulDataLen)
            let signature = Array(try input(pSignature, ulSignatureLen))
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
            guard let operation = session.verifying else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_VerifyInit first")
            }
            do throws(P11Error) {
                guard operation.scheme != .ed25519 else {
                    throw P11Error(
                        CKR_FUNCTION_NOT_SUPPORTED, "EdDSA verifies in one part only: use C_Verify")
                }
                try operation.update(try input(pPart, ulPartLen))
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
            guard let operation = session.verifying else {
                throw P11Error(CKR_OPERATION_NOT_INITIALIZED, "call C_VerifyInit first")
            }
            session.verifying = nil
            let signature = Array(try input(pSignature, ulSignatureLen))
            try checkSignature(operation, signature, try operation.finalInput())
        }
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
