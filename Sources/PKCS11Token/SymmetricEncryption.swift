internal import CPKCS11
internal import KeychainCore

// AES encryption and decryption (v2.40 §2.10 ECB/CBC/CBC-PAD, §2.12 CTR, GCM; v3.0 §2.15),
// single- and multi-part through one path: C_Encrypt is an update followed by the final step.
// The core's CipherOperation does the AES; a length query, or a buffer too small for the
// final output, must not lose the operation (v2.40 §5.2): the final output (and a single-part
// call's whole output) is computed once, kept (`pending`), and handed out when a large enough
// buffer comes.

/// Ends an AES operation, keeping it for the session's next one, which may take over its keyed
/// context (`idleCipher`).
private func retire(_ session: Session, _ operation: CipherOperation, encrypting: Bool) {
    end(session, encrypting: encrypting)
    session.idleCipher = operation
}

/// One call of an AES operation. `session.lock` is held. An update returns what the mode
/// releases; a GCM decryption releases nothing until the final step checks the tag. Every
/// failure but a length query or a short buffer ends the operation (v2.40 §5.8–5.9).
func symmetricCall(
    _ session: Session, _ operation: CipherOperation, encrypting: Bool, step: CipherStep,
    _ pInput: UnsafeMutablePointer<CK_BYTE>?, _ ulInputLen: CK_ULONG,
    _ pOutput: UnsafeMutablePointer<CK_BYTE>?, _ pulOutputLen: UnsafeMutablePointer<CK_ULONG>?
) throws(P11Error) {
    try session.keepingOnShortBuffer(
        { () throws(P11Error) in
            guard let pulOutputLen else { throw P11Error.argumentsBad }
            switch step {
            case .update:
                guard operation.pending == nil else {
                    throw P11Error(CKR_OPERATION_ACTIVE, "the operation's output waits for a larger buffer")
                }
                let limit = operation.holdBackLeft ?? maximumDataLength
                let data = try input(
                    pInput, ulInputLen, limit: limit,
                    encrypting ? CKR_DATA_LEN_RANGE : CKR_ENCRYPTED_DATA_LEN_RANGE)
                operation.isMultiPart = true
                try writeOutput(
                    into: pOutput, length: pulOutputLen,
                    size: operation.updateOutputLength(forInput: data.count)
                ) { () throws(P11Error) in
                    try core { () throws(CoreError) in try operation.update(data) }
                }
            case .single, .final:
                if operation.pending == nil {
                    if step == .single {
                        guard !operation.isMultiPart else {
                            throw P11Error(
                                CKR_OPERATION_ACTIVE, "a multi-part operation is active: finish it")
                        }
                        let limit = operation.holdBackLeft ?? maximumDataLength
                        let data = try input(
                            pInput, ulInputLen, limit: limit,
                            encrypting ? CKR_DATA_LEN_RANGE : CKR_ENCRYPTED_DATA_LEN_RANGE)
                        if let size = operation.directOutputLength(forInput: data.count),
                            !partiallyOverlap(data, pOutput, size)
                        {
                            try singlePartDirect(
                                session, operation, encrypting: encrypting, data, size: size, pOutput,
                                pulOutputLen)
                            return
                        }
                        operation.pending = try core { () throws(CoreError) in
                            try operation.update(data) + operation.finish()
                        }
                    } else {
                        operation.pending = try core { () throws(CoreError) in try operation.finish() }
                    }
                }
                let output = operation.pending ?? []
                if try writeOutput(into: pOutput, length: pulOutputLen, size: output.count, { output }) {
                    retire(session, operation, encrypting: encrypting)
                }
            }
        },
        otherwiseEnding: { retire(session, operation, encrypting: encrypting) })
}

/// Whether the output buffer overlaps the input other than exactly (in-place encryption,
/// which OpenSSL allows; with `exactIsSafe` false, any overlap counts): such a call goes
/// through a copy of the output instead.
func partiallyOverlap(
    _ data: UnsafeRawBufferPointer, _ output: UnsafeMutablePointer<CK_BYTE>?, _ size: Int,
    exactIsSafe: Bool = true
)
    -> Bool
{
    guard let output, let input = data.baseAddress else { return false }
    let inputStart = UInt(bitPattern: input)
    let outputStart = UInt(bitPattern: output)
    guard !exactIsSafe || inputStart != outputStart else { return false }
    let (inputEnd, o1) = inputStart.addingReportingOverflow(UInt(data.count))
    let (outputEnd, o2) = outputStart.addingReportingOverflow(UInt(size))
    return o1 || o2 || (inputStart < outputEnd && outputStart < inputEnd)
}

/// C_Encrypt / C_Decrypt whose output length is known before the work (`size`): a length
/// query or a short buffer is answered without computing anything (the operation goes on,
/// v2.40 §5.2), and otherwise the cipher writes straight into the caller's buffer, with no
/// copy of the message kept. GCM and CBC-PAD decryption never come here (`directOutputLength`).
private func singlePartDirect(
    _ session: Session, _ operation: CipherOperation, encrypting: Bool, _ data: UnsafeRawBufferPointer,
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
    let written = try core { () throws(CoreError) in
        try operation.process(data, into: UnsafeMutableRawBufferPointer(start: pOutput, count: size))
    }
    pulOutputLen.pointee = CK_ULONG(written)
    retire(session, operation, encrypting: encrypting)
}
