import Foundation
import KeychainCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// An environment naming an empty configuration (`/dev/null`), so only the defaults apply.
private let bare = [
    "P11KEYCHAIN_CONF": "/dev/null", "P11KEYCHAIN_DIR": "/data", "HOME": "/home/u",
]

/// The configuration `text` gives on top of the defaults.
private func parse(_ text: String) throws(Configuration.ParseError) -> Configuration {
    var configuration = try Configuration.load(environment: bare)
    try configuration.apply(text, file: "test.conf", home: "/home/u")
    return configuration
}

/// Expects `text` to be refused at `line` with a reason containing `fragment`.
private func expectParseError(
    _ text: String, line: Int, _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    do {
        _ = try parse(text)
        Issue.record("expected a parse error at line \(line)", sourceLocation: sourceLocation)
    } catch {
        #expect(error.file == "test.conf", sourceLocation: sourceLocation)
        #expect(error.line == line, "\(error)", sourceLocation: sourceLocation)
        #expect(error.reason.contains(fragment), "\(error)", sourceLocation: sourceLocation)
        #expect(
            error.description == "test.conf:\(error.line): \(error.reason)", sourceLocation: sourceLocation)
    }
}

@Suite("Configuration files")
struct ConfigurationFileTests {
    @Test("a file sets the globals and adds tokens in file order; [token login] changes the default")
    func fullFile() throws {
        let configuration = try parse(
            """
            # p11keychain configuration
            debug = yes   # trailing comment
            log-file = /tmp/p11keychain.log

            [token System]
            path = /var/lib/p11keychain/system.sqlite3
            read-only = yes
            synchronous = on

            [token Work Keys]
                path=~/keys/work.sqlite3

            [ token login ]
            synchronous = true
            """)
        #expect(configuration.debug)
        #expect(configuration.logFile == "/tmp/p11keychain.log")
        #expect(
            configuration.tokens == [
                TokenConfiguration(name: "login", path: "/data/login.sqlite3", synchronous: true),
                TokenConfiguration(
                    name: "System", path: "/var/lib/p11keychain/system.sqlite3", readOnly: true,
                    synchronous: true),
                TokenConfiguration(name: "Work Keys", path: "/home/u/keys/work.sqlite3"),
            ])
    }

    @Test(
        "a # inside a value or token name is kept; at a line's start or after white space it starts a comment"
    )
    func hashInsideValues() throws {
        let configuration = try parse(
            """
            # tokens
            [token Keys#2]   # the second set
            path = /srv/keys#2/store.sqlite3 #where it lives
            """)
        #expect(
            configuration.tokens.last == TokenConfiguration(name: "Keys#2", path: "/srv/keys#2/store.sqlite3")
        )
        // "yes#2" is one value, not "yes" and a comment: it is no boolean.
        expectParseError("[token login]\nread-only = yes#2\n", line: 2, "read-only")
    }

    @Test("an empty file, or one of comments and blank lines, changes nothing")
    func emptyFile() throws {
        let defaults = try Configuration.load(environment: bare)
        #expect(try parse("") == defaults)
        #expect(try parse("# only a comment\n\n   \n\t# another\n") == defaults)
    }

    @Test(
        "only a leading ~/ is the home directory",
        arguments: [
            ("~/x.sqlite3", "/home/u/x.sqlite3"), ("/a/~/b.sqlite3", "/a/~/b.sqlite3"),
            ("~other/x.sqlite3", "~other/x.sqlite3"), ("relative/x.sqlite3", "relative/x.sqlite3"),
        ])
    func homeExpansion(_ path: String, expected: String) throws {
        let configuration = try parse("[token T]\npath = \(path)\n")
        #expect(configuration.tokens.last?.path == expected)
    }

    @Test(
        "yes and no have their usual spellings, in any case",
        arguments: [
            ("yes", true), ("YES", true), ("true", true), ("On", true), ("1", true),
            ("no", false), ("No", false), ("false", false), ("off", false), ("0", false),
        ])
    func flagSpellings(_ text: String, expected: Bool) throws {
        let configuration = try parse(
            "debug = \(text)\n[token T]\npath = /t\nread-only = \(text)\nsynchronous = \(text)")
        #expect(configuration.debug == expected)
        #expect(configuration.tokens.last?.readOnly == expected)
        #expect(configuration.tokens.last?.synchronous == expected)
    }

    @Test("Windows line endings are read like Unix ones")
    func crlf() throws {
        let configuration = try parse("debug = yes\r\n[token T]\r\npath = /t.sqlite3\r\n")
        #expect(configuration.debug)
        #expect(configuration.tokens.last == TokenConfiguration(name: "T", path: "/t.sqlite3"))
    }

    @Test("an empty log-file means no log file")
    func emptyLogFile() throws {
        #expect(try parse("log-file = /x\nlog-file =").logFile == nil)
    }

    @Test("a token name may be up to 32 bytes of UTF-8")
    func tokenNameLength() throws {
        let longest = String(repeating: "é", count: 16)
        #expect(try parse("[token \(longest)]\npath = /t").tokens.last?.name == longest)
        expectParseError("[token \(longest)x]\npath = /t", line: 1, "1 to 32 bytes")
    }

    /// Files with a mistake, the line it is on and what the message says.
    static let mistakes: [(String, Int, String)] = [
        ("debug = maybe", 1, "'debug' must be yes or no, not 'maybe'"),
        ("# comment\n\nverbose = yes", 3, "unknown key 'verbose'"),
        ("path = /x", 1, "unknown key 'path'"),
        ("read-only = yes", 1, "unknown key 'read-only'"),
        ("just some words", 1, "expected 'key = value'"),
        ("[keys]\npath = /x", 1, "unknown section '[keys]'"),
        ("[token]", 1, "unknown section"),
        ("[token A\npath = /x", 1, "lacks ']'"),
        ("[token A]\npath = /a\nsize = 3", 3, "unknown key 'size' in a token section"),
        ("[token A]\npath = /a\nread-only = perhaps", 3, "'read-only' must be yes or no"),
        ("[token A]\npath = /a\nsynchronous = 2", 3, "'synchronous' must be yes or no"),
        ("[token A]\npath =", 2, "'path' is empty"),
        ("[token A]\npath = /a\n\n[token A]\npath = /b", 4, "token 'A' is defined twice"),
        ("[token A]\nread-only = yes\n\n# end\n", 1, "token 'A' has no path"),
        ("[token A]\npath = /a\n[token B]\n[token C]\npath = /c\n", 3, "token 'B' has no path"),
    ]

    @Test("a mistake is reported with the file, its line and what is wrong", arguments: mistakes)
    func mistakeIsReported(_ text: String, line: Int, fragment: String) {
        expectParseError(text, line: line, fragment)
    }

    @Test("the default token may be configured more than once")
    func loginSectionTwice() throws {
        let configuration = try parse("[token login]\nread-only = yes\n[token login]\nsynchronous = yes")
        #expect(
            configuration.tokens == [
                TokenConfiguration(
                    name: "login", path: "/data/login.sqlite3", readOnly: true, synchronous: true)
            ])
    }
}

@Suite("Finding the configuration and the default token")
struct ConfigurationLoadingTests {
    private static let file = """
        debug = no
        [token Extra]
        path = ~/extra.sqlite3
        """

    @Test("P11KEYCHAIN_CONF names the file, and ~/ in it is the environment's HOME")
    func explicitFile() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("explicit.conf")
            try ConfigurationLoadingTests.file.write(toFile: path, atomically: true, encoding: .utf8)
            let xdg = directory.file("xdg")
            try FileManager.default.createDirectory(
                atPath: xdg + "/p11keychain", withIntermediateDirectories: true)
            try "[token FromXDG]\npath = /x".write(
                toFile: xdg + "/p11keychain/p11keychain.conf", atomically: true, encoding: .utf8)
            let configuration = try Configuration.load(environment: [
                "P11KEYCHAIN_CONF": path, "XDG_CONFIG_HOME": xdg, "HOME": "/home/u",
                "P11KEYCHAIN_DIR": "/data",
            ])
            #expect(configuration.source == path)
            #expect(configuration.tokens.map(\.name) == ["login", "Extra"])
            #expect(configuration.tokens.last?.path == "/home/u/extra.sqlite3")
        }
    }

    @Test("a P11KEYCHAIN_CONF that does not exist is an error, neither the defaults nor the next place")
    func missingExplicitFile() throws {
        try withTemporaryDirectory { directory in
            let xdg = directory.file("xdg")
            try FileManager.default.createDirectory(
                atPath: xdg + "/p11keychain", withIntermediateDirectories: true)
            try "[token FromXDG]\npath = /x".write(
                toFile: xdg + "/p11keychain/p11keychain.conf", atomically: true, encoding: .utf8)
            let missing = directory.file("missing.conf")
            do throws(Configuration.ParseError) {
                let configuration = try Configuration.load(environment: [
                    "P11KEYCHAIN_CONF": missing, "XDG_CONFIG_HOME": xdg, "P11KEYCHAIN_DIR": "/data",
                ])
                Issue.record(
                    "a missing P11KEYCHAIN_CONF gave a configuration from \(configuration.source ?? "nowhere")"
                )
            } catch {
                #expect(error.file == missing)
                #expect(error.line == 0)
                #expect(error.description.hasPrefix("\(missing): does not exist"), "\(error)")
                #expect(error.reason.contains("P11KEYCHAIN_CONF"), "\(error)")
            }
        }
    }

    @Test(
        "without P11KEYCHAIN_CONF the file is under XDG_CONFIG_HOME, else under HOME/.config",
        arguments: [
            ("XDG_CONFIG_HOME", false), ("HOME", false), ("HOME", true),
        ])
    func xdgConfigHome(_ variable: String, emptyExplicit: Bool) throws {
        try withTemporaryDirectory { directory in
            let base = variable == "HOME" ? directory.file("home/.config") : directory.file("config")
            try FileManager.default.createDirectory(
                atPath: base + "/p11keychain", withIntermediateDirectories: true)
            let path = base + "/p11keychain/p11keychain.conf"
            try ConfigurationLoadingTests.file.write(toFile: path, atomically: true, encoding: .utf8)
            var environment = ["HOME": directory.file("home"), "P11KEYCHAIN_DIR": "/data"]
            if variable == "XDG_CONFIG_HOME" { environment["XDG_CONFIG_HOME"] = directory.file("config") }
            if emptyExplicit {
                environment["P11KEYCHAIN_CONF"] = ""
                environment["XDG_CONFIG_HOME"] = ""
            }
            let configuration = try Configuration.load(environment: environment)
            #expect(configuration.source == path)
            #expect(configuration.tokens.last?.path == directory.file("home") + "/extra.sqlite3")
        }
    }

    @Test("with no file anywhere the configuration is the default token alone")
    func noFile() throws {
        try withTemporaryDirectory { directory in
            let configuration = try Configuration.load(environment: [
                "HOME": directory.path, "XDG_CONFIG_HOME": directory.file("config"),
                "P11KEYCHAIN_DIR": "/data",
            ])
            // The last place looked at is the system-wide file.
            let system = "/etc/p11keychain/p11keychain.conf"
            if access(system, R_OK) == 0 {
                #expect(configuration.source == system)
            } else {
                #expect(configuration.source == nil)
                #expect(
                    configuration.tokens == [TokenConfiguration(name: "login", path: "/data/login.sqlite3")])
            }
        }
    }

    @Test("a mistake in the file is reported with that file's path")
    func parseErrorNamesTheFile() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("bad.conf")
            try "debug = yes\nwhatever = 1\n".write(toFile: path, atomically: true, encoding: .utf8)
            do throws(Configuration.ParseError) {
                _ = try Configuration.load(environment: ["P11KEYCHAIN_CONF": path])
                Issue.record("a bad file was accepted")
            } catch {
                #expect(error.file == path)
                #expect(error.line == 2)
                #expect(error.description.hasPrefix("\(path):2: unknown key 'whatever'"))
            }
        }
    }

    @Test(
        "the default token's directory: P11KEYCHAIN_DIR, else XDG_DATA_HOME, else HOME; empty ones do not count",
        arguments: [
            (["P11KEYCHAIN_DIR": "/dir", "XDG_DATA_HOME": "/xdg", "HOME": "/home/u"], "/dir/login.sqlite3"),
            (
                ["P11KEYCHAIN_DIR": "", "XDG_DATA_HOME": "/xdg", "HOME": "/home/u"],
                "/xdg/p11keychain/login.sqlite3"
            ),
            (["XDG_DATA_HOME": "/xdg"], "/xdg/p11keychain/login.sqlite3"),
            (["XDG_DATA_HOME": "", "HOME": "/home/u"], "/home/u/.local/share/p11keychain/login.sqlite3"),
            (["HOME": "/home/u"], "/home/u/.local/share/p11keychain/login.sqlite3"),
        ])
    func defaultToken(_ environment: [String: String], expected: String) {
        let token = Configuration.defaultToken(environment: environment)
        #expect(token == TokenConfiguration(name: Configuration.defaultTokenName, path: expected))
        #expect(token.name == "login")
    }

    @Test(
        "P11KEYCHAIN_DEBUG turns tracing on whatever the file says; empty or 0 leaves the file's choice",
        arguments: [
            ("1", "no", true), ("yes", "no", true), ("0", "no", false), ("", "no", false), (nil, "no", false),
            ("0", "yes", true), (nil, "yes", true),
        ] as [(String?, String, Bool)])
    func debugVariable(_ variable: String?, file: String, expected: Bool) throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("p11keychain.conf")
            try "debug = \(file)\n".write(toFile: path, atomically: true, encoding: .utf8)
            var environment = ["P11KEYCHAIN_CONF": path, "P11KEYCHAIN_DIR": "/data"]
            environment["P11KEYCHAIN_DEBUG"] = variable
            #expect(try Configuration.load(environment: environment).debug == expected)
        }
    }

    @Test("HOME comes from the environment, else from the password database")
    func home() throws {
        #expect(Environment.home(["HOME": "/home/u"]) == "/home/u")
        let entry = try #require(getpwuid(getuid()))
        let fromDatabase = String(cString: try #require(entry.pointee.pw_dir))
        #expect(Environment.home([:]) == fromDatabase)
        #expect(Environment.home(["HOME": ""]) == fromDatabase)
    }

    @Test("the current environment is the process's variables configuration reads, and no others")
    func currentEnvironment() {
        let current = Environment.current
        let process = ProcessInfo.processInfo.environment
        let read = process.filter {
            $0.key.hasPrefix("P11KEYCHAIN_") || $0.key.hasPrefix("XDG_") || $0.key == "HOME"
        }
        #expect(current == read)
        #expect(current["HOME"] == process["HOME"])
        #expect(current["PATH"] == nil)
    }
}
