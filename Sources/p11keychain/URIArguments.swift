import KeychainCore

/// `pkcs11:` URIs (RFC 7512) wherever a token, object or key is named: in `--token`,
/// `--store` and `-k`, which choose the token, and in `-l`, which names the object. A URI is
/// parsed once, here, and becomes the options it stands for (`token=` → `--token`,
/// `object=` → `-l`, `id=` → `--id`, `type=` → `--class`), so every command selects, and
/// says that nothing or several match, as it does for those options.
enum URIArguments {
    /// Where a URI's `id=` goes for the certificate commands, which have no option for it.
    static let certificateIDKey = "uri-id"

    static func resolve(_ arguments: ParsedArguments, for command: Command, environment: [String: String])
        throws(Failure) -> ParsedArguments
    {
        var result = arguments
        // The token options: a URI there names a token and nothing else.
        for option in [Tool.tokenOption, Tool.storeOption, Tool.keychainOption] {
            guard let text = result.value(option.key), PKCS11URI.isURI(text) else { continue }
            let uri = try PKCS11URI(parsing: text)
            guard let token = uri.token else {
                throw .usage("\(option.name) \(Format.quoted(text)) names no token=")
            }
            guard uri.object == nil, uri.id == nil, uri.type == nil else {
                throw .usage(
                    "\(option.name) takes a token's URI; \(Format.quoted(text)) names an object (give that with -l)"
                )
            }
            result = result.removing(option.key).setting(
                Tool.tokenOption.key, tokenName(token, environment: environment))
        }
        guard let text = result.value("l"), PKCS11URI.isURI(text),
            command.options.contains(where: { $0.key == "l" })
        else { return result }
        let uri = try PKCS11URI(parsing: text)
        result = result.removing("l")
        if let object = uri.object { result = result.setting("l", object) }
        if let label = uri.token {
            let token = tokenName(label, environment: environment)
            let chosen = [Tool.storeOption, Tool.keychainOption].first { result.value($0.key) != nil }
            if let chosen {
                throw .usage("\(chosen.name) and the URI's token= choose the keychain two ways; give one")
            }
            if let given = result.value(Tool.tokenOption.key), given != token {
                throw .usage("--token \(Format.quoted(given)) and the URI's token=\(token) differ")
            }
            result = result.setting(Tool.tokenOption.key, token)
        }
        let takes = { (key: String) in command.options.contains { $0.key == key } }
        if let id = uri.id {
            if takes("id") {
                guard result.value("id") == nil else {
                    throw .usage("--id and the URI's id= both give the ID; give one")
                }
                result = result.setting("id", Format.hex(id))
            } else if takes("Z") || command.name == "find-certificate" {
                // Certificates: CKA_ID, their public-key hash (no option spells it).
                result = result.setting(certificateIDKey, Format.hex(id))
            } else {
                throw .usage("\(Format.quoted(text)): \(command.name) cannot select by id=")
            }
        }
        if let type = uri.type {
            let isKeyCommand = takes("id")
            switch (type, isKeyCommand) {
            case ("cert", false): break
            case ("private", true), ("public", true):
                if takes("class") { result = result.setting("class", type) }
            case ("secret-key", true): if takes("class") { result = result.setting("class", "secret") }
            default:
                throw .usage(
                    "\(Format.quoted(text)) names a \(type) object, which \(command.name) does not handle")
            }
        }
        if uri.object == nil, uri.id == nil {
            throw .usage("\(Format.quoted(text)) names no object (object= or id=)")
        }
        return result
    }

    /// The configured token a URI's `token=` names: the token of that name, else the one
    /// whose label (`init --label`, what the module and the URIs it prints show) it is.
    /// Unknown, it stays as it is, and opening it says which tokens there are.
    private static func tokenName(_ token: String, environment: [String: String]) -> String {
        guard let tokens = try? Configuration.load(environment: environment).tokens else { return token }
        if tokens.contains(where: { $0.name == token }) { return token }
        for configuration in tokens where Files.exists(configuration.path) {
            if (try? Token(configuration: configuration).authenticationState().label) == token {
                return configuration.name
            }
        }
        return token
    }
}
