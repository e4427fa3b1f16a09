/// What lets a face keep the trust settings it read (ARCHITECTURE.md §4.3: caches are checked against
/// the store's change counter, which every process's write moves).
extension Token {
    /// The token store's change count, or nil when a kept copy of the trust settings must not
    /// be used: a write is under way, the counter is unknown (deleted, replaced), or this
    /// process has session objects (their store has no counter, and a session certificate
    /// may carry settings). A reader that sees the same non-nil value before and after reading
    /// `certificatesWithTrustSettings()` may keep the result while the value stays the same.
    package var trustSettingsGeneration: UInt64? {
        withState { state in
            // Which grants of trust count depends on whether this process holds the token key
            // (TrustIntegrity.swift): a login or a logout gives another generation.
            guard state.objects.sessionStore == nil, let count = state.objects.persistentStore?.changeCount
            else { return nil }
            return count &* 2 &+ (state.authentication.login == nil ? 0 : 1)
        }
    }
}
