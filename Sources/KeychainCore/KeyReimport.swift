internal import KeychainStorage

/// A private key written again exactly as it is stored is not stored twice.
///
/// Clients that store an identity as several objects cannot make the write atomic: Java's
/// SunPKCS11 keystore (`KeyStore.setKeyEntry`, `keytool -importkeystore`) creates the private
/// key with CKA_ID = the alias, then the certificate. When the certificate is refused, the key
/// stays behind, and the JDK never sees it again: its keystore lists only keys that have a
/// certificate with the same CKA_ID, so it neither deletes the key nor reuses it. The next
/// attempt creates the same key a second time, and once a certificate is stored, the JDK
/// finds two private keys with one CKA_ID and refuses to use either ("invalid KeyStore state").
///
/// So C_CreateObject (and the Swift faces' add) of a token private key that equals a stored
/// one in every attribute but the sealed key material (same CKA_ID, same public key, same
/// label and flags; the same public key means the same private key) returns the stored key
/// instead of a copy. Nothing a caller can tell apart is lost: the object it asked for exists,
/// with exactly the attributes it asked for. A key that differs in anything (another CKA_ID,
/// another label, other usage flags, another key) is stored as a new object, as before.
/// Two processes writing the same key at the same instant can still both store it: the check
/// and the insert are one lock in this process, not one transaction across processes.
extension Token {
    /// The stored token private key `object` would duplicate, if there is one the context may
    /// see. `lock` must be held.
    func storedTwinLocked(of object: NewObject, context: AccessContext) throws(CoreError) -> ObjectReference?
    {
        let wanted = object.attributes
        guard wanted.ulong(.class) == ObjectClass.privateKey.rawValue, wanted.bool(.token) == true,
            context.userLoggedIn, !object.isSealed,
            let id = wanted[.id], let publicKeyInfo = wanted[.publicKeyInfo]
        else { return nil }
        let store = try store()
        let candidates = try CoreError.mapping {
            try store.find([
                StoredAttribute(AttributeType.id.rawValue, id),
                StoredAttribute(AttributeType.publicKeyInfo.rawValue, publicKeyInfo),
                StoredAttribute(AttributeType.class.rawValue, wanted[.class] ?? []),
            ])
        }
        let ignored = Token.sealedTypes(of: wanted).union([.sealID, .uniqueID])
        let visible = wanted.filter { !ignored.contains($0.key) }
        for rowID in candidates {
            let reference = ObjectReference(isSessionObject: false, rowID: rowID)
            let stored: AttributeSet
            do throws(CoreError) {
                stored = try loadStored(reference, context: context)
            } catch  where error.code == .objectNotFound {
                continue
            }
            if stored.filter({ !ignored.contains($0.key) }) == visible { return reference }
        }
        return nil
    }
}
