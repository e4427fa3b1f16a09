internal import CKeyutils
internal import KeychainCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// The calling process's session keyring in the Linux kernel key retention service
/// (keyrings(7), keyctl(2)), through libkeyutils (opened when first used, Keyutils.swift): where `p11keychain unlock` leaves what the
/// processes of a login session need to open a token (SessionUnlock.swift). Nothing here is
/// written to a file: the kernel keeps the payload in its own memory.
///
/// Who may read an entry: processes of the owning uid that possess the session keyring, and
/// no one else (ARCHITECTURE.md §6.5). Keyring permissions are additive (a possessor gets the possessor
/// bits whatever its uid), and possession follows the session, not the uid: a `sudo -u` or a
/// daemon that drops to another user in the same session possesses the session keyring. So
/// the entries do not sit in the session keyring itself but in a keyring of their owner's
/// inside it (`p11keychain:uid=UID`), which only its owner may search: another uid reaches the
/// session keyring but cannot descend into the owner's, so it never possesses an entry and
/// the entry grants it nothing; a process of the same uid in another session possesses
/// neither, and the entry grants the owner nothing but to possessors.
enum SessionKeyring {
    /// The permissions of every entry: view, read, update, search and set attributes (the
    /// timeout) for its possessor; nothing for the owner user, group or others, so a process
    /// of the same user outside the session cannot even see it (keyctl_setperm(3)).
    static let possessorOnly: UInt32 =
        UInt32(KEY_POS_VIEW) | UInt32(KEY_POS_READ) | UInt32(KEY_POS_WRITE) | UInt32(KEY_POS_SEARCH)
        | UInt32(KEY_POS_SETATTR)

    /// The permissions of the owner's keyring: everything for the owning uid, nothing for a
    /// possessor as such, the group or others. Only the owner searches it, so only the owner
    /// possesses what it holds.
    static let ownerOnly: UInt32 =
        UInt32(KEY_USR_VIEW) | UInt32(KEY_USR_READ) | UInt32(KEY_USR_WRITE) | UInt32(KEY_USR_SEARCH)
        | UInt32(KEY_USR_LINK) | UInt32(KEY_USR_SETATTR)

    /// The session keyring to store into, and whether it is only the user's default session
    /// keyring (keyrings(7) "user-session keyring"): a process started outside any login
    /// session (no pam_keyinit, a bare `su`, a container) has none of its own, and the kernel
    /// lends it the one every such process of the user shares.
    ///
    /// Looked up without creating one: with creation, a process without a session keyring
    /// would get a new one of its own, gone with it when it exits.
    static func sessionKeyring() throws(CoreError) -> (id: Int32, isUserDefault: Bool) {
        let keyutils = try Keyutils.functions()
        let session = keyutils.getKeyringID(KEY_SPEC_SESSION_KEYRING, 0)
        guard session >= 0 else {
            throw CoreError(
                .unsupported,
                "no session keyring: \(SessionKeyring.reason()) (is the keyring service enabled?)")
        }
        let userSession = keyutils.getKeyringID(KEY_SPEC_USER_SESSION_KEYRING, 0)
        return (session, userSession == session)
    }

    /// The entry with `description` this process possesses through its owner's keyring, or
    /// nil: none, expired, revoked or invalidated. Searches only the owner's keyring of the
    /// session (`ownersKeyring`), so a key another user planted under the same name elsewhere
    /// in the session is never taken for an entry.
    static func find(_ description: String) -> Int32? {
        guard let keyutils = Keyutils.ifLoaded, let ring = ownersKeyring() else { return nil }
        let id = keyutils.search(ring, "user", description, 0)
        guard id > 0, let id = Int32(exactly: id), owner(of: id, type: "user") == geteuid() else {
            return nil
        }
        return id
    }

    /// The name of the calling uid's keyring inside the session keyring.
    private static var ownersKeyringName: String { "p11keychain:uid=\(geteuid())" }

    /// The calling uid's keyring in the session keyring, when one exists that this uid owns
    /// with `ownerOnly` permissions; nil otherwise. A keyring of that name that another user
    /// made, or whose permissions were widened, is not used (`store` replaces it).
    private static func ownersKeyring() -> Int32? {
        guard let keyutils = Keyutils.ifLoaded else { return nil }
        let id = keyutils.search(KEY_SPEC_SESSION_KEYRING, "keyring", ownersKeyringName, 0)
        guard id > 0, let id = Int32(exactly: id), owner(of: id, type: "keyring") == geteuid(),
            permissions(of: id) == ownerOnly
        else { return nil }
        return id
    }

    /// The calling uid's keyring in the session keyring, made when there is none: created in
    /// this process's own keyring (which nothing else possesses), narrowed to `ownerOnly`, and
    /// only then linked into the session keyring, so no other process ever possesses it with
    /// wider permissions. A keyring of that name that is not the owner's own is unlinked first.
    private static func makeOwnersKeyring(in session: Int32) throws(CoreError) -> Int32 {
        let keyutils = try Keyutils.functions()
        if let existing = ownersKeyring() { return existing }
        let impostor = keyutils.search(KEY_SPEC_SESSION_KEYRING, "keyring", ownersKeyringName, 0)
        if impostor > 0, let impostor = Int32(exactly: impostor) { _ = keyutils.unlink(impostor, session) }
        let ring = keyutils.addKey("keyring", ownersKeyringName, nil, 0, KEY_SPEC_PROCESS_KEYRING)
        guard ring > 0 else {
            throw CoreError(
                .storageFailure, "cannot make the keyring for the session entries: \(SessionKeyring.reason())"
            )
        }
        defer { _ = keyutils.unlink(ring, KEY_SPEC_PROCESS_KEYRING) }
        guard keyutils.setPermissions(ring, ownerOnly) == 0, keyutils.link(ring, session) == 0 else {
            let reason = SessionKeyring.reason()
            remove(ring)
            throw CoreError(.storageFailure, "cannot place the keyring for the session entries: \(reason)")
        }
        return ring
    }

    /// The fields of `keyctl_describe`: type;uid;gid;perm;description.
    private static func description(of id: Int32) -> [Substring]? {
        var buffer: UnsafeMutablePointer<CChar>?
        guard let keyutils = Keyutils.ifLoaded, keyutils.describeAlloc(id, &buffer) >= 0, let buffer
        else { return nil }
        defer { free(buffer) }
        let text = String(cString: buffer)
        return text.split(separator: ";", maxSplits: 4, omittingEmptySubsequences: false)
    }

    /// The owning uid of key `id` when it is of `type`, or nil.
    private static func owner(of id: Int32, type: String) -> uid_t? {
        guard let fields = description(of: id), fields.count == 5, fields[0] == type else { return nil }
        return uid_t(fields[1])
    }

    /// The permission mask of key `id`, or nil.
    private static func permissions(of id: Int32) -> UInt32? {
        guard let fields = description(of: id), fields.count == 5 else { return nil }
        return UInt32(fields[3], radix: 16)
    }

    /// The payload of entry `id`, exactly `count` bytes long, or nil when it is gone (expired,
    /// revoked, no longer possessed) or has another length.
    static func read(_ id: Int32, count: Int) -> SecretBytes? {
        guard let keyutils = Keyutils.ifLoaded else { return nil }
        var length = -1
        let payload = SecretBytes(count: count) { buffer in
            guard let base = buffer.baseAddress else { return }
            length = keyutils.read(id, base.assumingMemoryBound(to: CChar.self), buffer.count)
        }
        return length == count ? payload : nil
    }

    /// True while entry `id` exists, has not expired or been revoked, and this process
    /// possesses it: one system call, no copy of the payload.
    static func isReadable(_ id: Int32) -> Bool {
        guard let keyutils = Keyutils.ifLoaded else { return false }
        return keyutils.read(id, nil, 0) >= 0
    }

    /// Stores `payload` as a new `user` key named `description` in the owner's keyring of
    /// `keyring` (the session's), possessor-only, expiring after `timeout` seconds (nil: never;
    /// the session's end still removes it). An entry by that name goes first. Only the owning
    /// uid possesses the owner's keyring, so between the key's creation and the narrowing of
    /// its permissions no other user can reach it either.
    static func store(
        _ payload: SecretBytes, as description: String, in keyring: Int32, timeout: UInt32?
    ) throws(CoreError) -> Int32 {
        let keyutils = try Keyutils.functions()
        if let old = find(description) { remove(old) }
        let ring = try makeOwnersKeyring(in: keyring)
        let id = payload.withUnsafeBytes { bytes in
            keyutils.addKey("user", description, bytes.baseAddress, bytes.count, ring)
        }
        guard id > 0 else {
            throw CoreError(
                .storageFailure, "cannot add the session keyring entry: \(SessionKeyring.reason())")
        }
        guard keyutils.setPermissions(id, possessorOnly) == 0 else {
            let reason = SessionKeyring.reason()
            remove(id)
            throw CoreError(.storageFailure, "cannot restrict the session keyring entry: \(reason)")
        }
        if let timeout, keyutils.setTimeout(id, timeout) != 0 {
            let reason = SessionKeyring.reason()
            remove(id)
            throw CoreError(.storageFailure, "cannot set the session keyring entry's timeout: \(reason)")
        }
        return id
    }

    /// Makes entry `id` unusable at once for every process (keyctl_invalidate(3); revoked
    /// when invalidation is refused) and unlinks it; the kernel frees it.
    static func remove(_ id: Int32) {
        guard let keyutils = Keyutils.ifLoaded else { return }
        if keyutils.invalidate(id) != 0 { _ = keyutils.revoke(id) }
    }

    /// The current `errno`, as text.
    private static func reason() -> String { String(cString: strerror(errno)) }
}
