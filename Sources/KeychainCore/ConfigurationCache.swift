#if canImport(Glibc)
    import Glibc
#endif

/// The configuration as last read, for the Swift faces, which open the default keychain on
/// every `SecItem…` call: reading the environment and the file each time was a fifth of a
/// `SecItemCopyMatching` (bench/session.sh).
///
/// What was read is kept only while everything that chose it is as it was, checked on every
/// call:
///
/// - the environment variables configuration reads (`P11KEYCHAIN_*`, `XDG_*`, `HOME`),
///   compared byte for byte in place, with no copy;
/// - each file `Configuration.load` may read (`$P11KEYCHAIN_CONF`, else the user's and the
///   system's): whether it exists, and for a regular file its device, inode, mode, owner, size
///   and modification and change times (ns); for another kind of file (`/dev/null`) its kind
///   and device number.
///
/// A file changed within the same clock tick as the read, in place, to the same size, would
/// keep its times: so a configuration whose file changed less than ``settlingTime`` before
/// it was read is not kept, and the file is read again on each call until it has been
/// unchanged for that long. Not kept either: a privileged host's (its environment is not its
/// own, and the password database chooses its home), one read without `$HOME` (the password
/// database chooses it), and a configuration that did not parse (each call reports the error
/// anew).
public final class ConfigurationCache: @unchecked Sendable {
    // @unchecked: `cached` is read and written only with `lock` held.
    /// The process's one cache.
    public static let shared = ConfigurationCache()

    /// How long a configuration file must have been unchanged for what was read from it to be
    /// kept (file times move in clock ticks of a few milliseconds).
    public static let settlingTime: Int64 = 1

    private let lock = Lock()
    private var cached: (sources: Sources, configuration: Configuration)?

    public init() {}

    /// The configuration `Configuration.load()` would read now.
    public func current() throws(Configuration.ParseError) -> Configuration {
        if let hit = lock.withLock({ cached }), hit.sources.areCurrent() { return hit.configuration }
        guard !Environment.isPrivileged else { return try Configuration.load() }
        // The entries compared later are taken first: a setenv between the two reads then
        // makes the kept copy differ from the environment, and the next call reads again.
        let entries = Sources.environmentNow()
        let environment = Environment.current
        guard let home = environment["HOME"], !home.isEmpty else {
            lock.withLock { cached = nil }
            return try Configuration.load(environment: environment, privileged: false)
        }
        // Taken before the read: a file changed meanwhile no longer matches on the next call.
        let sources = Sources(
            environment: entries,
            files: Configuration.candidateFiles(environment: environment, home: home, privileged: false))
        let configuration: Configuration
        do {
            configuration = try Configuration.load(environment: environment, privileged: false)
        } catch {
            lock.withLock { cached = nil }
            throw error
        }
        lock.withLock { cached = sources.isSettled ? (sources, configuration) : nil }
        return configuration
    }

    /// Forgets what was read (tests).
    public func removeAll() {
        lock.withLock { cached = nil }
    }

    /// What a configuration was read from.
    struct Sources {
        /// Every configuration variable's `environ` entry, NUL-terminated, in `environ` order.
        var environment: [UInt8]
        /// The files `load` may read, each with its state before the read.
        var files: [(path: String, state: FileState)]
        /// When the state was taken (CLOCK_REALTIME seconds, as file times).
        var taken: Int64
        /// Who read them: a host that changes its effective user or group (a service dropping
        /// privileges without exec) may no longer read, or may newly read, the same files.
        var identity = (user: geteuid(), group: getegid())

        init(environment: [UInt8], files paths: [String]) {
            self.environment = environment
            // Every candidate, not only up to the first that exists: `load` passes over one it
            // may not read, and reads the next.
            files = paths.map { ($0, FileState($0)) }
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            taken = Int64(now.tv_sec)
        }

        /// True when no file tried was changed within `settlingTime` of the read.
        var isSettled: Bool {
            files.allSatisfy { file in
                guard let changed = file.state.latestChange else { return true }
                return changed < taken &- ConfigurationCache.settlingTime
            }
        }

        /// True while the environment and every file tried are as they were.
        func areCurrent() -> Bool {
            identity == (geteuid(), getegid()) && Sources.environmentMatches(environment)
                && files.allSatisfy { FileState($0.path) == $0.state }
        }

        /// The configuration variables' entries of `environ` now.
        static func environmentNow() -> [UInt8] {
            var bytes: [UInt8] = []
            var cursor = environ
            while let entry = cursor.pointee {
                cursor += 1
                guard Environment.isConfigurationEntry(entry) else { continue }
                let length = strlen(entry) + 1
                entry.withMemoryRebound(to: UInt8.self, capacity: length) { start in
                    bytes.append(contentsOf: UnsafeBufferPointer(start: start, count: length))
                }
            }
            return bytes
        }

        /// True when `environ`'s configuration entries are `stored`, compared in place.
        static func environmentMatches(_ stored: [UInt8]) -> Bool {
            stored.withUnsafeBytes { buffer -> Bool in
                var offset = 0
                var cursor = environ
                while let entry = cursor.pointee {
                    cursor += 1
                    guard Environment.isConfigurationEntry(entry) else { continue }
                    let length = strlen(entry) + 1
                    guard let base = buffer.baseAddress, buffer.count - offset >= length,
                        memcmp(base + offset, entry, length) == 0
                    else { return false }
                    offset += length
                }
                return offset == buffer.count
            }
        }
    }

    /// What `stat` says of a path, as far as reading it as a configuration file depends on it.
    struct FileState: Equatable {
        /// `errno` of a failed `stat`, else 0.
        var error: Int32 = 0
        var device: UInt64 = 0
        var inode: UInt64 = 0
        var mode: UInt32 = 0
        var owner: UInt32 = 0
        var group: UInt32 = 0
        var deviceNumber: UInt64 = 0
        var size: Int64 = 0
        /// Modification and change times, seconds and nanoseconds.
        var modified: (seconds: Int64, nanoseconds: Int64) = (0, 0)
        var changed: (seconds: Int64, nanoseconds: Int64) = (0, 0)

        init(_ path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else {
                error = errno
                return
            }
            mode = UInt32(truncatingIfNeeded: info.st_mode)
            guard info.st_mode & S_IFMT == S_IFREG else {
                // Not read: `/dev/null` is empty, anything else an error, whatever its times.
                deviceNumber = UInt64(truncatingIfNeeded: info.st_rdev)
                return
            }
            device = UInt64(truncatingIfNeeded: info.st_dev)
            inode = UInt64(truncatingIfNeeded: info.st_ino)
            owner = UInt32(truncatingIfNeeded: info.st_uid)
            group = UInt32(truncatingIfNeeded: info.st_gid)
            size = Int64(truncatingIfNeeded: info.st_size)
            modified = (Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec))
            changed = (Int64(info.st_ctim.tv_sec), Int64(info.st_ctim.tv_nsec))
        }

        /// The later of a regular file's modification and change times (seconds), else nil.
        var latestChange: Int64? {
            mode & UInt32(S_IFMT) == UInt32(S_IFREG) ? max(modified.seconds, changed.seconds) : nil
        }

        static func == (lhs: FileState, rhs: FileState) -> Bool {
            lhs.error == rhs.error && lhs.device == rhs.device && lhs.inode == rhs.inode
                && lhs.mode == rhs.mode && lhs.owner == rhs.owner && lhs.group == rhs.group
                && lhs.deviceNumber == rhs.deviceNumber && lhs.size == rhs.size
                && lhs.modified == rhs.modified && lhs.changed == rhs.changed
        }
    }
}
