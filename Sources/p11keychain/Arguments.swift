// Hand-written, table-driven argument parsing: each command lists its options as `Option`
// values; one parser reads them all. Why not glibc's getopt_long: docs/cli.md ("One option
// parser").
//
// Accepted forms, as getopt_long accepts them: `-l VALUE`, `-lVALUE`, clustered flags
// (`-aZ`), `--long VALUE`, `--long=VALUE`, and `--` ending the options. Options may follow
// operands (`add-certificates a.pem -l Web`).

/// Why the command failed, and the exit status that says so.
struct Failure: Error {
    enum Kind {
        /// The command line is wrong: an unknown option, a missing value (exit status 2).
        case usage
        /// The command could not do its job: nothing matches, a bad file, a store error (1).
        case operation
    }

    var kind: Kind
    /// One line that says what went wrong and what to do about it.
    var message: String

    static func usage(_ message: String) -> Failure { Failure(kind: .usage, message: message) }
    static func failed(_ message: String) -> Failure { Failure(kind: .operation, message: message) }
    /// The command did its job and its answer is "no" (`status` of a locked token): exit
    /// status 1, with what it printed as the whole answer and nothing on standard error.
    static let negativeAnswer = Failure(kind: .operation, message: "")

    var exitStatus: Int32 { kind == .usage ? 2 : 1 }
}

/// One option of a command's table.
struct Option: Sendable {
    /// The one-letter spelling, `-l`.
    var short: Character?
    /// The long spelling without dashes, `token` for `--token`.
    var long: String?
    /// The value's placeholder in help (`LABEL`); nil for a flag.
    var value: String?
    /// One line for the command's help.
    var help: String
    /// May be given more than once (`verify-cert -c leaf.pem -c ca.pem`); its values are
    /// read with `ParsedArguments.values(_:)`, in order.
    var repeatable = false

    /// How handlers ask for it: the long name, else the letter.
    var key: String { long ?? short.map(String.init) ?? "" }

    /// How messages name it: `-l`, `--token`.
    var name: String { short.map { "-\($0)" } ?? "--\(key)" }

    /// `-h`/`--help`: handled by the parser itself, in every command's table.
    static let help = Option(short: "h", long: "help", help: "show this help")

    /// The same option with a one-letter spelling too: security(1)'s letter for it in one
    /// command (`unlock-keychain -p PIN`) where other commands use the letter otherwise.
    func spelled(_ letter: Character) -> Option {
        var copy = self
        copy.short = letter
        return copy
    }
}

/// How many operands a command takes and what they are called in help.
struct Operands: Sendable {
    var name: String
    var minimum: Int
    var maximum: Int

    static let none = Operands(name: "", minimum: 0, maximum: 0)
}

/// What the parser found: flags that were given, option values, operands in order.
struct ParsedArguments {
    private(set) var flags: Set<String> = []
    private(set) var values: [String: String] = [:]
    /// Every value of a repeatable option, in order (`values` holds the first).
    private(set) var repeated: [String: [String]] = [:]
    var operands: [String] = []

    func has(_ key: String) -> Bool { flags.contains(key) || values[key] != nil }
    func value(_ key: String) -> String? { values[key] }
    func values(_ key: String) -> [String] { repeated[key] ?? values[key].map { [$0] } ?? [] }

    /// A copy with one more option value.
    func setting(_ key: String, _ value: String) -> ParsedArguments {
        var copy = self
        copy.values[key] = value
        return copy
    }

    /// A copy without an option's value.
    func removing(_ key: String) -> ParsedArguments {
        var copy = self
        copy.values[key] = nil
        copy.repeated[key] = nil
        return copy
    }

    /// The outcome of parsing: arguments, or a request for help.
    enum Outcome {
        case arguments(ParsedArguments)
        case help
    }

    /// Parses `arguments` against `options` (`Option.help` is always understood).
    ///
    /// - Parameter stopAtOperand: Stop at the first operand and leave it, and everything
    ///   after it, in ``operands`` unparsed (the global options before a command name).
    static func parse(_ arguments: ArraySlice<String>, options: [Option], stopAtOperand: Bool = false)
        throws(Failure) -> Outcome
    {
        var result = ParsedArguments()
        var remaining = arguments
        let table = options + [Option.help]

        func record(_ option: Option, _ value: String?, as spelled: String) throws(Failure) -> Bool {
            if option.key == Option.help.key { return false }
            if let value, option.repeatable {
                result.repeated[option.key, default: []].append(value)
                if result.values[option.key] == nil { result.values[option.key] = value }
            } else if let value {
                guard result.values[option.key] == nil else {
                    throw .usage("option \(spelled) is given twice")
                }
                result.values[option.key] = value
            } else {
                result.flags.insert(option.key)
            }
            return true
        }
        func nextValue(for option: Option, spelled: String) throws(Failure) -> String {
            guard let value = remaining.popFirst() else {
                throw .usage("option \(spelled) needs a value (\(option.value ?? "VALUE"))")
            }
            return value
        }

        while let argument = remaining.popFirst() {
            if argument == "--" {
                if stopAtOperand {
                    result.operands = Array(remaining)
                    return .arguments(result)
                }
                result.operands += remaining
                break
            }
            if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                let name = body.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
                let inline = body.firstIndex(of: "=").map { String(body[body.index(after: $0)...]) }
                guard let option = table.first(where: { $0.long == name }) else {
                    throw .usage("unknown option --\(name)")
                }
                let spelled = "--\(name)"
                if option.value == nil {
                    guard inline == nil else { throw .usage("option \(spelled) takes no value") }
                    guard try record(option, nil, as: spelled) else { return .help }
                } else {
                    let value: String
                    if let inline {
                        value = inline
                    } else {
                        value = try nextValue(for: option, spelled: spelled)
                    }
                    _ = try record(option, value, as: spelled)
                }
                continue
            }
            if argument.hasPrefix("-"), argument.count > 1 {
                var letters = Substring(argument.dropFirst())
                while let letter = letters.popFirst() {
                    guard let option = table.first(where: { $0.short == letter }) else {
                        throw .usage("unknown option -\(letter)")
                    }
                    let spelled = "-\(letter)"
                    if option.value == nil {
                        guard try record(option, nil, as: spelled) else { return .help }
                    } else {
                        // The rest of the cluster is the value (`-lWeb`), else the next argument.
                        let value =
                            letters.isEmpty ? try nextValue(for: option, spelled: spelled) : String(letters)
                        _ = try record(option, value, as: spelled)
                        break
                    }
                }
                continue
            }
            // An operand: `-` alone is one too (standard input).
            if stopAtOperand {
                result.operands = [argument] + remaining
                return .arguments(result)
            }
            result.operands.append(argument)
        }
        return .arguments(result)
    }
}
