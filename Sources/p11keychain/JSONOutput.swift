import Foundation

/// `--json`: the machine-readable form of every listing and status command, one schema for
/// all (docs/cli.md "Machine-readable output"):
///
///     {"command": "find-certificate", "items": [{"class": "certificate", "label": …}, …]}
///
/// Each item names its `class`; the keys of a class are fixed and documented, and a key
/// whose value is unknown is there with `null`, never left out. Dates are ISO 8601 in UTC
/// (`2026-01-31T12:00:00Z`), bytes upper-case hexadecimal, as the text output prints them.
enum JSONOutput {
    static let option = Option(
        long: "json", help: "print JSON instead (one schema for every command: see docs/cli.md)")

    /// One item: its keys and values (String, Int, Bool, NSNull, arrays and dictionaries of them).
    typealias Item = [String: Any]

    /// Writes the document for `command`'s `items` to standard output.
    ///
    /// JSONSerialization writes the text (sorted keys, so the same items print the same bytes).
    static func print(_ items: [Item], command: String) throws(Failure) {
        let document: [String: Any] = ["command": command, "items": items]
        do {
            let data = try JSONSerialization.data(
                withJSONObject: document, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
            Console.write(Array(data) + [UInt8(ascii: "\n")], to: Console.output)
        } catch {
            throw .failed("cannot write JSON: \(error.localizedDescription)")
        }
    }

    /// A date as ISO 8601 in UTC: `2026-01-31T12:00:00Z`.
    static func date(_ date: Date) -> String {
        let text = Format.date(date)  // `2026-01-31 12:00:00 UTC`, in every locale
        return text.replacingOccurrences(of: " UTC", with: "Z").replacingOccurrences(of: " ", with: "T")
    }

    /// A password for `-g`: `{"text": …}` when it is UTF-8, else `{"hex": …}`.
    static func password(_ secret: [UInt8]) -> Item {
        if let text = String(validating: secret, as: UTF8.self) { return ["text": text] }
        return ["hex": Format.hex(secret)]
    }

    /// A value, or JSON's null.
    static func optional(_ value: Any?) -> Any { value ?? NSNull() }
}

extension Invocation {
    /// True when `--json` was given.
    var json: Bool { flag(JSONOutput.option.key) }
}
