internal import KeychainStorage

/// A private key left behind by a failed multi-object write is taken up again, not stored twice.
///
/// Clients that store an identity as several objects cannot make the write atomic: Java's
/// SunPKCS11 keystore (`KeyStore.setKeyEntry`, `keytool -importkeystore`) creates the private
/// key with CKA_ID = the alias, then the certificate. When the certificate is refused, the key
/// stays behind, and the JDK never sees it again: its keystore lists only keys that have a
/// certificate with the same CKA_ID, so it neither deletes the key nor reuses it. The next
/// attempt creates the same key a second time, and once a certificate is stored, the JDK
/// finds two private keys with one CKA_ID and refuses to use either ("invalid KeyStore state").
///
/// So C_CreateObject of a token private key that equals a stored *orphan* (no certificate
/// with its CKA_ID) in every attribute but the sealed key material (same CKA_ID, same public
/// key, same label and flags; the same public key means the same private key) returns the
/// stored key instead of a copy. Every check of a new object runs first (`checkInsert`): a
/// read-only session, a write-protected token, or a caller without the token key (not logged
/// in) is refused as that write would be, and nothing stored changes. A key that differs in anything, or
/// whose CKA_ID a certificate already has, is stored as a new object, as before. The one
/// thing a caller can tell: the handle names the key stored earlier, so destroying it removes
/// that key (it was unusable to its writer anyway). Only C_CreateObject does this: SecItemAdd
/// reports a duplicate key as errSecDuplicateItem, as Apple's keychain does. Two processes writing the
/// same key at the same instant can still both store it: the check and the insert are one
/// lock in this process, not one transaction across processes.
extension Token {
}

extension TokenState {
    /// The stored orphan token private key `object` would duplicate, if there is one the
    /// context may see and may write.
    func storedOrphanTwinLocked(of object: NewObject, context: AccessContext) throws(CoreError)
        -> ObjectReference?
    {
        let wanted = object.attributes
        guard wanted.ulong(.class) == ObjectClass.privateKey.rawValue, wanted.bool(.token) == true,
            !object.isSealed, let id = wanted[.id], let publicKeyInfo = wanted[.publicKeyInfo]
        else { return nil }
        // Every check storing the key would make comes first, the token key (a login)
        // included: a caller who could not store this key gets that error, never a handle to
        // a key another writer stored.
        let store = try checkInsert(object, context: context)
        let certificates = try CoreError.mapping {
            try store.find([
                StoredAttribute(
                    AttributeType.class.rawValue, AttributeValue.encode(ObjectClass.certificate.rawValue)),
                StoredAttribute(AttributeType.id.rawValue, id),
            ])
        }
        guard certificates.isEmpty else { return nil }
        let candidates = try CoreError.mapping {
            try store.find([
                StoredAttribute(AttributeType.id.rawValue, id),
                StoredAttribute(AttributeType.publicKeyInfo.rawValue, publicKeyInfo),
                StoredAttribute(AttributeType.class.rawValue, wanted[.class] ?? []),
            ])
        }
        // The token stamps the dates when it stores an object: they are not the caller's.
        let ignored = Token.sealedTypes(of: wanted).union([
            .sealID, .uniqueID, .creationDate, .modificationDate,
        ])
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
