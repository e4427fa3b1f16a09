internal import KeychainCrypto
internal import KeychainStorage

#if canImport(Glibc)
    import Glibc
#endif

/// One token of the configuration: a name (its label) and the store behind it.
public struct TokenConfiguration: Sendable, Hashable {
    public var name: String
    /// The SQLite file (`path =`), or `postgresql:` and a libpq connection string (`store =`).
    public var path: String
    public var readOnly: Bool
    /// `full` fsyncs every commit; `normal` survives a killed process (ARCHITECTURE.md §4.1).
    public var synchronous: Bool
    /// The global `rsa-pkcs1-decryption`, given to every token: the core enforces it.
    public var allowsRSAPKCS1Decryption = true
    /// The global `rsa-minimum-bits`, given to every token: the smallest RSA modulus it
    /// generates, imports and advertises (``Configuration/minimumRSABits``).
    public var minimumRSABits = Configuration.defaultMinimumRSABits
    /// The global `pin-iterations` (or `$P11KEYCHAIN_PIN_ITERATIONS`), given to every token:
    /// the PBKDF2 iteration count of the PINs it sets from now on (``Configuration/pinIterations``).
    public var pinIterations = Configuration.defaultPINIterations
    /// The token's `access-group`: the group of the Apple items this process adds to it
    /// without one (``defaultAccessGroup``); nil for ``AccessGroup/defaultName``.
    public var accessGroup: String?
    /// `freshness-ms`: how long a host may rely on what it holds of a server's store (its
    /// cached objects, its opened keys) since it last confirmed the store's change count; 0
    /// confirms on every call (ARCHITECTURE.md §4.5). A file's store is always current.
    public var freshnessMilliseconds = Configuration.defaultFreshnessMilliseconds
    /// `timeout-ms`: the longest any wait for a server's store may last.
    public var timeoutMilliseconds = Configuration.defaultTimeoutMilliseconds
    /// `schema`: the PostgreSQL schema of a server's store; nil: the token's name. Set it to
    /// rename a section without pointing it at another, new schema (docs/fleet.md).
    public var schema: String?

    public init(name: String, path: String, readOnly: Bool = false, synchronous: Bool = false) {
        self.name = name
        self.path = path
        self.readOnly = readOnly
        self.synchronous = synchronous
    }

    var durability: Durability { synchronous ? .full : .normal }

    var serverOptions: ServerOptions {
        ServerOptions(freshnessMilliseconds: freshnessMilliseconds, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// True when the store is a database server's (`store = postgresql:…`), not a file.
    public var isServerStore: Bool { ObjectStore.isServerLocation(path) }

    /// The name of the store inside its database: `schema`, else the token's name.
    public var storeName: String { schema ?? name }

    /// The store fit for display: a file's path, or `postgresql:`, the server's host, port,
    /// database and user and the schema, never the rest of the connection string (it may hold
    /// a password).
    public var printableStore: String {
        isServerStore ? Self.printable(store: path) + " schema \(storeName)" : path
    }

    /// `store` (a token's `path`) fit for display, as ``printableStore``.
    public static func printable(store: String) -> String { ObjectStore.printable(store) }
}

/// The module's configuration (ARCHITECTURE.md §5): the tokens in slot order and diagnostics.
///
/// File format, one `key = value` per line, comments from a `#` at the start of a line or
/// after white space, sections for tokens:
///
///     debug = yes
///     log-file = /tmp/p11keychain.log
///     [token System]
///     path = /var/lib/p11keychain/system.sqlite3
///     read-only = yes
///     access-group = com.example.shared
///
/// The default `login` token is always slot 0; a `[token login]` section changes its
/// settings. Other tokens follow in file order.
public struct Configuration: Sendable, Equatable {
    public var tokens: [TokenConfiguration]
    public var debug: Bool
    public var logFile: String?
    /// Whether CKM_RSA_PKCS decryption is offered (`rsa-pkcs1-decryption`, default yes).
    /// PKCS#1 v1.5 decryption invites padding-oracle attacks (Bleichenbacher); OpenSSL 3.0
    /// has no implicit rejection, so a site that needs no such decryption can turn it off.
    public var allowsRSAPKCS1Decryption = true
    /// The smallest RSA modulus in bits the tokens generate, import and advertise in their
    /// mechanism information (`rsa-minimum-bits`, 1024 to 8192, default 1024).
    ///
    /// The default is the bottom of the range the token supports (RSA key sizes
    /// 1024–8192; a configuration key may raise the minimum): PKCS#11 clients that still
    /// make or bring 1024-bit keys (old smart-card profiles, test suites) work unchanged, and
    /// a site that follows NIST SP 800-131A (no RSA under 2048 bits) raises it with one line.
    /// Raising it never strands a stored key: keys already stored still sign and decrypt.
    public var minimumRSABits = Configuration.defaultMinimumRSABits
    /// `rsa-minimum-bits` when the file does not say.
    public static let defaultMinimumRSABits = 1024
    /// The PBKDF2-HMAC-SHA256 iteration count of each PIN set from now on (`pin-iterations`,
    /// overridden by `$P11KEYCHAIN_PIN_ITERATIONS`; 1,000 to 10,000,000, default 600,000).
    ///
    /// The count is written into each PIN's record, so a PIN set under one count is checked
    /// under it whatever a later configuration says. The default is OWASP's 2023 figure
    /// (ARCHITECTURE.md §11.4): each `C_Login` then costs a fraction of a second, and a guess
    /// at a stolen store as much. A lower count makes that guess cheaper in proportion; it
    /// exists for test suites, which set hundreds of PINs (NSS's
    /// `NSS_MIN_MP_PBE_ITERATION_COUNT` serves its tests the same way), and for very slow
    /// devices. A privileged host reads no environment, so only the system file sets it there.
    public var pinIterations = Configuration.defaultPINIterations
    /// `pin-iterations` when neither the file nor the environment says.
    public static let defaultPINIterations = PasswordKeyDerivation.defaultIterations
    /// The counts `pin-iterations` accepts: those a stored PIN record may name.
    public static let pinIterationRange = PasswordKeyDerivation.iterationRange
    /// The environment variable over `pin-iterations`.
    public static let pinIterationsVariable = "P11KEYCHAIN_PIN_ITERATIONS"
    /// A token's `freshness-ms` when its section does not say (ARCHITECTURE.md §4.5).
    public static let defaultFreshnessMilliseconds = 100
    /// A token's `timeout-ms` when its section does not say.
    public static let defaultTimeoutMilliseconds = 10_000
    static let freshnessRange = 0...60_000
    /// From 1 s (libpq connects in whole seconds) to 10 minutes.
    static let timeoutRange = 1000...600_000
    /// The file the configuration came from, if any.
    public var source: String?

    /// The name of the token created on first use.
    public static let defaultTokenName = "login"

    /// A configuration error: the file, the line and what is wrong with it.
    public struct ParseError: Error, CustomStringConvertible, Sendable {
        public var file: String
        public var line: Int
        public var reason: String
        /// Line 0: the file as a whole (not a regular file, too large).
        public var description: String { line > 0 ? "\(file):\(line): \(reason)" : "\(file): \(reason)" }
    }

    /// The system-wide configuration file, the only one a privileged host reads.
    public static let systemFile = "/etc/p11keychain/p11keychain.conf"

    /// The largest configuration file read: far more than any real one, and a bound on what
    /// a file (or `/dev/zero`) can make a host read into memory.
    public static let maximumFileSize = 1 << 20

    /// Reads the configuration the environment points at: `$P11KEYCHAIN_CONF`, else
    /// `$XDG_CONFIG_HOME/p11keychain/p11keychain.conf` (`~/.config/…`), else
    /// `/etc/p11keychain/p11keychain.conf`; with none, the default `login` token alone. A
    /// `$P11KEYCHAIN_CONF` that names no readable file is an error (line 0), not the default.
    /// `P11KEYCHAIN_DEBUG=1` turns tracing on whatever the file says.
    ///
    /// In a privileged host (`AT_SECURE`: setuid, setgid, file capabilities) none of that
    /// environment is the host's own: it came from the user who started it. Then only
    /// `/etc/p11keychain/p11keychain.conf` and the default store of the effective user apply
    /// (ARCHITECTURE.md §6.9), whatever `environment` holds.
    public static func load(environment: [String: String] = Environment.current)
        throws(ParseError) -> Configuration
    {
        try load(environment: environment, privileged: Environment.isPrivileged)
    }

    /// `load`, with the privilege decided by the caller (tests).
    static func load(environment: [String: String], privileged: Bool) throws(ParseError) -> Configuration {
        let environment = privileged ? [:] : environment
        let home = privileged ? Environment.effectiveHome() : Environment.home(environment)
        var configuration = Configuration(
            tokens: [defaultToken(environment: environment, home: home)], debug: false, logFile: nil,
            source: nil)
        let explicit = !privileged && !(environment["P11KEYCHAIN_CONF"] ?? "").isEmpty
        for path in candidateFiles(environment: environment, home: home, privileged: privileged) {
            guard let text = try readFile(path) else {
                // A file named on purpose that is not there is a mistake (a typo), not "no
                // configuration": falling back would quietly open another store.
                if explicit { throw missingExplicitFile(path) }
                continue
            }
            try configuration.apply(text, file: path, home: home)
            configuration.source = path
            break
        }
        if let flag = environment["P11KEYCHAIN_DEBUG"], !flag.isEmpty, flag != "0" {
            configuration.debug = true
        }
        if let iterations = try pinIterations(environment: environment) {
            configuration.pinIterations = iterations
            for index in configuration.tokens.indices {
                configuration.tokens[index].pinIterations = iterations
            }
        }
        return configuration
    }

    /// `$P11KEYCHAIN_PIN_ITERATIONS` as this process started with it (nil when not set), read
    /// once, with `getenv` alone: for a store opened by path, which no configuration names
    /// (`Keychain(path:)`). Reading the whole environment on each open would race with a host
    /// thread's `setenv`. A privileged host reads none of its environment.
    public static let processPINIterations: Result<Int?, ParseError> = {
        guard !Environment.isPrivileged, let value = getenv(pinIterationsVariable) else {
            return .success(nil)
        }
        let environment = [pinIterationsVariable: String(cString: value)]
        return Result(catching: { () throws(ParseError) in try pinIterations(environment: environment) })
    }()

    /// `$P11KEYCHAIN_PIN_ITERATIONS`, or nil when it is not set (or empty). A privileged
    /// caller passes an empty `environment`.
    ///
    /// - Throws: a ``ParseError`` naming the variable when it is not a count in
    ///   ``pinIterationRange``: a typo must not quietly leave the count where it was.
    public static func pinIterations(environment: [String: String]) throws(ParseError) -> Int? {
        guard let value = environment[pinIterationsVariable], !value.isEmpty else { return nil }
        guard let count = Int(value), pinIterationRange.contains(count) else {
            throw ParseError(
                file: "$" + pinIterationsVariable, line: 0,
                reason:
                    "must be a number from \(pinIterationRange.lowerBound) to \(pinIterationRange.upperBound), not '\(value)'"
            )
        }
        return count
    }

    /// The error `load` reports when `$P11KEYCHAIN_CONF` names no file this process can read,
    /// else nil (not set, or a privileged host, which ignores it): for a face that says so
    /// before it does anything else (the CLI, as a usage error).
    public static func explicitFileError(environment: [String: String]) -> ParseError? {
        guard !Environment.isPrivileged, let path = environment["P11KEYCHAIN_CONF"], !path.isEmpty,
            access(path, R_OK) != 0
        else { return nil }
        return missingExplicitFile(path)
    }

    /// The error for a `$P11KEYCHAIN_CONF` that names no file this process can read.
    static func missingExplicitFile(_ path: String) -> ParseError {
        let what = access(path, F_OK) == 0 ? "cannot be read by this process" : "does not exist"
        return ParseError(
            file: path, line: 0,
            reason: "\(what) (P11KEYCHAIN_CONF names it; /dev/null means no configuration file)")
    }

    /// The files `load` tries, in order: the first one that can be read is the configuration;
    /// `$P11KEYCHAIN_CONF`, when set, must be that one.
    static func candidateFiles(environment: [String: String], home: String, privileged: Bool) -> [String] {
        if privileged { return [systemFile] }
        if let explicit = environment["P11KEYCHAIN_CONF"], !explicit.isEmpty { return [explicit] }
        let configHome =
            environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.config"
        return [configHome + "/p11keychain/p11keychain.conf", systemFile]
    }

    /// The default token: `$P11KEYCHAIN_DIR/login.sqlite3`, else under `$XDG_DATA_HOME`
    /// (`~/.local/share/p11keychain/`).
    public static func defaultToken(environment: [String: String]) -> TokenConfiguration {
        defaultToken(environment: environment, home: Environment.home(environment))
    }

    static func defaultToken(environment: [String: String], home: String) -> TokenConfiguration {
        let directory: String
        if let explicit = environment["P11KEYCHAIN_DIR"], !explicit.isEmpty {
            directory = explicit
        } else {
            let dataHome =
                environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
                ?? home + "/.local/share"
            directory = dataHome + "/p11keychain"
        }
        return TokenConfiguration(name: defaultTokenName, path: directory + "/\(defaultTokenName).sqlite3")
    }

    /// A line without its comment. `#` starts one at the start of the line or after white
    /// space, so that a path or a token name may contain it (`/srv/keys#2/login.sqlite3`).
    static func withoutComment(_ line: Substring) -> Substring {
        var previous: Character?
        for index in line.indices {
            if line[index] == "#", previous.map(\.isWhitespace) ?? true { return line[..<index] }
            previous = line[index]
        }
        return line
    }

    /// Applies configuration text on top of the current values.
    public mutating func apply(_ text: String, file: String, home: String) throws(ParseError) {
        var section: Int? = nil  // index into tokens, nil for the global section
        var lineNumber = 0
        // Where each token's section starts: a missing key is reported there.
        var sectionLines: [Int: Int] = [:]
        // Character.isNewline: "\r\n" is one Character, which a split on "\n" never matches.
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            lineNumber += 1
            let line = Configuration.withoutComment(rawLine).trimmingWhitespace()
            if line.isEmpty { continue }
            func fail(_ reason: String) -> ParseError {
                ParseError(file: file, line: lineNumber, reason: reason)
            }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else { throw fail("section header lacks ']'") }
                let header = line.dropFirst().dropLast().trimmingWhitespace()
                guard header.hasPrefix("token ") else {
                    throw fail("unknown section '[\(header)]' (expected '[token NAME]')")
                }
                let name = header.dropFirst("token ".count).trimmingWhitespace()
                guard !name.isEmpty, name.utf8.count <= 32 else {
                    throw fail("token name must be 1 to 32 bytes")
                }
                if let existing = tokens.firstIndex(where: { $0.name == name }) {
                    guard existing == 0 else { throw fail("token '\(name)' is defined twice") }
                    section = existing
                } else {
                    tokens.append(TokenConfiguration(name: name, path: ""))
                    section = tokens.count - 1
                    sectionLines[tokens.count - 1] = lineNumber
                }
                continue
            }
            let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { throw fail("expected 'key = value'") }
            let key = parts[0].trimmingWhitespace()
            let value = parts[1].trimmingWhitespace()
            func flag() throws(ParseError) -> Bool {
                switch value.lowercased() {
                case "yes", "true", "on", "1": return true
                case "no", "false", "off", "0": return false
                default: throw fail("'\(key)' must be yes or no, not '\(value)'")
                }
            }
            if let index = section {
                switch key {
                case "path":
                    guard !value.isEmpty else { throw fail("'path' is empty") }
                    tokens[index].path = value.hasPrefix("~/") ? home + value.dropFirst() : value
                case "store":
                    // The value is not repeated in messages: a connection string may hold a password.
                    guard ObjectStore.isServerLocation(value), value.count > ObjectStore.postgresPrefix.count
                    else {
                        throw fail("'store' must be postgresql: followed by a libpq connection string or URI")
                    }
                    tokens[index].path = value
                case "read-only": tokens[index].readOnly = try flag()
                case "synchronous": tokens[index].synchronous = try flag()
                case "access-group":
                    guard !value.isEmpty else { throw fail("'access-group' is empty") }
                    tokens[index].accessGroup = value
                case "freshness-ms":
                    guard let milliseconds = Int(value), Self.freshnessRange.contains(milliseconds) else {
                        throw fail("'freshness-ms' must be a number from 0 to 60000, not '\(value)'")
                    }
                    tokens[index].freshnessMilliseconds = milliseconds
                case "timeout-ms":
                    guard let milliseconds = Int(value), Self.timeoutRange.contains(milliseconds) else {
                        throw fail("'timeout-ms' must be a number from 1000 to 600000, not '\(value)'")
                    }
                    tokens[index].timeoutMilliseconds = milliseconds
                case "schema":
                    guard !value.isEmpty, value.utf8.count <= 63 else {
                        throw fail("'schema' must be 1 to 63 bytes")
                    }
                    tokens[index].schema = value
                default:
                    throw fail(
                        "unknown key '\(key)' in a token section (path, store, read-only, synchronous, "
                            + "access-group, freshness-ms, timeout-ms, schema)")
                }
            } else {
                switch key {
                case "debug": debug = try flag()
                case "log-file": logFile = value.isEmpty ? nil : value
                case "rsa-pkcs1-decryption": allowsRSAPKCS1Decryption = try flag()
                case "rsa-minimum-bits":
                    guard let bits = Int(value), (1024...8192).contains(bits) else {
                        throw fail("'rsa-minimum-bits' must be a number from 1024 to 8192, not '\(value)'")
                    }
                    minimumRSABits = bits
                case "pin-iterations":
                    guard let count = Int(value), Self.pinIterationRange.contains(count) else {
                        throw fail(
                            "'pin-iterations' must be a number from \(Self.pinIterationRange.lowerBound) to "
                                + "\(Self.pinIterationRange.upperBound), not '\(value)'")
                    }
                    pinIterations = count
                default:
                    throw fail(
                        "unknown key '\(key)' (debug, log-file, rsa-pkcs1-decryption, rsa-minimum-bits, "
                            + "pin-iterations, or a [token NAME] section)"
                    )
                }
            }
        }
        if let missing = tokens.firstIndex(where: { $0.path.isEmpty }) {
            throw ParseError(
                file: file, line: sectionLines[missing] ?? lineNumber,
                reason: "token '\(tokens[missing].name)' has no path (or store)")
        }
        if let fileToken = tokens.firstIndex(where: { $0.schema != nil && !$0.isServerStore }) {
            throw ParseError(
                file: file, line: sectionLines[fileToken] ?? lineNumber,
                reason: "token '\(tokens[fileToken].name)' names a schema but no store = postgresql:")
        }
        for index in tokens.indices {
            tokens[index].allowsRSAPKCS1Decryption = allowsRSAPKCS1Decryption
            tokens[index].minimumRSABits = minimumRSABits
            tokens[index].pinIterations = pinIterations
        }
    }

    /// The text of a configuration file, or nil when there is none to read (missing, or not
    /// readable by this process, as when no file is there). The file is not trusted: it is
    /// opened `O_NONBLOCK` (a FIFO would block the host for good) and must be a regular file
    /// of at most `maximumFileSize` bytes. `/dev/null`, the usual "no configuration", is
    /// empty.
    static func readFile(_ path: String) throws(ParseError) -> String? {
        func refuse(_ reason: String) -> ParseError { ParseError(file: path, line: 0, reason: reason) }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else {
            let error = errno
            if error == ENOENT || error == ENOTDIR || error == EACCES { return nil }
            throw refuse("cannot be read: \(String(cString: strerror(error)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw refuse("cannot be read: \(String(cString: strerror(errno)))")
        }
        var null = stat()
        if info.st_mode & S_IFMT == S_IFCHR, stat("/dev/null", &null) == 0, info.st_rdev == null.st_rdev {
            return ""
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw refuse("is \(StoreFile.kind(info.st_mode)), not a regular file")
        }
        guard info.st_size <= off_t(maximumFileSize) else {
            throw refuse("is \(info.st_size) bytes; a configuration file may have \(maximumFileSize) at most")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += buffer.prefix(count)
            // The file may grow while it is read.
            guard bytes.count <= maximumFileSize else {
                throw refuse("grew past \(maximumFileSize) bytes while it was read")
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// The process environment, read through Glibc (no Foundation in the module).
public enum Environment {
    /// True in a privileged host: the kernel set `AT_SECURE` (setuid or setgid program, file
    /// capabilities, an LSM transition), and glibc's `secure_getenv` returns NULL for every
    /// variable. The environment then belongs to whoever started the program, not to it.
    public static var isPrivileged: Bool { secureMode }

    /// `getauxval(AT_SECURE)`, read once: the auxiliary vector never changes. Swift's Glibc
    /// module does not import `<sys/auxv.h>`, so the function is found with `dlsym`; without
    /// it (never on glibc), differing real and effective IDs say the same.
    private static let secureMode: Bool = {
        typealias GetAuxiliaryValue = @convention(c) (UInt) -> UInt
        let atSecure: UInt = 23  // AT_SECURE, <elf.h>
        guard let symbol = dlsym(nil, "getauxval") else {
            return getuid() != geteuid() || getgid() != getegid()
        }
        return unsafeBitCast(symbol, to: GetAuxiliaryValue.self)(atSecure) != 0
    }()

    /// The variables configuration reads (`P11KEYCHAIN_*`, `XDG_*`, `HOME`), as `secure_getenv`
    /// sees them: none in a privileged host. Every other entry is passed over by its first
    /// bytes: a keychain is opened on every `SecItem…` call, and copying a whole environment
    /// into Swift strings took about a third of a `SecItemCopyMatching` (bench/session.sh).
    public static var current: [String: String] {
        var result: [String: String] = [:]
        guard !isPrivileged else { return result }
        var cursor = environ
        while let entry = cursor.pointee {
            cursor += 1
            guard isConfigurationEntry(entry) else { continue }
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
        }
        return result
    }

    /// True for an `environ` entry (`NAME=value`) of a variable configuration reads.
    static func isConfigurationEntry(_ entry: UnsafePointer<CChar>) -> Bool {
        strncmp(entry, "P11KEYCHAIN_", 12) == 0 || strncmp(entry, "XDG_", 4) == 0
            || strncmp(entry, "HOME=", 5) == 0
    }

    /// The effective user's home directory from the password database, never `$HOME`: the
    /// home of a privileged host, whose environment is not its own.
    static func effectiveHome() -> String {
        if let entry = getpwuid(geteuid()), let directory = entry.pointee.pw_dir {
            return String(cString: directory)
        }
        return "/"
    }

    /// `$HOME`, else the password database's home directory, else "/".
    public static func home(_ environment: [String: String]) -> String {
        if let home = environment["HOME"], !home.isEmpty { return home }
        if let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir {
            return String(cString: directory)
        }
        return "/"
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> String {
        let scalars = String(self).unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let end = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(String.UnicodeScalarView(scalars[start...end]))
    }
}
