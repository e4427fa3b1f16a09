#if canImport(Glibc)
    import Glibc
#endif

/// A lock the kernel holds while one PIN attempt is in flight and drops when its holder
/// ends, however it ends (SIGKILL included): how a store tells the claim of an attempt
/// still being checked from the claim of a process that died (KeychainCore's
/// PINAttempts.swift). Released by `deinit`.
///
/// Why a kernel lock and not a process ID: a PID is reused, and a PID with its start time
/// (`/proc/PID/stat`) means nothing to a process in another PID namespace (a container
/// sharing the store) or behind `/proc`'s `hidepid`. An open file description lock
/// (`F_OFD_SETLK`, Linux 3.15) is the kernel's own record that its holder is alive, seen
/// alike by every process that can open the file, and dropped when the last descriptor of
/// the description closes, which the kernel does at exit.
///
/// The locks are read locks on single bytes of the store's change-counter file
/// (`<store>-changes`, ChangeCounter), from `AttemptLock.firstByte` on, far past its 16-byte
/// record: locks beyond the end of a file are allowed and change nothing in it. Each lock has
/// a descriptor of its own, so two attempts of one process (two threads) are two holders.
/// Never on the database file or its `-shm`: SQLite's locks there are process-wide POSIX
/// locks, and closing any other descriptor of the file would drop them.
///
/// A counter file deleted or replaced while an attempt is in flight loses its locks: that
/// attempt's claim then reads as dead and is released early (its guess is still counted
/// when it ends). Only a writer of the store's files can do that, and such a writer can
/// reset the count itself.
public final class AttemptLock {
    /// The first byte of the counter file that the locks use; the lock of `slot` is
    /// `firstByte + slot`.
    static let firstByte = 4_096
    /// How many slots a store offers.
    public static let slots = 256

    /// Lets the lock go: closes the descriptor that holds it (SQLite), or the server
    /// connection that holds it (PostgreSQL). Run once, by `deinit`.
    private let release: () -> Void

    /// A lock that `release` lets go of; for the engines.
    init(release: @escaping () -> Void) { self.release = release }

    deinit { release() }

    /// `slot`, checked to be one of the store's slots.
    static func checked(_ slot: Int) throws(StorageError) -> Int {
        guard (0..<slots).contains(slot) else {
            throw StorageError(.failed, "attempt lock \(slot) is outside 0..<\(slots)")
        }
        return slot
    }

    // Linux's F_OFD_GETLK and F_OFD_SETLK (<fcntl.h>, under _GNU_SOURCE): not imported.
    private static let getLock: Int32 = 36
    private static let setLock: Int32 = 37

    /// Takes the lock of `slot` in `file`; nil when another holder has it.
    static func hold(_ slot: Int, in file: String) throws(StorageError) -> AttemptLock? {
        guard let fd = try open(file, missingIsNil: false) else { return nil }
        var lock = region(slot, type: F_RDLCK)
        guard fcntl(fd, setLock, &lock) == 0 else {
            let error = errno
            close(fd)
            if error == EAGAIN || error == EACCES { return nil }
            throw StorageError(.failed, "cannot lock \(file): \(StoreFile.reason(error))")
        }
        return AttemptLock(release: { close(fd) })
    }

    /// Whether anyone (this process included) holds the lock of `slot` in `file`.
    static func isHeld(_ slot: Int, in file: String) throws(StorageError) -> Bool {
        // No file, no lock: every holder's file is gone (the next write makes a new one).
        guard let fd = try open(file, missingIsNil: true) else { return false }
        defer { close(fd) }
        var lock = region(slot, type: F_WRLCK)
        guard fcntl(fd, getLock, &lock) == 0 else {
            throw StorageError(.failed, "cannot test a lock of \(file): \(StoreFile.reason(errno))")
        }
        return lock.l_type != F_UNLCK
    }

    private static func region(_ slot: Int, type: Int32) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = off_t(firstByte + slot)
        lock.l_len = 1
        lock.l_pid = 0  // F_OFD_* require it
        return lock
    }

    /// A descriptor of `file`, checked to be a regular file; nil when it is missing and
    /// `missingIsNil`.
    private static func open(_ file: String, missingIsNil: Bool) throws(StorageError) -> Int32? {
        // O_NONBLOCK: a FIFO put there must not block the host (StoreFile).
        let fd = Glibc.open(file, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC)
        if fd < 0, errno == ENOENT, missingIsNil { return nil }
        guard fd >= 0 else {
            throw StorageError(
                .failed, "cannot open \(file), the store's change counter: \(StoreFile.reason(errno))")
        }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw StorageError(.cannotOpen, "\(file), the store's change counter, is not a regular file")
        }
        return fd
    }
}

extension SQLiteStore {
    /// Takes the attempt lock of `slot` in the store's counter file (`AttemptLock`). Call
    /// inside a write transaction, which creates the counter file when it is missing.
    public func holdAttemptLock(_ slot: Int) throws(StorageError) -> AttemptLock? {
        try AttemptLock.hold(try AttemptLock.checked(slot), in: try attemptLockFile())
    }

    public func isAttemptLockHeld(_ slot: Int) throws(StorageError) -> Bool {
        try AttemptLock.isHeld(try AttemptLock.checked(slot), in: try attemptLockFile())
    }

    private func attemptLockFile() throws(StorageError) -> String {
        guard let file = changes.file else {
            throw StorageError(.failed, "an in-memory store has no attempt locks")
        }
        return file
    }
}
