internal import CPKCS11
internal import KeychainCore
internal import KeychainCrypto

// AES encryption and decryption (v2.40 §2.10 ECB/CBC/CBC-PAD, §2.12 CTR, GCM; v3.0 §2.15),
// single- and multi-part through one path: C_Encrypt is an update followed by the final step.

/// An AES operation: the cipher, and the output of the final step once computed. A length
/// query, or a buffer too small for the final output, must not lose the operation (v2.40
/// §5.2): the final output (and a single-part call's whole output) is computed once, kept,
/// and handed out when a large enough buffer comes.
final class SymmetricOperation {
    let cipher: SymmetricCipher
    let isGCMDecryption: Bool
    /// Output computed but not yet delivered.
    var pending: [UInt8]?
    /// True once an update ran: C_Encrypt/C_Decrypt may then no longer be called.
    var isMultiPart = false
    /// Ciphertext a GCM decryption holds back until its tag is checked.
    var buffered = 0

    init(cipher: SymmetricCipher, isGCMDecryption: Bool) {
        self.cipher = cipher
        self.isGCMDecryption = isGCMDecryption
    }

    /// The most ciphertext one GCM decryption holds back before the tag can be checked: no
    /// plaintext leaves before it is (v2.40 §2.12), so the whole message is in memory.
    static let maximumGCMCiphertext = 64 << 20
}

/// The AES mode of a mechanism with its parameters read and checked; nil for a mechanism
/// that is not an AES cipher.
func symmetricMode(_ mechanism: CK_MECHANISM) throws(P11Error) -> BlockCipherMode? {
    let type = mechanism.mechanism
    func bytes(_ length: Int) throws(P11Error) -> [UInt8] {
        guard let pointer = mechanism.pParameter, mechanism.ulParameterLen == CK_ULONG(length) else {
            throw P11Error(
                CKR_MECHANISM_PARAM_INVALID,
                "mechanism \(mechanismName(type)) needs a \(length)-byte IV")
        }
        return Array(UnsafeRawBufferPointer(start: pointer, count: length))
    }
    switch type {
    case CK_MECHANISM_TYPE(CKM_AES_ECB):
        guard mechanism.ulParameterLen == 0 else {
            throw P11Error(CKR_MECHANISM_PARAM_INVALID, "AES-ECB takes no parameter")
        }
        return .ecb
    case CK_MECHANISM_TYPE(CKM_AES_CBC):
        return .cbc(iv: try bytes(16))
    case CK_MECHANISM_TYPE(CKM_AES_CBC_PAD):
        return .cbcPad(iv: try bytes(16))
    case CK_MECHANISM_TYPE(CKM_AES_CTR):
        guard let pointer = mechanism.pParameter,
            mechanism.ulParameterLen == CK_ULONG(MemoryLayout<CK_AES_CTR_PARAMS>.size)
        else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "AES-CTR needs CK_AES_CTR_PARAMS") }
        let parameters = pointer.loadUnaligned(as: CK_AES_CTR_PARAMS.self)
        let bits = try hostCount(
            parameters.ulCounterBits, limit: 128, CKR_MECHANISM_PARAM_INVALID, what: "the CTR counter bits")
        guard bits > 0 else { throw P11Error(CKR_MECHANISM_PARAM_INVALID, "the CTR counter has no bits") }
        let block = withUnsafeBytes(of: parameters.cb) { Array($0) }
        return .ctr(counterBlock: block, counterBits: bits)
    case CK_MECHANISM_TYPE(CKM_AES_GCM):
        return try gcmMode(mechanism)
    default:
        return nil
    }
}

/// CK_GCM_PARAMS in either layout: v3.0's (and p11-kit's) with `ulIvBits`, or v2.40's
/// without it, told apart by the parameter's length. Each field is checked here against
/// exactly what the cipher takes (`BlockCipherMode.gcmIVLengths`, `gcmTagLengths`): an IV of
/// 1–128 bytes (the spec allows 256, OpenSSL 3.0 128), a tag of 96–128 bits in whole bytes,
/// additional data of at most `maximumGCMAdditionalData`; anything else is
/// CKR_MECHANISM_PARAM_INVALID before a key is touched.
private func gcmMode(_ mechanism: CK_MECHANISM) throws(P11Error) -> BlockCipherMode {
    let word = MemoryLayout<CK_ULONG>.size
    let pointerSize = MemoryLayout<UnsafeRawPointer>.size
    guard let pointer = mechanism.pParameter else {
        throw P11Error(CKR_MECHANISM_PARAM_INVALID, "AES-GCM needs CK_GCM_PARAMS")
    }
    // Offsets of pIv, ulIvLen, [ulIvBits], pAAD, ulAADLen, ulTagBits.
    let fields: (iv: Int, ivLength: Int, aad: Int, aadLength: Int, tagBits: Int)
    switch Int(clamping: mechanism.ulParameterLen) {
    case MemoryLayout<CK_GCM_PARAMS>.size:
        fields = (
            0, pointerSize, pointerSize + 2 * word, 2 * pointerSize + 2 * word, 2 * pointerSize + 3 * word
        )
    case 2 * pointerSize + 3 * word:
        fields = (0, pointerSize, pointerSize + word, 2 * pointerSize + word, 2 * pointerSize + 2 * word)
    default:
        throw P11Error(CKR_MECHANISM_PARAM_INVALID, "CK_GCM_PARAMS has the wrong length")
    }
    let ivPointer = pointer.loadUnaligned(fromByteOffset: fields.iv, as: UnsafeRawPointer?.self)
    let ivLengths = BlockCipherMode.gcmIVLengths
    let ivLength = try hostCount(
        pointer.loadUnaligned(fromByteOffset: fields.ivLength, as: CK_ULONG.self),
        limit: ivLengths.upperBound,
        CKR_MECHANISM_PARAM_INVALID, what: "the GCM IV length")
    let aadPointer = pointer.loadUnaligned(fromByteOffset: fields.aad, as: UnsafeRawPointer?.self)
    let aadLength = try hostCount(
        pointer.loadUnaligned(fromByteOffset: fields.aadLength, as: CK_ULONG.self),
        limit: maximumGCMAdditionalData, CKR_MECHANISM_PARAM_INVALID, what: "the GCM additional data length")
    let tagLengths = BlockCipherMode.gcmTagLengths
    let tagBits = try hostCount(
        pointer.loadUnaligned(fromByteOffset: fields.tagBits, as: CK_ULONG.self),
        limit: tagLengths.upperBound * 8,
        CKR_MECHANISM_PARAM_INVALID, what: "the GCM tag length")
    guard ivLengths.contains(ivLength), let ivPointer else {
        throw P11Error(
            CKR_MECHANISM_PARAM_INVALID,
            "the GCM IV has \(ivLengths.lowerBound) to \(ivLengths.upperBound) bytes here, not \(ivLength)")
    }
    guard tagBits % 8 == 0, tagLengths.contains(tagBits / 8) else {
        throw P11Error(
            CKR_MECHANISM_PARAM_INVALID,
            "the GCM tag has \(tagLengths.lowerBound * 8) to \(tagLengths.upperBound * 8) bits, in whole bytes"
        )
    }
    guard aadLength == 0 || aadPointer != nil else {
        throw P11Error(CKR_MECHANISM_PARAM_INVALID, "the GCM additional data is NULL")
    }
    let iv = Array(UnsafeRawBufferPointer(start: ivPointer, count: ivLength))
    let aad = aadLength == 0 ? [] : Array(UnsafeRawBufferPointer(start: aadPointer, count: aadLength))
    return .gcm(iv: iv, additionalData: aad, tagLength: tagBits / 8)
}

/// The most additional data one GCM operation takes from a host: a bound on what a host's
/// number can make the module copy (the cipher itself takes far more).
let maximumGCMAdditionalData = 1 << 20

/// C_EncryptInit / C_DecryptInit of an AES mechanism: the key through the core's key-use
/// check (an AES secret key, CKA_ENCRYPT/CKA_DECRYPT, allowed mechanisms).
func startSymmetric(
    _ session: Session, _ mechanism: CK_MECHANISM, _ mode: BlockCipherMode, key handle: CK_OBJECT_HANDLE,
    encrypting: Bool
) throws(P11Error) {
    try session.lock.withLock { () throws(P11Error) in
        guard (encrypting ? session.encrypting : session.decrypting) == nil else {
            throw P11Error(
                CKR_OPERATION_ACTIVE, "\(encrypting ? "an encryption" : "a decryption") is active")
        }
        let key = try secretOperationKey(
            session, handle, for: encrypting ? .encrypt : .decrypt, types: [.aes],
            mechanism: mechanism.mechanism)
        let cipher: SymmetricCipher
        // The session's last AES operation lends its keyed context when it used the same key
        // (the same opened value: the token opens a new one when the object changes), mode
        // and direction. The key-use check above has run all the same.
        let previous = session.idleCipher
        session.idleCipher = nil
        do throws(CryptoError) {
            cipher = try SymmetricCipher(
                key: key.value, mode: mode, encrypting: encrypting, reusing: previous)
        } catch {
            throw P11Error(
                error.code == .invalidInput ? CKR_MECHANISM_PARAM_INVALID : CKR_FUNCTION_FAILED, error.message
            )
        }
        var isGCM = false
        if case .gcm = mode { isGCM = true }
        let operation = CipherOperation(
            SymmetricOperation(cipher: cipher, isGCMDecryption: isGCM && !encrypting))
        operation.usesPrivateObject = key.attributes.bool(.private) == true
        if encrypting { session.encrypting = operation } else { session.decrypting = operation }
    }
}

/// Ends an AES operation, keeping its cipher for the session's next one (`idleCipher`).
private func retire(_ session: Session, _ operation: SymmetricOperation, encrypting: Bool) {
    end(session, encrypting: encrypting)
    session.idleCipher = operation.cipher
}

/// The CK_RV of a failed AES step: input of a length the mode cannot take, or (decrypting)
/// ciphertext that does not decrypt: bad padding or a GCM tag that does not verify.
private func symmetricFailure(_ error: CryptoError, encrypting: Bool) -> P11Error {
    if error.code == .invalidInput {
        return P11Error(encrypting ? CKR_DATA_LEN_RANGE : CKR_ENCRYPTED_DATA_LEN_RANGE, error.message)
    }
    return P11Error(encrypting ? CKR_FUNCTION_FAILED : CKR_ENCRYPTED_DATA_INVALID, error.message)
}

/// One call of an AES operation. `session.lock` is held. An update returns what the mode
/// releases; a GCM decryption releases nothing until the final step checks the tag. Every
/// failure but a length query or a short buffer ends the operation (v2.40 §5.8–5.9).
func symmetricCall(
    _ session: Session, _ operation: SymmetricOperation, encrypting: Bool, step: CipherStep,
    _ pInput: UnsafeMutablePointer<CK_BYTE>?, _ ulInputLen: CK_ULONG,
    _ pOutput: UnsafeMutablePointer<CK_BYTE>?, _ pulOutputLen: UnsafeMutablePointer<CK_ULONG>?
) throws(P11Error) {
    do throws(P11Error) {
        guard let pulOutputLen else { throw P11Error.argumentsBad }
        let cipher = operation.cipher
        switch step {
        case .update:
            guard operation.pending == nil else {
                throw P11Error(CKR_OPERATION_ACTIVE, "the operation's output waits for a larger buffer")
            }
            let limit =
                operation.isGCMDecryption
                ? SymmetricOperation.maximumGCMCiphertext - operation.buffered : maximumDataLength
            let data = try input(
                pInput, ulInputLen, limit: limit,
                encrypting ? CKR_DATA_LEN_RANGE : CKR_ENCRYPTED_DATA_LEN_RANGE)
            operation.isMultiPart = true
            try writeOutput(
                into: pOutput, length: pulOutputLen, size: cipher.updateOutputLength(forInput: data.count)
            ) {
                () throws(P11Error) in
                do throws(CryptoError) {
                    let output = try cipher.update(data)
                    operation.buffered += operation.isGCMDecryption ? data.count : 0
                    return output
                } catch {
                    throw symmetricFailure(error, encrypting: encrypting)
                }
            }
        case .single, .final:
            if operation.pending == nil {
                if step == .single {
                    guard !operation.isMultiPart else {
                        throw P11Error(CKR_OPERATION_ACTIVE, "a multi-part operation is active: finish it")
                    }
                    let limit =
                        operation.isGCMDecryption
                        ? SymmetricOperation.maximumGCMCiphertext : maximumDataLength
                    let data = try input(
                        pInput, ulInputLen, limit: limit,
                        encrypting ? CKR_DATA_LEN_RANGE : CKR_ENCRYPTED_DATA_LEN_RANGE)
                    if let size = cipher.directOutputLength(forInput: data.count),
                        !partiallyOverlap(data, pOutput, size)
                    {
                        try singlePartDirect(
                            session, operation, encrypting: encrypting, data, size: size, pOutput,
                            pulOutputLen)
                        return
                    }
                    do throws(CryptoError) {
                        operation.pending = try cipher.update(data) + cipher.finish()
                    } catch {
                        throw symmetricFailure(error, encrypting: encrypting)
                    }
                } else {
                    do throws(CryptoError) {
                        operation.pending = try cipher.finish()
                    } catch {
                        throw symmetricFailure(error, encrypting: encrypting)
                    }
                }
            }
            let output = operation.pending ?? []
            if try writeOutput(into: pOutput, length: pulOutputLen, size: output.count, { output }) {
                retire(session, operation, encrypting: encrypting)
            }
        }
    } catch {
        if error.rv != CKR_BUFFER_TOO_SMALL { retire(session, operation, encrypting: encrypting) }
        throw error
    }
}

/// Whether the output buffer overlaps the input other than exactly (in-place encryption,
/// which OpenSSL allows): such a call goes through a copy of the output instead.
private func partiallyOverlap(
    _ data: UnsafeRawBufferPointer, _ output: UnsafeMutablePointer<CK_BYTE>?, _ size: Int
)
    -> Bool
{
    guard let output, let input = data.baseAddress else { return false }
    let inputStart = UInt(bitPattern: input)
    let outputStart = UInt(bitPattern: output)
    guard inputStart != outputStart else { return false }
    let (inputEnd, o1) = inputStart.addingReportingOverflow(UInt(data.count))
    let (outputEnd, o2) = outputStart.addingReportingOverflow(UInt(size))
    return o1 || o2 || (inputStart < outputEnd && outputStart < inputEnd)
}

/// C_Encrypt / C_Decrypt whose output length is known before the work (`size`): a length
/// query or a short buffer is answered without computing anything (the operation goes on,
/// v2.40 §5.2), and otherwise the cipher writes straight into the caller's buffer, with no
/// copy of the message kept. GCM and CBC-PAD decryption never come here (`directOutputLength`).
private func singlePartDirect(
    _ session: Session, _ operation: SymmetricOperation, encrypting: Bool, _ data: UnsafeRawBufferPointer,
    size: Int, _ pOutput: UnsafeMutablePointer<CK_BYTE>?, _ pulOutputLen: UnsafeMutablePointer<CK_ULONG>
) throws(P11Error) {
    guard let pOutput else {
        pulOutputLen.pointee = CK_ULONG(size)
        return
    }
    guard pulOutputLen.pointee >= CK_ULONG(size) else {
        pulOutputLen.pointee = CK_ULONG(size)
        throw P11Error(CKR_BUFFER_TOO_SMALL, "the buffer holds fewer than the \(size) bytes of the output")
    }
    let written: Int
    do throws(CryptoError) {
        written = try operation.cipher.process(
            data, into: UnsafeMutableRawBufferPointer(start: pOutput, count: size))
    } catch {
        throw symmetricFailure(error, encrypting: encrypting)
    }
    pulOutputLen.pointee = CK_ULONG(written)
    retire(session, operation, encrypting: encrypting)
}
