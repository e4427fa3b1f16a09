import CPKCS11
import Foundation
@_exported import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// CK_UNAVAILABLE_INFORMATION: a macro the importer does not bring over (ARCHITECTURE.md §11.1).
let unavailableInformation = CK_ULONG.max

/// CKF_SERIAL_SESSION | CKF_RW_SESSION and CKF_SERIAL_SESSION alone.
let readWriteSession = CK_FLAGS(CKF_SERIAL_SESSION | CKF_RW_SESSION)
let readOnlySession = CK_FLAGS(CKF_SERIAL_SESSION)

/// The state one test drives the module in: a fresh temporary store directory that
/// `P11KEYCHAIN_DIR` points at, `P11KEYCHAIN_CONF=/dev/null`, and helpers that call the module
/// only through its function list.
///
/// The module reads its environment in C_Initialize and its state is process-global, so the
/// module suites run serialized and every test initialises and finalises the module itself.
/// Made only by `withStore`, which holds the environment lock while the test runs.
final class TestToken {
    let module: LoadedModule
    /// The v2.40 function list from C_GetFunctionList.
    let m: FunctionTable<CK_FUNCTION_LIST>
    /// The temporary directory of this test; the store is `login.sqlite3` in it.
    let directory: String

    init() throws {
        module = try LoadedModule.load()
        m = module.functions
        var template = Array((NSTemporaryDirectory() + "p11keychain-abi.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw ModuleLoadError(description: "mkdtemp failed: errno \(errno)")
        }
        directory = String(cString: made)
        setenv("P11KEYCHAIN_DIR", directory, 1)
        setenv("P11KEYCHAIN_CONF", "/dev/null", 1)
        unsetenv("P11KEYCHAIN_DEBUG")
    }

    var storePath: String { directory + "/login.sqlite3" }

    /// Points `P11KEYCHAIN_CONF` at a new file with `text`; returns its path.
    @discardableResult
    func configure(_ text: String, name: String = "p11keychain.conf") throws -> String {
        let path = directory + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        setenv("P11KEYCHAIN_CONF", path, 1)
        return path
    }

    /// Finalises the module if a test left it initialised and deletes the directory.
    func cleanUp() {
        _ = try? m.C_Finalize(nil)
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: Sessions

    func openSession(readWrite: Bool = true, slot: CK_SLOT_ID = 0) throws -> CK_SESSION_HANDLE {
        var session: CK_SESSION_HANDLE = 0
        let rv = try m.C_OpenSession(slot, readWrite ? readWriteSession : readOnlySession, nil, nil, &session)
        try #require(rv == CKR_OK, "C_OpenSession returned \(name(of: rv))")
        return session
    }

    func tokenInfo(slot: CK_SLOT_ID = 0) throws -> CK_TOKEN_INFO {
        var info = CK_TOKEN_INFO()
        let rv = try m.C_GetTokenInfo(slot, &info)
        try #require(rv == CKR_OK, "C_GetTokenInfo returned \(name(of: rv))")
        return info
    }

    // MARK: Objects

    /// C_CreateObject's result and handle.
    func create(_ attributes: [Attribute], in session: CK_SESSION_HANDLE) throws -> (CK_RV, CK_OBJECT_HANDLE)
    {
        var object: CK_OBJECT_HANDLE = 0
        let create = try m.C_CreateObject
        let rv = withTemplate(attributes) { create(session, $0, $1, &object) }
        return (rv, object)
    }

    /// Creates an object that must be accepted.
    func createObject(_ attributes: [Attribute], in session: CK_SESSION_HANDLE) throws -> CK_OBJECT_HANDLE {
        let (rv, object) = try create(attributes, in: session)
        try #require(rv == CKR_OK, "C_CreateObject returned \(name(of: rv))")
        return object
    }

    /// The minimal certificate template of ARCHITECTURE.md §3.4: class, type, token flag and DER.
    static func certificateTemplate(_ der: [UInt8], token: Bool = true) -> [Attribute] {
        [
            Attribute(CKA_CLASS, ulong: CKO_CERTIFICATE),
            Attribute(CKA_CERTIFICATE_TYPE, ulong: CKC_X_509),
            Attribute(CKA_TOKEN, bool: token),
            Attribute(CKA_VALUE, der),
        ]
    }

    func createCertificate(
        _ certificate: TestCertificate, token: Bool = true, extra: [Attribute] = [],
        in session: CK_SESSION_HANDLE
    ) throws -> CK_OBJECT_HANDLE {
        try createObject(TestToken.certificateTemplate(certificate.der, token: token) + extra, in: session)
    }

    /// One attribute's value read with the two-call convention, or nil when the object has
    /// no such attribute (CKR_ATTRIBUTE_TYPE_INVALID).
    func attribute(
        _ type: CK_ATTRIBUTE_TYPE, of object: CK_OBJECT_HANDLE, in session: CK_SESSION_HANDLE
    ) throws -> [UInt8]? {
        let get = try m.C_GetAttributeValue
        var query = CK_ATTRIBUTE(type: type, pValue: nil, ulValueLen: 0)
        let rv = get(session, object, &query, 1)
        if rv == CKR_ATTRIBUTE_TYPE_INVALID { return nil }
        try #require(
            rv == CKR_OK, "C_GetAttributeValue(size of 0x\(String(type, radix: 16))) returned \(name(of: rv))"
        )
        var value = [UInt8](repeating: 0, count: Int(query.ulValueLen))
        let rv2 = value.withUnsafeMutableBytes { buffer in
            var entry = CK_ATTRIBUTE(
                type: type, pValue: buffer.baseAddress, ulValueLen: CK_ULONG(buffer.count))
            let rv = get(session, object, &entry, 1)
            query.ulValueLen = entry.ulValueLen
            return rv
        }
        try #require(
            rv2 == CKR_OK, "C_GetAttributeValue(0x\(String(type, radix: 16))) returned \(name(of: rv2))")
        return Array(value.prefix(Int(query.ulValueLen)))
    }

    func string(_ type: CK_ATTRIBUTE_TYPE, of object: CK_OBJECT_HANDLE, in session: CK_SESSION_HANDLE) throws
        -> String?
    {
        try attribute(type, of: object, in: session).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Every object matching `attributes`, through C_FindObjectsInit / C_FindObjects /
    /// C_FindObjectsFinal.
    func find(_ attributes: [Attribute], in session: CK_SESSION_HANDLE) throws -> [CK_OBJECT_HANDLE] {
        let initialize = try m.C_FindObjectsInit
        let rv = withTemplate(attributes) { initialize(session, $0, $1) }
        try #require(rv == CKR_OK, "C_FindObjectsInit returned \(name(of: rv))")
        var found: [CK_OBJECT_HANDLE] = []
        var batch = [CK_OBJECT_HANDLE](repeating: 0, count: 16)
        while true {
            var count: CK_ULONG = 0
            let rv = try m.C_FindObjects(session, &batch, CK_ULONG(batch.count), &count)
            try #require(rv == CKR_OK, "C_FindObjects returned \(name(of: rv))")
            if count == 0 { break }
            found += batch.prefix(Int(count))
        }
        try #require(try m.C_FindObjectsFinal(session) == CKR_OK)
        return found
    }
}

/// Runs `body` with a fresh store, the module not yet initialised; finalises and cleans up
/// whatever happens. Holds the package's environment lock meanwhile and restores the
/// variables it changes: Swift Testing runs the suites of every test target in one process,
/// in parallel, and the environment is shared.
func withStore(_ body: (TestToken) throws -> Void) throws {
    try EnvironmentLock.withLock {
        let names = [
            "P11KEYCHAIN_DIR", "P11KEYCHAIN_CONF", "P11KEYCHAIN_DEBUG", "P11KEYCHAIN_PIN_ITERATIONS",
        ]
        let saved = names.map { ($0, getenv($0).map { String(cString: $0) }) }
        defer {
            for (name, value) in saved {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
        }
        let token = try TestToken()
        defer { token.cleanUp() }
        try body(token)
    }
}

/// A process-wide lock on the environment, the one every test target of the package that
/// changes it takes: `flock` on a file in the temporary directory, which conflicts between
/// separate opens even within one process, so targets that share no code exclude each other.
enum EnvironmentLock {
    static func withLock<T>(_ body: () throws -> T) throws -> T {
        let path = NSTemporaryDirectory() + "/p11keychain-tests-environment.lock"
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ModuleLoadError(description: "cannot open the environment lock \(path)") }
        defer { close(fd) }
        flock(fd, LOCK_EX)
        defer { flock(fd, LOCK_UN) }
        return try body()
    }
}

/// Runs `body` with a fresh store and the module initialised with NULL arguments; PINs set
/// in it derive their key `pinIterations` times when given (`TestPIN.overlappingIterations`
/// for guesses that must overlap), else at the run's cost.
func withToken(pinIterations: Int? = nil, _ body: (TestToken) throws -> Void) throws {
    try withStore { token in
        if let pinIterations { setenv("P11KEYCHAIN_PIN_ITERATIONS", "\(pinIterations)", 1) }
        let rv = try token.m.C_Initialize(nil)
        try #require(rv == CKR_OK, "C_Initialize returned \(name(of: rv))")
        try body(token)
    }
}

/// What the module writes to standard error (its trace and configuration errors) while
/// `body` runs. Standard error is redirected to a file meanwhile.
func capturingStandardError<R>(_ body: () throws -> R) throws -> (R, String) {
    let path = NSTemporaryDirectory() + "p11keychain-stderr-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
    let file = open(path, O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0o600)
    guard file >= 0 else { throw ModuleLoadError(description: "cannot create \(path)") }
    defer {
        close(file)
        unlink(path)
    }
    fflush(nil)
    let saved = dup(2)
    dup2(file, 2)
    let result = Result { try body() }
    fflush(nil)
    dup2(saved, 2)
    close(saved)
    let output = String(decoding: readFile(path), as: UTF8.self)
    return (try result.get(), output)
}

/// The bytes of a file, or none when it cannot be read. Plain read(2): Foundation's
/// String(contentsOfFile:) leaks a buffer per call, which fails the address-sanitizer run.
func readFile(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { break }
        bytes += buffer.prefix(count)
    }
    return bytes
}

/// A command's exit status and output.
struct CommandResult {
    var status: Int32
    var standardOutput: String
    var standardError: String
}

/// Runs a program with extra environment variables and collects its output.
func runCommand(
    _ executable: String, _ arguments: [String], environment extra: [String: String] = [:],
    in directory: String? = nil
) throws -> CommandResult {
    let result = try runProgram(
        executable, arguments, environment: ProcessInfo.processInfo.environment.merging(extra) { $1 },
        directory: directory)
    return CommandResult(status: result.status, standardOutput: result.output, standardError: result.error)
}

/// How a forked child ended.
enum ChildOutcome: Equatable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)
    /// Still running at the deadline: killed, as a deadlock would be.
    case timedOut

    var description: String {
        switch self {
        case .exited(let code): "exited with status \(code)"
        case .signaled(let signal): "killed by signal \(signal)"
        case .timedOut: "did not finish in time (deadlock?) and was killed"
        }
    }
}

/// Forks; the child runs `child` and `_exit`s with its result. The child must only call the
/// module's function pointers on memory prepared before the fork. The parent runs
/// `background` meanwhile, then polls waitpid with WNOHANG and kills the child at the deadline.
func fork(timeout: Double, background: () throws -> Void = {}, child: () -> Int32) throws -> ChildOutcome {
    fflush(nil)
    let pid = Glibc.fork()
    if pid == 0 { _exit(child()) }
    guard pid > 0 else { throw ModuleLoadError(description: "fork failed: errno \(errno)") }
    do {
        try background()
    } catch {
        kill(pid, SIGKILL)
        _ = waitpid(pid, nil, 0)
        throw error
    }
    let deadline = Date().addingTimeInterval(timeout)
    var status: Int32 = 0
    while true {
        let waited = waitpid(pid, &status, WNOHANG)
        if waited == pid { break }
        if waited < 0, errno != EINTR { throw ModuleLoadError(description: "waitpid failed: errno \(errno)") }
        if Date() > deadline {
            kill(pid, SIGKILL)
            _ = waitpid(pid, &status, 0)
            return .timedOut
        }
        usleep(2_000)
    }
    // WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift does not import.
    if status & 0x7f == 0 { return .exited((status >> 8) & 0xff) }
    return .signaled(status & 0x7f)
}
