internal import CKeyutils
internal import KeychainCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// The calling process's session keyring in the Linux kernel key retention service
/// (keyrings(7), keyctl(2)), through libkeyutils: where `p11keychain unlock` leaves what the
/// processes of a login session need to open a token (SessionUnlock.swift). Nothing here is
/// written to a file: the kernel keeps the payload in its own memory, and a key whose
/// permissions are the possessor's alone is readable only by processes that hold the keyring
/// it is linked into (the session's processes), never by another user or another session.
enum SessionKeyring {
    /// The permissions of every entry: view, read, update, search and set attributes (the
    /// timeout) for its possessor; nothing for the owner user, group or others, so a process
    /// of the same user outside the session cannot even see it (keyctl_setperm(3)).
    static let possessorOnly: UInt32 =
        UInt32(KEY_POS_VIEW) | UInt32(KEY_POS_READ) | UInt32(KEY_POS_WRITE) | UInt32(KEY_POS_SEARCH)
        | UInt32(KEY_POS_SETATTR)

    /// The session keyring to store into, and whether it is only the user's default session
    /// keyring (keyrings(7) "user-session keyring"): a process started outside any login
    /// session (no pam_keyinit, a bare `su`, a container) has none of its own, and the kernel
    /// lends it the one every such process of the user shares.
    ///
    /// Looked up without creating one: with creation, a process without a session keyring
    /// would get a new one of its own, gone with it when it exits.
    static func sessionKeyring() throws(CoreError) -> (id: Int32, isUserDefault: Bool) {
        let session = keyctl_get_keyring_ID(KEY_SPEC_SESSION_KEYRING, 0)
        guard session >= 0 else {
            throw CoreError(
                .unsupported,
                "no session keyring: \(SessionKeyring.reason()) (is the keyring service enabled?)")
        }
        let userSession = keyctl_get_keyring_ID(KEY_SPEC_USER_SESSION_KEYRING, 0)
        return (session, userSession == session)
    }

    /// The entry with `description` this process possesses, or nil: none, expired, revoked
    /// or invalidated. `request_key` with no callout searches the thread, process and session
    /// keyrings (the user's default session keyring when there is no session keyring), links
    /// the key nowhere, asks nothing of user space, and changes nothing in the process.
    static func find(_ description: String) -> Int32? {
        let id = request_key("user", description, nil, 0)
        return id > 0 ? id : nil
    }

    /// The payload of entry `id`, exactly `count` bytes long, or nil when it is gone (expired,
    /// revoked, no longer possessed) or has another length.
    static func read(_ id: Int32, count: Int) -> SecretBytes? {
        var length = -1
        let payload = SecretBytes(count: count) { buffer in
            guard let base = buffer.baseAddress else { return }
            length = keyctl_read(id, base.assumingMemoryBound(to: CChar.self), buffer.count)
        }
        return length == count ? payload : nil
    }

    /// True while entry `id` exists, has not expired or been revoked, and this process
    /// possesses it: one system call, no copy of the payload.
    static func isReadable(_ id: Int32) -> Bool {
        keyctl_read(id, nil, 0) >= 0
    }

    /// Stores `payload` as a new `user` key named `description` in `keyring`, possessor-only,
    /// expiring after `timeout` seconds (nil: never; the session's end still removes it). An
    /// entry by that name goes first. The payload is never readable by anyone but the
    /// possessor: the kernel's default permissions for a new key let its owner only view its
    /// description, and the permissions are narrowed before this returns.
    static func store(
        _ payload: SecretBytes, as description: String, in keyring: Int32, timeout: UInt32?
    ) throws(CoreError) -> Int32 {
        if let old = find(description) { remove(old) }
        let id = payload.withUnsafeBytes { bytes in
            add_key("user", description, bytes.baseAddress, bytes.count, keyring)
        }
        guard id > 0 else {
            throw CoreError(
                .storageFailure, "cannot add the session keyring entry: \(SessionKeyring.reason())")
        }
        guard keyctl_setperm(id, possessorOnly) == 0 else {
            let reason = SessionKeyring.reason()
            remove(id)
            throw CoreError(.storageFailure, "cannot restrict the session keyring entry: \(reason)")
        }
        if let timeout, keyctl_set_timeout(id, timeout) != 0 {
            let reason = SessionKeyring.reason()
            remove(id)
            throw CoreError(.storageFailure, "cannot set the session keyring entry's timeout: \(reason)")
        }
        return id
    }

    /// Makes entry `id` unusable at once for every process (keyctl_invalidate(3); revoked
    /// when invalidation is refused) and unlinks it; the kernel frees it.
    static func remove(_ id: Int32) {
        if keyctl_invalidate(id) != 0 { _ = keyctl_revoke(id) }
    }

    /// The current `errno`, as text.
    private static func reason() -> String { String(cString: strerror(errno)) }
}
