internal import Foundation
internal import Keychain

// The parameters of SecKeyCreateRandomKey (Apple's SecKey.h: kSecAttrKeyType,
// kSecAttrKeySizeInBits, kSecPrivateKeyAttrs, kSecPublicKeyAttrs…), read and checked.

/// The parameters of `SecKeyCreateRandomKey`, checked.
struct NewKeyRequest {
    var algorithm: KeyAlgorithm
    var isPermanent: Bool
    var privateAttributes: NewKeyAttributes
    var publicAttributes: NewKeyAttributes

    /// The keys of one level of the parameters (the top level, or one half's dictionary).
    private static let perKeyAttributes = Set(
        [
            kSecAttrLabel, kSecAttrApplicationTag, kSecAttrApplicationLabel, kSecAttrIsPermanent,
            kSecAttrIsExtractable, kSecAttrIsSensitive, kSecAttrCanSign, kSecAttrCanVerify,
            kSecAttrCanEncrypt,
            kSecAttrCanDecrypt, kSecAttrCanDerive, kSecAttrCanWrap, kSecAttrCanUnwrap,
            kSecAttrAccessible, kSecAttrAccessGroup, kSecAttrSynchronizable, kSecAttrAccessControl,
        ].map { $0 as String })

    init(_ parameters: ItemDictionary) throws(KeychainError) {
        for key in parameters.keys
        where !NewKeyRequest.perKeyAttributes.contains(key)
            && ![
                kSecAttrKeyType, kSecAttrKeySizeInBits, kSecPrivateKeyAttrs, kSecPublicKeyAttrs,
                kSecAttrTokenID,
            ]
            .contains(key as NSString)
        {
            throw KeychainError(.parameter, "unknown key '\(key)' in SecKeyCreateRandomKey's parameters")
        }
        if parameters[kSecAttrTokenID] != nil {
            throw KeychainError(
                .unimplemented, "kSecAttrTokenID: there is no Secure Enclave or other key token here")
        }
        guard let typeValue = parameters[kSecAttrKeyType] else {
            throw KeychainError(.parameter, "SecKeyCreateRandomKey needs kSecAttrKeyType")
        }
        let type = try keyType(typeValue)
        let defaultSize =
            switch type {
            case .rsa: 2048
            case .ellipticCurve, .ed25519: 256
            }
        let size = try parameters[kSecAttrKeySizeInBits].map { value throws(KeychainError) in
            try integer(value, "kSecAttrKeySizeInBits")
        }
        algorithm = KeyAlgorithm(type: type, sizeInBits: size ?? defaultSize)
        var top: [String: Any] = [:]
        for (key, value) in parameters where NewKeyRequest.perKeyAttributes.contains(key) { top[key] = value }
        let privateLevel = try NewKeyRequest.level(parameters, kSecPrivateKeyAttrs, "kSecPrivateKeyAttrs")
        let publicLevel = try NewKeyRequest.level(parameters, kSecPublicKeyAttrs, "kSecPublicKeyAttrs")
        let merged = (private: top.merging(privateLevel) { $1 }, public: top.merging(publicLevel) { $1 })
        let privatePermanent = try NewKeyRequest.bool(merged.private, kSecAttrIsPermanent)
        let publicPermanent = try NewKeyRequest.bool(merged.public, kSecAttrIsPermanent)
        // One stored half needs the other: the pair is stored when either asks for it.
        isPermanent = privatePermanent == true || publicPermanent == true
        privateAttributes = try NewKeyRequest.attributes(merged.private, isPrivate: true)
        publicAttributes = try NewKeyRequest.attributes(merged.public, isPrivate: false)
    }

    private static func level(_ parameters: ItemDictionary, _ key: NSString, _ name: String)
        throws(KeychainError)
        -> [String: Any]
    {
        guard let value = parameters[key] else { return [:] }
        guard let dictionary = value as? [String: Any] else {
            throw KeychainError(.parameter, "\(name) must be a dictionary")
        }
        for inner in dictionary.keys where !perKeyAttributes.contains(inner) {
            throw KeychainError(.parameter, "unknown key '\(inner)' in \(name)")
        }
        return dictionary
    }

    private static func bool(_ level: [String: Any], _ key: NSString) throws(KeychainError) -> Bool? {
        try level[key].map { value throws(KeychainError) in try boolean(value, key as String) }
    }

    private static func attributes(_ level: [String: Any], isPrivate: Bool) throws(KeychainError)
        -> NewKeyAttributes
    {
        var attributes = NewKeyAttributes()
        var common = ItemAttributeRequest()
        // The label and tag come back as the type they were given, as SecItemAdd's do.
        if let label = level[kSecAttrLabel] {
            attributes.label = try text(label, "kSecAttrLabel", .label, into: &common.attributes)
        }
        if let tag = level[kSecAttrApplicationTag] {
            attributes.applicationTag = try applicationTag(tag)
            common.attributes.valueTypes[.applicationTag] = tag is Data ? .data : .string
        }
        if let label = level[kSecAttrApplicationLabel] {
            attributes.applicationLabel = Array(
                try typed(label, "kSecAttrApplicationLabel", "CFData") as Data)
        }
        let usages: [(NSString, KeyUsage)] = [
            (kSecAttrCanSign, .sign), (kSecAttrCanVerify, .verify), (kSecAttrCanEncrypt, .encrypt),
            (kSecAttrCanDecrypt, .decrypt), (kSecAttrCanDerive, .derive), (kSecAttrCanWrap, .wrap),
            (kSecAttrCanUnwrap, .unwrap),
        ]
        if usages.contains(where: { level[$0.0] != nil }) {
            // Apple's defaults for the flags not given: a private key signs, decrypts and
            // derives; a public key verifies and encrypts.
            var usage: KeyUsage = isPrivate ? [.sign, .decrypt, .derive] : [.verify, .encrypt, .derive]
            for (key, flag) in usages {
                guard let given = try bool(level, key) else { continue }
                if given { usage.insert(flag) } else { usage.remove(flag) }
            }
            attributes.usage = usage
        }
        for (key, name) in [
            (kSecAttrAccessible, "kSecAttrAccessible"), (kSecAttrAccessGroup, "kSecAttrAccessGroup"),
            (kSecAttrSynchronizable, "kSecAttrSynchronizable"),
            (kSecAttrAccessControl, "kSecAttrAccessControl"),
        ] {
            if let value = level[key] { _ = try common.read(key as String, name, value, for: .add) }
        }
        attributes.common = common.attributes
        if isPrivate {
            // Apple's defaults for new keys: extractable and not sensitive; a key whose access
            // control needs the PIN for each use stays in the token (KeychainCore's rule).
            let staysInToken = common.attributes.accessControl?.needsPINForEachUse == true
            attributes.isExtractable = try bool(level, kSecAttrIsExtractable) ?? !staysInToken
            attributes.isSensitive = try bool(level, kSecAttrIsSensitive) ?? staysInToken
        }
        return attributes
    }
}

/// A `kSecAttrApplicationTag` value: CFData, or a CFString taken as its UTF-8.
func applicationTag(_ value: Any) throws(KeychainError) -> [UInt8] {
    if let data = value as? Data { return Array(data) }
    if let string = value as? String { return Array(string.utf8) }
    throw KeychainError(.parameter, "kSecAttrApplicationTag must be CFData or a CFString")
}
