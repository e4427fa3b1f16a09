import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What a program run by `runProgram` did.
public struct ProgramResult: Sendable {
    /// The exit status; for a program ended by a signal, the signal's number (Foundation's
    /// `terminationStatus`), and `endedBySignal` is true.
    public var status: Int32
    public var endedBySignal: Bool
    /// Standard output and standard error, decoded as UTF-8.
    public var output: String
    public var error: String
    /// Standard output as bytes, for programs that write binary data.
    public var outputBytes: [UInt8]
    /// True when the program outlived the timeout and was killed.
    public var timedOut: Bool
}

/// The absolute path of `tool`: itself when it contains a "/", else the first executable of
/// that name on `$PATH` (default /usr/bin:/bin). Throws when there is none: a test that needs
/// a program must not pass by not running it.
public func executablePath(_ tool: String) throws -> String {
    if tool.contains("/") { return tool }
    let searchPath = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    guard
        let found = searchPath.split(separator: ":").map({ "\($0)/\(tool)" })
            .first(where: { (path: String) in access(path, X_OK) == 0 })
    else { throw TestFailure("\(tool) is not installed (needed by this test)") }
    return found
}

/// Runs `program` (a path, or a name looked up on `$PATH`) with `arguments` and waits for it.
///
/// - `environment`: the child's whole environment; nil inherits this process's.
/// - `input`: its standard input (empty when nil: a child that reads never waits for a tty).
/// - `directory`: its working directory; nil keeps this process's.
/// - `mergingErrors`: standard error goes to standard output (`error` is then empty), in the
///   order the child wrote them.
/// - `timeout`: seconds before the child is sent SIGTERM, then SIGKILL a second later; the
///   result then says `timedOut`, so a hung child fails its test instead of hanging the run.
///
/// Standard output and error go to temporary files, not pipes: neither can fill up and stall
/// a child that writes much to one while the test reads the other.
public func runProgram(
    _ program: String, _ arguments: [String], environment: [String: String]? = nil, input: Data? = nil,
    directory: String? = nil, mergingErrors: Bool = false, timeout: Double = 600
) throws -> ProgramResult {
    let scratch = try TemporaryDirectory()
    defer { scratch.remove() }
    let outputPath = scratch.file("stdout")
    let errorPath = scratch.file("stderr")
    let inputPath = scratch.file("stdin")
    for path in [outputPath, errorPath] { _ = FileManager.default.createFile(atPath: path, contents: nil) }
    _ = FileManager.default.createFile(atPath: inputPath, contents: input ?? Data())
    guard let output = FileHandle(forWritingAtPath: outputPath),
        let error = FileHandle(forWritingAtPath: errorPath),
        let standardInput = FileHandle(forReadingAtPath: inputPath)
    else { throw TestFailure("cannot open the files of a child process in \(scratch.path)") }
    defer {
        try? output.close()
        try? error.close()
        try? standardInput.close()
    }

    let process = Process()
    process.executableURL = URL(fileURLWithPath: try executablePath(program))
    process.arguments = arguments
    if var environment {
        // The PIN cost scripts/test.sh sets for the run reaches every child, as the other
        // variables a test chose: a test that wants another cost names it.
        let cost = "P11KEYCHAIN_PIN_ITERATIONS"
        if environment[cost] == nil, let inherited = ProcessInfo.processInfo.environment[cost] {
            environment[cost] = inherited
        }
        process.environment = environment
    }
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    process.standardOutput = output
    process.standardError = mergingErrors ? output : error
    process.standardInput = standardInput
    let ended = DispatchSemaphore(value: 0)
    process.terminationHandler = { _ in ended.signal() }
    try process.run()
    var timedOut = false
    if ended.wait(timeout: .now() + timeout) == .timedOut {
        timedOut = true
        process.terminate()
        if ended.wait(timeout: .now() + 1) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            ended.wait()
        }
    }
    process.waitUntilExit()
    let outputBytes = contentsOfFile(outputPath)
    let errorBytes = contentsOfFile(errorPath)
    return ProgramResult(
        status: process.terminationStatus, endedBySignal: process.terminationReason == .uncaughtSignal,
        output: String(decoding: outputBytes, as: UTF8.self),
        error: String(decoding: errorBytes, as: UTF8.self), outputBytes: outputBytes, timedOut: timedOut)
}

/// The bytes of a file, none when it cannot be read. Plain read(2): Foundation's
/// String(contentsOfFile:) leaks a buffer per call, which fails the address-sanitizer run of
/// the ABI tests.
private func contentsOfFile(_ path: String) -> [UInt8] {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return [] }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = read(descriptor, &buffer, buffer.count)
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { break }
        bytes += buffer.prefix(count)
    }
    return bytes
}
