/// What a copy may change, and what a trusted key's holder may not: rules of
/// `ObjectPolicy.check`, kept as data where they can be (`AttributeRules`) and applied by it.
extension ObjectPolicy {
    /// The attributes that let a key be used: turning one on gives the key a new use.
    static let usages: Set<AttributeType> = [
        .encrypt, .decrypt, .sign, .verify, .wrap, .unwrap, .derive, .signRecover, .verifyRecover,
    ]

    /// C_CopyObject's rule for one attribute of its template (v2.40 §5.7): CKA_TOKEN, CKA_PRIVATE
    /// and the one-way attributes that only tighten (CKA_SENSITIVE to TRUE, CKA_EXTRACTABLE,
    /// CKA_MODIFIABLE, CKA_COPYABLE, CKA_DESTROYABLE to FALSE; CKA_TRUSTED to FALSE) always;
    /// anything else only when C_SetAttributeValue could change it on the source: a modifiable
    /// attribute of a modifiable object, even when the value is the one it has. So a copy
    /// of an unmodifiable object differs from it in nothing else (CKR_ATTRIBUTE_READ_ONLY, as
    /// SoftHSM2), and a copy gives no key a use its original could not be given.
    func checkCopied(_ type: AttributeType, _ value: [UInt8], rules: AttributeRules, source: AttributeSet?)
        throws(CoreError)
    {
        let new = AttributeValue.bool(value)
        let tightens =
            (rules.contains(.onlyTurnsOn) && new == true) || (rules.contains(.onlyTurnsOff) && new == false)
            || (rules.contains(.securityOfficerOnly) && new == false)
        if rules.contains(.settableOnCopy) || tightens { return }
        guard source?.bool(.modifiable) != false else {
            throw CoreError(
                .attributeReadOnly,
                "attribute \(type) cannot be changed by a copy: the object is not modifiable "
                    + "(CKA_MODIFIABLE is false), so a copy may change only CKA_TOKEN, CKA_PRIVATE and "
                    + "what only tightens")
        }
        guard rules.contains(.modifiable) else {
            throw CoreError(.attributeReadOnly, "attribute \(type) cannot be changed by a copy")
        }
    }

    /// A trusted key (CKA_TRUSTED, which only the security officer sets) gets a new use only
    /// from the security officer, by a change or in a copy. Its trust lets it wrap the keys
    /// marked CKA_WRAP_WITH_TRUSTED: a user who could turn on CKA_DECRYPT or CKA_UNWRAP of the
    /// SO's wrap-only key (or of a copy holding the same value) could undo such a wrapping
    /// (C_Decrypt with CKM_AES_ECB inverts AES key wrap) and read those keys in clear; CKA_WRAP
    /// likewise, with the key's own unwrapping.
    static func checkTrustedKeyUse(
        _ type: AttributeType, _ new: Bool?, current: AttributeSet?, asSecurityOfficer: Bool
    ) throws(CoreError) {
        guard usages.contains(type), new == true, let current, current.bool(.trusted) == true,
            current.bool(type) != true, !asSecurityOfficer
        else { return }
        throw CoreError(
            .attributeReadOnly,
            "only the security officer may give a trusted key (CKA_TRUSTED) a new use (\(type))")
    }

    /// A copy of a trusted key is trusted only when the security officer makes it (v2.40
    /// §4.10: CKA_TRUSTED is TRUE only from the SO); anyone else's copy has CKA_TRUSTED FALSE,
    /// so it wraps no CKA_WRAP_WITH_TRUSTED key. A certificate's trust is its trust settings
    /// (Trust.swift), not this attribute.
    func settleTrust(_ attributes: inout AttributeSet, asSecurityOfficer: Bool) {
        guard !asSecurityOfficer, objectClass != .certificate, attributes.bool(.trusted) == true else {
            return
        }
        attributes[.trusted] = ObjectPolicy.no
    }
}
