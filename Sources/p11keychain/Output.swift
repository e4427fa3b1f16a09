import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Standard output and standard error, written with write(2): no buffering to flush before
/// `exit`, and no global `FILE *` (not concurrency-safe in Swift 6).
enum Console {
    static let output: Int32 = 1
    static let error: Int32 = 2

    /// Writes text to standard output.
    static func print(_ text: String) { write(Array(text.utf8), to: output) }

    /// Writes one line to standard error.
    static func printError(_ line: String) { write(Array((line + "\n").utf8), to: error) }

    /// Writes every byte, retrying after a signal or a partial write. A closed pipe ends the
    /// writing quietly: the reader has what it wanted.
    static func write(_ bytes: [UInt8], to descriptor: Int32) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                Glibc.write(descriptor, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
            }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }

    /// True when the descriptor is a terminal (a person watches, not a script).
    static func isTerminal(_ descriptor: Int32) -> Bool { isatty(descriptor) == 1 }
}

/// Formats values for people.
enum Format {
    /// Bytes as hexadecimal digits, upper case, like `openssl x509 -fingerprint` and
    /// `security find-certificate -Z` print them.
    static func hex(_ bytes: [UInt8], separator: String = "") -> String {
        bytes.map { byte in
            let digits = String(byte, radix: 16, uppercase: true)
            return byte < 16 ? "0" + digits : digits
        }.joined(separator: separator)
    }

    /// The bytes that hexadecimal text spells; colons and blanks between digits are allowed
    /// (fingerprints are often copied with colons). Nil when the text is not hexadecimal.
    static func bytes(fromHex text: String) -> [UInt8]? {
        let digits = text.filter { $0 != ":" && $0 != " " }
        guard !digits.isEmpty, digits.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            guard let byte = UInt8(digits[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }

    /// A serial number as `openssl x509 -serial` prints it: hexadecimal, without the 00
    /// byte DER puts before a positive number whose first bit is set.
    static func serial(_ content: [UInt8]) -> String {
        let trimmed = content.count > 1 && content[0] == 0 ? Array(content.dropFirst()) : content
        return hex(trimmed)
    }

    /// A date in UTC, `2025-01-31 12:00:00 UTC`: the same in every locale and time zone.
    static func date(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        guard gmtime_r(&seconds, &parts) != nil else { return "\(date)" }
        var buffer = [CChar](repeating: 0, count: 64)
        let length = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S UTC", &parts)
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `1 certificate`, `3 certificates`.
    static func count(_ number: Int, _ noun: String) -> String {
        "\(number) \(noun)\(number == 1 ? "" : "s")"
    }

    /// Text quoted for a message, so that blanks and empty values show.
    static func quoted(_ text: String) -> String { "\"\(text)\"" }

    /// A message made into one line: error text from lower layers may hold line breaks.
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .joined(separator: "; ")
    }
}

/// A progress bar on standard error, drawn only when a person watches it (standard error is
/// a terminal) and the work is large enough to be worth watching.
final class ProgressBar {
    private let total: Int
    private let title: String
    private var drawn = -1

    /// Work below this many steps finishes before a bar could be read.
    static let threshold = 100

    /// Nil (no bar) when standard error is not a terminal or `total` is small.
    init?(total: Int, title: String) {
        guard total >= ProgressBar.threshold, Console.isTerminal(Console.error) else { return nil }
        self.total = total
        self.title = title
    }

    /// Shows `done` of the total steps; redraws only when the percentage changes.
    func update(_ done: Int) {
        let percent = total > 0 ? done * 100 / total : 100
        guard percent != drawn else { return }
        drawn = percent
        let width = 30
        let filled = width * percent / 100
        let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
        Console.write(Array("\r\(title) [\(bar)] \(done)/\(total)".utf8), to: Console.error)
    }

    /// Replaces the bar with a one-line status, e.g. while one transaction runs.
    func status(_ text: String) {
        Console.write(Array("\r\u{1B}[K\(text)".utf8), to: Console.error)
    }

    /// Erases the bar, leaving the line for the command's own output.
    func clear() { Console.write(Array("\r\u{1B}[K".utf8), to: Console.error) }
}

/// Reading and writing the files named on the command line, with errors that name them.
enum Files {
    /// Certificate files are small; a bigger file is a mistake (a disk image, /dev/zero),
    /// and is refused before it fills memory.
    static let maximumSize = 64 << 20

    /// The bytes of `path`, or of standard input for `-`.
    static func read(_ path: String) throws(Failure) -> [UInt8] {
        let descriptor = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .failed("cannot read \(path): \(Files.reason())") }
        defer { if descriptor != 0 { close(descriptor) } }
        var status = stat()
        if fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFDIR {
            throw .failed("cannot read \(path): it is a directory (name the certificate files in it)")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw .failed("cannot read \(path): \(Files.reason())") }
            if count == 0 { break }
            bytes += buffer.prefix(count)
            guard bytes.count <= maximumSize else {
                throw .failed(
                    "cannot read \(path): larger than \(maximumSize >> 20) MiB, not a certificate file")
            }
        }
        return bytes
    }

    /// Writes `bytes` to `path` through a temporary file renamed over it, so that no reader
    /// ever sees half a file and a failed write leaves the old file as it was.
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws(Failure) {
        let directory = path.contains("/") ? String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)]) : "."
        let fileName = path.split(separator: "/").last.map(String.init) ?? path
        var template = Array("\(directory.isEmpty ? "" : directory)/.\(fileName).XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.map { mkstemp($0) } ?? -1
        }
        guard descriptor >= 0 else { throw .failed("cannot write \(path): \(Files.reason())") }
        let temporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var failure: String?
        var offset = 0
        while failure == nil, offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.write(descriptor, $0.baseAddress.map { $0 + offset }, $0.count - offset)
            }
            if written < 0, errno == EINTR { continue }
            if written <= 0 { failure = Files.reason() } else { offset += written }
        }
        if failure == nil, fchmod(descriptor, mode) != 0 || fsync(descriptor) != 0 {
            failure = Files.reason()
        }
        if close(descriptor) != 0, failure == nil { failure = Files.reason() }
        if failure == nil, rename(temporary, path) != 0 { failure = Files.reason() }
        if let failure {
            unlink(temporary)
            throw .failed("cannot write \(path): \(failure)")
        }
    }

    /// True when `path` names an existing regular file (or a link to one).
    static func isRegularFile(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
    }

    /// True when something exists at `path`.
    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// The absolute path with every link resolved, or nil when it does not exist.
    static func canonical(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Creates a directory and its missing ancestors.
    static func makeDirectories(_ path: String, mode: mode_t = 0o755) throws(Failure) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, mode) != 0, errno != EEXIST {
                throw .failed("cannot create directory \(prefix): \(Files.reason())")
            }
        }
    }

    /// The current `errno` as text, e.g. "Permission denied".
    static func reason() -> String { String(cString: strerror(errno)) }
}
