internal import CPKCS11
internal import KeychainCore

// Key derivation (v2.40 §5.14 C_DeriveKey): ECDH (v2.40 §2.3.16, with the X9.63 KDFs of
// CK_ULONG; X25519 and X448 keys, v3.0 §2.3.7) and HKDF (v3.0 §2.43). The core derives
// (`Token.startDerivation`, `DerivationOperation`): the base key through its one key-use check
// for `.derive`, the result stored sealed with the history of its base key. Here the
// parameter is read and the handles translated.

@c @implementation
func C_DeriveKey(
    _ hSession: CK_SESSION_HANDLE, _ pMechanism: UnsafeMutablePointer<CK_MECHANISM>?,
    _ hBaseKey: CK_OBJECT_HANDLE, _ pTemplate: UnsafeMutablePointer<CK_ATTRIBUTE>?,
    _ ulAttributeCount: CK_ULONG, _ phKey: UnsafeMutablePointer<CK_OBJECT_HANDLE>?
) -> CK_RV {
    sessionEntry("C_DeriveKey", hSession) { (session) throws(P11Error) in
        guard let mechanism = pMechanism?.pointee, let phKey else { throw P11Error.argumentsBad }
        let template = try readTemplate(pTemplate, ulAttributeCount)
        let parameters = try derivationParameters(mechanism, session: session)
        let operation = try onKey(session, hBaseKey, .operation) { (reference) throws(CoreError) in
            try session.token.startDerivation(
                reference, mechanism: UInt64(mechanism.mechanism), parameters: parameters,
                context: session.context, kept: session.kept)
        }
        try refuseSinglePIN(operation.authentication)
        // The session's lock guards its kept contexts, which an ECDH agreement reuses.
        let reference = try session.lock.withLock { () throws(P11Error) in
            try core { () throws(CoreError) in
                try operation.derive(template: template, context: session.context)
            }
        }
        adopt(reference, by: session)
        phKey.pointee = ObjectHandle.make(reference, slot: session.slot)
    }
}
