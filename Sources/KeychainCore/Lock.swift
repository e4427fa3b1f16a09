#if canImport(Glibc)
    import Glibc
#endif

/// A pthread mutex. Unlike `Synchronization.Mutex` it can be re-initialised in a forked
/// child (ARCHITECTURE.md §11.1), and it is what the module's `pthread_atfork` handlers hold.
public final class Lock: @unchecked Sendable {
    // @unchecked: the mutex is the synchronisation; its storage is allocated once and never
    // moves, as pthread requires.
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    /// Re-creates the mutex unlocked. Only for a forked child, whose copy may be held by a
    /// thread that does not exist there.
    public func reinitializeAfterFork() { pthread_mutex_init(mutex, nil) }

    /// Inlinable so that callers in other modules get it specialised: a generic call across
    /// modules (a closure context and generic metadata each time) cost more than the mutex.
    @inlinable
    public func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// State that only the holder of its lock can reach: the lock discipline written in code.
///
/// `State` is not `Sendable` (it may hold a store connection), and nothing outside
/// `withLock`'s body sees it, so no path reads or changes it without the lock. A pthread
/// mutex (`Lock`) for the same reason as `Lock`: it must survive a host's `fork()`.
///
/// `State` is a class, held by a constant: the body borrows it, where lending a variable
/// (`inout`) cost a retain and a release on every hold, two of an HMAC's twenty-seven.
final class Locked<State: AnyObject>: @unchecked Sendable {
    // @unchecked: `state` is touched only inside `withLock`, with `lock` held.
    private let lock = Lock()
    private let state: State

    init(_ state: State) { self.state = state }

    /// Runs `body` with the lock held and the state lent to it.
    func withLock<T, E: Error>(_ body: (State) throws(E) -> T) throws(E) -> T {
        try lock.withLock { () throws(E) -> T in try body(state) }
    }
}

/// A lock that comes before another, by construction: the inner `Locked` state is reached
/// while the outer lock is held only through the value `withLock` lends, so the order
/// (outer, then inner) is the only one the code can write.
final class OrderedLock<Inner: AnyObject>: @unchecked Sendable {
    // @unchecked: immutable after init; the lock is the synchronisation.
    private let lock = Lock()
    private let inner: Locked<Inner>

    init(before inner: Locked<Inner>) { self.inner = inner }

    /// Runs `body` with this lock held; `body` takes the inner lock through the value lent.
    func withLock<T, E: Error>(_ body: (Locked<Inner>) throws(E) -> T) throws(E) -> T {
        try lock.withLock { () throws(E) -> T in try body(inner) }
    }
}
