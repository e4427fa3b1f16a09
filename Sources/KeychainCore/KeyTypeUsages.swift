// What each kind of key pair can do (PKCS#11 v3.0 §2.1, §2.3): the usage attributes a key of
// a type may have TRUE, and their defaults. One rule for every path: a new key (create,
// generate, unwrap, PKCS#12 import) never has a usage its type cannot have (`settle`: such a
// request is stored FALSE, since clients ask default usages of every key: pkcs11-tool's
// --keypairgen sends CKA_DERIVE=TRUE for Ed25519 and CKA_SIGN=TRUE for X25519); a copy or a
// change that would turn one on is refused (`ObjectPolicy.check`); a key stored before the
// rule reads as it would be made now (`settleStored`).

/// The usages of asymmetric key types. Secret keys are not covered: their mechanisms, not
/// their type, decide (an AES key encrypts, MACs and wraps; a generic secret MACs and derives).
enum KeyTypeUsages {
    /// Every usage attribute of a public or private key.
    static let all: [AttributeType] = [
        .encrypt, .decrypt, .sign, .verify, .signRecover, .verifyRecover, .wrap, .unwrap, .derive,
    ]

    /// The usages a key of `keyType` can have TRUE; nil for a type this rule does not cover.
    /// RSA: everything but derive. EC (P-256/384/521): ECDSA and ECDH only, no encryption or
    /// wrapping mechanism exists for it (v2.40 §2.3). Edwards (Ed25519/Ed448): EdDSA only
    /// (v3.0 §2.3.14). Montgomery (X25519/X448): key agreement only (v3.0 §2.3.7).
    static func possible(for keyType: UInt64) -> Set<AttributeType>? {
        switch KeyType(rawValue: keyType) {
        case .rsa: Set(all).subtracting([.derive])
        case .ec: [.sign, .verify, .derive]
        case .ecEdwards: [.sign, .verify]
        case .ecMontgomery: [.derive]
        default: nil
        }
    }

    /// Refuses a change or copy that turns on a usage `keyType` cannot have
    /// (CKR_TEMPLATE_INCONSISTENT: TRUE is a valid value of the attribute, inconsistent only
    /// with the key's type); a change the token would not make is never ignored.
    static func check(_ template: AttributeSet, keyType: UInt64?) throws(CoreError) {
        guard let keyType, let possible = possible(for: keyType) else { return }
        for type in all where template.bool(type) == true && !possible.contains(type) {
            throw CoreError(
                .templateInconsistent,
                "a \(PKCS11Names.keyType(keyType)) key cannot have \(type) (its type has no such use)")
        }
    }

    /// A new key's usages from its template (already in `attributes`) and its type: a usage
    /// the type cannot have is FALSE, asked for or not; a Montgomery private key, which can
    /// only derive, derives unless the template says not to. The class defaults
    /// (`ObjectPolicy`) fill the rest.
    static func settle(_ attributes: inout AttributeSet) {
        guard let keyType = attributes.ulong(.keyType), let possible = possible(for: keyType) else { return }
        let policy = attributes.ulong(.class).flatMap { ObjectPolicy.forClass(ObjectClass(rawValue: $0)) }
        for type in all where !possible.contains(type) && policy?.specs[type] != nil {
            attributes[type] = ObjectPolicy.no
        }
        if KeyType(rawValue: keyType) == .ecMontgomery,
            attributes.ulong(.class) == ObjectClass.privateKey.rawValue, attributes[.derive] == nil
        {
            attributes[.derive] = ObjectPolicy.yes
        }
    }

    /// A stored key as the rule reads it: a usage its type cannot have is FALSE (keys stored
    /// before the rule, such as X25519 keys with CKA_SIGN and CKA_DECRYPT TRUE).
    static func settleStored(_ attributes: inout AttributeSet) {
        guard let keyType = attributes.ulong(.keyType), let possible = possible(for: keyType) else { return }
        for type in all where attributes.bool(type) == true && !possible.contains(type) {
            attributes[type] = ObjectPolicy.no
        }
    }
}
