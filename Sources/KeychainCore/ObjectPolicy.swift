internal import KeychainCrypto

/// How an attribute's value is encoded, checked on every write.
enum ValueKind {
    case bool, ulong, bytes, date
    /// An array of CK_ULONG (CKA_ALLOWED_MECHANISMS): a whole number of 8-byte values.
    case ulongArray
    /// An array of attributes (CKA_WRAP_TEMPLATE…), in `AttributeArray`'s form.
    case attributeArray
}

/// What a caller may do with an attribute (PKCS#11 v2.40 §4.2 table 10 footnotes, §4.9
/// table 36 footnotes). The rules are data: `ObjectPolicy.check` is the one function that
/// applies them, for every way an object comes to be or changes (`ObjectChange`).
struct AttributeRules: OptionSet {
    let rawValue: UInt16
    /// May be given in C_CreateObject's template.
    static let settableOnCreate = AttributeRules(rawValue: 1 << 0)
    /// Must be given in C_CreateObject's template.
    static let requiredOnCreate = AttributeRules(rawValue: 1 << 1)
    /// May be changed by C_SetAttributeValue (and in C_CopyObject's template).
    static let modifiable = AttributeRules(rawValue: 1 << 2)
    /// May be given in C_CopyObject's template though not otherwise modifiable.
    static let settableOnCopy = AttributeRules(rawValue: 1 << 3)
    /// Computed by the token (from a certificate's DER, a secret key's value); a supplied
    /// value must agree with it.
    static let derived = AttributeRules(rawValue: 1 << 4)
    /// Only the security officer may set it to TRUE (CKA_TRUSTED).
    static let securityOfficerOnly = AttributeRules(rawValue: 1 << 5)
    /// A change may turn it on, never off (CKA_SENSITIVE, CKA_WRAP_WITH_TRUSTED).
    static let onlyTurnsOn = AttributeRules(rawValue: 1 << 6)
    /// A change may turn it off, never on (CKA_EXTRACTABLE; CKA_MODIFIABLE, CKA_COPYABLE and
    /// CKA_DESTROYABLE in a copy).
    static let onlyTurnsOff = AttributeRules(rawValue: 1 << 7)
    /// A secret part of a key: sealed at rest whatever CKA_PRIVATE says (ARCHITECTURE.md §3.6), never
    /// revealed while the key is sensitive or unextractable, and made by the token when it
    /// generates (never in a generation template).
    static let secret = AttributeRules(rawValue: 1 << 8)
    /// A public part of the key itself (modulus, EC point, SubjectPublicKeyInfo): given at
    /// import, made at generation, never changed.
    static let material = AttributeRules(rawValue: 1 << 9)
    /// Chooses what C_GenerateKeyPair, C_GenerateKey, C_UnwrapKey or C_DeriveKey makes
    /// (CKA_MODULUS_BITS, CKA_PUBLIC_EXPONENT, CKA_EC_PARAMS, CKA_VALUE_LEN): allowed in
    /// their templates, read there by the caller.
    static let generationParameter = AttributeRules(rawValue: 1 << 10)
    /// Kept by the token from the key's history, never set by a caller: CKA_ALWAYS_SENSITIVE
    /// and CKA_NEVER_EXTRACTABLE, settled after every change (`ObjectPolicy.settleHistory`).
    static let history = AttributeRules(rawValue: 1 << 11)
}

/// Every way an object comes to be or changes. Each is checked by `ObjectPolicy.check`
/// against the same rules, so no path can do what another refuses.
enum ObjectChange {
    /// C_CreateObject, SecItemAdd: the caller gives the object, key material included.
    case create
    /// C_GenerateKeyPair (and later C_GenerateKey): the token makes the key material.
    case generate
    /// C_CopyObject: a new object from an existing one, with changes.
    case copy
    /// C_SetAttributeValue, SecItemUpdate.
    case update
    /// C_UnwrapKey: the key's value comes from outside, decrypted by the token; the template
    /// gives everything else, like a generation template.
    case unwrap
    /// C_DeriveKey: the token computes the key's value from a base key it holds.
    case derive
}

struct AttributeSpec {
    let type: AttributeType
    let kind: ValueKind
    let rules: AttributeRules
    /// The value stored when the template does not give one (nil: derived or required).
    let defaultValue: [UInt8]?
}

/// The attributes an object class has and the rules for each.
struct ObjectPolicy {
    let objectClass: ObjectClass
    let specs: [AttributeType: AttributeSpec]
    /// The attribute types of this class that are a key's secret (`AttributeRules.secret`).
    let secretTypes: Set<AttributeType>
    /// What an object of this class keeps sealed at rest when it has secret types: those and
    /// its PKCS#8 key material (`Token.sealedTypes`), made once.
    let sealedTypes: Set<AttributeType>
    /// The default values of the class's attributes, in a table with room for every attribute
    /// the class has: a new object starts from a copy, which copies the table as it is (no
    /// hashing, no growth), instead of looking up each default.
    let defaults: AttributeSet

    init(_ objectClass: ObjectClass, _ specs: [AttributeSpec]) {
        self.objectClass = objectClass
        var table: [AttributeType: AttributeSpec] = [:]
        for spec in ObjectPolicy.common + ObjectPolicy.appleItem + specs { table[spec.type] = spec }
        self.specs = table
        secretTypes = Set(table.values.filter { $0.rules.contains(.secret) }.map(\.type))
        sealedTypes = secretTypes.isEmpty ? [] : secretTypes.union([.keyMaterial])
        // Room beyond the specs for what the token adds to a stored object (seal ID, unique ID).
        var defaults = AttributeSet(minimumCapacity: table.count + 8)
        for spec in table.values {
            if let value = spec.defaultValue { defaults[spec.type] = value }
        }
        self.defaults = defaults
    }

    /// Gives `attributes` the class's default for each attribute it lacks. Walks the defaults
    /// only: a walk of every spec looked each one up (forty of a certificate's fifty-five
    /// table lookups in an import).
    func fillDefaults(_ attributes: inout AttributeSet) {
        for (type, value) in defaults where attributes[type] == nil { attributes[type] = value }
    }

    static func forClass(_ objectClass: ObjectClass) -> ObjectPolicy? {
        switch objectClass {
        case .certificate: certificate
        case .data: data
        case .publicKey: publicKey
        case .privateKey: privateKey
        case .secretKey: secretKey
        default: nil
        }
    }

    static let yes: [UInt8] = [1]
    static let no: [UInt8] = [0]
    static let empty: [UInt8] = []

    /// Storage object attributes (v2.40 §4.4), shared by every class.
    private static let common: [AttributeSpec] = [
        AttributeSpec(
            type: .class, kind: .ulong, rules: [.settableOnCreate, .requiredOnCreate], defaultValue: nil),
        AttributeSpec(
            type: .token, kind: .bool, rules: [.settableOnCreate, .settableOnCopy], defaultValue: no),
        AttributeSpec(
            type: .private, kind: .bool, rules: [.settableOnCreate, .settableOnCopy], defaultValue: no),
        AttributeSpec(
            type: .modifiable, kind: .bool, rules: [.settableOnCreate, .settableOnCopy, .onlyTurnsOff],
            defaultValue: yes),
        AttributeSpec(
            type: .copyable, kind: .bool,
            rules: [.settableOnCreate, .settableOnCopy, .modifiable, .onlyTurnsOff],
            defaultValue: yes),
        AttributeSpec(
            type: .destroyable, kind: .bool, rules: [.settableOnCreate, .settableOnCopy, .onlyTurnsOff],
            defaultValue: yes),
        AttributeSpec(
            type: .label, kind: .bytes, rules: [.settableOnCreate, .modifiable], defaultValue: nil),
        // CKA_UNIQUE_ID: assigned by the token, never settable (v3.0 §4.4.1).
        AttributeSpec(type: .uniqueID, kind: .bytes, rules: [], defaultValue: nil),
    ]

    /// X.509 public-key certificates (v2.40 §4.6.3). Everything the DER determines is derived.
    static let certificate = ObjectPolicy(
        .certificate,
        [
            AttributeSpec(
                type: .certificateType, kind: .ulong, rules: [.settableOnCreate, .requiredOnCreate],
                defaultValue: nil),
            AttributeSpec(
                type: .trusted, kind: .bool, rules: [.settableOnCreate, .securityOfficerOnly],
                defaultValue: no),
            AttributeSpec(
                type: .certificateCategory, kind: .ulong, rules: [.settableOnCreate, .modifiable],
                defaultValue: nil),
            AttributeSpec(
                type: .checkValue, kind: .bytes, rules: [.settableOnCreate, .derived], defaultValue: nil),
            AttributeSpec(
                type: .startDate, kind: .date, rules: [.settableOnCreate, .derived], defaultValue: nil),
            AttributeSpec(
                type: .endDate, kind: .date, rules: [.settableOnCreate, .derived], defaultValue: nil),
            AttributeSpec(
                type: .publicKeyInfo, kind: .bytes, rules: [.settableOnCreate, .derived], defaultValue: nil),
            AttributeSpec(
                type: .subject, kind: .bytes, rules: [.settableOnCreate, .derived], defaultValue: nil),
            AttributeSpec(
                type: .id, kind: .bytes, rules: [.settableOnCreate, .modifiable], defaultValue: nil),
            AttributeSpec(
                type: .issuer, kind: .bytes, rules: [.settableOnCreate, .derived], defaultValue: nil),
            AttributeSpec(
                type: .serialNumber, kind: .bytes, rules: [.settableOnCreate, .derived], defaultValue: nil),
            AttributeSpec(
                type: .value, kind: .bytes, rules: [.settableOnCreate, .requiredOnCreate], defaultValue: nil),
            AttributeSpec(
                type: .url, kind: .bytes, rules: [.settableOnCreate, .modifiable], defaultValue: empty),
            AttributeSpec(
                type: .hashOfSubjectPublicKey, kind: .bytes, rules: [.settableOnCreate, .derived],
                defaultValue: nil),
            // Derivable only for a self-signed certificate; otherwise what the caller gives.
            AttributeSpec(
                type: .hashOfIssuerPublicKey, kind: .bytes, rules: [.settableOnCreate, .modifiable],
                defaultValue: nil),
            AttributeSpec(
                type: .javaMIDPSecurityDomain, kind: .ulong, rules: [.settableOnCreate],
                defaultValue: AttributeValue.encode(0)),
            AttributeSpec(
                type: .nameHashAlgorithm, kind: .ulong, rules: [.settableOnCreate],
                defaultValue: AttributeValue.encode(0x220)),  // CKM_SHA_1
            // Trust (Trust.swift): p11-kit's blocklist flag, derived from the trust settings
            // like CKA_TRUSTED, which reads TRUE while the certificate is an anchor for some
            // purpose. Neither is changed by C_SetAttributeValue: CKA_TRUSTED has no
            // "modifiable" footnote in v2.40 §4.6.3 (TRUE only from the SO, at creation);
            // trust settings change through `Token.setTrustSettings` (NSS and PKCS#11 3.2
            // trust objects, the Swift faces, the CLI).
            AttributeSpec(type: .distrusted, kind: .bool, rules: [], defaultValue: no),
        ])

    /// Attributes every key has (v2.40 §4.7, v3.0 §4.7.2).
    static let anyKey: [AttributeSpec] = [
        AttributeSpec(
            type: .keyType, kind: .ulong, rules: [.settableOnCreate, .requiredOnCreate], defaultValue: nil),
        AttributeSpec(type: .id, kind: .bytes, rules: [.settableOnCreate, .modifiable], defaultValue: empty),
        AttributeSpec(
            type: .startDate, kind: .date, rules: [.settableOnCreate, .modifiable], defaultValue: empty),
        AttributeSpec(
            type: .endDate, kind: .date, rules: [.settableOnCreate, .modifiable], defaultValue: empty),
        AttributeSpec(type: .derive, kind: .bool, rules: [.settableOnCreate, .modifiable], defaultValue: no),
        AttributeSpec(type: .local, kind: .bool, rules: [], defaultValue: no),
        AttributeSpec(
            type: .keyGenMechanism, kind: .ulong, rules: [], defaultValue: AttributeValue.encode(UInt64.max)),
        // The mechanisms the key may be used with, enforced by `Token.useKey`. Every key has
        // it (pkcs11-provider reads it of every key and takes CKR_ATTRIBUTE_TYPE_INVALID for a
        // token without it): empty, the default, is no list, so any mechanism. A caller's list
        // is never empty (`validate`), so "no list" and a list stay apart. Fixed once the key
        // exists, so a copy cannot widen it.
        AttributeSpec(
            type: .allowedMechanisms, kind: .ulongArray, rules: [.settableOnCreate], defaultValue: empty),
        // Apple's kSecAttrApplicationTag (vendor-defined): absent unless given.
        AttributeSpec(
            type: .applicationTag, kind: .bytes, rules: [.settableOnCreate, .modifiable], defaultValue: nil),
    ]

    /// Attributes of public and private keys (v2.40 §4.8–4.9).
    private static let key: [AttributeSpec] =
        anyKey + [
            AttributeSpec(
                type: .subject, kind: .bytes, rules: [.settableOnCreate, .modifiable], defaultValue: empty),
            AttributeSpec(
                type: .publicKeyInfo, kind: .bytes, rules: [.settableOnCreate, .material], defaultValue: nil),
            // RSA (v2.40 §2.1.2–2.1.3), EC and Edwards (§2.3.3–2.3.4, v3.0 §2.3.5–2.3.6).
            AttributeSpec(
                type: .modulus, kind: .bytes, rules: [.settableOnCreate, .material], defaultValue: nil),
            AttributeSpec(
                type: .publicExponent, kind: .bytes,
                rules: [.settableOnCreate, .material, .generationParameter],
                defaultValue: nil),
            AttributeSpec(
                type: .ecParams, kind: .bytes, rules: [.settableOnCreate, .generationParameter],
                defaultValue: nil
            ),
        ]

    /// Public keys (v2.40 §4.8).
    static let publicKey = ObjectPolicy(
        .publicKey,
        key + publicUses + [
            AttributeSpec(
                type: .verifyRecover, kind: .bool, rules: [.settableOnCreate, .modifiable], defaultValue: no),
            AttributeSpec(
                type: .modulusBits, kind: .ulong, rules: [.settableOnCreate, .generationParameter],
                defaultValue: nil),
            AttributeSpec(
                type: .ecPoint, kind: .bytes, rules: [.settableOnCreate, .material], defaultValue: nil),
        ])

    /// What public and secret keys share (v2.40 §4.8, §4.10): the public-half usages, and
    /// CKA_TRUSTED with the template of what the key may wrap. Encrypt and verify by default.
    static let publicUses: [AttributeSpec] = [
        AttributeSpec(
            type: .encrypt, kind: .bool, rules: [.settableOnCreate, .modifiable], defaultValue: yes),
        AttributeSpec(
            type: .verify, kind: .bool, rules: [.settableOnCreate, .modifiable], defaultValue: yes),
        AttributeSpec(type: .wrap, kind: .bool, rules: [.settableOnCreate, .modifiable], defaultValue: no),
        AttributeSpec(
            type: .trusted, kind: .bool, rules: [.settableOnCreate, .securityOfficerOnly], defaultValue: no),
        AttributeSpec(
            type: .wrapTemplate, kind: .attributeArray, rules: [.settableOnCreate], defaultValue: nil),
    ]

    /// Private keys (v2.40 §4.9). Key material is sealed and sensitive by default.
    static let privateKey = ObjectPolicy(
        .privateKey,
        key + protectedKey + [
            AttributeSpec(
                type: .signRecover, kind: .bool, rules: [.settableOnCreate, .modifiable], defaultValue: no),
            AttributeSpec(
                type: .alwaysAuthenticate, kind: .bool, rules: [.settableOnCreate], defaultValue: no),
            AttributeSpec(
                type: .privateExponent, kind: .bytes, rules: [.settableOnCreate, .secret], defaultValue: nil),
            AttributeSpec(
                type: .prime1, kind: .bytes, rules: [.settableOnCreate, .secret], defaultValue: nil),
            AttributeSpec(
                type: .prime2, kind: .bytes, rules: [.settableOnCreate, .secret], defaultValue: nil),
            AttributeSpec(
                type: .exponent1, kind: .bytes, rules: [.settableOnCreate, .secret], defaultValue: nil),
            AttributeSpec(
                type: .exponent2, kind: .bytes, rules: [.settableOnCreate, .secret], defaultValue: nil),
            AttributeSpec(
                type: .coefficient, kind: .bytes, rules: [.settableOnCreate, .secret], defaultValue: nil),
            AttributeSpec(
                type: .value, kind: .bytes, rules: [.settableOnCreate, .secret], defaultValue: nil),
        ] + accessControlled)

    /// What private and secret keys share (v2.40 §4.9–4.10): sensitivity and extractability
    /// with their history, the private-half usages, and the templates imposed on what the key
    /// unwraps or derives. Sensitive, not extractable, able to decrypt and sign by default.
    static let protectedKey: [AttributeSpec] = [
        AttributeSpec(
            type: .sensitive, kind: .bool, rules: [.settableOnCreate, .modifiable, .onlyTurnsOn],
            defaultValue: yes),
        AttributeSpec(
            type: .decrypt, kind: .bool, rules: [.settableOnCreate, .modifiable], defaultValue: yes),
        AttributeSpec(type: .sign, kind: .bool, rules: [.settableOnCreate, .modifiable], defaultValue: yes),
        AttributeSpec(type: .unwrap, kind: .bool, rules: [.settableOnCreate, .modifiable], defaultValue: no),
        AttributeSpec(
            type: .extractable, kind: .bool, rules: [.settableOnCreate, .modifiable, .onlyTurnsOff],
            defaultValue: no),
        AttributeSpec(type: .alwaysSensitive, kind: .bool, rules: [.history], defaultValue: no),
        AttributeSpec(type: .neverExtractable, kind: .bool, rules: [.history], defaultValue: no),
        AttributeSpec(
            type: .wrapWithTrusted, kind: .bool, rules: [.settableOnCreate, .modifiable, .onlyTurnsOn],
            defaultValue: no),
        AttributeSpec(
            type: .unwrapTemplate, kind: .attributeArray, rules: [.settableOnCreate], defaultValue: nil),
        AttributeSpec(
            type: .deriveTemplate, kind: .attributeArray, rules: [.settableOnCreate], defaultValue: nil),
    ]

    /// Data objects (v2.40 §4.5).
    static let data = ObjectPolicy(
        .data,
        [
            AttributeSpec(
                type: .application, kind: .bytes, rules: [.settableOnCreate, .modifiable], defaultValue: empty
            ),
            AttributeSpec(
                type: .objectID, kind: .bytes, rules: [.settableOnCreate, .modifiable], defaultValue: empty),
            AttributeSpec(
                type: .value, kind: .bytes, rules: [.settableOnCreate, .modifiable], defaultValue: empty),
            // Apple's kSecAttrAccount of a generic password (vendor-defined): absent unless given.
            AttributeSpec(
                type: .account, kind: .bytes, rules: [.settableOnCreate, .modifiable], defaultValue: nil),
        ] + passwordItem + accessControlled)

    /// The one check of a caller's template against the class's rules, for every way an
    /// object comes to be or changes: each attribute must belong to the class, be well
    /// formed, be settable by this kind of change, move only the way a one-way attribute may
    /// (against `current`: the stored object, or a copy's source), and CKA_TRUSTED turns on
    /// only for the security officer. Nothing is stored or changed here.
    func check(
        _ template: AttributeSet, _ change: ObjectChange, current: AttributeSet? = nil,
        asSecurityOfficer: Bool
    ) throws(CoreError) {
        for (type, value) in template {
            guard let spec = specs[type] else {
                throw CoreError(
                    .attributeTypeInvalid, "attribute \(type) does not belong to this object class")
            }
            try ObjectPolicy.validate(value, as: spec)
            let rules = spec.rules
            switch change {
            case .create:
                guard rules.contains(.settableOnCreate) else {
                    throw CoreError(.attributeReadOnly, "attribute \(type) is set by the token")
                }
            case .generate, .unwrap, .derive:
                guard
                    rules.contains(.generationParameter)
                        || (rules.contains(.settableOnCreate)
                            && rules.isDisjoint(with: [.secret, .material]))
                else {
                    throw CoreError(
                        .attributeReadOnly,
                        "attribute \(type) is made by the token, never given in this template")
                }
            case .copy:
                try checkCopied(type, value, rules: rules, source: current)
            case .update:
                guard rules.contains(.modifiable) else {
                    throw CoreError(.attributeReadOnly, "attribute \(type) cannot be changed")
                }
            }
            let new = AttributeValue.bool(value)
            if let old = current?.bool(type), let new {
                if rules.contains(.onlyTurnsOn), old, !new {
                    throw CoreError(.attributeReadOnly, "attribute \(type) can be turned on, never off")
                }
                if rules.contains(.onlyTurnsOff), !old, new {
                    throw CoreError(.attributeReadOnly, "attribute \(type) can be turned off, never on")
                }
            }
            if rules.contains(.securityOfficerOnly), new == true, !asSecurityOfficer {
                throw CoreError(.attributeReadOnly, "only the security officer may set \(type) to true")
            }
            if change == .update || change == .copy {
                try ObjectPolicy.checkTrustedKeyUse(
                    type, new, current: current, asSecurityOfficer: asSecurityOfficer)
            }
        }
        // A change or copy may not turn on a usage the key's type cannot have; a new key's
        // usages are settled when it is made (KeyTypeUsages.swift).
        if let current { try KeyTypeUsages.check(template, keyType: current.ulong(.keyType)) }
    }

    /// Settles CKA_ALWAYS_SENSITIVE and CKA_NEVER_EXTRACTABLE after `change` (v2.40 §4.9,
    /// §4.10, §5.13–5.14): a generated key starts with them from its own flags; an imported
    /// or unwrapped key was once outside the token, so both are false; a copy, a change or a
    /// derived key keeps each only while the key's flags still allow it (`before`: the source,
    /// the stored object or the base key). No caller sets them.
    func settleHistory(_ attributes: inout AttributeSet, after change: ObjectChange, before: AttributeSet?) {
        guard specs[.alwaysSensitive] != nil else { return }
        let sensitive = attributes.bool(.sensitive) == true
        let extractable = attributes.bool(.extractable) != false
        let always: Bool
        let never: Bool
        switch change {
        case .generate:
            always = sensitive
            never = !extractable
        case .create, .unwrap:
            always = false
            never = false
        case .copy, .update, .derive:
            always = before?.bool(.alwaysSensitive) == true && sensitive
            never = before?.bool(.neverExtractable) == true && !extractable
        }
        attributes[.alwaysSensitive] = [always ? 1 : 0]
        attributes[.neverExtractable] = [never ? 1 : 0]
    }

    /// Checks a value's encoding against its kind.
    static func validate(_ value: [UInt8], as spec: AttributeSpec) throws(CoreError) {
        let valid: Bool
        switch spec.kind {
        case .bool: valid = value.count == 1
        case .ulong: valid = value.count == MemoryLayout<UInt64>.size
        case .date:
            // CK_DATE: eight ASCII digits, or empty for "no date".
            valid = value.isEmpty || (value.count == 8 && value.allSatisfy { (0x30...0x39).contains($0) })
        case .bytes: valid = true
        // An empty CKA_ALLOWED_MECHANISMS would read as "no list" and allow everything: it is
        // refused, as SoftHSM2 does, so a list given is a list kept.
        case .ulongArray: valid = !value.isEmpty && value.count % MemoryLayout<UInt64>.size == 0
        case .attributeArray: valid = AttributeArray.decode(value) != nil
        }
        guard valid else {
            throw CoreError(
                .attributeValueInvalid, "attribute \(spec.type) has a value of the wrong size or form")
        }
        if spec.type == .accessControl, let flags = AttributeValue.ulong(value) {
            try AccessControl.validate(flags)
        }
        if spec.type == .objectID, !value.isEmpty, !DERObjectIdentifier.isValid(value) {
            throw CoreError(.attributeValueInvalid, "CKA_OBJECT_ID is not a DER object identifier")
        }
    }
}

/// A new object, ready to store: every attribute it will have and its uniqueness key.
struct NewObject {
    var attributes: AttributeSet
    var uniqueKey: [UInt8]?
    /// True when the values `Token.sealedTypes` names are sealed already, under
    /// `attributes[.sealID]` (a copy's, which moves its source's boxes as they are).
    var isSealed = false
}

extension NewObject {
    /// Builds an object from a C_CreateObject / SecItemAdd template: checks every attribute
    /// against the class's rules, derives what the certificate DER determines (ARCHITECTURE.md §3.4),
    /// and fills defaults. Nothing is stored here.
    init(template: AttributeSet, asSecurityOfficer: Bool) throws(CoreError) {
        guard let rawClass = template[.class] else {
            throw CoreError(.templateIncomplete, "template has no CKA_CLASS")
        }
        guard let classValue = AttributeValue.ulong(rawClass) else {
            throw CoreError(.attributeValueInvalid, "CKA_CLASS is not a CK_ULONG")
        }
        guard let policy = ObjectPolicy.forClass(ObjectClass(rawValue: classValue)) else {
            throw CoreError(
                .attributeValueInvalid,
                "objects of class \(PKCS11Names.objectClass(classValue)) cannot be created on this token")
        }
        try policy.check(template, .create, asSecurityOfficer: asSecurityOfficer)
        for spec in policy.specs.values where spec.rules.contains(.requiredOnCreate) {
            guard template[spec.type] != nil else {
                throw CoreError(.templateIncomplete, "template lacks required attribute \(spec.type)")
            }
        }
        if policy.objectClass == .publicKey || policy.objectClass == .privateKey {
            self = try NewObject(importingKey: template, policy: policy)
            return
        }
        if policy.objectClass == .secretKey {
            self = try NewObject(importingSecretKey: template)
            return
        }
        // Sized once for the class's attributes and what the token adds (a seal ID, trust
        // settings): a copy of the template, grown as they went in, was rehashed 2–3 times.
        var attributes = AttributeSet(minimumCapacity: policy.specs.count + 8)
        for (type, value) in template { attributes[type] = value }
        var uniqueKey: [UInt8]? = nil
        if policy.objectClass == .certificate {
            uniqueKey = try NewObject.deriveCertificate(&attributes)
            // CKA_TRUSTED TRUE (from the SO: `check` refused anyone else) is the one trust
            // setting a template can make: an anchor for every purpose. A certificate with no
            // settings stores none (no lookup row for its marker).
            if attributes.bool(.trusted) == true {
                attributes.merge(TrustSettings.anchorForAnyPurpose.storedAttributes) { _, derived in derived }
            }
        }
        policy.fillDefaults(&attributes)
        if attributes[.label] == nil { attributes[.label] = [] }
        self.init(attributes: attributes, uniqueKey: uniqueKey ?? NewObject.passwordKey(of: attributes))
    }

    /// True when a caller's CKA_SERIAL_NUMBER is the certificate's serial given as the bare
    /// INTEGER content bytes rather than the DER INTEGER PKCS#11 3.0 §4.6.3 asks for. Java's
    /// SunPKCS11 keystore writes it so (`BigInteger.toByteArray()`, minimal two's complement,
    /// which is exactly the DER content), and so do other clients that copy X.509 field by
    /// field. The value is compared with this certificate's own content bytes, so only the
    /// same number in the same minimal form is accepted (0x80 is not 0x00 0x80); the stored
    /// attribute is still the DER INTEGER, so finds by the DER form keep working.
    private static func isSerialContent(_ supplied: [UInt8], of certificate: X509Certificate) -> Bool {
        let content = certificate.serialNumberContent
        return !content.isEmpty && supplied == content
    }

    /// Derives the certificate attributes of ARCHITECTURE.md §3.4 from CKA_VALUE and returns the
    /// uniqueness key (certificate type, issuer, serial).
    private static func deriveCertificate(_ attributes: inout AttributeSet) throws(CoreError)
        -> [UInt8]
    {
        guard attributes.ulong(.certificateType) == CertificateType.x509.rawValue else {
            throw CoreError(.attributeValueInvalid, "only X.509 certificates (CKC_X_509) are supported")
        }
        let der = attributes[.value] ?? []
        let certificate: X509Certificate
        do {
            certificate = try X509Certificate(der: der)
        } catch {
            throw CoreError(.attributeValueInvalid, error.message)
        }
        // SHA-1 once: it is the subject key hash and, unless given, the ID (and a root's
        // issuer key hash).
        let publicKeyHash = certificate.publicKeyHash
        // Pairs, not a dictionary: they are only walked, and hashing them was wasted.
        let derived: [(AttributeType, [UInt8])] = [
            (.subject, certificate.subject),
            (.issuer, certificate.issuer),
            (.serialNumber, certificate.serialNumber),
            (.startDate, certificate.notBefore.ckDate),
            (.endDate, certificate.notAfter.ckDate),
            (.publicKeyInfo, certificate.subjectPublicKeyInfo),
            (.checkValue, Array(certificate.sha1Fingerprint.prefix(3))),
            (.hashOfSubjectPublicKey, publicKeyHash),
        ]
        for (type, value) in derived {
            if let supplied = attributes[type], supplied != value,
                !(type == .serialNumber && isSerialContent(supplied, of: certificate))
            {
                throw CoreError(
                    .attributeValueInvalid, "attribute \(type) contradicts the certificate DER")
            }
            attributes[type] = value
        }
        if attributes[.hashOfIssuerPublicKey] == nil {
            attributes[.hashOfIssuerPublicKey] = certificate.isSelfSigned ? publicKeyHash : []
        }
        if attributes[.certificateCategory] == nil {
            let category: CertificateCategory = certificate.isCertificateAuthority ? .authority : .otherEntity
            attributes[.certificateCategory] = AttributeValue.encode(category.rawValue)
        }
        if attributes[.id] == nil { attributes[.id] = publicKeyHash }
        if attributes[.label] == nil {
            attributes[.label] = Array((certificate.subjectSummary ?? "").utf8)
        }
        // Issuer and serial are self-delimiting DER, so plain concatenation is unambiguous.
        return AttributeValue.encode(CertificateType.x509.rawValue) + certificate.issuer
            + certificate.serialNumber
    }
}

// MARK: - Apple keychain item attributes

extension ObjectPolicy {
    /// What every Apple keychain item has, whatever its class (kSecAttrAccessible,
    /// kSecAttrAccessGroup, kSecAttrSynchronizable and the dates): vendor attributes any
    /// PKCS#11 application may read and, but for the dates, set. The dates are the token's
    /// (`Token.stamps(for:)`).
    static let appleItem: [AttributeSpec] = [
        AttributeSpec(
            type: .accessible, kind: .bytes, rules: [.settableOnCreate, .modifiable], defaultValue: nil),
        AttributeSpec(
            type: .accessGroup, kind: .bytes, rules: [.settableOnCreate, .modifiable], defaultValue: nil),
        AttributeSpec(
            type: .synchronizable, kind: .bool, rules: [.settableOnCreate, .modifiable], defaultValue: nil),
        AttributeSpec(type: .creationDate, kind: .ulong, rules: [], defaultValue: nil),
        AttributeSpec(type: .modificationDate, kind: .ulong, rules: [], defaultValue: nil),
        AttributeSpec(
            type: .valueTypes, kind: .bytes, rules: [.settableOnCreate, .modifiable], defaultValue: nil),
    ]

    /// kSecAttrAccessControl, which only the classes whose use the token can guard have: data
    /// objects (passwords: their value) and private keys (each use). On a certificate, a public
    /// or a secret key nothing would enforce it, so it does not belong to them
    /// (CKR_ATTRIBUTE_TYPE_INVALID). Fixed when the item is stored, so no change can loosen it.
    static let accessControlled = [
        AttributeSpec(type: .accessControl, kind: .ulong, rules: [.settableOnCreate], defaultValue: nil)
    ]

    /// What Apple's password items (data objects here) have besides: the descriptive
    /// attributes of both password classes and an internet password's address. All settable
    /// and changeable; absent unless given.
    static let passwordItem: [AttributeSpec] =
        [
            (AttributeType.generic, ValueKind.bytes), (.comment, .bytes),
            (.itemDescription, .bytes), (.creator, .ulong), (.itemType, .ulong), (.isInvisible, .bool),
            (.isNegative, .bool), (.internetProtocol, .bytes), (.port, .ulong), (.path, .bytes),
            (.authenticationType, .bytes), (.securityDomain, .bytes),
        ].map {
            AttributeSpec(type: $0.0, kind: $0.1, rules: [.settableOnCreate, .modifiable], defaultValue: nil)
        }
        // Which password class the object is: chosen once, so a change cannot move an item
        // into the other class past its uniqueness rule.
        + [AttributeSpec(type: .itemClass, kind: .bytes, rules: [.settableOnCreate], defaultValue: nil)]
}
