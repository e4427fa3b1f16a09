internal import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// Tells a reader, in any process, whether a store may have changed since it last looked,
/// without reading the store: a counter in a file beside it (`<store>-changes`).
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
/// signature, on every C_SignInit.
///
/// Readers (and writers, before they write) read the record from a shared mapping of the
/// file's first page (CounterPage): every C_SignInit with a kept key reads the counter, and a
/// `pread` was a system call each time. The mapping is made only of a regular file holding a whole record, when the reader
/// looks at the file (below); writers write with `pwrite`, which the mapping shows at once,
/// and never make the file shorter. Whatever the mapping cannot serve is read with `pread`:
/// a file too short to map, a process out of counter pages, a record that does not check.
///
/// The file is not trusted (ARCHITECTURE.md §4.3): another process may truncate, delete or replace it.
/// Cut short under the mapping, its page reads as zeros instead of raising SIGBUS
/// (CounterPage): an inconsistent record, unknown, and the mapping is dropped until the file
/// holds a record again. A reader also looks at the open file's link count (at most once every few milliseconds,
/// `isCurrentLately`): when it has no name any more (deleted, or replaced by a rename), the
/// value is unknown and the file at the path is opened again. Values read from a later file
/// are offset by a generation, so that none equals one read before. (A file replaced while
/// another name keeps the old one alive, a hard link, is not noticed: that would take a
/// `stat` of the path on every read, measured at 2.5 times an `fstat`.) The file holds the
/// counter and its complement (16 bytes, native order): a read that is not a whole,
/// consistent record (cut short, torn by a concurrent write, or written by hand) is unknown.
/// A writer that finds no consistent value starts again from the clock (even nanoseconds
/// since 1970), above any value counted before. Measured: a read of the mapping is no system
/// call (`ChangeCountTests`, `MappedCounterTests`); with `pread`, two, about 0.3 µs.
///
/// The file is made with the store's mode and owner, as SQLite makes `-wal` and `-shm`, so
/// whoever may write the store may write the counter.
final class ChangeCounter {
    /// The open counter file, or -1 (none could be opened: nothing is ever kept).
    @exclusivity(unchecked) private var fd: Int32 = -1
    /// The file's first page, mapped, while it holds a whole record (CounterPage).
    @exclusivity(unchecked) private var page: CounterPage?
    /// Whether readers read the mapping now (for tests).
    var isMapped: Bool { page != nil }
    /// The counter of an in-memory store, which only this connection sees.
    private var memory: UInt64 = 0
    /// How many times the file was opened again after it was deleted or replaced.
    @exclusivity(unchecked) private var generation: UInt64 = 0
    private(set) var isWritable = false
    /// Why the counter cannot be written, for the error of a write that needs it.
    private(set) var failure: StorageError?
    /// The counter file's path; nil for an in-memory store.
    let file: String?
    private let storePath: String
    /// Whether this process may create the file (it may write the store).
    private let mayCreate: Bool

    /// The size of the counter's record: the value and its complement.
    static let recordSize = 16

    /// A counter for a store only this process sees (`:memory:`).
    init() {
        isWritable = true
        file = nil
        storePath = ":memory:"
        mayCreate = false
    }

    /// The counter of the store at `storePath`, created when `create` and missing.
    init(storePath: String, create: Bool) {
        file = storePath + "-changes"
        self.storePath = storePath
        mayCreate = create
        open(create: create)
    }

    deinit {
        page = nil
        if fd >= 0 { close(fd) }
    }

    /// The current value, or nil when a write is under way (or was cut short), or the counter
    /// cannot be read: then whatever the caller kept from an earlier read must be read again.
    var value: UInt64? {
        guard file != nil else { return memory & 1 == 0 ? memory : nil }
        guard isCurrentLately() else {
            reopen()
            return nil
        }
        guard let raw = readMapped() ?? read(), raw & 1 == 0 else { return nil }
        // An even offset keeps the parity; values of different generations differ.
        return raw &+ (generation &<< 56)
    }

    /// Marks a write as under way. Call with SQLite's write lock held: writers are
    /// serialised, so a read and a write of the file cannot lose an update. Throws when the
    /// counter cannot be moved: other processes would go on serving what they kept.
    func beginWrite() throws(StorageError) {
        guard file != nil else {
            memory = (memory &+ 1) | 1
            return
        }
        // Writers always look at the file; one that holds a whole record is mapped here too, so
        // that a process that only writes (an import) reads the counter without `pread`.
        var size: Int64 = 0
        if isCurrent(size: &size) { mapIfWhole(size: size) } else { reopen() }
        guard isWritable else {
            throw failure ?? StorageError(.readOnly, "cannot write \(storePath)-changes")
        }
        let next = ((readMapped() ?? read()).map { $0 &+ 1 } ?? ChangeCounter.freshStart()) | 1
        try write(next)
    }

    /// Marks the write as ended, committed or not: a new even value. When the file cannot be
    /// written, the counter stays odd and nobody keeps anything, which is safe.
    func endWrite() {
        guard file != nil else {
            memory = memory & 1 == 1 ? memory &+ 1 : memory &+ 2
            return
        }
        guard isWritable else { return }
        let next =
            (readMapped() ?? read()).map { $0 & 1 == 1 ? $0 &+ 1 : $0 &+ 2 } ?? ChangeCounter.freshStart()
        // Unwritten, the counter stays odd and every reader re-reads: safe, only slower.
        try? write(next)
    }

    /// Tries again to open the file for writing (after a full disk, say).
    func retry() {
        guard file != nil, !isWritable, mayCreate else { return }
        reopen()
    }

    // MARK: The file

    /// When `isCurrentLately` last found the file current (CLOCK_MONOTONIC_COARSE, nanoseconds).
    @exclusivity(unchecked) private var lastFoundCurrent: UInt64 = 0
    /// How long a finding that the file is current is trusted by readers: 1 ms, on a clock
    /// that moves once a kernel tick.
    static let currencyInterval: UInt64 = 1_000_000

    /// `isCurrent()`, asked at most once a millisecond and a tick of the coarse clock (1–4 ms
    /// by the kernel's HZ; `clock_getres` says which): every C_SignInit reads the counter, and
    /// the `fstat` doubled that read's cost (about 0.5 µs, 2–3 % of an ECDSA signature). The
    /// coarse clock is read from memory the kernel updates, where CLOCK_MONOTONIC also reads
    /// the CPU's counter: that was 7 % of an HMAC's C_SignInit. A counter deleted or replaced
    /// is noticed within a few milliseconds instead of at once; the process that deleted it
    /// took longer than that to do so. Writers always check.
    private func isCurrentLately() -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &now)
        let nanoseconds =
            UInt64(truncatingIfNeeded: now.tv_sec) &* 1_000_000_000
            &+ UInt64(truncatingIfNeeded: now.tv_nsec)
        if fd >= 0, lastFoundCurrent != 0, nanoseconds &- lastFoundCurrent < ChangeCounter.currencyInterval {
            return true
        }
        var size: Int64 = 0
        guard isCurrent(size: &size) else {
            lastFoundCurrent = 0
            return false
        }
        lastFoundCurrent = nanoseconds
        mapIfWhole(size: size)
        return true
    }

    /// Maps the file (of `size` bytes) unless it is: a regular file (checked when opened)
    /// holding a whole record can be, since writers never make it shorter, and one cut short
    /// by another process reads as zeros.
    private func mapIfWhole(size: Int64) {
        if page == nil, size >= Int64(ChangeCounter.recordSize) {
            page = CounterPage(mapping: fd)
        }
    }

    /// False when the open file is gone from its path (deleted, or replaced by a rename) or
    /// there is none.
    private func isCurrent() -> Bool {
        var size: Int64 = 0
        return isCurrent(size: &size)
    }

    /// `isCurrent()`, leaving the file's size in `size`. Asks for the link count and size
    /// only (statx, `p11k_links_and_size`), never the times: on a file system with
    /// fine-grained timestamps (ext4 since Linux 6.13) a look at the change time makes the
    /// next `pwrite` of the file stamp a new one and dirty the inode, and beginWrite looks
    /// right before it writes. With `fstat` there, that journalled inode update was most of
    /// what the counter cost a write transaction (`bench/README.md`, store paths).
    private func isCurrent(size: inout Int64) -> Bool {
        guard fd >= 0 else { return false }
        var links: UInt64 = 0
        return p11k_links_and_size(fd, &links, &size) == 0 && links > 0
    }

    /// The counter from the mapping, or nil when there is none or its record does not check
    /// (cut short, torn by a write under way, written by hand): then the mapping is dropped
    /// until the next look at the file, and the caller reads with `pread`.
    private func readMapped() -> UInt64? {
        guard let page else { return nil }
        let (value, complement) = page.record
        guard complement == ~value else {
            self.page = nil
            return nil
        }
        return value
    }

    private func reopen() {
        page = nil
        if fd >= 0 { close(fd) }
        fd = -1
        lastFoundCurrent = 0
        isWritable = false
        generation &+= 1
        open(create: mayCreate)
    }

    /// The counter, or nil when the file does not hold a consistent record. A file of 8
    /// bytes is a counter without its complement, as the first releases wrote it.
    private func read() -> UInt64? {
        var record: (UInt64, UInt64) = (0, 0)
        let count = withUnsafeMutableBytes(of: &record) { pread(fd, $0.baseAddress, $0.count, 0) }
        if count == 8 { return record.0 }
        guard count == ChangeCounter.recordSize, record.1 == ~record.0 else { return nil }
        return record.0
    }

    private func write(_ value: UInt64) throws(StorageError) {
        var record = (value, ~value)
        let count = withUnsafeBytes(of: &record) { pwrite(fd, $0.baseAddress, $0.count, 0) }
        guard count == ChangeCounter.recordSize else {
            let error = errno
            throw StorageError(
                error == ENOSPC || error == EDQUOT ? .full : .failed,
                "cannot write \(file ?? ""), the store's change counter: \(StoreFile.reason(error))")
        }
    }

    /// A value above any counted before: even nanoseconds of the real-time clock. Counters
    /// move by at most 2 a write, far slower than the clock.
    private static func freshStart() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let nanoseconds = UInt64(clamping: now.tv_sec) &* 1_000_000_000 &+ UInt64(clamping: now.tv_nsec)
        return nanoseconds & ~1
    }

    private func open(create: Bool) {
        guard let file else { return }
        var store = stat()
        guard stat(storePath, &store) == 0 else {
            failure = StorageError(.cannotOpen, "cannot read \(storePath): \(StoreFile.reason(errno))")
            return
        }
        // O_NONBLOCK: a FIFO put there must not block the host (StoreFile).
        let flags = O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC
        var created = false
        var descriptor: Int32 = -1
        if create {
            descriptor = Glibc.open(file, O_RDWR | O_CREAT | O_EXCL | flags, mode_t(0o600))
            created = descriptor >= 0
            if descriptor < 0 { descriptor = Glibc.open(file, O_RDWR | flags) }
        }
        isWritable = descriptor >= 0
        if descriptor < 0 {
            let error = errno
            failure = StorageError(
                error == ENOSPC || error == EDQUOT ? .full : .readOnly,
                "cannot write \(file), the store's change counter: \(StoreFile.reason(error))")
            descriptor = Glibc.open(file, O_RDONLY | flags)
        }
        guard descriptor >= 0 else { return }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            failure = StorageError(
                .cannotOpen,
                "\(file), the store's change counter, is \(StoreFile.kind(info.st_mode)), "
                    + "not a regular file")
            isWritable = false
            close(descriptor)
            return
        }
        do {
            // Another user's counter could freeze what every process keeps (StoreFile).
            _ = try StoreFile.checkOwner(info, of: file, storeIsSystem: store.st_uid == 0 && geteuid() != 0)
        } catch {
            failure = error
            isWritable = false
            close(descriptor)
            return
        }
        if created {
            // The store's permissions and, when root made the file, its owner. The file stays
            // empty (unknown) until the first write sets it, under SQLite's write lock.
            fchmod(descriptor, store.st_mode & 0o666)
            if geteuid() == 0 { _ = fchown(descriptor, store.st_uid, store.st_gid) }
        }
        fd = descriptor
        if isWritable { failure = nil }
    }
}
