internal import Foundation
internal import Keychain

// SecItem… with kSecClassKey: the keychain's key items (PKCS#11 key objects, ARCHITECTURE.md §7.1).

private let changeableKeyAttribute =
    "only kSecAttrLabel, kSecAttrApplicationLabel and kSecAttrApplicationTag change"
private let allOperations = Set(ItemOperation.allCases)

private let keyItemSpecs: [String: KeySpec] = [
    kSecAttrKeyClass as String: KeySpec(
        name: "kSecAttrKeyClass", operations: queryOperations, notChangeable: changeableKeyAttribute),
    kSecAttrKeyType as String: KeySpec(
        name: "kSecAttrKeyType", operations: queryOperations, notChangeable: changeableKeyAttribute),
    kSecAttrKeySizeInBits as String: KeySpec(
        name: "kSecAttrKeySizeInBits", operations: queryOperations, notChangeable: changeableKeyAttribute),
    kSecAttrEffectiveKeySize as String: KeySpec(
        name: "kSecAttrEffectiveKeySize", operations: queryOperations, notChangeable: changeableKeyAttribute),
    kSecAttrLabel as String: KeySpec(name: "kSecAttrLabel", operations: allOperations),
    kSecAttrApplicationLabel as String: KeySpec(name: "kSecAttrApplicationLabel", operations: allOperations),
    kSecAttrApplicationTag as String: KeySpec(name: "kSecAttrApplicationTag", operations: allOperations),
    kSecAttrIsPermanent as String: KeySpec(
        name: "kSecAttrIsPermanent", operations: queryOperations, notChangeable: changeableKeyAttribute),
    kSecAttrIsSensitive as String: KeySpec(
        name: "kSecAttrIsSensitive", operations: queryOperations, notChangeable: changeableKeyAttribute),
    kSecAttrIsExtractable as String: KeySpec(
        name: "kSecAttrIsExtractable", operations: queryOperations, notChangeable: changeableKeyAttribute),
    kSecAttrCanSign as String: KeySpec(
        name: "kSecAttrCanSign", operations: queryOperations, notChangeable: changeableKeyAttribute),
    kSecAttrCanVerify as String: KeySpec(
        name: "kSecAttrCanVerify", operations: queryOperations, notChangeable: changeableKeyAttribute),
    kSecAttrCanEncrypt as String: KeySpec(
        name: "kSecAttrCanEncrypt", operations: queryOperations, notChangeable: changeableKeyAttribute),
    kSecAttrCanDecrypt as String: KeySpec(
        name: "kSecAttrCanDecrypt", operations: queryOperations, notChangeable: changeableKeyAttribute),
    kSecAttrCanDerive as String: KeySpec(
        name: "kSecAttrCanDerive", operations: queryOperations, notChangeable: changeableKeyAttribute),
    kSecAttrCanWrap as String: KeySpec(
        name: "kSecAttrCanWrap", operations: queryOperations, notChangeable: changeableKeyAttribute),
    kSecAttrCanUnwrap as String: KeySpec(
        name: "kSecAttrCanUnwrap", operations: queryOperations, notChangeable: changeableKeyAttribute),
    kSecValueRef as String: KeySpec(
        name: "kSecValueRef", operations: queryOperations, notChangeable: changeableKeyAttribute),
    kSecValueData as String: KeySpec(
        name: "kSecValueData", operations: [.add], notChangeable: changeableKeyAttribute),
].merging(keyAttributeSpecs) { own, _ in own }.merging(resultSpecs) { own, _ in own }

/// A `SecItem…` dictionary for keys, checked and typed. Creating one changes nothing.
struct KeyItemRequest {
    var keyClass: KeyClass?
    /// kSecAttrKeyClassSymmetric given: symmetric keys only.
    var isSymmetric = false
    var keyType: KeyType?
    /// A symmetric kSecAttrKeyType given (kSecAttrKeyTypeAES…): symmetric keys only.
    var secretKeyType: SecretKeyType?
    var sizeInBits: Int?
    var label: String?
    var applicationLabel: [UInt8]?
    var applicationTag: [UInt8]?
    var isPermanent: Bool?
    var isSensitive: Bool?
    var isExtractable: Bool?
    /// kSecAttrCan… given: each usage with the value it must have.
    var usages: [(KeyUsage, Bool)] = []
    var valueRef: SecKey?
    var valueData: Data?
    var valuePersistentRef: [UInt8]?
    var returnTypes: ReturnTypes = []
    var limit: MatchLimit?
    /// Apple's common attributes and `kSecUse…` options; `kSecUseAuthenticationContext` is the
    /// PIN the returned `SecKey`s keep for their uses.
    var common = ItemAttributeRequest()

    init(_ dictionary: ItemDictionary, for operation: ItemOperation) throws(KeychainError) {
        for (key, name, value) in try checkedEntries(dictionary, for: operation, keyItemSpecs) {
            // kSecAttrKeyType is Apple's "type", as kSecAttrType of passwords: the key's own
            // keys are read as its own.
            if keyAttributeSpecs[key] != nil, try common.read(key, name, value, for: operation) { continue }
            try read(key, name, value)
        }
        if operation == .update || operation == .delete, let limit, limit != .all {
            throw KeychainError(
                .parameter,
                "\(operation.name) applies to every match: kSecMatchLimit may only be kSecMatchLimitAll")
        }
    }

    private mutating func read(_ key: String, _ name: String, _ value: Any) throws(KeychainError) {
        if try readReturnType(key, name, value, into: &returnTypes) { return }
        let usageFlags: [String: KeyUsage] = [
            kSecAttrCanSign as String: .sign, kSecAttrCanVerify as String: .verify,
            kSecAttrCanEncrypt as String: .encrypt,
            kSecAttrCanDecrypt as String: .decrypt, kSecAttrCanDerive as String: .derive,
            kSecAttrCanWrap as String: .wrap,
            kSecAttrCanUnwrap as String: .unwrap,
        ]
        if let flag = usageFlags[key] {
            usages.append((flag, try boolean(value, name)))
            return
        }
        switch key {
        case kSecAttrKeyClass:
            if isSymmetricKeyClass(value) {
                isSymmetric = true
            } else {
                keyClass = try Security.keyClass(value)
            }
        case kSecAttrKeyType:
            if let type = Security.secretKeyType(value) {
                secretKeyType = type
            } else {
                keyType = try Security.keyType(value)
            }
        case kSecAttrKeySizeInBits, kSecAttrEffectiveKeySize:
            let size = try integer(value, name)
            if let sizeInBits, sizeInBits != size {
                throw KeychainError(.parameter, "kSecAttrKeySizeInBits and kSecAttrEffectiveKeySize disagree")
            }
            sizeInBits = size
        case kSecAttrLabel: label = try text(value, name, .label, into: &common.attributes)
        case kSecAttrApplicationLabel: applicationLabel = Array(try typed(value, name, "CFData") as Data)
        case kSecAttrApplicationTag:
            applicationTag = try Security.applicationTag(value)
            common.attributes.valueTypes[.applicationTag] = value is Data ? .data : .string
        case kSecAttrIsPermanent: isPermanent = try boolean(value, name)
        case kSecAttrIsSensitive: isSensitive = try boolean(value, name)
        case kSecAttrIsExtractable: isExtractable = try boolean(value, name)
        case kSecValueRef:
            guard let key = value as? SecKey else {
                throw KeychainError(.parameter, "kSecValueRef must be a SecKey, not \(typeName(value))")
            }
            valueRef = key
        case kSecValueData: valueData = try typed(value, name, "CFData") as Data
        case kSecValuePersistentRef: valuePersistentRef = Array(try typed(value, name, "CFData") as Data)
        case kSecMatchLimit: limit = try matchLimit(value)
        default: throw KeychainError(.parameter, "unknown key '\(key)'")
        }
    }

    // MARK: Adding

    /// SecItemAdd: stores the key of kSecValueRef or kSecValueData (a private key with its
    /// public key, or a public key alone).
    func add(_ result: UnsafeMutablePointer<CFTypeRef?>?) throws(KeychainError) {
        try requireResultPointer(returnTypes, result)
        if isSymmetric || secretKeyType != nil {
            try addSymmetricKey(result)
            return
        }
        if isPermanent == false {
            throw KeychainError(.parameter, "SecItemAdd stores keys: kSecAttrIsPermanent cannot be false")
        }
        let key = try keyToAdd()
        guard let algorithm = key.algorithm, let publicKey = key.publicKey else {
            throw KeychainError(.duplicateItem, "the symmetric key is already stored")
        }
        if let keyClass, keyClass != (key.isPrivate ? .private : .public) {
            throw KeychainError(.parameter, "kSecAttrKeyClass does not match the key being added")
        }
        if let keyType, keyType != algorithm.type {
            throw KeychainError(.parameter, "kSecAttrKeyType does not match the key being added")
        }
        if let sizeInBits, sizeInBits != algorithm.sizeInBits {
            throw KeychainError(.parameter, "kSecAttrKeySizeInBits does not match the key being added")
        }
        let keychain = try Keychain()
        let duplicate = KeyQuery(
            keyClass: key.isPrivate ? .private : .public,
            applicationLabel: applicationLabel ?? publicKey.publicKeyHash,
            applicationTag: applicationTag, anySynchronizable: true, limit: .one)
        guard try keychain.keys(matching: duplicate).isEmpty else {
            throw KeychainError(.duplicateItem, "the key is already stored")
        }
        let item: KeyItem
        switch key.storage {
        case .item, .secretKeyItem: throw KeychainError(.duplicateItem, "the key is already stored")
        case .publicKey(let publicKey):
            guard usages.isEmpty, isSensitive == nil, isExtractable == nil else {
                throw KeychainError(.parameter, "a public key is stored with its label and tags only")
            }
            item = try keychain.add(
                publicKey, label: label, applicationTag: applicationTag, attributes: common.attributes)
            if let applicationLabel {
                _ = try keychain.update([item], setting: KeyChanges(applicationLabel: applicationLabel))
            }
        case .privateKey(let privateKey):
            var usage: KeyUsage?
            if !usages.isEmpty {
                var flags: KeyUsage = [.sign, .decrypt, .derive]
                for (flag, allowed) in usages {
                    if allowed { flags.insert(flag) } else { flags.remove(flag) }
                }
                usage = flags
            }
            // Apple's defaults: extractable and not sensitive; a key whose access control needs
            // the PIN for each use stays in the token (KeychainCore's rule).
            let staysInToken = common.attributes.accessControl?.needsPINForEachUse == true
            let privateAttributes = NewKeyAttributes(
                label: label, applicationTag: applicationTag, applicationLabel: applicationLabel,
                usage: usage,
                isSensitive: isSensitive ?? staysInToken, isExtractable: isExtractable ?? !staysInToken,
                common: common.attributes)
            // PKCS#11 keeps a key pair as two objects; Apple's keychain keeps the key added.
            // The public object carries the label and key ID but not the tag, so that a query
            // by tag finds the private key alone, as on Apple platforms; and the common
            // attributes but access control, so that a query for the item's accessibility,
            // group or synchronizable flag finds no half it was not given for.
            var publicAttributes = NewKeyAttributes(label: label, applicationLabel: applicationLabel)
            publicAttributes.common = common.attributes
            publicAttributes.common.accessControl = nil
            item = try keychain.add(privateKey, privateKey: privateAttributes, publicKey: publicAttributes)
                .privateKey
        }
        if let stored = try keychain.keys(matching: KeyQuery(persistentReference: item.persistentReference))
            .first,
            !returnTypes.isEmpty
        {
            result?.pointee = try value(for: stored, in: keychain)
        }
    }

    /// SecItemAdd of a symmetric key: kSecValueData holds its value, kSecAttrKeyType its type
    /// (kSecAttrKeyTypeAES…). Stored sensitive, as every secret key here, through the
    /// Keychain API's import; usage flags default to Apple's for symmetric keys.
    private func addSymmetricKey(_ result: UnsafeMutablePointer<CFTypeRef?>?) throws(KeychainError) {
        guard let valueData, valueRef == nil else {
            throw KeychainError(.parameter, "SecItemAdd stores a symmetric key given as kSecValueData")
        }
        guard let secretKeyType, isSymmetric || keyClass == nil else {
            throw KeychainError(
                .parameter,
                "a symmetric key needs kSecAttrKeyType kSecAttrKeyTypeAES, kSecAttrKeyTypeHMAC… or "
                    + "kSecAttrKeyTypeGenericSecret")
        }
        if isPermanent == false {
            throw KeychainError(.parameter, "SecItemAdd stores keys: kSecAttrIsPermanent cannot be false")
        }
        if isSensitive == false {
            throw KeychainError(.parameter, "symmetric keys are always sensitive here (kSecAttrIsSensitive)")
        }
        if let sizeInBits, sizeInBits != valueData.count * 8 {
            throw KeychainError(.parameter, "kSecAttrKeySizeInBits does not match the key's value")
        }
        let keychain = try Keychain()
        if let applicationLabel {
            let duplicate = SecretKeyQuery(
                applicationLabel: applicationLabel, applicationTag: applicationTag, limit: .one)
            guard try keychain.secretKeys(matching: duplicate).isEmpty else {
                throw KeychainError(
                    .duplicateItem, "a symmetric key with this kSecAttrApplicationLabel is stored")
            }
        }
        var usage: KeyUsage?
        if !usages.isEmpty {
            // Apple's defaults for a symmetric key's flags not given.
            var flags: KeyUsage = [.encrypt, .decrypt, .derive, .wrap, .unwrap]
            for (flag, allowed) in usages {
                if allowed { flags.insert(flag) } else { flags.remove(flag) }
            }
            usage = flags
        }
        var secret = Array(valueData)
        defer { secret.withUnsafeMutableBufferPointer { $0.update(repeating: 0) } }
        let item = try keychain.importSecretKey(
            secret, type: secretKeyType, label: label, applicationLabel: applicationLabel,
            applicationTag: applicationTag, usage: usage, extractable: isExtractable ?? true,
            attributes: common.attributes)
        if !returnTypes.isEmpty { result?.pointee = try value(for: item, in: keychain) }
    }

    private func keyToAdd() throws(KeychainError) -> SecKey {
        if let valueRef {
            if valueData != nil {
                throw KeychainError(.parameter, "give the key as kSecValueRef or kSecValueData, not both")
            }
            return valueRef
        }
        guard let valueData else {
            throw KeychainError(
                .parameter, "SecItemAdd needs the key as kSecValueRef (a SecKey) or kSecValueData")
        }
        guard let keyType, let keyClass else {
            throw KeychainError(
                .parameter, "a key given as kSecValueData needs kSecAttrKeyType and kSecAttrKeyClass")
        }
        let bytes = Array(valueData)
        switch keyClass {
        case .public: return SecKey(.publicKey(try PublicKey(externalRepresentation: bytes, type: keyType)))
        case .private:
            return SecKey(.privateKey(try PrivateKey(externalRepresentation: bytes, type: keyType)))
        }
    }

    // MARK: Matching

    /// The stored key-pair halves matching the request, up to `limit`.
    func matchingKeys(in keychain: Keychain, limit: MatchLimit) throws(KeychainError) -> [KeyItem] {
        if isPermanent == false { return [] }  // only permanent keys are items
        if isSymmetric || secretKeyType != nil { return [] }
        var query = KeyQuery(
            keyClass: keyClass, type: keyType, sizeInBits: sizeInBits, label: label,
            applicationLabel: applicationLabel, applicationTag: applicationTag,
            persistentReference: valuePersistentRef, attributes: common.attributes,
            anySynchronizable: common.anySynchronizable)
        for (flag, allowed) in usages where allowed { query.usage.insert(flag) }
        if let valueRef {
            switch valueRef.storage {
            case .item(_, let item):
                guard
                    query.persistentReference == nil || query.persistentReference == item.persistentReference
                else {
                    return []
                }
                query.persistentReference = item.persistentReference
            case .publicKey, .privateKey:
                // An in-memory key matches the stored items of the same half of the same pair.
                let wanted: KeyClass = valueRef.isPrivate ? .private : .public
                guard query.keyClass == nil || query.keyClass == wanted else { return [] }
                query.keyClass = wanted
            case .secretKeyItem: return []
            }
        }
        var keys = try keychain.keys(matching: query).filter { item in
            (isSensitive.map { $0 == item.isSensitive } ?? true)
                && (isExtractable.map { $0 == item.isExtractable } ?? true)
                && usages.allSatisfy { flag, allowed in allowed || !item.usage.contains(flag) }
                && (valueRef.map { $0.publicKey == item.publicKey } ?? true)
        }
        switch limit {
        case .one: keys = Array(keys.prefix(1))
        case .all: break
        case .maximum(let count): keys = Array(keys.prefix(count))
        }
        return keys
    }

    /// The stored symmetric keys matching the request (none when it asks for a key-pair
    /// half, an asymmetric type or an in-memory key), up to `limit`.
    func matchingSecretKeys(in keychain: Keychain, limit: MatchLimit) throws(KeychainError) -> [SecretKeyItem]
    {
        if isPermanent == false || keyClass != nil || keyType != nil { return [] }
        var query = SecretKeyQuery(
            type: secretKeyType, sizeInBits: sizeInBits, label: label, applicationLabel: applicationLabel,
            applicationTag: applicationTag, persistentReference: valuePersistentRef,
            attributes: common.attributes, anySynchronizable: common.anySynchronizable)
        for (flag, allowed) in usages where allowed { query.usage.insert(flag) }
        if let valueRef {
            guard case .secretKeyItem(_, let item) = valueRef.storage,
                query.persistentReference == nil || query.persistentReference == item.persistentReference
            else { return [] }
            query.persistentReference = item.persistentReference
        }
        // Without a PIN set, or locked, the keychain shows no private objects: nothing to find.
        guard keychain.isUnlocked else { return [] }
        var keys = try keychain.secretKeys(matching: query).filter { item in
            (isSensitive.map { $0 == item.isSensitive } ?? true)
                && (isExtractable.map { $0 == item.isExtractable } ?? true)
                && usages.allSatisfy { flag, allowed in allowed || !item.usage.contains(flag) }
        }
        switch limit {
        case .one: keys = Array(keys.prefix(1))
        case .all: break
        case .maximum(let count): keys = Array(keys.prefix(count))
        }
        return keys
    }

    /// Every stored key matching the request, key-pair halves first, up to `limit`.
    private func matchingAll(in keychain: Keychain, limit: MatchLimit) throws(KeychainError) -> [FoundKey] {
        var found = try matchingKeys(in: keychain, limit: limit).map(FoundKey.pair)
        var left = MatchLimit.all
        let wanted: Int? =
            switch limit {
            case .all: nil
            case .one: 1
            case .maximum(let count): count
            }
        if let wanted {
            guard found.count < wanted else { return found }
            left = wanted - found.count == 1 ? .one : .maximum(wanted - found.count)
        }
        found += try matchingSecretKeys(in: keychain, limit: left).map(FoundKey.secret)
        return found
    }

    /// SecItemCopyMatching: the values to return (none without `kSecReturn…` keys).
    func copyMatching(limit: MatchLimit) throws(KeychainError) -> [CFTypeRef] {
        let keychain = try Keychain()
        let keys = try matchingAll(in: keychain, limit: limit)
        guard !keys.isEmpty else { throw KeychainError(.itemNotFound, "no key matches the query") }
        guard !returnTypes.isEmpty else { return [] }
        var values: [CFTypeRef] = []
        for key in keys {
            switch key {
            case .pair(let item): values.append(try value(for: item, in: keychain))
            case .secret(let item): values.append(try value(for: item, in: keychain))
            }
        }
        return values
    }

    /// A found key's value; its `SecKey` keeps the query's `kSecUseAuthenticationContext` (the
    /// PIN) for each of its uses, as Apple's keeps the LAContext.
    private func value(for key: KeyItem, in keychain: Keychain) throws(KeychainError) -> CFTypeRef {
        try returnValue(
            returnTypes, attributes: { keyAttributes(of: key) },
            reference: { SecKey(.item(keychain, key), authentication: common.authentication) },
            data: { () throws(KeychainError) in
                Data(try externalRepresentation(of: SecKey(.item(keychain, key))))
            },
            persistentReference: key.persistentReference)
    }

    private func value(for key: SecretKeyItem, in keychain: Keychain) throws(KeychainError) -> CFTypeRef {
        try returnValue(
            returnTypes,
            attributes: { secretKeyAttributes(of: key) },
            reference: { SecKey(.secretKeyItem(keychain, key)) },
            data: { () throws(KeychainError) in throw symmetricKeyValueWithheld },
            persistentReference: key.persistentReference)
    }

    // MARK: Changing

    /// SecItemUpdate: `changes` is the attributesToUpdate request. Symmetric keys cannot be
    /// changed here yet: a query that matches one changes nothing.
    func update(with changes: KeyItemRequest) throws(KeychainError) {
        let keychain = try Keychain()
        let keys = try matchingKeys(in: keychain, limit: .all)
        let secretKeys = try matchingSecretKeys(in: keychain, limit: .one)
        guard secretKeys.isEmpty else {
            throw KeychainError(.unimplemented, "SecItemUpdate does not change symmetric keys")
        }
        guard !keys.isEmpty else { throw KeychainError(.itemNotFound, "no key matches the query") }
        let setting = KeyChanges(
            label: changes.label, applicationLabel: changes.applicationLabel,
            applicationTag: changes.applicationTag, attributes: changes.common.attributes)
        guard !setting.isEmpty else { return }
        try keychain.update(keys, setting: setting)
    }

    /// SecItemDelete: the key-pair halves in one transaction, then each symmetric key.
    func delete() throws(KeychainError) {
        let keychain = try Keychain()
        let keys = try matchingKeys(in: keychain, limit: .all)
        let secretKeys = try matchingSecretKeys(in: keychain, limit: .all)
        var deleted = keys.isEmpty ? 0 : try keychain.delete(keys)
        for key in secretKeys {
            do {
                try keychain.delete(key)
                deleted += 1
            } catch  where error.code == .itemNotFound {
                continue  // deleted meanwhile
            }
        }
        guard deleted > 0 else { throw KeychainError(.itemNotFound, "no key matches the query") }
    }
}
