import Foundation
import Keychain
import KeychainCore

/// One command: its name, what help says about it, the options it takes and what it does.
struct Command: Sendable {
    var name: String
    /// Other names that run it: macOS `security(1)`'s, where it names the command otherwise
    /// (`unlock-keychain` for `unlock`).
    var aliases: [String] = []
    /// What follows the name in the usage line, e.g. `[-l LABEL] FILE...`.
    var synopsis: String
    /// One line for the list of commands.
    var summary: String
    var options: [Option] = []
    var operands: Operands = .none
    /// Paragraphs shown after the options.
    var notes: [String] = []
    var run: @Sendable (Invocation) throws(Failure) -> Void
}

/// A command as invoked: the parsed arguments and the environment.
struct Invocation {
    let arguments: ParsedArguments
    let environment: [String: String]

    func flag(_ key: String) -> Bool { arguments.has(key) }
    func value(_ key: String) -> String? { arguments.value(key) }
    var operands: [String] { arguments.operands }

    /// `--token NAME`, or `-k NAME` without a slash, if given.
    var tokenName: String? {
        value(Tool.tokenOption.key) ?? value(Tool.keychainOption.key).flatMap { $0.contains("/") ? nil : $0 }
    }
    /// `--store PATH`, or `-k PATH` with a slash, if given.
    var storePath: String? {
        value(Tool.storeOption.key) ?? value(Tool.keychainOption.key).flatMap { $0.contains("/") ? $0 : nil }
    }

    /// The keychain the global options choose: `--store PATH`, else `--token NAME`, else the
    /// default `login` token (created on first use, like the PKCS#11 module creates it).
    ///
    /// - Parameter creating: Create a `--store` file that does not exist yet. Only commands
    ///   that add do; the others report a missing file, so a mistyped path is not silently
    ///   taken for a new, empty keychain.
    /// The PIN cost of a keychain opened with --store, which no section names: the
    /// configuration's `pin-iterations`. A configuration that does not load is not this
    /// store's (--store never needed one), so it is not an error here: nil then leaves
    /// `Keychain(path:)` the environment's count, whose own mistake is still reported.
    private func pathPINIterations() -> Int? {
        do {
            return try Configuration.load(environment: environment).pinIterations
        } catch {
            return nil
        }
    }

    func openKeychain(creating: Bool = false) throws(Failure) -> Keychain {
        do {
            if let path = storePath {
                return try Keychain(path: path, createIfMissing: creating, pinIterations: pathPINIterations())
            }
            if let name = tokenName { return try Keychain(tokenNamed: name) }
            return try Keychain()
        } catch {
            if error.code == .noSuchKeychain, let path = storePath, !Files.exists(path) {
                throw .failed(
                    "no keychain at \(path) (check the path; to create one there: "
                        + "p11keychain --store \(path) add-certificates FILE)")
            }
            if error.code == .noSuchKeychain, storePath == nil, let name = tokenName {
                // An unknown name, not a directory problem: say which names there are.
                throw .failed(
                    Format.oneLine(
                        "cannot open token \(Format.quoted(name)): \(error.message) (see: p11keychain list-tokens)"
                    ))
            }
            throw Failure(error, doing: "cannot open the keychain")
        }
    }
}

extension Failure {
    /// What to do about a configuration that does not load: a bad file, or a bad variable.
    static let configurationFileFix =
        "fix the file, or set P11KEYCHAIN_CONF=/dev/null to use the default token alone"
    static let pinIterationsVariable = "$" + Configuration.pinIterationsVariable
    static let pinIterationsFix =
        "set it to a number from \(Configuration.pinIterationRange.lowerBound) to "
        + "\(Configuration.pinIterationRange.upperBound), or unset it for the default"

    /// The fix for `error`, a configuration that did not load.
    static func fix(for error: Configuration.ParseError) -> String {
        error.file == pinIterationsVariable ? pinIterationsFix : configurationFileFix
    }

    /// A keychain error as one line: what was being done, what went wrong, what to do.
    init(_ error: KeychainError, doing action: String) {
        let hint: String
        switch error.code {
        case .readOnly:
            hint = " (the keychain is read-only; choose a writable one with --token NAME or --store PATH)"
        case .noSuchKeychain:
            hint = " (check the directory and its permissions; see: p11keychain list-tokens)"
        case .notAvailable where error.message.contains(Failure.pinIterationsVariable):
            hint = " (\(Failure.pinIterationsFix))"
        case .notAvailable:
            hint = " (\(Failure.configurationFileFix))"
        case .invalidKeychain:
            hint = " (the file is not a p11keychain store, or a newer version wrote it)"
        case .io:
            hint = " (the store is busy or unreadable; try again)"
        case .diskFull:
            hint = " (free some disk space and try again)"
        default:
            hint = ""
        }
        self = .failed(Format.oneLine("\(action): \(error.message)\(hint)"))
    }
}

/// The `p11keychain` command: the command table, help, and dispatch.
enum Tool {
    static let version = "0.1"

    static let tokenOption = Option(
        long: "token", value: "NAME", help: "use the configured token NAME (see list-tokens) instead of login"
    )
    static let storeOption = Option(
        long: "store", value: "PATH", help: "use the keychain stored in the file PATH")
    /// security(1)'s `-k KEYCHAIN`: a path (it has a slash: `./work.sqlite3`) is `--store`,
    /// anything else a token name, `--token`.
    static let keychainOption = Option(
        short: "k", long: "keychain", value: "KEYCHAIN",
        help: "security(1)'s spelling: a store PATH (with a slash) or a token NAME")
    static let versionOption = Option(long: "version", help: "print the version")

    /// Valid with every command, before or after its name.
    static let globalOptions = [tokenOption, storeOption, keychainOption]

    /// The command called `name`, by its name or one of its aliases.
    static func command(named name: String) -> Command? {
        commands.first { $0.name == name || $0.aliases.contains(name) }
    }

    /// Every command, in the order help lists them.
    static let commands: [Command] =
        CertificateCommands.all + TrustCommands.all + IdentityCommands.all + KeyCommands.all
        + SecretKeyCommands.all
        + PasswordCommands.all + InternetPasswordCommands.all
        + PINCommands.all + SessionCommands.all + TokenCommands.all + MechanismCommands.all
        + ModuleCommands.all + MigrateCommand.all

    /// Runs the command line and returns the exit status: 0 success, 1 failure, 2 usage error.
    static func main(_ arguments: [String], environment: [String: String]) -> Int32 {
        var commandName: String?
        do {
            // Global options, then the command name.
            let before: ParsedArguments
            switch try ParsedArguments.parse(
                arguments.dropFirst(), options: globalOptions + [versionOption], stopAtOperand: true)
            {
            case .help:
                Console.print(overview())
                return 0
            case .arguments(let parsed): before = parsed
            }
            if before.has(versionOption.key) {
                Console.print("p11keychain \(version)\n")
                return 0
            }
            guard let name = before.operands.first else {
                Console.printError("p11keychain: no command given (see: p11keychain help)")
                return 2
            }
            if name == "help" { return help(for: before.operands.dropFirst()) }
            guard let command = command(named: name) else {
                Console.printError(
                    "p11keychain: unknown command \(Format.quoted(name)) (see: p11keychain help)")
                return 2
            }
            // A P11KEYCHAIN_CONF that names no file is a mistake in how the tool was called:
            // said before anything else, rather than reached as a store that cannot open.
            if let error = Configuration.explicitFileError(environment: environment) {
                Console.printError("p11keychain: \(name): invalid configuration: \(error.description)")
                return 2
            }
            commandName = name
            let after: ParsedArguments
            switch try ParsedArguments.parse(
                before.operands.dropFirst(), options: command.options + globalOptions)
            {
            case .help:
                Console.print(usage(of: command))
                return 0
            case .arguments(let parsed): after = parsed
            }
            let parsed = try URIArguments.resolve(
                try merge(before, after), for: command, environment: environment)
            try check(parsed, for: command)
            try command.run(Invocation(arguments: parsed, environment: environment))
            return 0
        } catch {
            if error.message.isEmpty { return error.exitStatus }
            let context = commandName.map { "\($0): " } ?? ""
            let hint =
                error.kind == .usage ? " (see: p11keychain \(commandName.map { "\($0) " } ?? "")--help)" : ""
            Console.printError("p11keychain: \(context)\(error.message)\(hint)")
            return error.exitStatus
        }
    }

    /// Global options given before the command join those after it; each once.
    private static func merge(_ before: ParsedArguments, _ after: ParsedArguments) throws(Failure)
        -> ParsedArguments
    {
        var merged = after
        for option in globalOptions {
            guard let value = before.value(option.key) else { continue }
            guard after.value(option.key) == nil else {
                throw .usage("option \(option.name) is given twice")
            }
            merged = merged.setting(option.key, value)
        }
        return merged
    }

    private static func check(_ arguments: ParsedArguments, for command: Command) throws(Failure) {
        let choosers = [tokenOption, storeOption, keychainOption].filter { arguments.value($0.key) != nil }
        if choosers.count > 1 {
            throw .usage(
                choosers.map { $0.long.map { "--\($0)" } ?? $0.name }.joined(separator: " and ")
                    + " choose the keychain \(choosers.count) ways; give one")
        }
        // A file option or operand of `-` reads standard input, which holds one thing only.
        let readers =
            command.options.filter { $0.long?.hasSuffix("-file") == true && arguments.value($0.key) == "-" }
            .map(\.name) + (arguments.operands.contains("-") ? [command.operands.name] : [])
        if readers.count > 1 {
            throw .usage(
                "\(readers.joined(separator: " and ")) cannot \(readers.count == 2 ? "both" : "all") read "
                    + "standard input (-); give one")
        }
        let count = arguments.operands.count
        let operands = command.operands
        if count < operands.minimum {
            throw .usage("missing \(operands.name)")
        }
        if count > operands.maximum {
            let extra = arguments.operands[operands.maximum]
            throw .usage(
                operands.maximum == 0
                    ? "takes no arguments, but \(Format.quoted(extra)) was given"
                    : "unexpected argument \(Format.quoted(extra))")
        }
    }

    // MARK: Help

    /// `help` and `help COMMAND`.
    private static func help(for names: ArraySlice<String>) -> Int32 {
        guard let name = names.first else {
            Console.print(overview())
            return 0
        }
        guard let command = command(named: name) else {
            Console.printError(
                "p11keychain: help: unknown command \(Format.quoted(name)) (see: p11keychain help)")
            return 2
        }
        Console.print(usage(of: command))
        return 0
    }

    static func overview() -> String {
        let width = (commands.map(\.name.count).max() ?? 0) + 2
        var text = """
            usage: p11keychain [--token NAME | --store PATH | -k KEYCHAIN] COMMAND [OPTIONS] [ARGUMENTS]

            Manage the certificates, keys, identities and passwords of the p11keychain store,
            the one the PKCS#11 module (libp11keychain-pkcs11.so) and the Swift API serve.

            commands:

            """
        for command in commands {
            text +=
                "  " + command.name.padding(toLength: width, withPad: " ", startingAt: 0) + command.summary
                + "\n"
        }
        let aliased = commands.filter { !$0.aliases.isEmpty }
        text += "\nsecurity(1)'s names, also understood:\n"
        for command in aliased {
            text += "  " + command.aliases.joined(separator: ", ") + " (\(command.name))\n"
        }
        text += "\nglobal options (valid with every command):\n"
        text += optionLines(globalOptions + [Option.help, versionOption])
        text += """

            `p11keychain help COMMAND` or `p11keychain COMMAND --help` describes one command.

            Keys and passwords are private: the commands on them unlock the token with its
            user PIN, from --pin, --pin-file, $P11KEYCHAIN_PIN, else asked on the terminal.
            Certificates need no PIN. A new token has none: `p11keychain init` sets them.

            exit status: 0 success; 1 failure (nothing matches, a bad file, a wrong or missing
            PIN, a store error); 2 usage error (an unknown option, a missing value or argument).

            """
        return text
    }

    static func usage(of command: Command) -> String {
        var text = "usage: p11keychain \(command.name)"
        if !command.synopsis.isEmpty { text += " " + command.synopsis }
        text += "\n\n\(command.summary).\n"
        if !command.options.isEmpty {
            text += "\noptions:\n" + optionLines(command.options)
        }
        text += "\nglobal options:\n" + optionLines(globalOptions + [Option.help])
        for note in command.notes { text += "\n" + note + "\n" }
        return text
    }

    private static func optionLines(_ options: [Option]) -> String {
        let spellings = options.map { option in
            var names: [String] = []
            if let short = option.short { names.append("-\(short)") }
            if let long = option.long { names.append("--\(long)") }
            return names.joined(separator: ", ") + (option.value.map { " " + $0 } ?? "")
        }
        let width = (spellings.map(\.count).max() ?? 0) + 2
        return zip(spellings, options).map { spelling, option in
            "  " + spelling.padding(toLength: width, withPad: " ", startingAt: 0) + option.help + "\n"
        }.joined()
    }
}
