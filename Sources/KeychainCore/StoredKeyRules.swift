// A key stored by an earlier version reads as the rules make one now, on every path that
// loads an object (`Token.storedAttributes`): reads, finds' results, uses, copies and changes.
// Nothing is written back; a copy or a change stores the settled attributes.

extension ObjectPolicy {
    /// `attributes` of a stored object settled under today's key rules: every key has
    /// CKA_ALLOWED_MECHANISMS (empty: no list), an asymmetric key no usage its type cannot have
    /// (`KeyTypeUsages`), and a secret key too short to withstand a search of its check value
    /// none (`SecretKeyKind.checkValue(of:)`).
    static func settleStored(_ attributes: inout AttributeSet) {
        guard let rawClass = attributes.ulong(.class) else { return }
        switch ObjectClass(rawValue: rawClass) {
        case .publicKey, .privateKey:
            KeyTypeUsages.settleStored(&attributes)
        case .secretKey:
            if let length = attributes.ulong(.valueLength), !SecretKeyKind.withstandsSearch(length: length) {
                attributes[.checkValue] = ObjectPolicy.empty
            }
        default:
            return
        }
        if attributes[.allowedMechanisms] == nil { attributes[.allowedMechanisms] = ObjectPolicy.empty }
    }
}
