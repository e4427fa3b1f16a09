internal import KeychainCore

#if canImport(Glibc)
    import Glibc
#endif

// pam-helper COMMAND HOME, run by pam_p11keychain.so as the target user (the protocol is
// pam/include/pam_p11keychain.h): the password(s) on standard input until end of file, one
// line for the system log on standard output, the result as the exit status. Not a program
// for people: it never prompts and never takes a password from argv or the environment.

/// The most standard input may hold: two passwords of the module's limit and a separator.
let inputLimit = 2 * 4096 + 1

/// Standard input until end of file, at most `inputLimit` bytes; nil when it holds more.
func readInput() -> [UInt8]? {
    var input = [UInt8](repeating: 0, count: inputLimit + 1)
    var used = 0
    while used < input.count {
        let count = input.withUnsafeMutableBytes { buffer in
            read(0, buffer.baseAddress.map { $0 + used }, buffer.count - used)
        }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { break }
        used += count
    }
    guard used <= inputLimit else {
        wipe(&input)
        return nil
    }
    let given = Array(input[..<used])
    wipe(&input)
    return given
}

func wipe(_ bytes: inout [UInt8]) {
    bytes.withUnsafeMutableBytes { buffer in
        if let base = buffer.baseAddress { explicit_bzero(base, buffer.count) }
    }
}

/// Writes `line` (one line, never a secret) to standard output.
func report(_ line: String) {
    guard !line.isEmpty else { return }
    var bytes = Array(line.utf8.prefix(500))
    bytes.append(0x0A)
    var written = 0
    while written < bytes.count {
        let count = bytes.withUnsafeBytes { buffer in
            write(1, buffer.baseAddress.map { $0 + written }, buffer.count - written)
        }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { return }
        written += count
    }
}

func run(_ arguments: [String]) -> HelperStatus {
    guard arguments.count == 3, ["unlock", "change"].contains(arguments[1]), arguments[2].hasPrefix("/")
    else {
        report("usage: pam-helper unlock|change HOME (run by pam_p11keychain.so, not by hand)")
        return .failed
    }
    guard var input = readInput() else {
        report("the passwords are longer than \(inputLimit) bytes")
        return .failed
    }
    defer { wipe(&input) }
    do {
        let status: HelperStatus
        let line: String
        if arguments[1] == "unlock" {
            (status, line) = try unlockLoginKeychain(home: arguments[2], password: input)
        } else {
            guard let separator = input.firstIndex(of: 0) else {
                report("change needs the old password, a NUL byte and the new password")
                return .failed
            }
            var old = Array(input[..<separator])
            var new = Array(input[(separator + 1)...])
            defer {
                wipe(&old)
                wipe(&new)
            }
            (status, line) = try changeLoginKeychain(home: arguments[2], from: old, to: new)
        }
        report(line)
        return status
    } catch {
        report(error.message)
        return .failed
    }
}

exit(run(CommandLine.arguments).rawValue)
