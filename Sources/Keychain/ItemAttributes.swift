public import Foundation
internal import KeychainCore

/// When an item may be read (Apple's kSecAttrAccessible). Stored and matched faithfully; on
/// Linux every value means the same thing: readable while the keychain is unlocked. There are
/// no data-protection classes and no device passcode to tie an item to.
public enum Accessibility: String, Hashable, Sendable, CaseIterable {
    /// kSecAttrAccessibleWhenUnlocked, Apple's default.
    case whenUnlocked = "ak"
    /// kSecAttrAccessibleAfterFirstUnlock.
    case afterFirstUnlock = "ck"
    /// kSecAttrAccessibleAlways (deprecated by Apple).
    case always = "dk"
    /// kSecAttrAccessibleWhenUnlockedThisDeviceOnly.
    case whenUnlockedThisDeviceOnly = "aku"
    /// kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly.
    case afterFirstUnlockThisDeviceOnly = "cku"
    /// kSecAttrAccessibleAlwaysThisDeviceOnly (deprecated by Apple).
    case alwaysThisDeviceOnly = "dku"
    /// kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly.
    case whenPasscodeSetThisDeviceOnly = "akpu"
}

/// An item's access control flags (Apple's SecAccessControlCreateFlags, same bit values).
/// `userPresence`, `devicePasscode` and `applicationPassword` mean: the user's PIN must be
/// given for each use of the item (a password's secret read, a private key's operation).
/// Biometry and a paired watch do not exist here; an item asking for them is refused.
public struct AccessControlFlags: OptionSet, Hashable, Sendable {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public static let userPresence = AccessControlFlags(rawValue: AccessControl.userPresence)
    public static let biometryAny = AccessControlFlags(rawValue: AccessControl.biometryAny)
    public static let biometryCurrentSet = AccessControlFlags(rawValue: AccessControl.biometryCurrentSet)
    public static let devicePasscode = AccessControlFlags(rawValue: AccessControl.devicePasscode)
    public static let watch = AccessControlFlags(rawValue: AccessControl.watch)
    public static let or = AccessControlFlags(rawValue: AccessControl.or)
    public static let and = AccessControlFlags(rawValue: AccessControl.and)
    public static let privateKeyUsage = AccessControlFlags(rawValue: AccessControl.privateKeyUsage)
    public static let applicationPassword = AccessControlFlags(rawValue: AccessControl.applicationPassword)

    /// True when the flags make each use of the item need the PIN.
    public var needsPINForEachUse: Bool { rawValue & AccessControl.presence != 0 }
}

/// The attributes Apple's keychain items carry besides their class's own (kSecAttrAccessible,
/// kSecAttrAccessGroup, kSecAttrSynchronizable, kSecAttrAccessControl, kSecAttrGeneric,
/// kSecAttrComment, kSecAttrDescription, kSecAttrCreator, kSecAttrType, kSecAttrIsInvisible,
/// kSecAttrIsNegative and the dates). Each is a PKCS#11 vendor attribute (README table).
///
/// One type serves three uses, for every item class (passwords, keys, certificates,
/// identities): adding (nil: Apple's default, or absent), matching (nil: anything; but
/// `synchronizable` nil matches only items that are not synchronizable, as on Apple, unless the
/// query says any), and changing (nil: unchanged).
public struct ItemAttributes: Hashable, Sendable {
    /// kSecAttrAccessible; an item without one is `.whenUnlocked`.
    public var accessibility: Accessibility?
    /// kSecAttrAccessGroup. Adding without one gives the keychain's default group
    /// (KeychainCore `AccessGroup`), which items read back with; a query without one sees every
    /// group. No entitlement restricts groups on Linux: they sort items, they protect nothing.
    public var accessGroup: String?
    /// kSecAttrSynchronizable. Nothing leaves the machine: stored and matched only.
    public var synchronizable: Bool?
    /// kSecAttrAccessControl's flags; set when the item is added, never changed.
    public var accessControl: AccessControlFlags?
    /// kSecAttrGeneric (passwords).
    public var generic: [UInt8]?
    /// kSecAttrComment (passwords).
    public var comment: String?
    /// kSecAttrDescription (passwords).
    public var itemDescription: String?
    /// kSecAttrCreator, a FourCharCode (passwords).
    public var creator: UInt32?
    /// kSecAttrType, a FourCharCode (passwords).
    public var type: UInt32?
    /// kSecAttrIsInvisible (passwords).
    public var isInvisible: Bool?
    /// kSecAttrIsNegative (passwords).
    public var isNegative: Bool?
    /// kSecAttrCreationDate: when the item was stored, to the millisecond. Set by the keychain:
    /// ignored when adding or changing; in a query, an item matches when its stored date is
    /// this one exactly.
    public var creationDate: Date?
    /// kSecAttrModificationDate: when the item last changed, to the millisecond. Set by the
    /// keychain: ignored when adding or changing; in a query, matched exactly.
    public var modificationDate: Date?
    /// Which attributes were given as another type than their usual one (an account as
    /// bytes, `generic` as text): each comes back as it was given, as Apple's keychain returns
    /// it. Never matched: a query finds an item by the value's bytes, whichever type either
    /// was given as (a text's bytes are its UTF-8), as Apple's queries do.
    public var valueTypes: [ItemValueAttribute: ItemValueType] = [:]
    /// Values given as bytes that are not UTF-8 text, for the attributes otherwise held as
    /// text (an account, a service, a label…): stored, matched and returned as these bytes,
    /// in place of the text property, which is then left nil in a query or a change (and is
    /// the bytes decoded with replacement characters in a stored item). Apple's keychain takes
    /// any bytes there.
    public var binaryValues: [ItemValueAttribute: [UInt8]] = [:]

    /// Creates a set of attributes; nil leaves each to its default.
    public init(
        accessibility: Accessibility? = nil, accessGroup: String? = nil, synchronizable: Bool? = nil,
        accessControl: AccessControlFlags? = nil, generic: [UInt8]? = nil, comment: String? = nil,
        itemDescription: String? = nil, creator: UInt32? = nil, type: UInt32? = nil,
        isInvisible: Bool? = nil, isNegative: Bool? = nil
    ) {
        self.accessibility = accessibility
        self.accessGroup = accessGroup
        self.synchronizable = synchronizable
        self.accessControl = accessControl
        self.generic = generic
        self.comment = comment
        self.itemDescription = itemDescription
        self.creator = creator
        self.type = type
        self.isInvisible = isInvisible
        self.isNegative = isNegative
    }

    /// The attributes of a stored object, with Apple's defaults for what it lacks.
    init(stored attributes: AttributeSet) {
        accessibility =
            attributes.string(.accessible).flatMap(Accessibility.init(rawValue:)) ?? .whenUnlocked
        accessGroup = String(decoding: AccessGroup.group(of: attributes), as: UTF8.self)
        synchronizable = attributes.bool(.synchronizable) ?? false
        accessControl = attributes.ulong(.accessControl).map(AccessControlFlags.init(rawValue:))
        generic = attributes[.generic]
        comment = attributes.string(.comment)
        itemDescription = attributes.string(.itemDescription)
        creator = attributes.ulong(.creator).map { UInt32(truncatingIfNeeded: $0) }
        type = attributes.ulong(.itemType).map { UInt32(truncatingIfNeeded: $0) }
        isInvisible = attributes.bool(.isInvisible)
        isNegative = attributes.bool(.isNegative)
        creationDate = attributes.ulong(.creationDate).map(Self.date)
        modificationDate = attributes.ulong(.modificationDate).map(Self.date)
        valueTypes = Self.valueTypes(stored: attributes)
        binaryValues = Self.binaryValues(stored: attributes)
    }

    /// The set attributes as PKCS#11 vendor attributes (the dates are never written).
    var template: AttributeSet {
        var template: AttributeSet = [:]
        if let accessibility { template[.accessible] = Array(accessibility.rawValue.utf8) }
        if let accessGroup { template[.accessGroup] = Array(accessGroup.utf8) }
        if let synchronizable { template[.synchronizable] = [synchronizable ? 1 : 0] }
        if let accessControl { template[.accessControl] = AttributeValue.encode(accessControl.rawValue) }
        if let generic { template[.generic] = generic }
        if let comment { template[.comment] = Array(comment.utf8) }
        if let itemDescription { template[.itemDescription] = Array(itemDescription.utf8) }
        if let creator { template[.creator] = AttributeValue.encode(UInt64(creator)) }
        if let type { template[.itemType] = AttributeValue.encode(UInt64(type)) }
        if let isInvisible { template[.isInvisible] = [isInvisible ? 1 : 0] }
        if let isNegative { template[.isNegative] = [isNegative ? 1 : 0] }
        if let valueTypesRecord { template[.valueTypes] = valueTypesRecord }
        for (attribute, bytes) in binaryValues { template[attribute.attributeType] = bytes }
        return template
    }

    /// Whether a stored object has every attribute set here (`synchronizable` set: exactly
    /// that; nil: not synchronizable, unless `anySynchronizable`). Access control is not matched; a date
    /// matches the stored one to the millisecond (Apple's queries compare dates exactly). The
    /// one matching rule of every item class.
    func matches(_ stored: AttributeSet, anySynchronizable: Bool) -> Bool {
        var wanted = template
        guard AccessGroup.contains(stored, group: wanted[.accessGroup]) else { return false }
        wanted[.accessGroup] = nil
        wanted[.accessControl] = nil
        wanted[.synchronizable] = nil
        wanted[.valueTypes] = nil
        let isSynchronizable = stored.bool(.synchronizable) ?? false
        if let synchronizable {
            guard isSynchronizable == synchronizable else { return false }
        } else if !anySynchronizable, isSynchronizable {
            return false
        }
        for (type, date) in [
            (AttributeType.creationDate, creationDate), (.modificationDate, modificationDate),
        ] {
            guard let date else { continue }
            // A date no stored value can have (before 1970, beyond UInt64 milliseconds, NaN)
            // matches nothing.
            guard let milliseconds = Self.milliseconds(date), stored.ulong(type) == milliseconds else {
                return false
            }
        }
        let defaults: AttributeSet = [.accessible: Array(Accessibility.whenUnlocked.rawValue.utf8)]
        return wanted.allSatisfy { type, value in (stored[type] ?? defaults[type]) == value }
    }

    /// Whether an item's attributes (as ``init(stored:)`` read them) match these.
    func matches(_ item: ItemAttributes, anySynchronizable: Bool) -> Bool {
        var stored = item.template
        if let date = item.creationDate.flatMap(Self.milliseconds) {
            stored[.creationDate] = AttributeValue.encode(date)
        }
        if let date = item.modificationDate.flatMap(Self.milliseconds) {
            stored[.modificationDate] = AttributeValue.encode(date)
        }
        return matches(stored, anySynchronizable: anySynchronizable)
    }

    /// These attributes with the dates left out: what a change or a new item may carry.
    var withoutDates: ItemAttributes {
        var attributes = self
        attributes.creationDate = nil
        attributes.modificationDate = nil
        return attributes
    }

    /// True when nothing is set.
    var isEmpty: Bool { template.isEmpty }

    private static func date(_ milliseconds: UInt64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// The stored form of a date (milliseconds since 1970, as `Token.stamps(for:)` gives it); nil
    /// for a date no stored value can be.
    private static func milliseconds(_ date: Date) -> UInt64? {
        UInt64(exactly: (date.timeIntervalSince1970 * 1000).rounded())
    }
}
