/// What every use of a key object checks (`Token.checkUse`, `Token.needsPINForEachUse`), read
/// once from its attributes: its type, which usage attributes are TRUE, its
/// CKA_ALLOWED_MECHANISMS, whether it is private, whether it needs the PIN for each use. A
/// kept key carries its facts (`CachedKey`), so a C_SignInit with an unchanged key runs the
/// whole check on a few integers instead of decoding attributes again.
package struct KeyUseFacts: Sendable {
    /// CKA_KEY_TYPE; nil when missing or malformed.
    let keyType: UInt64?
    /// The usage attributes (`KeyUseFacts.usageAttributes`) that are TRUE, one bit each.
    private let trueUsages: UInt16
    /// The mechanisms of a non-empty CKA_ALLOWED_MECHANISMS (an empty list when none decodes);
    /// nil when the key has no such list, or an empty one: any mechanism.
    let allowedMechanisms: [UInt64]?
    /// CKA_PRIVATE is TRUE.
    let isPrivate: Bool
    /// An Apple access control that needs presence (`AccessControl.needsPINForEachUse`).
    let accessControlNeedsPIN: Bool
    /// CKA_ALWAYS_AUTHENTICATE is TRUE.
    let alwaysAuthenticate: Bool

    /// The usage attributes a use can require (`KeyUse.attribute`).
    private static let usageAttributes: [AttributeType] = [
        .sign, .verify, .encrypt, .decrypt, .wrap, .unwrap, .derive,
    ]

    init(_ attributes: AttributeSet) {
        keyType = attributes.ulong(.keyType)
        var bits: UInt16 = 0
        for (index, attribute) in KeyUseFacts.usageAttributes.enumerated()
        where attributes.bool(attribute) == true {
            bits |= 1 << UInt16(truncatingIfNeeded: index)
        }
        trueUsages = bits
        if let allowed = attributes[.allowedMechanisms], !allowed.isEmpty {
            allowedMechanisms = stride(from: 0, to: allowed.count, by: 8).compactMap { start in
                AttributeValue.ulong(Array(allowed[start..<min(start + 8, allowed.count)]))
            }
        } else {
            allowedMechanisms = nil
        }
        isPrivate = attributes.bool(.private) ?? false
        accessControlNeedsPIN = AccessControl.needsPINForEachUse(attributes)
        alwaysAuthenticate = attributes.bool(.alwaysAuthenticate) == true
    }

    /// True when `attribute` is TRUE; a missing one, or one that is not a usage attribute,
    /// counts as FALSE.
    func isTrue(_ attribute: AttributeType) -> Bool {
        guard let index = KeyUseFacts.usageAttributes.firstIndex(of: attribute) else { return false }
        return trueUsages & (1 << UInt16(truncatingIfNeeded: index)) != 0
    }
}
