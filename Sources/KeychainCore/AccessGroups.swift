// Apple's access groups on Linux (docs/ARCHITECTURE.md §11.5): which group an item added
// without one gets, which group a stored item without one is in, which items a query with or
// without a group sees, and what the group adds to a password's identity. Both Apple faces
// (the `Security` functions and the typed `Keychain` API, and so the CLI) pass the group
// through; the rule is here.
//
// On Apple the groups a process may use come from its code signature's entitlements. Linux has
// no such signature: any process of the user can name any group, so a group sorts one user's
// items but is no security boundary between that user's processes.

/// The access group rules (kSecAttrAccessGroup, `CKA_P11K_ACCESS_GROUP`).
public enum AccessGroup {
    /// The group of an item added without one when the configuration names none: one constant
    /// for every process of the user, never the executable's name, so that the same service
    /// and account added by the CLI and by another program are one item (and a second add is
    /// a duplicate), as they were before items had a group.
    public static let defaultName = "p11keychain.default"

    /// The group of a stored item: its own, or ``defaultName`` when it has none (an item stored
    /// before items were given a group, or made through PKCS#11). What a stored item without a
    /// group means never depends on the configuration that reads it.
    public static func group(of stored: AttributeSet) -> [UInt8] {
        stored[.accessGroup] ?? Array(defaultName.utf8)
    }

    /// Whether a stored item is in the group a query asks for; a query without a group (nil)
    /// sees every group, as there is no entitlement to restrict it to some.
    public static func contains(_ stored: AttributeSet, group wanted: [UInt8]?) -> Bool {
        guard let wanted else { return true }
        return group(of: stored) == wanted
    }

    /// The group as it enters a password's uniqueness key: ``defaultName`` counts as no group,
    /// so that an item stored without one and an item added in the default group collide as
    /// duplicates (their keys are the same bytes) without rewriting any stored key.
    static func keyed(_ attributes: AttributeSet) -> [UInt8] {
        let group = group(of: attributes)
        return group == Array(defaultName.utf8) ? [] : group
    }
}

extension TokenConfiguration {
    /// The group of the items this process adds to the token without one: the token's
    /// `access-group`, else ``AccessGroup/defaultName``.
    public var defaultAccessGroup: String { accessGroup ?? AccessGroup.defaultName }
}

extension Token {
    /// `template` as an Apple item is added: with the token's default access group
    /// (``TokenConfiguration/defaultAccessGroup``) when it names none. Apple fills in the
    /// group the same way, from the entitlements, and returns it with the item.
    package func withDefaultAccessGroup(_ template: AttributeSet) -> AttributeSet {
        guard template[.accessGroup] == nil else { return template }
        var filled = template
        filled[.accessGroup] = Array(configuration.defaultAccessGroup.utf8)
        return filled
    }
}
