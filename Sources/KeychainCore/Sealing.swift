internal import KeychainCrypto
internal import KeychainStorage

/// Secrets at rest (ARCHITECTURE.md §3.6, §6.3): which values an object keeps sealed, and sealing and opening
/// them under the token key (token objects) or this process's session key (session objects).
///
/// Sealing is decided by attribute type, never by CKA_PRIVATE: every secret part of a key
/// (and its PKCS#8 key material) is sealed whatever CKA_PRIVATE says, so a key that is not
/// private is still never stored in clear; other private objects (generic passwords, private
/// data and certificates) keep their CKA_VALUE sealed. Each box is AES-256-GCM under the token
/// key, bound by its associated data to the object's seal ID and to the attribute type.
///
/// A session object (CKA_TOKEN false) lives only in this process's memory store and goes with
/// it: its values are sealed the same way under a random key the session store was made with
/// (`sessionSealingKey`), not the token key. So a public session key is made and used with no
/// login (v2.40 §6.7.1 lets a public session create public session objects), and no key byte
/// lies in clear even in memory. A copy between the two (C_CopyObject changing CKA_TOKEN)
/// opens the values under one key and seals them again under the other (ObjectChanges.swift).
extension Token {
    /// The attribute types `attributes` keeps sealed at rest.
    static func sealedTypes(of attributes: AttributeSet) -> Set<AttributeType> {
        if let policy = policy(ofStored: attributes), !policy.sealedTypes.isEmpty {
            return policy.sealedTypes
        }
        return attributes.bool(.private) == true ? [.value] : []
    }

    /// `stored` without any sealed value or seal ID: what a caller may always see.
    static func concealed(_ stored: AttributeSet) -> AttributeSet {
        var visible = stored
        for type in sealedTypes(of: stored) { visible[type] = nil }
        visible[.sealID] = nil
        return visible
    }
}

extension Token {
    fileprivate static let clearKeysSealedKey = "sealed.clear-keys"

}

extension TokenState {
    /// The key that seals and opens the values of an object: the token key of the current
    /// login for a token object (`currentTokenKey`), the session key for a session object.
    func sealingKey(tokenObject: Bool, toSeal: Bool) throws(CoreError) -> SecretBytes {
        if tokenObject { return try currentTokenKey(toSeal: toSeal) }
        _ = try volatileStore()
        guard let key = objects.sessionSealingKey else {
            throw CoreError(.storageFailure, "the session store has no sealing key")
        }
        return key
    }

    /// True when the sealed values of `stored` can be opened now: a session object's always,
    /// a token object's with a login.
    func canOpen(_ stored: AttributeSet) -> Bool {
        stored.bool(.token) != true || authentication.login != nil
    }

    /// Seals the values of `types` present in `attributes` under `attributes[.sealID]` and the
    /// key of the object's kind (`sealingKey`: a token object needs a current login).
    func sealed(_ attributes: AttributeSet, types: Set<AttributeType>) throws(CoreError) -> AttributeSet {
        var result = attributes
        try seal(&result, types: types)
        return result
    }

    /// The seal ID of a new object, unique among the objects sealed under its key: random for a
    /// token object; for a session object the session key's next unique value
    /// (`SealingContext.uniqueValue`), which draws nothing from the random generator. A copy
    /// into the other store gets a new one (`copyObject`).
    func newSealID(tokenObject: Bool) throws(CoreError) -> [UInt8] {
        if !tokenObject {
            _ = try volatileStore()
            if let sealer = objects.sessionSealer {
                return try CoreError.mapping { try sealer.uniqueValue() }
            }
        }
        return try CoreError.mapping { try SecureRandom.bytes(16) }
    }

    /// `sealed` in place. A session object's values are sealed through the session key's
    /// kept context (`SealingContext`: no key schedule, a counter nonce), a token object's
    /// under the token key with a random nonce.
    func seal(_ attributes: inout AttributeSet, types: Set<AttributeType>) throws(CoreError) {
        guard let sealID = attributes[.sealID] else {
            throw CoreError(.storageCorrupt, "an object to seal has no seal ID")
        }
        let tokenObject = attributes.bool(.token) == true
        let key = try sealingKey(tokenObject: tokenObject, toSeal: true)
        let sealer = tokenObject ? nil : objects.sessionSealer
        for type in types {
            guard let value = attributes[type] else { continue }
            let associatedData = sealID + AttributeValue.encode(type.rawValue)
            attributes[type] = try CoreError.mapping {
                if let sealer {
                    return try sealer.seal(SecretBytes(value), associatedData: associatedData)
                }
                return try SecretBox.seal(SecretBytes(value), key: key, associatedData: associatedData)
            }
        }
    }

    /// `stored` with the sealed values of `types` opened and every other sealed value (and the
    /// seal ID) removed.
    func revealed(_ stored: AttributeSet, _ types: Set<AttributeType>) throws(CoreError) -> AttributeSet {
        var result = stored
        result[.sealID] = nil
        for type in Token.sealedTypes(of: stored) {
            result[type] = types.contains(type) ? try opened(type, of: stored)?.copyBytes() : nil
        }
        return result
    }

    /// The value of sealed type `type` of `stored`, opened into a self-wiping buffer; nil when
    /// the object has none. A value stored in clear by an older version (a key that was not
    /// private, with no seal ID) comes as it is.
    func opened(_ type: AttributeType, of stored: AttributeSet) throws(CoreError) -> SecretBytes? {
        guard let box = stored[type] else { return nil }
        guard let sealID = stored[.sealID] else { return SecretBytes(box) }
        let key = try sealingKey(tokenObject: stored.bool(.token) == true, toSeal: false)
        do {
            return try SecretBox.open(
                box, key: key, associatedData: sealID + AttributeValue.encode(type.rawValue))
        } catch {
            throw CoreError(.storageCorrupt, "a sealed value of an object does not open: \(error)")
        }
    }

    /// Seals what an older version stored in clear: the secret parts of keys that were not
    /// private (CKA_PRIVATE=FALSE), which it kept without a seal ID. Runs at a login, the first
    /// moment the token key is at hand, until one run finishes; a failure is left for the
    /// next login.
    func sealClearKeys() {
        guard let store = objects.persistentStore, !store.isReadOnly,
            (try? store.metadata(Token.clearKeysSealedKey)) == .some(nil)
        else { return }
        let privateKeyClass = StoredAttribute(
            AttributeType.class.rawValue, AttributeValue.encode(ObjectClass.privateKey.rawValue))
        // A failure (busy, full disk) rolls the sweep back whole and leaves the marker unset:
        // the next login tries again; the login itself must not fail for it.
        _ = try? store.write { () throws in
            for id in try store.find([privateKeyClass]) {
                guard let rows = try store.attributes(of: id) else { continue }
                var attributes: AttributeSet = [:]
                for row in rows { attributes[AttributeType(row.type)] = row.value }
                guard attributes[.sealID] == nil else { continue }
                attributes[.sealID] = try SecureRandom.bytes(16)
                let types = Token.sealedTypes(of: attributes)
                let sealed = try self.sealed(attributes, types: types)
                let changes = types.union([.sealID]).compactMap { type in
                    sealed[type].map { StoredAttribute(type.rawValue, $0) }
                }
                try store.update(id, attributes: changes)
            }
            try store.setMetadata(Token.clearKeysSealedKey, [1])
        }
    }
}
