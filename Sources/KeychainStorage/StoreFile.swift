#if canImport(Glibc)
    import Glibc
#endif

/// The checks a store's files pass before SQLite is handed their path. Files are never
/// trusted: another process (or a careless configuration) may have put a FIFO, a device, a
/// directory, a symbolic link or a damaged file where the store should be.
///
/// - A FIFO opened for reading blocks until a writer comes, and SQLite opens by path with a
///   blocking `open(2)`; the store's `open` here is `O_NONBLOCK`, then `fstat` says what it is.
/// - A symbolic link is followed, as SQLite follows it (its unix VFS names `-wal` and `-shm`
///   after the resolved path, so that two paths to one database share one WAL). The store's own
///   `-changes` file is named after the resolved path too (`resolved`): two paths to one store
///   must share one change counter, or each would keep what the other changed.
/// - SQLite treats a file shorter than a page as an empty database and writes a new one over
///   it: a store cut down to a few bytes would silently become a new token. A non-empty file
///   must therefore start with SQLite's header (file format §1.3.1) and hold one page at least.
///
/// What SQLite itself checks (a page count larger than the file, a malformed page) it reports
/// as `SQLITE_CORRUPT`, which maps to `.corrupt` as well.
///
/// Whose files they are (ARCHITECTURE.md §4.2, §6.1): a store receives PIN records and
/// sealed keys, so a file another user made or may write is never used. Each file must be
/// owned by the effective uid and writable by nobody else (no group or other write bit); a
/// store owned by root that this non-root process can only read, a system store, is allowed
/// and opened read-only. The store and its companions (`-wal`, `-journal`, `-shm`, and the
/// change counter's `-changes`) are checked on a descriptor opened here (`fstat`), never by
/// a `stat` of a path that may change before the open. SQLite then opens the path again, so
/// the check proves what was there when it was made: in a directory where another user may
/// rename files, the file could be swapped in between, which is why the default store's
/// directory is made 0700.
///
/// What cannot be checked here: SQLite maps the `-shm` file shared, and a process that cuts it
/// short while the store is open makes SQLite fault (SIGBUS) in every process that uses the
/// store (seen with SQLite 3.40: at the next read when cut to 0 bytes, at the next write when
/// cut inside its first page). SQLite offers no way around it short of exclusive locking,
/// which would serve one process only; the files of our own making, the change counter
/// above all, are read so that this cannot happen to them.
package enum StoreFile {
    /// What `check` found: the file's contents, and whether it is a system store.
    struct Verdict: Equatable {
        var contents: Contents
        /// Owned by root, and this process is not root: opened read-only.
        var isSystemStore: Bool
    }

    /// What is at the store's path.
    enum Contents: Equatable {
        case missing
        /// A regular file of zero bytes: a store created but never written (ours, or one
        /// whose creator was killed); SQLite makes it a database.
        case empty
        /// A regular file that starts like an SQLite database.
        case database
    }

    /// The first 16 bytes of every SQLite database file (file format §1.3.1).
    static let header: [UInt8] = Array("SQLite format 3".utf8) + [0]
    /// The smallest page size, so the smallest database file.
    static let minimumSize = 512

    /// Checks the file at `path`.
    static func check(_ path: String) throws(StorageError) -> Verdict {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else {
            let error = errno
            if error == ENOENT { return Verdict(contents: .missing, isSystemStore: false) }
            throw StorageError(.cannotOpen, "cannot open store \(path): \(reason(error))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw StorageError(.cannotOpen, "cannot open store \(path): \(reason(errno))")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw StorageError(.cannotOpen, "store \(path) is \(kind(info.st_mode)), not a regular file")
        }
        let isSystemStore = try checkOwner(info, of: path, storeIsSystem: nil)
        if info.st_size == 0 { return Verdict(contents: .empty, isSystemStore: isSystemStore) }
        guard info.st_size >= off_t(minimumSize) else {
            throw StorageError(
                .corrupt,
                "store \(path) is damaged: \(info.st_size) byte\(info.st_size == 1 ? "" : "s"), shorter than "
                    + "any SQLite database; "
                    + "it was left as it is (move it away to start a new store)")
        }
        var start = [UInt8](repeating: 0, count: header.count)
        let count = start.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count == header.count else {
            throw StorageError(.cannotOpen, "cannot read store \(path): \(reason(errno))")
        }
        guard start == header else {
            throw StorageError(
                .corrupt,
                "store \(path) is not an SQLite database (damaged, or another kind of file); "
                    + "it was left as it is")
        }
        return Verdict(contents: .database, isSystemStore: isSystemStore)
    }

    /// Refuses a file another user made or may write: it must be owned by the effective uid
    /// and carry no group or other write bit; owned by root, it is allowed to a non-root
    /// process as a system store's file. `storeIsSystem` is nil for the store itself, else
    /// what its check found: a system store's companions may be root's, another's only ours.
    /// Returns whether the file is a system store's (root's, this process not root).
    static func checkOwner(_ info: stat, of path: String, storeIsSystem: Bool?) throws(StorageError)
        -> Bool
    {
        let me = geteuid()
        let isSystem = info.st_uid == 0 && me != 0 && storeIsSystem != false
        guard info.st_uid == me || isSystem else {
            throw StorageError(
                .cannotOpen,
                "\(path) belongs to uid \(info.st_uid), not to this process's uid \(me); a store and its "
                    + "files must be the user's own, or the system's (root's, read-only): "
                    + "if it is yours, chown \(me) \(path)")
        }
        guard info.st_mode & 0o022 == 0 else {
            throw StorageError(
                .cannotOpen,
                "\(path) is writable by \(writers[Int(info.st_mode & 0o022)] ?? "others") (mode "
                    + "\(String(info.st_mode & 0o7777, radix: 8))), so another user may change it: "
                    + "chmod go-w \(path) (stores are made 0600)")
        }
        return isSystem
    }

    private static let writers = [0o020: "its group", 0o002: "others", 0o022: "its group and others"]

    /// What `path` names before its last "/" ("" when it has none): the directory of a file
    /// given as "dir/file". Read from the UTF-8 bytes: splitting and joining components went
    /// through generic code whose types the runtime builds by mangled name, 50 µs of a
    /// module's load.
    package static func directory(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        return String(path[..<slash])
    }

    /// The store's path with every symbolic link resolved (`realpath`), as SQLite resolves
    /// it; `path` itself when it cannot be resolved (missing).
    static func resolved(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The `-wal`, `-shm` and `-journal` files of the store at `resolvedPath`, if there are
    /// any, must be regular files too (SQLite would block on a FIFO there just the same), and
    /// pass the owner rule of the store (`checkOwner`). Checked with `stat`, never by opening
    /// them: these are SQLite's files, whose locks are the process's POSIX locks, and closing
    /// any descriptor of one drops every lock this process holds on it (fcntl(2)). A store
    /// already open in this process (another token, another keychain) would lose its `-shm`
    /// locks, and another process could then rebuild the `-shm` under its mapping: SIGBUS
    /// (seen: 16 processes opening one new store at once).
    static func checkCompanions(of resolvedPath: String, storeIsSystem: Bool) throws(StorageError) {
        for suffix in ["-wal", "-shm", "-journal"] {
            let path = resolvedPath + suffix
            var info = stat()
            guard stat(path, &info) == 0 else { continue }
            guard info.st_mode & S_IFMT == S_IFREG else {
                throw StorageError(.cannotOpen, "\(path) is \(kind(info.st_mode)), not a regular file")
            }
            _ = try checkOwner(info, of: path, storeIsSystem: storeIsSystem)
        }
    }

    /// Creates an empty store file, mode 0600, unless something is there already; SQLite
    /// gives `-wal` and `-shm` the same mode, so none of them ever exists with looser
    /// permissions. Without O_EXCL, so that a link to a file yet to be made makes it.
    static func create(_ path: String) {
        let fd = open(path, O_CREAT | O_RDWR | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0o600)
        if fd >= 0 { close(fd) }
    }

    /// A file type for a message: "a directory", "a FIFO"… (the configuration's reader too).
    package static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "a directory"
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        default: "not a regular file"
        }
    }

    static func reason(_ error: Int32) -> String { String(cString: strerror(error)) }
}
