internal import CKeyutils
internal import KeychainStorage

#if canImport(Glibc)
    import Glibc
#endif

/// libkeyutils's functions (SessionKeyring.swift), from `libkeyutils.so.1` opened when the
/// session keyring is first used.
///
/// The module does not link libkeyutils (`DynamicLibrary`): linked, it was loaded into every
/// host that loads the module, keyring used or not, about 90 µs of the module's `dlopen`
/// (ARCHITECTURE.md §11.1).
struct Keyutils: @unchecked Sendable {
    // @unchecked: C function pointers, set once and never changed.
    let addKey: p11k_add_key
    let describeAlloc: p11k_keyctl_describe_alloc
    let getKeyringID: p11k_keyctl_get_keyring_ID
    let invalidate: p11k_keyctl_invalidate
    let link: p11k_keyctl_link
    let read: p11k_keyctl_read
    let revoke: p11k_keyctl_revoke
    let search: p11k_keyctl_search
    let setTimeout: p11k_keyctl_set_timeout
    let setPermissions: p11k_keyctl_setperm
    let unlink: p11k_keyctl_unlink

    /// The library's soname: the ABI these declarations are of (keyutils.h).
    static let soname = "libkeyutils.so.1"

    /// The functions, or why they cannot be had (libkeyutils1 not installed, a symbol missing).
    static let loaded: Result<Keyutils, CoreError> = load()

    /// The functions; an `.unsupported` error naming the library when it cannot be loaded.
    static func functions() throws(CoreError) -> Keyutils { try loaded.get() }

    /// The functions, or nil when the library cannot be loaded: for the lookups that answer
    /// "no entry" (find, read, describe, remove). Without the library no entry can have been
    /// made in this process's reach; the calls that make one (`store`, the session keyring)
    /// use `functions()` and throw the library's error, which the caller reports.
    static var ifLoaded: Keyutils? {
        if case .success(let functions) = loaded { return functions }
        return nil
    }

    private static func load() -> Result<Keyutils, CoreError> {
        var library: DynamicLibrary
        switch DynamicLibrary.open(soname) {
        case .success(let opened): library = opened
        case .failure(let failure):
            return .failure(
                CoreError(
                    .unsupported,
                    "the kernel keyring library \(soname) cannot be loaded (install Debian's libkeyutils1): "
                        + failure.reason))
        }
        func symbol<F>(_ name: String, as type: F.Type) -> F? { library.function(name, as: type) }
        guard let addKey = symbol("add_key", as: p11k_add_key.self),
            let describeAlloc = symbol("keyctl_describe_alloc", as: p11k_keyctl_describe_alloc.self),
            let getKeyringID = symbol("keyctl_get_keyring_ID", as: p11k_keyctl_get_keyring_ID.self),
            let invalidate = symbol("keyctl_invalidate", as: p11k_keyctl_invalidate.self),
            let link = symbol("keyctl_link", as: p11k_keyctl_link.self),
            let read = symbol("keyctl_read", as: p11k_keyctl_read.self),
            let revoke = symbol("keyctl_revoke", as: p11k_keyctl_revoke.self),
            let search = symbol("keyctl_search", as: p11k_keyctl_search.self),
            let setTimeout = symbol("keyctl_set_timeout", as: p11k_keyctl_set_timeout.self),
            let setPermissions = symbol("keyctl_setperm", as: p11k_keyctl_setperm.self),
            let unlink = symbol("keyctl_unlink", as: p11k_keyctl_unlink.self)
        else {
            return .failure(
                CoreError(
                    .unsupported, "\(soname) lacks \(library.missing.joined(separator: ", ")): it is too old")
            )
        }
        return .success(
            Keyutils(
                addKey: addKey, describeAlloc: describeAlloc, getKeyringID: getKeyringID,
                invalidate: invalidate, link: link, read: read, revoke: revoke, search: search,
                setTimeout: setTimeout, setPermissions: setPermissions, unlink: unlink))
    }
}
