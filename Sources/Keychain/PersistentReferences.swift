internal import KeychainCore

/// What kind of item a persistent reference names (Apple takes a query's class from it).
public enum ItemKind: Sendable, Equatable {
    case certificate, key, genericPassword, internetPassword
}

extension Keychain {
    /// The kind of the stored item `persistentReference` names; nil when none does (or it is
    /// private and the keychain locked).
    public func itemKind(persistentReference: [UInt8]) throws(KeychainError) -> ItemKind? {
        try KeychainError.mapping { () throws(CoreError) -> ItemKind? in
            let found = try token.findObjects(
                [.uniqueID: persistentReference, .token: [1]], context: context)
            guard let reference = found.first else { return nil }
            let attributes = try token.attributes(of: reference, context: context, revealing: [])
            switch attributes.ulong(.class).map(ObjectClass.init(rawValue:)) {
            case .certificate?: return .certificate
            case .publicKey?, .privateKey?, .secretKey?: return .key
            case .data?:
                return PasswordClass(of: attributes) == .internet ? .internetPassword : .genericPassword
            default: return nil
            }
        }
    }
}
