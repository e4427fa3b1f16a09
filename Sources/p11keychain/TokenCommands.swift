import Foundation
import Keychain
import KeychainCore

/// The commands about tokens: the stores the configuration names.
enum TokenCommands {
    static let all = [listTokens]

    static let listTokens = Command(
        name: "list-tokens", aliases: ["list-keychains"], synopsis: "[--json]",
        summary: "List the configured tokens: name, access, objects, PINs, store file",
        options: [JSONOutput.option],
        notes: [
            """
            The tokens are the PKCS#11 module's slots, in slot order: login first, then the
            [token NAME] sections of the configuration file ($P11KEYCHAIN_CONF, else
            ~/.config/p11keychain/p11keychain.conf, else /etc/p11keychain/p11keychain.conf).
            A store not created yet shows "-" objects. With --token or --store, that one only.
            """,
            """
            PINS is none (certificates only, no PIN asked), SO (initialized: the security
            officer's PIN is set), SO+user (a user PIN unlocks keys and passwords), or
            SO+user(locked) when too many wrong PINs locked the user PIN (see: p11keychain
            set-pin --reset). token-info shows one token in detail.
            """,
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
                throw .failed("invalid configuration: \(error.description) (\(Failure.fix(for: error)))")
            }
            if let name = invocation.tokenName {
                tokens = tokens.filter { $0.name == name }
                guard !tokens.isEmpty else {
                    throw .failed("no token named \(Format.quoted(name)) (see: p11keychain list-tokens)")
                }
            }
        }
        var rows = [["NAME", "ACCESS", "OBJECTS", "PINS", "STORE"]]
        var items: [JSONOutput.Item] = []
        for token in tokens {
            // A server's store is there to ask; a file may not be made yet.
            let exists = token.isServerStore || Files.exists(token.path)
            var access = token.readOnly ? "read-only" : "read-write"
            var objects = "-"
            var pins = "-"
            if exists {
                do {
                    objects = String(
                        try objectCount(of: token))
                    if !token.readOnly, Token(configuration: token).isWriteProtected { access = "read-only" }
                    pins = summary(of: try Token(configuration: token).authenticationState())
                } catch {
                    objects = "?"
                    access = "unreadable"
                    pins = "?"
                }
            }
            rows.append([
                token.name, access, objects, pins,
                token.printableStore + (exists ? "" : " (not created yet)"),
            ])
            items.append([
                "class": "token", "name": token.name, "access": access,
                "objects": JSONOutput.optional(Int(objects)), "pins": exists ? pins : NSNull(),
                "store": token.printableStore, "created": exists,
            ])
        }
        if invocation.json {
            try JSONOutput.print(items, command: "list-tokens")
            return
        }
        Console.print(Format.table(rows))
    }

    /// The PINS column: which PINs are set, and whether one is locked; no blanks.
    private static func summary(of state: AuthenticationState) -> String {
        guard state.hasSecurityOfficerPIN else { return state.hasUserPIN ? "user" : "none" }
        var text = "SO" + (state.isSecurityOfficerPINLocked ? "(locked)" : "")
        if state.hasUserPIN { text += "+user" + (state.isUserPINLocked ? "(locked)" : "") }
        return text
    }

    /// How many public objects of every class the store of `configuration` holds (read-only
    /// when `readOnly` says so, else as configured).
    ///
    /// One of the few places the command reaches below `Keychain` (with list-tokens' PIN
    /// state and ``TokenLimits``): the Swift API sees only the kinds of item it models, and a
    /// token also holds what PKCS#11 applications store (any data object or key). The count
    /// is one index scan; no object is loaded.
    static func objectCount(of configuration: TokenConfiguration, readOnly: Bool? = nil) throws(CoreError)
        -> Int
    {
        var configuration = configuration
        if let readOnly { configuration.readOnly = readOnly }
        let token = Token(configuration: configuration)
        return try token.findObjects([.token: [1]], context: AccessContext(readWrite: false)).count
    }
}

/// The token's PIN rules, for checks made before a PIN reaches the token.
enum TokenLimits {
    /// The lengths a PIN may have, in bytes (CK_TOKEN_INFO's ulMinPinLen…ulMaxPinLen).
    static var pinLengths: ClosedRange<Int> { Token.pinLengths }
    /// Failed attempts after which a PIN locks.
    static var maximumFailures: Int { Token.maximumFailures }
}
