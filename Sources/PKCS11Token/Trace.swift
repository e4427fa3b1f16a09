#if canImport(Glibc)
    import Glibc
#endif

/// The call trace of `P11KEYCHAIN_DEBUG=1` or `debug = yes` (ARCHITECTURE.md §5): one line per C_*
/// call with its result, and the reason when it failed. It never prints a PIN or an
/// attribute value: messages come from the error types, which are written not to.
enum Trace {
    /// Set under the module lock at C_Initialize, read by every call.
    nonisolated(unsafe) static var enabled = false
    /// The log file's descriptor, or -1 for standard error.
    nonisolated(unsafe) private static var file: Int32 = -1

    /// Turns the trace on or off and opens `path`, when given, for appending.
    ///
    /// The log file is opened `O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC` with
    /// mode 0600, whatever the umask says, and must be a regular file: a symbolic link is
    /// refused (a link planted where a log is expected would make the host append to any file
    /// it may write), and so is a FIFO or a device (`O_NONBLOCK`: opening a FIFO no one reads
    /// must not block). A refused file is named on standard error and the trace goes there.
    static func configure(enabled: Bool, path: String?) {
        if file >= 0 { close(file) }
        file = -1
        Trace.enabled = enabled
        guard enabled, let path else { return }
        let fd = open(
            path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0o600)
        guard fd >= 0 else {
            let reason = errno == ELOOP ? "it is a symbolic link" : String(cString: strerror(errno))
            always("log file \(path) refused: \(reason); tracing to standard error")
            return
        }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            always("log file \(path) refused: not a regular file; tracing to standard error")
            return
        }
        file = fd
    }

    static func call(_ name: StaticString, _ rv: UInt, _ message: String) {
        guard enabled else { return }
        var line = "p11keychain[\(getpid())]: \(name) -> \(ReturnCodeName.of(rv))"
        if !message.isEmpty { line += " (\(message))" }
        write(line)
    }

    /// A line that is always written (configuration errors): the host would otherwise see
    /// only a bare CK_RV.
    static func always(_ message: String) {
        write("p11keychain[\(getpid())]: \(message)")
    }

    /// One write(2) per line: with O_APPEND, lines of several processes never interleave.
    private static func write(_ line: String) {
        let text = line + "\n"
        let target = file >= 0 ? file : 2
        _ = text.utf8CString.withUnsafeBufferPointer { Glibc.write(target, $0.baseAddress, $0.count - 1) }
    }
}
