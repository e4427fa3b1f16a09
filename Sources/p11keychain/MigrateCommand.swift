import Foundation
import KeychainCore

/// `migrate`: a token's SQLite store copied into the store a configured token names, a
/// PostgreSQL token above all (docs/fleet.md). The copy and its check are the core's
/// (`TokenMigration`); this says what was copied and whether it came back equal.
enum MigrateCommand {
    static let all = [migrate]

    static let migrate = Command(
        name: "migrate", synopsis: "--from SQLITE_PATH --to TOKEN [--force]",
        summary: "Copy a SQLite store into a configured token (PostgreSQL), sealed, and verify it",
        options: [
            Option(long: "from", value: "SQLITE_PATH", help: "the SQLite store file to copy (only read)"),
            Option(
                long: "to", value: "TOKEN", help: "the configured token to copy it into (see list-tokens)"),
            Option(long: "force", help: "erase what the target token holds, in the same transaction"),
        ],
        notes: [
            """
            Every object is copied with its sealed values as they are, never opened, and with
            the token's PINs, label and serial: no PIN is asked, the same PINs open the copy,
            and each object keeps its ID (its CKA_UNIQUE_ID). The copy is one transaction;
            it is then read back and compared with the source, every attribute byte for byte.
            """,
            """
            The target must be empty (never initialised: no object and no PIN) unless --force
            is given. Exit status 1 when the copy cannot be made or does not read back equal,
            naming each difference by object ID and attribute type.
            """,
        ],
        run: { invocation throws(Failure) in try run(invocation) })

    private static func run(_ invocation: Invocation) throws(Failure) {
        guard let source = invocation.value("from") else { throw .usage("missing --from SQLITE_PATH") }
        guard let name = invocation.value("to") else { throw .usage("missing --to TOKEN") }
        guard Files.exists(source) else { throw .failed("no store at \(source) (check the path)") }
        let tokens: [TokenConfiguration]
        do {
            tokens = try Configuration.load(environment: invocation.environment).tokens
        } catch {
            throw .failed("invalid configuration: \(error.description)")
        }
        guard let target = tokens.first(where: { $0.name == name }) else {
            throw .failed("no token named \(Format.quoted(name)) (see: p11keychain list-tokens)")
        }
        let report: TokenMigration.Report
        do {
            report = try TokenMigration.migrate(
                fromStoreAt: source, to: target, replacing: invocation.flag("force"))
        } catch {
            let hint = error.code == .duplicateItem ? " (give --force to erase it)" : ""
            throw .failed(
                Format.oneLine(
                    "cannot migrate \(source) to token \(Format.quoted(name)): \(error.message)\(hint)"))
        }
        var text =
            "copied \(source) into token \(Format.quoted(name)) (\(target.printableStore)): "
            + "\(report.objects) objects, \(report.metadata) metadata values\n"
        for (className, count) in report.objectsByClass { text += "  \(className): \(count)\n" }
        text += "verified \(report.verified) of \(report.objects) objects"
        Console.print(text + (report.mismatches.isEmpty ? ": every attribute byte-equal\n" : "\n"))
        guard report.mismatches.isEmpty else {
            for mismatch in report.mismatches { Console.printError("p11keychain: migrate: \(mismatch)") }
            throw .failed(
                "the copy in token \(Format.quoted(name)) differs from \(source) in \(report.mismatches.count) places"
            )
        }
    }
}
