import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One secret a command needs (a PIN, a passphrase, a password) and where it may come from,
/// in this order: the option that gives it, the option that names a file holding it, an
/// environment variable for scripts, else a question on the terminal without echo.
///
/// No secret is ever printed: messages name the source (`--pin-file`, `P11KEYCHAIN_PIN`),
/// never the value.
struct Secret {
    /// What it is, for messages: `PIN`, `security officer PIN`, `passphrase`.
    var name: String
    /// The option that gives it on the command line, e.g. `--pin`.
    var option: Option?
    /// The option that names a file whose first line is the secret, e.g. `--pin-file`.
    var fileOption: Option?
    /// The environment variable that gives it, e.g. `P11KEYCHAIN_PIN`.
    var environmentVariable: String?
    /// The question on the terminal, e.g. `PIN for token "login": `.
    var prompt: String

    /// The secret, or nil when no source gives it and there is no terminal to ask on.
    ///
    /// - Parameter confirming: Ask twice on the terminal (a new PIN, a new password), and
    ///   fail when the answers differ.
    func value(_ invocation: Invocation, confirming: Bool = false) throws(Failure) -> String? {
        if let given = try given(invocation) { return given }
        guard Terminal.isInteractive else { return nil }
        return try ask(confirming: confirming)
    }

    /// The secret from the command line, a file or the environment; nil when none gives it.
    /// The terminal is not asked.
    func given(_ invocation: Invocation) throws(Failure) -> String? {
        let fromOption = option.flatMap { invocation.value($0.key) }
        let fromFile = fileOption.flatMap { invocation.value($0.key) }
        if let option, let fileOption, fromOption != nil, fromFile != nil {
            throw .usage("\(option.name) and \(fileOption.name) both give the \(name); give one")
        }
        if let fromOption { return fromOption }
        if let fromFile { return try Secret.firstLine(of: fromFile, holding: name) }
        if let variable = environmentVariable, let fromEnvironment = invocation.environment[variable] {
            return fromEnvironment
        }
        return nil
    }

    /// Asks on the terminal, twice when `confirming` (unless the first answer is empty).
    func ask(confirming: Bool = false) throws(Failure) -> String {
        let answer = try Terminal.readSecret(prompt: prompt)
        if confirming, !answer.isEmpty, try Terminal.readSecret(prompt: "Retype the \(name): ") != answer {
            throw .failed("the two \(name)s typed differ; nothing was changed")
        }
        return answer
    }

    /// The secret, or a failure that says how to give it.
    func required(_ invocation: Invocation, confirming: Bool = false) throws(Failure) -> String {
        guard let secret = try value(invocation, confirming: confirming) else {
            throw .failed("no \(name) given and no terminal to ask for it on (give \(howToGive))")
        }
        return secret
    }

    /// The sources, for a hint: `--pin-file FILE, P11KEYCHAIN_PIN or --pin PIN`.
    var howToGive: String {
        var ways: [String] = []
        if let fileOption { ways.append("\(fileOption.name) \(fileOption.value ?? "FILE")") }
        if let environmentVariable { ways.append(environmentVariable) }
        if let option { ways.append("\(option.name) \(option.value ?? "VALUE")") }
        guard let last = ways.popLast() else { return "it on a terminal" }
        return ways.isEmpty ? last : ways.joined(separator: ", ") + " or " + last
    }

    /// The first line of a file (or of standard input for `-`), without its line break. It
    /// may be empty: a PKCS#12 passphrase can be (a PIN cannot, which its check says).
    private static func firstLine(of path: String, holding name: String) throws(Failure) -> String {
        let bytes = try Files.read(path)
        let line = bytes.prefix { $0 != UInt8(ascii: "\n") }
        let trimmed = line.last == UInt8(ascii: "\r") ? line.dropLast() : line
        let source = path == "-" ? "standard input" : path
        guard let text = String(bytes: trimmed, encoding: .utf8) else {
            throw .failed("the \(name) in \(source) is not UTF-8 text")
        }
        return text
    }
}

// MARK: - PINs

/// The PIN options and their sources, shared by every command that unlocks a keychain or
/// manages its PINs.
enum PINs {
    static let pin = Option(
        long: "pin", value: "PIN", help: "the user PIN (other users may see it in ps: prefer --pin-file)")
    static let pinFile = Option(
        long: "pin-file", value: "FILE", help: "read the user PIN from the first line of FILE (- for stdin)")
    static let securityOfficerPIN = Option(
        long: "so-pin", value: "PIN", help: "the security officer (SO) PIN")
    static let securityOfficerPINFile = Option(
        long: "so-pin-file", value: "FILE", help: "read the SO PIN from the first line of FILE")
    static let newPIN = Option(long: "new-pin", value: "PIN", help: "the new PIN")
    static let newPINFile = Option(
        long: "new-pin-file", value: "FILE", help: "read the new PIN from the first line of FILE")

    static let userEnvironment = "P11KEYCHAIN_PIN"
    static let securityOfficerEnvironment = "P11KEYCHAIN_SO_PIN"

    /// The options of a command that unlocks the keychain.
    static let unlockOptions = [pin, pinFile]

    /// For the help of commands that unlock the keychain.
    static let unlockNote = """
        The user PIN comes from --pin, else --pin-file, else $P11KEYCHAIN_PIN, else it is
        asked on the terminal without echo; with none of them and no terminal the command
        fails. Each unlock checks the PIN with a deliberately slow key derivation. A wrong
        PIN is counted: after \(maximumFailures) in a row the PIN locks until the security officer
        sets a new one (p11keychain set-pin --reset).
        """

    static var maximumFailures: Int { TokenLimits.maximumFailures }

    /// The user PIN that unlocks `token`.
    static func user(token: String) -> Secret {
        Secret(
            name: "PIN", option: pin, fileOption: pinFile, environmentVariable: userEnvironment,
            prompt: "PIN for token \(Format.quoted(token)): ")
    }

    /// The security officer's PIN of `token`.
    static func securityOfficer(token: String, prompt: String? = nil) -> Secret {
        Secret(
            name: "SO PIN", option: securityOfficerPIN, fileOption: securityOfficerPINFile,
            environmentVariable: securityOfficerEnvironment,
            prompt: prompt ?? "SO PIN for token \(Format.quoted(token)): ")
    }

    /// A new PIN, from --new-pin or --new-pin-file or the terminal (asked twice).
    static func new(_ name: String) -> Secret {
        Secret(
            name: name, option: newPIN, fileOption: newPINFile, environmentVariable: nil,
            prompt: "New \(name): ")
    }

    /// Refuses a PIN of a length no PIN has before it reaches the token, where a wrong PIN
    /// would be counted as a failed attempt.
    static func checkLength(_ pin: String, _ name: String) throws(Failure) {
        let lengths = TokenLimits.pinLengths
        guard lengths.contains(pin.utf8.count) else {
            throw .failed(
                "a \(name) has \(lengths.lowerBound) to \(lengths.upperBound) bytes, "
                    + "not \(pin.utf8.count)")
        }
    }
}

// MARK: - The terminal

/// Questions on the terminal: standard input, when it is one.
enum Terminal {
    /// True when standard input is a terminal: a person can be asked.
    static var isInteractive: Bool { Console.isTerminal(0) }

    /// Asks a question and reads the answer with echo (a confirmation).
    static func readLine(prompt: String) throws(Failure) -> String {
        Console.write(Array(prompt.utf8), to: Console.error)
        guard let line = readLineBytes() else { throw .failed("no answer (end of input)") }
        return String(decoding: line, as: UTF8.self)
    }

    /// Asks for a secret and reads it without echo. The terminal's settings are restored
    /// afterwards, and also when Ctrl-C (or SIGTERM, SIGHUP, SIGQUIT) ends the program while
    /// it waits.
    static func readSecret(prompt: String) throws(Failure) -> String {
        var settings = termios()
        guard tcgetattr(0, &settings) == 0 else {
            throw .failed("cannot read the terminal's settings: \(Files.reason())")
        }
        EchoGuard.saved = settings
        // ECHONL still shows the Enter key, so the next output starts on a new line.
        var quiet = settings
        quiet.c_lflag &= ~tcflag_t(ECHO)
        quiet.c_lflag |= tcflag_t(ECHONL)
        let previous = EchoGuard.signals.map { ($0, signal($0, restoreAndDie)) }
        defer {
            _ = tcsetattr(0, TCSANOW, &settings)
            for (number, handler) in previous { _ = signal(number, handler) }
        }
        guard tcsetattr(0, TCSANOW, &quiet) == 0 else {
            throw .failed("cannot turn off the terminal's echo: \(Files.reason())")
        }
        // Only now: whatever is typed once the question shows is not echoed.
        Console.write(Array(prompt.utf8), to: Console.error)
        guard let line = readLineBytes() else {
            Console.write(Array("\n".utf8), to: Console.error)
            throw .failed("nothing was typed (end of input)")
        }
        guard let text = String(bytes: line, encoding: .utf8) else {
            throw .failed("what was typed is not UTF-8 text")
        }
        return text
    }

    /// One line of standard input, without its line break; nil at the end of input before
    /// any byte. Reads byte by byte, so nothing after the line is consumed.
    private static func readLineBytes() -> [UInt8]? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < Files.maximumSecretLength {
            let count = read(0, &byte, 1)
            if count < 0, errno == EINTR { continue }
            guard count == 1 else { return line.isEmpty ? nil : line }
            if byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        return line
    }
}

extension Files {
    /// A line typed or read as a secret longer than this is a mistake (a binary file).
    static let maximumSecretLength = 64 << 10
}

/// What a signal handler needs to restore the terminal: kept in globals because a C signal
/// handler captures nothing.
private enum EchoGuard {
    /// The signals that end the program while echo is off.
    static let signals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]
    /// The settings before echo was turned off. Written before the handlers are installed and
    /// only read by them.
    nonisolated(unsafe) static var saved = termios()
}

/// Restores the terminal's echo, then lets the signal end the program as it would have.
/// Only async-signal-safe calls: tcsetattr, write, signal, raise.
private func restoreAndDie(_ number: Int32) {
    _ = tcsetattr(0, TCSANOW, &EchoGuard.saved)
    var newline = UInt8(ascii: "\n")
    _ = write(2, &newline, 1)
    _ = signal(number, SIG_DFL)
    _ = raise(number)
}
