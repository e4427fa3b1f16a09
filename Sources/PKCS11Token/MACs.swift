internal import CPKCS11
internal import KeychainCore
internal import KeychainCrypto

// Message authentication codes through C_Sign* and C_Verify* (v2.40 §2.10.5 AES-CMAC,
// §2.20–2.24 HMAC; v3.0 §2.15): single- and multi-part through one path. A session's MAC
// operations sit beside its signature operations (`Session.macSigning`, `macVerifying`), and
// C_SignInit/C_VerifyInit refuse to start one while the other is active.

/// A MAC in progress.
final class MACOperation {
    let mac: MessageAuthentication
    /// The key's opened value and the algorithm, which say whether the session's next MAC
    /// may restart this one (`IdleMAC`).
    let key: SecretBytes
    let algorithm: MACAlgorithm
    /// The MAC's length: the full one, or a *_GENERAL mechanism's CK_MAC_GENERAL_PARAMS.
    let length: Int
    var isMultiPart = false
    /// The key is a private object: the operation ends at C_Logout.
    var usesPrivateObject = false

    init(mac: MessageAuthentication, key: SecretBytes, algorithm: MACAlgorithm, length: Int) {
        self.mac = mac
        self.key = key
        self.algorithm = algorithm
        self.length = length
    }
}

/// A finished MAC a session keeps (`Session.idleMAC`): the next C_SignInit or C_VerifyInit
/// with the same opened key value (`===`: the token opens a new one when the object changes)
/// and algorithm restarts it instead of setting the key again, which for HMAC means hashing
/// the padded key twice and three digest contexts: more than the MAC of a short message.
struct IdleMAC {
    let mac: MessageAuthentication
    let key: SecretBytes
    let algorithm: MACAlgorithm

    init(_ operation: MACOperation) {
        mac = operation.mac
        key = operation.key
        algorithm = operation.algorithm
    }
}

/// A MAC mechanism of the registry: its algorithm, the key types it takes, and whether it is a
/// _GENERAL one.
private struct MACMechanism {
    let algorithm: MACAlgorithm
    let keyTypes: [KeyType]
    let isGeneral: Bool

    init?(_ type: CK_MECHANISM_TYPE) {
        guard let mechanism = MechanismRegistry.mechanism(UInt64(type)),
            case .mac(let general) = mechanism.family
        else { return nil }
        algorithm = mechanism.digest.map(MACAlgorithm.hmac) ?? .cmac
        keyTypes = mechanism.keyTypes
        isGeneral = general
    }
}

/// True when `type` is a MAC mechanism (C_SignInit and C_VerifyInit then come here).
func isMACMechanism(_ type: CK_MECHANISM_TYPE) -> Bool { MACMechanism(type) != nil }

/// C_SignInit / C_VerifyInit of a MAC mechanism: the key through the core's key-use check
/// (a secret key of a type the mechanism takes, CKA_SIGN/CKA_VERIFY, allowed mechanisms).
func startMAC(_ session: Session, _ mechanism: CK_MECHANISM, key handle: CK_OBJECT_HANDLE, signing: Bool)
    throws(P11Error)
{
    guard let kind = MACMechanism(mechanism.mechanism) else {
        throw P11Error(CKR_MECHANISM_INVALID, "not a MAC mechanism")
    }
    var requested: Int?
    if kind.isGeneral {
        guard let pointer = mechanism.pParameter,
            mechanism.ulParameterLen == CK_ULONG(MemoryLayout<CK_ULONG>.size)
        else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "a _GENERAL MAC needs CK_MAC_GENERAL_PARAMS") }
        requested = try hostCount(
            pointer.loadUnaligned(as: CK_ULONG.self), limit: 64, CKR_MECHANISM_PARAM_INVALID,
            what: "a MAC length")
    } else if mechanism.ulParameterLen != 0 {
        throw P11Error(CKR_MECHANISM_PARAM_INVALID, "this MAC mechanism takes no parameter")
    }
    try session.lock.withLock { () throws(P11Error) in
        let active =
            signing
            ? session.signing != nil || session.macSigning != nil
            : session.verifying != nil || session.macVerifying != nil
        guard !active else {
            throw P11Error(CKR_OPERATION_ACTIVE, "\(signing ? "a signature" : "a verification") is active")
        }
        let key = try secretOperationKey(
            session, handle, for: signing ? .sign : .verify, types: kind.keyTypes,
            mechanism: mechanism.mechanism)
        // The key-use check above ran; only the key's setup is skipped.
        let idle = session.idleMAC
        session.idleMAC = nil
        let mac: MessageAuthentication
        // try?: a kept MAC that cannot restart is simply not reused; a fresh one is made below.
        if let idle, idle.key === key.value, idle.algorithm == kind.algorithm, (try? idle.mac.reset()) != nil
        {
            mac = idle.mac
        } else {
            do throws(CryptoError) {
                mac = try MessageAuthentication(kind.algorithm, key: key.value)
            } catch {
                throw P11Error(CKR_KEY_SIZE_RANGE, error.message)
            }
        }
        let length = requested ?? mac.macLength
        guard length >= 1, length <= mac.macLength else {
            throw P11Error(CKR_MECHANISM_PARAM_INVALID, "the MAC length is 1 to \(mac.macLength) bytes")
        }
        let operation = MACOperation(mac: mac, key: key.value, algorithm: kind.algorithm, length: length)
        operation.usesPrivateObject = key.attributes.bool(.private) == true
        if signing { session.macSigning = operation } else { session.macVerifying = operation }
    }
}

/// Ends the session's MAC operation.
private func endMAC(_ session: Session, signing: Bool) {
    if signing { session.macSigning = nil } else { session.macVerifying = nil }
}

/// Feeds one part to a MAC (C_SignUpdate, C_VerifyUpdate). `session.lock` is held.
func updateMAC(
    _ session: Session, _ operation: MACOperation, signing: Bool, _ pPart: UnsafeMutablePointer<CK_BYTE>?,
    _ ulPartLen: CK_ULONG
) throws(P11Error) {
    do throws(P11Error) {
        let part = try input(pPart, ulPartLen)
        operation.isMultiPart = true
        do throws(CryptoError) {
            try operation.mac.update(part)
        } catch {
            throw P11Error(CKR_FUNCTION_FAILED, error.message)
        }
    } catch {
        endMAC(session, signing: signing)
        throw error
    }
}

/// The MAC of what was fed, cut to the operation's length, with `data` fed first (C_Sign,
/// C_Verify) when given.
private func finishMAC(_ operation: MACOperation, feeding data: UnsafeRawBufferPointer?) throws(P11Error)
    -> [UInt8]
{
    do throws(CryptoError) {
        if let data { try operation.mac.update(data) }
        return Array(try operation.mac.finish().prefix(operation.length))
    } catch {
        throw P11Error(CKR_FUNCTION_FAILED, error.message)
    }
}

/// C_Sign (with `single`) or C_SignFinal of a MAC, with the two-call convention: a length
/// query or a short buffer keeps the operation. `session.lock` is held.
func signMAC(
    _ session: Session, _ operation: MACOperation, single: Bool, _ pData: UnsafeMutablePointer<CK_BYTE>?,
    _ ulDataLen: CK_ULONG, _ pSignature: UnsafeMutablePointer<CK_BYTE>?,
    _ pulSignatureLen: UnsafeMutablePointer<CK_ULONG>?
) throws(P11Error) {
    do throws(P11Error) {
        guard let pulSignatureLen else { throw P11Error.argumentsBad }
        if single, operation.isMultiPart {
            throw P11Error(CKR_OPERATION_ACTIVE, "a multi-part MAC is active: finish it with C_SignFinal")
        }
        let data = single ? try input(pData, ulDataLen) : nil
        try writeOutput(into: pSignature, length: pulSignatureLen, size: operation.length) {
            () throws(P11Error) in
            endMAC(session, signing: true)
            let mac = try finishMAC(operation, feeding: data)
            session.idleMAC = IdleMAC(operation)
            return mac
        }
    } catch {
        if error.rv != CKR_BUFFER_TOO_SMALL { endMAC(session, signing: true) }
        throw error
    }
}

/// C_Verify (with `single`) or C_VerifyFinal of a MAC: always ends the operation; the MACs
/// are compared in constant time. `session.lock` is held.
func verifyMAC(
    _ session: Session, _ operation: MACOperation, single: Bool, _ pData: UnsafeMutablePointer<CK_BYTE>?,
    _ ulDataLen: CK_ULONG, _ pSignature: UnsafeMutablePointer<CK_BYTE>?, _ ulSignatureLen: CK_ULONG
) throws(P11Error) {
    endMAC(session, signing: false)
    if single, operation.isMultiPart {
        throw P11Error(CKR_OPERATION_ACTIVE, "a multi-part MAC is active: finish it with C_VerifyFinal")
    }
    let data = single ? try input(pData, ulDataLen) : nil
    let signature = Array(try input(pSignature, ulSignatureLen, CKR_SIGNATURE_LEN_RANGE))
    guard signature.count == operation.length else {
        throw P11Error(CKR_SIGNATURE_LEN_RANGE, "this MAC has \(operation.length) bytes")
    }
    let expected = try finishMAC(operation, feeding: data)
    session.idleMAC = IdleMAC(operation)
    guard MessageAuthentication.isEqual(expected, signature) else {
        throw P11Error(CKR_SIGNATURE_INVALID, "the MAC does not verify")
    }
}
