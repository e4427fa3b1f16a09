#if canImport(Glibc)
    import Glibc
#endif

// The rules of Apple's keychain items that are not PKCS#11's: which object is
// which password class, when two passwords are the same item, the dates the token keeps, and
// what an item's access control demands. Both faces use these; neither decides them.

/// Apple's password classes, as the data objects that hold them (README "Apple keychain
/// attributes on Linux").
public enum PasswordClass: Sendable, Equatable {
    /// kSecClassGenericPassword: service (CKA_APPLICATION) and account.
    case generic
    /// kSecClassInternetPassword: server (CKA_APPLICATION), account, protocol, port, path,
    /// authentication type and security domain.
    case internet

    /// The CKA_P11K_ITEM_CLASS value: Apple's kSecClass code.
    public var code: [UInt8] {
        switch self {
        case .generic: Array("genp".utf8)
        case .internet: Array("inet".utf8)
        }
    }

    /// The class of a stored object: nil unless it is a data object holding a password. A
    /// data object with an account and no class attribute is a generic password (as stored
    /// before the class attribute existed); one with an unknown class is neither.
    public init?(of attributes: AttributeSet) {
        guard attributes.ulong(.class) == ObjectClass.data.rawValue else { return nil }
        switch attributes[.itemClass] {
        case PasswordClass.internet.code?: self = .internet
        case PasswordClass.generic.code?: self = .generic
        case nil where attributes[.account] != nil: self = .generic
        default: return nil
        }
    }

    /// The attributes that make up the class's identity (Apple's primary key, besides the
    /// access group and synchronizable flag every class has): a change to one of them takes
    /// a new uniqueness key.
    static let keyTypes: Set<AttributeType> = [
        .application, .account, .itemClass, .accessGroup, .synchronizable, .internetProtocol, .port,
        .path, .authenticationType, .securityDomain,
    ]
}

extension NewObject {
    /// The uniqueness key of a password (Apple's primary key for its class), kept in the
    /// store's UNIQUE column so that it holds across processes, where a find-then-insert check
    /// cannot. A generic password is one per (service, account, access group, synchronizable);
    /// an internet password one per (server, account, protocol, port, path, authentication
    /// type, security domain, access group, synchronizable). Absent values count as empty (a
    /// port as 0, synchronizable as false), as Apple's defaults.
    ///
    /// A generic password in the default access group (or none, which is the same:
    /// `AccessGroup.keyed`) and not synchronizable keeps the key it had before those
    /// attributes existed, so stored items and new ones still collide. Every
    /// field but the last is length-prefixed, so ("ab", "c") never equals ("a", "bc").
    static func passwordKey(of attributes: AttributeSet) -> [UInt8]? {
        guard let passwordClass = PasswordClass(of: attributes) else { return nil }
        let service = attributes[.application] ?? []
        let account = attributes[.account] ?? []
        let group = AccessGroup.keyed(attributes)
        let synchronizable: [UInt8] = [attributes.bool(.synchronizable) == true ? 1 : 0]
        func field(_ bytes: [UInt8]) -> [UInt8] { AttributeValue.encode(UInt64(bytes.count)) + bytes }
        switch passwordClass {
        case .generic:
            if group.isEmpty, synchronizable == [0] {
                return Array("generic-password".utf8) + field(service) + account
            }
            return Array("generic-password+".utf8) + field(service) + field(account) + field(group)
                + synchronizable
        case .internet:
            let port = AttributeValue.encode(attributes.ulong(.port) ?? 0)
            return Array("internet-password".utf8) + field(service) + field(account)
                + field(attributes[.internetProtocol] ?? []) + port + field(attributes[.path] ?? [])
                + field(attributes[.authenticationType] ?? []) + field(attributes[.securityDomain] ?? [])
                + field(group) + synchronizable
        }
    }

    /// The error of a refused uniqueness key, naming what made the object a duplicate.
    static func duplicate(_ attributes: AttributeSet) -> CoreError {
        switch PasswordClass(of: attributes) {
        case .generic?:
            CoreError(.duplicateItem, "a generic password with this service and account is already stored")
        case .internet?:
            CoreError(
                .duplicateItem,
                "an internet password with this server, account, protocol, port, path, authentication type "
                    + "and security domain is already stored")
        case nil:
            CoreError(
                .duplicateItem, "a certificate with the same issuer and serial number is already stored")
        }
    }
}

/// What Apple's SecAccessControl flags demand here (SecAccessControlCreateFlags, Apple's
/// SecAccessControl.h values). There is no biometry or paired watch on a Linux keychain: those
/// flags are refused rather than silently weakened. User presence, the device passcode and an
/// application password all mean one thing here: the user's PIN, presented for each use.
public enum AccessControl {
    public static let userPresence: UInt64 = 1 << 0
    public static let biometryAny: UInt64 = 1 << 1
    public static let biometryCurrentSet: UInt64 = 1 << 3
    public static let devicePasscode: UInt64 = 1 << 4
    public static let watch: UInt64 = 1 << 5
    public static let or: UInt64 = 1 << 14
    public static let and: UInt64 = 1 << 15
    public static let privateKeyUsage: UInt64 = 1 << 30
    public static let applicationPassword: UInt64 = 1 << 31

    /// The flags that need the PIN for each use.
    public static let presence: UInt64 = userPresence | devicePasscode | applicationPassword
    /// Every flag this keychain accepts.
    public static let supported: UInt64 = presence | or | and | privateKeyUsage
    /// The flags that need hardware Linux does not have.
    public static let unsupported: UInt64 = biometryAny | biometryCurrentSet | watch

    /// Refuses flags this keychain cannot enforce (biometry, a watch) and unknown bits.
    public static func validate(_ flags: UInt64) throws(CoreError) {
        if flags & unsupported != 0 {
            throw CoreError(
                .attributeValueInvalid,
                "access control asks for biometry or a paired watch, which this keychain cannot check")
        }
        if flags & ~supported != 0 {
            throw CoreError(.attributeValueInvalid, "access control has unknown flags")
        }
    }

    /// True when an item stored with `attributes` needs the user's PIN for each use: its
    /// access control has a presence flag.
    public static func needsPINForEachUse(_ attributes: AttributeSet) -> Bool {
        (attributes.ulong(.accessControl) ?? 0) & presence != 0
    }

    /// A private key whose access control needs the PIN for each use stays in the token: it
    /// must be sensitive and not extractable, or its bytes could leave without the PIN (read,
    /// wrapped, exported) and the PIN asked for each use would protect nothing. Checked as
    /// every object is stored (create, generate, copy, unwrap, derive: `Token.insertLocked`);
    /// afterwards neither flag can loosen (`onlyTurnsOn`, `onlyTurnsOff`). Absent flags count
    /// as the token's defaults (sensitive, not extractable).
    static func checkKeyStaysInToken(_ attributes: AttributeSet) throws(CoreError) {
        guard attributes.ulong(.class) == ObjectClass.privateKey.rawValue, needsPINForEachUse(attributes)
        else { return }
        guard attributes.bool(.sensitive) != false, attributes.bool(.extractable) != true else {
            throw CoreError(
                .templateInconsistent,
                "a private key whose access control needs the PIN for each use must be sensitive and not "
                    + "extractable")
        }
    }
}

extension Token {
    /// The time the token writes as kSecAttrCreationDate / kSecAttrModificationDate:
    /// milliseconds since 1970-01-01 UTC (CLOCK_REALTIME).
    static func now() -> [UInt8] {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        let seconds = UInt64(clamping: time.tv_sec)
        let milliseconds = UInt64(clamping: time.tv_nsec / 1_000_000)
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        return AttributeValue.encode(overflow ? UInt64.max : scaled &+ milliseconds)
    }

    /// What the token sets on every object it stores, whatever the path (create, generate,
    /// copy, unwrap, derive): both dates now (a copy is a new item), and for a private key
    /// whose access control needs presence, CKA_ALWAYS_AUTHENTICATE, so that the one key-use
    /// check asks for the PIN each time.
    ///
    /// Given as values to store beside `attributes`, each replacing the attribute of its type
    /// there, rather than written into them: the object's attributes are still the caller's,
    /// and a change would copy the whole set for two dates.
    static func stamps(for attributes: AttributeSet) -> [(type: AttributeType, value: [UInt8])] {
        let time = now()
        var stamps: [(type: AttributeType, value: [UInt8])] = [
            (.creationDate, time), (.modificationDate, time),
        ]
        if attributes.ulong(.class) == ObjectClass.privateKey.rawValue,
            AccessControl.needsPINForEachUse(attributes)
        {
            stamps.append((.alwaysAuthenticate, [1]))
        }
        return stamps
    }

    /// The value (CKA_VALUE) of a data object whose access control needs the PIN for each
    /// use: the PIN is checked (and a failure counted) as a context-specific login, then the
    /// value opens. Other reads never reveal it (`sensitiveTypes`): through PKCS#11 it reads as
    /// CKR_ATTRIBUTE_SENSITIVE, as PKCS#11 has no per-read login for data objects.
    package func protectedValue(of reference: ObjectReference, pin: [UInt8], context: AccessContext)
        throws(CoreError) -> [UInt8]
    {
        try reauthenticateUser(pin: pin)
        return try withState { (state) throws(CoreError) in
            let stored = try state.loadStored(reference, context: context)
            guard stored.ulong(.class) == ObjectClass.data.rawValue else {
                throw CoreError(.attributeTypeInvalid, "only a data object's value is read this way")
            }
            return try state.revealed(stored, [.value])[.value] ?? []
        }
    }
}
