import Foundation
internal import Keychain

#if canImport(Glibc)
    import Glibc
#endif

// Asking the user for the keychain PIN the way gpg-agent does: through the user's pinentry
// program (Debian's pinentry-tty, -curses, -gnome3…), spoken to in the Assuan protocol on its
// standard input and output. `PINENTRY_PROGRAM` names the program; else `pinentry` on the PATH
// (Debian's alternative). The PIN never touches the disk or the command line.

/// What one pinentry dialogue ended with.
enum PinentryAnswer {
    case pin([UInt8])
    case cancelled
    /// No way to ask: no program, or it could not reach the user (no terminal, no display).
    case unavailable(String)
}

enum Pinentry {
    /// The system's pinentry (Debian's alternative), the only one a privileged host runs.
    static let systemProgram = "/usr/bin/pinentry"

    /// The pinentry program: `PINENTRY_PROGRAM`, else `pinentry` found on the PATH. In a
    /// privileged host (setuid, setgid, file capabilities) the environment is its caller's, and
    /// a program it named would run with the host's privileges: only `systemProgram` is run.
    static func program(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        privileged: Bool = Keychain.isPrivilegedHost
    ) -> String? {
        if privileged { return access(systemProgram, X_OK) == 0 ? systemProgram : nil }
        if let named = environment["PINENTRY_PROGRAM"], !named.isEmpty {
            return access(named, X_OK) == 0 ? named : nil
        }
        let path = environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/pinentry"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Asks for the PIN with `description` (the caller's localized reason) and `prompt`.
    static func askPIN(description: String, prompt: String) -> PinentryAnswer {
        guard let program = program() else {
            return .unavailable("no pinentry program: install pinentry-tty or set PINENTRY_PROGRAM")
        }
        // A socket pair, not pipes: a write to a pinentry that has gone is an error here
        // (MSG_NOSIGNAL), never a SIGPIPE that would end the caller's process.
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0
        else {
            return .unavailable("no socket for pinentry: errno \(errno)")
        }
        let ours = ends[0]
        defer { close(ours) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        let theirs = FileHandle(fileDescriptor: ends[1], closeOnDealloc: false)
        process.standardInput = theirs
        process.standardOutput = theirs
        do {
            try process.run()
            close(ends[1])
        } catch {
            close(ends[1])
            return .unavailable("pinentry did not start: \(error)")
        }
        let session = AssuanSession(
            descriptor: ours, read: LineReader(ours))
        let answer = session.askPIN(
            commands: options() + ["SETDESC " + escape(description), "SETPROMPT " + escape(prompt)])
        shutdown(ours, Int32(SHUT_RDWR))
        process.waitUntilExit()
        return answer
    }

    /// The terminal and display pinentry should use, as gpg-agent passes them.
    private static func options() -> [String] {
        let environment = ProcessInfo.processInfo.environment
        var options: [String] = []
        if let tty = environment["GPG_TTY"] ?? ttyName() { options.append("OPTION ttyname=" + escape(tty)) }
        if let term = environment["TERM"] { options.append("OPTION ttytype=" + escape(term)) }
        if let display = environment["DISPLAY"] { options.append("OPTION display=" + escape(display)) }
        return options
    }

    private static func ttyName() -> String? {
        for descriptor: Int32 in [0, 1, 2] {
            if let name = ttyname(descriptor) { return String(cString: name) }
        }
        return nil
    }

    /// Assuan's escaping of a parameter: `%`, CR and LF as %XX.
    static func escape(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "%": escaped += "%25"
            case "\r": escaped += "%0D"
            case "\n": escaped += "%0A"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// The bytes of a `D` line, its %XX escapes decoded.
    static func unescape(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var decoded: [UInt8] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == UInt8(ascii: "%"), bytes.endIndex - index >= 3,
                let value = UInt8(
                    String(decoding: bytes[(index + 1)..<(index + 3)], as: UTF8.self), radix: 16)
            {
                decoded.append(value)
                index += 3
            } else {
                decoded.append(bytes[index])
                index += 1
            }
        }
        return decoded
    }
}

/// Reads `\n`-terminated lines from a socket into one buffer of fixed size: a line may be the
/// `D` line that holds the PIN, so the buffer is never reallocated (which would leave a copy
/// behind), the bytes a line leaves are wiped at once, and the rest when the reader ends.
final class LineReader {
    private let descriptor: Int32
    /// Room for two of Assuan's longest lines (1,000 bytes).
    private var buffer = [UInt8](repeating: 0, count: 2048)
    private var count = 0

    init(_ descriptor: Int32) { self.descriptor = descriptor }

    /// The next line without its newline (the caller wipes it); nil at the end of the stream,
    /// on a read error, or for a line longer than the buffer.
    func next() -> [UInt8]? {
        while true {
            if let newline = buffer[..<count].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(buffer[..<newline])
                let consumed = newline + 1
                let rest = count - consumed
                buffer.withUnsafeMutableBytes { raw in
                    guard let base = raw.baseAddress else { return }
                    memmove(base, base + consumed, rest)
                    explicit_bzero(base + rest, consumed)
                }
                count = rest
                return line
            }
            guard count < buffer.count else { return nil }
            let received = buffer.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return -1 }
                return Glibc.read(descriptor, base + count, raw.count - count)
            }
            if received < 0, errno == EINTR { continue }
            guard received > 0 else { return nil }
            count += received
        }
    }

    /// True when every byte beyond the unread ones is zero: nothing of a line already read
    /// is left in the buffer (for the tests).
    var consumedBytesAreWiped: Bool { buffer[count...].allSatisfy { $0 == 0 } }

    deinit { wipe(&buffer) }
}

/// One Assuan conversation with pinentry.
struct AssuanSession {
    /// Our end of the socket pair.
    let descriptor: Int32
    let read: LineReader

    /// Greeting, the setup commands, GETPIN, BYE.
    func askPIN(commands: [String]) -> PinentryAnswer {
        guard case .ok = response() else { return .unavailable("pinentry did not greet") }
        for command in commands {
            send(command)
            // Options pinentry does not know are not fatal (gpg-agent ignores them too).
            guard case .ok = response() else { continue }
        }
        send("GETPIN")
        let answer = response()
        send("BYE")
        switch answer {
        case .ok(let data): return .pin(data)
        case .error(let code, let message):
            // GPG_ERR_CANCELED (99) in the pinentry source (5): 83886179.
            if code & 0xFFFF == 99 { return .cancelled }
            return .unavailable("pinentry: \(message)")
        case .end: return .unavailable("pinentry ended without an answer")
        }
    }

    private func send(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { return }
            sent += count
        }
    }

    private enum Response {
        case ok([UInt8])
        case error(Int, String)
        case end
    }

    /// Reads to the command's `OK` or `ERR`, collecting `D` lines; comments and status lines
    /// are skipped.
    private func response() -> Response {
        // Room for any PIN up front: growing would leave a copy of its first bytes behind.
        var data: [UInt8] = []
        data.reserveCapacity(1024)
        while var line = read.next() {
            defer { wipe(&line) }
            if line.starts(with: Array("OK".utf8)) { return .ok(data) }
            if line.starts(with: Array("ERR".utf8)) {
                let text = String(decoding: line.dropFirst(4), as: UTF8.self)
                let code = Int(text.prefix { $0.isNumber }) ?? 0
                return .error(code, text)
            }
            if line.starts(with: Array("D ".utf8)) {
                var decoded = Pinentry.unescape(line.dropFirst(2))
                data += decoded
                wipe(&decoded)
            }
        }
        wipe(&data)
        return .end
    }
}
