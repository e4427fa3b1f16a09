#if canImport(Glibc)
    import Glibc
#endif

/// A pthread mutex. Unlike `Synchronization.Mutex` it can be re-initialised in a forked
/// child (ARCHITECTURE.md §11.1), and it is what the module's `pthread_atfork` handlers hold.
public final class Lock: @unchecked Sendable {
    // @unchecked: the mutex is the synchronisation; its storage is allocated once and never
    // moves, as pthread requires.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

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

    public func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
