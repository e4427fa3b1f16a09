#if canImport(Glibc)
    import Glibc
#endif

/// The call trace of `P11KEYCHAIN_DEBUG=1` or `debug = yes` (DESIGN §6): one line per C_*
/// call with its result, and the reason when it failed. It never prints a PIN or an
/// attribute value: messages come from the error types, which are written not to.
enum Trace {
    /// Set under the module lock at C_Initialize, read by every call.
    nonisolated(unsafe) static var enabled = false
    nonisolated(unsafe) private static var file: UnsafeMutablePointer<FILE>?

    static func configure(enabled: Bool, path: String?) {
        if let file { fclose(file) }
        file = nil
        Trace.enabled = enabled
        if enabled, let path { file = fopen(path, "ae") }
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

    private static func write(_ line: String) {
        let text = line + "\n"
        if let file {
            fputs(text, file)
            fflush(file)
        } else {
            _ = text.utf8CString.withUnsafeBufferPointer { Glibc.write(2, $0.baseAddress, $0.count - 1) }
        }
    }
}
