import Foundation
import Keychain
import KeychainCore

/// The commands about tokens: the stores the configuration names.
enum TokenCommands {
    static let all = [listTokens]

    static let listTokens = Command(
        name: "list-tokens", synopsis: "",
        summary: "List the configured tokens: name, access, number of objects, store file",
        notes: [
            """
            The tokens are the PKCS#11 module's slots, in slot order: login first, then the
            [token NAME] sections of the configuration file ($P11KEYCHAIN_CONF, else
            ~/.config/p11keychain/p11keychain.conf, else /etc/p11keychain/p11keychain.conf).
            A store not created yet shows "-" objects. With --token or --store, that one only.
            """
        ],
        run: { invocation throws(Failure) in try list(invocation) })

    private static func list(_ invocation: Invocation) throws(Failure) {
        var tokens: [TokenConfiguration]
        if let path = invocation.storePath {
            guard Files.exists(path) else {
                throw .failed("no keychain at \(path) (check the path)")
            }
            let keychain = try invocation.openKeychain()
            tokens = [TokenConfiguration(name: keychain.name, path: path)]
        } else {
            do {
                tokens = try Configuration.load(environment: invocation.environment).tokens
            } catch {
                throw .failed(
                    "invalid configuration: \(error.description) "
                        + "(fix the file, or set P11KEYCHAIN_CONF=/dev/null to use the default token alone)")
            }
            if let name = invocation.tokenName {
                tokens = tokens.filter { $0.name == name }
                guard !tokens.isEmpty else {
                    throw .failed("no token named \(Format.quoted(name)) (see: p11keychain list-tokens)")
                }
            }
        }
        var rows = [["NAME", "ACCESS", "OBJECTS", "STORE"]]
        for token in tokens {
            let exists = Files.exists(token.path)
            var access = token.readOnly ? "read-only" : "read-write"
            var objects = "-"
            if exists {
                do {
                    objects = String(try objectCount(path: token.path, readOnly: token.readOnly))
                    if !token.readOnly, Token(configuration: token).isWriteProtected { access = "read-only" }
                } catch {
                    objects = "?"
                    access = "unreadable"
                }
            }
            rows.append([token.name, access, objects, token.path + (exists ? "" : " (not created yet)")])
        }
        let widths = (0..<3).map { column in (rows.map { $0[column].count }.max() ?? 0) + 2 }
        let text = rows.map { row in
            (0..<3).map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined()
                + row[3]
        }.joined(separator: "\n")
        Console.print(text + "\n")
    }

    /// How many public objects of every class the store at `path` holds.
    ///
    /// This is the one place the command reaches below `Keychain`: the Swift API sees only
    /// certificates, and a token also holds what PKCS#11 applications store (data objects,
    /// keys). The count is one index scan; no object is loaded.
    static func objectCount(path: String, readOnly: Bool) throws(KeychainCore.KeychainError) -> Int {
        let token = Token(configuration: TokenConfiguration(name: "", path: path, readOnly: readOnly))
        return try token.findObjects([.token: [1]], context: AccessContext(readWrite: false)).count
    }
}
