import Foundation
import Keychain

/// Keys that share a label: allowed, as on Apple, where a key's uniqueness is its
/// application label (the ID), tag, type and size, never its label, and as in PKCS#11, where
/// CKA_LABEL need not be unique (docs/ARCHITECTURE.md §3.5). But a label is how this tool
/// names a key (`-l`, the `object=` of the URIs it prints), so `generate-key`, `import` and `unwrap-key`
/// say when the key they stored shares its label with another key; `--allow-duplicate`
/// says the sharing is meant, and silences them.
enum DuplicateKeyLabels {
    static let option = Option(
        long: "allow-duplicate",
        help: "do not warn when another key already has the label (labels need not be unique)")

    /// Warns on standard error when keys other than the one whose ID is `id` are labeled
    /// `label`, unless `--allow-duplicate` was given. Best effort: a search that fails warns
    /// of nothing, as the key is stored either way.
    static func warn(label: String, id: [UInt8], in keychain: Keychain, _ invocation: Invocation) {
        guard !invocation.flag(option.key) else { return }
        var others: [[UInt8]] = []
        let pairIDs = ((try? keychain.keys(matching: KeyQuery(label: label))) ?? []).map(\.applicationLabel)
        let secretIDs = ((try? keychain.secretKeys(matching: SecretKeyQuery(label: label))) ?? []).map(
            \.applicationLabel)
        // A pair's two halves share their ID: one key.
        for other in pairIDs + secretIDs where other != id && !others.contains(other) {
            others.append(other)
        }
        guard !others.isEmpty else { return }
        let ids = others.map { $0.isEmpty ? "no ID" : "id \(Format.hex($0))" }.joined(separator: ", ")
        Console.printError(
            "warning: \(Format.count(others.count, "other key")) labeled \(Format.quoted(label)) already "
                + "(\(ids)): -l \(Selection.shellQuoted(label)) and the URI's object= now match several keys; "
                + "choose this one by --id \(Format.hex(id)), or give --allow-duplicate if that is meant")
    }
}
