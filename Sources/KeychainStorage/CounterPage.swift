#if canImport(Glibc)
    import Glibc
#endif

/// The first page of a change-counter file, mapped shared (`MAP_SHARED`, read-only): a reader
/// sees a writer's `pwrite` of the record without a system call of its own (ChangeCounter).
///
/// A file mapped shared and cut short by another process raises SIGBUS in whoever touches the
/// mapping next: the kernel takes the pages past the new end out of every mapping. SQLite
/// lives with that for `-shm`; the counter must not (the file is not trusted, ARCHITECTURE.md §4.3, and
/// a check of its size before each read would be the very system call the mapping saves). So:
///
/// - Every counter page of the process lies in one region reserved once (`CounterRegion`,
///   4096 pages) and never given back: an address in it is a counter's page or a reserved one,
///   never another owner's memory. A closed counter's page is reserved again, not unmapped.
/// - A SIGBUS handler, installed with the region, replaces a faulting page of the region with
///   a page of zeros and returns; the CPU retries the read, which now gives (0, 0): a record
///   whose complement does not match, unknown like a torn one. ChangeCounter then drops the
///   mapping and reads with `pread` until its next look at the file (at most a millisecond
///   later) finds it whole again. Any other SIGBUS goes where it went before: to the previous
///   handler, or to the default action (restored, so the faulting access, retried, ends the
///   process as it would have; one sent with `kill` is raised again).
/// - The handler must outlive every mapping: once installed, the code holding it is never
///   unloaded (`RTLD_NODELETE`), a host's `dlclose` notwithstanding.
///
/// Limits: a host that installs its own SIGBUS handler later without passing ours on loses the
/// guard (a counter cut short then faults as SQLite's `-shm` would); with 4096 counters mapped,
/// more are read with `pread`, as all were before.
final class CounterPage {
    private let region: CounterRegion
    private let slot: Int
    private let address: UnsafeRawPointer

    /// Maps the first page of `fd`, which the caller checked is a regular file of one record
    /// at least; nil when no page is free or the map fails (the caller reads with `pread`).
    init?(mapping fd: Int32) {
        guard let region = CounterRegion.shared, let slot = region.claim() else { return nil }
        let start = region.page(slot)
        guard mmap(start, region.pageSize, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED,
            let address = UnsafeRawPointer(start)
        else {
            region.release(slot)
            return nil
        }
        self.region = region
        self.slot = slot
        self.address = address
    }

    deinit { region.release(slot) }

    /// The record as the file holds it now: the counter and its complement. (0, 0) after the
    /// file was cut short under the mapping.
    var record: (UInt64, UInt64) {
        (address.load(as: UInt64.self), address.load(fromByteOffset: 8, as: UInt64.self))
    }
}

/// The reserved pages counters are mapped into, and the SIGBUS guard over them (CounterPage).
/// Which pages are used is kept under a pthread mutex, held across a `fork()` by the
/// `pthread_atfork` handlers so that a child never finds it held (`Synchronization`'s `Mutex`
/// is kept out of the module, docs/ARCHITECTURE.md §11.1).
final class CounterRegion: @unchecked Sendable {
    // @unchecked: `used` is touched only with `mutex` held.
    /// The region of this process, reserved on first use; nil when it cannot be (the counters
    /// are then read with `pread`).
    static let shared = CounterRegion()

    /// Reserved, not committed (PROT_NONE, MAP_NORESERVE): 16 MiB of address space and no
    /// memory. Enough for every store a process keeps open: the Swift API keeps one token per
    /// store file for the life of the process, so a long-lived host can hold hundreds.
    static let pages = 4096
    let pageSize: Int
    private let start: UInt
    /// One bit per page: set while a counter maps it.
    private var used = [UInt64](repeating: 0, count: CounterRegion.pages / 64)
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    private init?() {
        let pageSize = sysconf(Int32(_SC_PAGESIZE))
        guard pageSize > 0, pageSize <= 1 << 20 else { return nil }
        let size = pageSize * CounterRegion.pages
        guard let base = mmap(nil, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0),
            base != MAP_FAILED
        else { return nil }
        self.pageSize = pageSize
        start = UInt(bitPattern: base)
        // Allocated once and never freed: the region lives as long as the process.
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        guard installBusGuard(start: start, end: start + UInt(size), pageSize: UInt(pageSize)) else {
            // No guard, no mapping: the region stays reserved and unused.
            return nil
        }
        pthread_atfork(
            { CounterRegion.shared?.lock() }, { CounterRegion.shared?.unlock() },
            { CounterRegion.shared?.unlock() })
    }

    private func lock() { pthread_mutex_lock(mutex) }
    private func unlock() { pthread_mutex_unlock(mutex) }

    func page(_ slot: Int) -> UnsafeMutableRawPointer? {
        UnsafeMutableRawPointer(bitPattern: start + UInt(slot * pageSize))
    }

    /// A free page, marked used; nil when all are.
    func claim() -> Int? {
        lock()
        defer { unlock() }
        guard let word = used.firstIndex(where: { $0 != .max }) else { return nil }
        let bit = (~used[word]).trailingZeroBitCount
        used[word] |= 1 << UInt64(bit)
        return word * 64 + bit
    }

    /// Reserves the page again (the file's mapping goes) and frees it.
    func release(_ slot: Int) {
        guard slot >= 0, slot < CounterRegion.pages else { return }
        _ = mmap(
            page(slot), pageSize, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0)
        lock()
        used[slot / 64] &= ~(UInt64(1) << UInt64(slot % 64))
        unlock()
    }
}

// MARK: The SIGBUS guard

// What the handler reads: set once, before the handler is installed, never changed after.
nonisolated(unsafe) private var guardedStart: UInt = 0
nonisolated(unsafe) private var guardedEnd: UInt = 0
nonisolated(unsafe) private var guardedPageSize: UInt = 0
nonisolated(unsafe) private var previousBusAction = sigaction()

/// The handler: async-signal-safe (reads of the globals above, `mmap`, `sigaction`, `raise`).
private let busHandler:
    @convention(c) (Int32, UnsafeMutablePointer<siginfo_t>?, UnsafeMutableRawPointer?) ->
        Void = { signal, info, context in
            let address = UInt(bitPattern: info?.pointee._sifields._sigfault.si_addr)
            if let info, info.pointee.si_code > 0, address >= guardedStart, address < guardedEnd {
                // A counter page cut short under its mapping: zeros in its place, and the read
                // is retried. Should the map fail, the fault repeats and ends as below.
                let page = UnsafeMutableRawPointer(bitPattern: address & ~(guardedPageSize - 1))
                if mmap(page, Int(guardedPageSize), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0)
                    != MAP_FAILED
                {
                    return
                }
            }
            let previous = previousBusAction
            if previous.sa_flags & SA_SIGINFO != 0, let handler = previous.__sigaction_handler.sa_sigaction {
                handler(signal, info, context)
                return
            }
            let handler = previous.__sigaction_handler.sa_handler
            let raw = unsafeBitCast(handler, to: Int.self)
            guard raw != 0, raw != 1 else {
                // SIG_DFL (0) or SIG_IGN (1, which the kernel overrides for a fault): the default.
                var fallback = sigaction()
                sigemptyset(&fallback.sa_mask)
                sigaction(SIGBUS, &fallback, nil)
                if (info?.pointee.si_code ?? 0) <= 0 { raise(SIGBUS) }
                return
            }
            handler?(signal)
        }

/// Installs `busHandler` over `start ..< end`, keeping the previous action to pass on to, and
/// pins the code that holds it in memory. False when either fails.
private func installBusGuard(start: UInt, end: UInt, pageSize: UInt) -> Bool {
    guard isPinned() else { return false }
    guardedStart = start
    guardedEnd = end
    guardedPageSize = pageSize
    var action = sigaction()
    action.__sigaction_handler.sa_sigaction = busHandler
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART
    sigemptyset(&action.sa_mask)
    return sigaction(SIGBUS, &action, &previousBusAction) == 0
}

/// Keeps the code of `busHandler` loaded for the life of the process: the shared object
/// holding it (found in `/proc/self/maps`; glibc's `dladdr` is not imported) is marked
/// `RTLD_NODELETE`; the main program is never unloaded anyway.
private func isPinned() -> Bool {
    let code = UInt(bitPattern: unsafeBitCast(busHandler, to: UnsafeRawPointer.self))
    guard let maps = fopen("/proc/self/maps", "re") else { return false }
    defer { fclose(maps) }
    var line: UnsafeMutablePointer<CChar>?
    var capacity = 0
    defer { free(line) }
    while getline(&line, &capacity, maps) > 0, let line {
        // "start-end perms offset dev inode   path"
        let fields = String(cString: line).split(separator: " ").map { $0.filter { $0 != "\n" } }
        let range = fields.first?.split(separator: "-") ?? []
        guard fields.count >= 6, range.count == 2, let low = UInt(range[0], radix: 16),
            let high = UInt(range[1], radix: 16), low <= code, code < high
        else { continue }
        let file = fields[5...].joined(separator: " ")
        if dlopen(file, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != nil { return true }
        guard let program = realpath("/proc/self/exe", nil) else { return false }
        defer { free(program) }
        return String(cString: program) == file
    }
    return false
}
