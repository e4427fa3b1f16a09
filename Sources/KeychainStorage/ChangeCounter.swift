internal import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// Tells a reader, in any process, whether a store may have changed since it last looked,
/// without reading the store: a counter in a file beside it (`<store>-changes`) that every
/// process maps shared.
///
/// A writer makes the counter odd once it holds SQLite's write lock, and even again, at a
/// value never used before, when its transaction ends. A reader that sees the same even value
/// before and after a read may keep what it read for as long as the counter keeps that value:
/// no transaction can have committed in between. A writer killed between the two steps leaves
/// the counter odd, and nobody keeps anything until the next writer ends: stale values are
/// never served, only recomputed.
///
/// Why a file of its own: SQLite cannot say "nothing committed since" without starting a read
/// transaction, and that takes locks on the `-shm` file: about 5 µs, a quarter of an ECDSA
/// signature, on every C_SignInit. Loading the counter is one memory read.
///
/// The file is made with the store's mode and owner, as SQLite makes `-wal` and `-shm`, so
/// whoever may write the store may write the counter. Like those two, it must not be deleted
/// while the store is in use.
final class ChangeCounter {
    /// The mapped counter; nil when the file cannot be read (then nothing is ever kept).
    private var counter: UnsafeMutablePointer<UInt64>?
    private var mapped = false
    private(set) var isWritable = false
    /// Why the counter cannot be written, for the error of a write that needs it.
    private(set) var failure: StorageError?
    private let file: String?

    /// A counter for a store only this process sees (`:memory:`).
    init() {
        let counter = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
        counter.initialize(to: 0)
        self.counter = counter
        isWritable = true
        file = nil
    }

    /// The counter of the store at `storePath`, created when `create` and missing.
    init(storePath: String, create: Bool) {
        file = storePath + "-changes"
        open(storePath: storePath, create: create)
    }

    deinit {
        guard let counter else { return }
        if mapped {
            munmap(counter, MemoryLayout<UInt64>.size)
        } else {
            counter.deallocate()
        }
    }

    /// The current value, or nil when a write is under way (or was cut short) or there is no
    /// counter: then whatever the caller kept from an earlier read must be read again.
    var value: UInt64? {
        guard let counter else { return nil }
        let value = p11k_counter_load(counter)
        return value & 1 == 0 ? value : nil
    }

    /// Marks a write as under way. Call with SQLite's write lock held: writers are
    /// serialised, so a plain load and store cannot lose an update.
    func beginWrite() {
        guard isWritable, let counter else { return }
        p11k_counter_store(counter, (p11k_counter_load(counter) &+ 1) | 1)
    }

    /// Marks the write as ended, committed or not: a new even value.
    func endWrite() {
        guard isWritable, let counter else { return }
        let value = p11k_counter_load(counter)
        p11k_counter_store(counter, value & 1 == 1 ? value &+ 1 : value &+ 2)
    }

    /// Tries again to open the file for writing (after a full disk, say).
    func retry(storePath: String) {
        guard file != nil, !isWritable else { return }
        if let counter, mapped { munmap(counter, MemoryLayout<UInt64>.size) }
        counter = nil
        mapped = false
        open(storePath: storePath, create: true)
    }

    private func open(storePath: String, create: Bool) {
        guard let file else { return }
        var store = stat()
        guard stat(storePath, &store) == 0 else {
            failure = StorageError(.cannotOpen, "cannot read \(storePath): \(ChangeCounter.reason())")
            return
        }
        var created = false
        var fd: Int32 = -1
        if create {
            fd = Glibc.open(file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode_t(0o600))
            created = fd >= 0
            if fd < 0 { fd = Glibc.open(file, O_RDWR | O_CLOEXEC | O_NOFOLLOW) }
        }
        isWritable = fd >= 0
        if fd < 0 {
            failure = StorageError(
                errno == ENOSPC || errno == EDQUOT ? .full : .readOnly,
                "cannot write \(file), the store's change counter: \(ChangeCounter.reason())")
            fd = Glibc.open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        }
        guard fd >= 0 else { return }
        defer { close(fd) }
        if created {
            // The store's permissions and, when root made the file, its owner.
            fchmod(fd, store.st_mode & 0o666)
            if geteuid() == 0 { _ = fchown(fd, store.st_uid, store.st_gid) }
        }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return }
        let size = MemoryLayout<UInt64>.size
        // Reading past the end of a mapped file raises SIGBUS: the file must hold the counter.
        if info.st_size < size {
            guard isWritable, ftruncate(fd, off_t(size)) == 0 else {
                failure = StorageError(
                    errno == ENOSPC || errno == EDQUOT ? .full : .failed,
                    "cannot size \(file), the store's change counter: \(ChangeCounter.reason())")
                isWritable = false
                return
            }
        }
        let protection = isWritable ? PROT_READ | PROT_WRITE : PROT_READ
        guard let address = mmap(nil, size, protection, MAP_SHARED, fd, 0), address != MAP_FAILED else {
            failure = StorageError(.failed, "cannot map \(file): \(ChangeCounter.reason())")
            isWritable = false
            return
        }
        counter = address.assumingMemoryBound(to: UInt64.self)
        mapped = true
        if isWritable { failure = nil }
    }

    private static func reason() -> String { String(cString: strerror(errno)) }
}
