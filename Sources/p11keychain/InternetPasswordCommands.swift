import Foundation
import Keychain

/// Internet passwords (a secret for an account on a server, reached by a protocol, port and
/// path: Apple's kSecClassInternetPassword), named and shaped like macOS `security(1)`'s
/// commands, with its flag letters. Each unlocks the keychain: passwords are private items.
enum InternetPasswordCommands {
    static let all = [addInternetPassword, findInternetPassword, deleteInternetPassword]

    private static let server = Option(short: "s", value: "SERVER", help: "the server's host name, exactly")
    private static let account = Option(short: "a", value: "ACCOUNT", help: "the account, exactly")
    private static let label = Option(short: "l", value: "LABEL", help: "the item's label, exactly")
    private static let path = Option(short: "p", value: "PATH", help: "the path, e.g. /login")
    private static let port = Option(short: "P", value: "PORT", help: "the port number, 0 to 65535")
    private static let protocolCode = Option(
        short: "r", value: "PROTOCOL", help: "Apple's four-letter protocol code, e.g. htps, ftp, smb")
    private static let authenticationType = Option(
        short: "t", value: "AUTHTYPE", help: "Apple's four-letter authentication type, e.g. dflt, http")
    private static let securityDomain = Option(
        short: "d", value: "DOMAIN", help: "the security domain (an HTTP realm)")
    private static let password = Option(
        short: "w", value: "PASSWORD", help: "the password (other users may see it in ps: prefer the prompt)")
    private static let passwordFile = Option(
        long: "password-file", value: "FILE",
        help: "read the password from the first line of FILE (- for stdin)")

    /// The options that name an address, in security(1)'s order.
    private static let addressOptions = [
        server, account, path, port, protocolCode, authenticationType, securityDomain,
    ]

    // MARK: add-internet-password

    static let addInternetPassword = Command(
        name: "add-internet-password",
        synopsis: "-s SERVER -a ACCOUNT [-p PATH] [-P PORT] [-r PROTOCOL] [-t AUTHTYPE] [-d DOMAIN] "
            + "[-w PASSWORD | --password-file FILE] [-l LABEL] [-U]",
        summary: "Add a password for an account on a server (-U: or replace it)",
        options: addressOptions + [
            password, passwordFile,
            Option(short: "l", value: "LABEL", help: "the item's label (default: the server)"),
            Option(short: "U", help: "update the password (and label) if the address and account have one"),
        ] + PINs.unlockOptions,
        notes: [
            """
            The server, account, protocol, port, path, authentication type and security domain
            identify one password (Apple's rule): adding a second fails and keeps the first,
            unless -U is given. Without -w or --password-file the password is asked twice on
            the terminal, without echo.
            """,
            PINs.unlockNote,
        ],
        run: { invocation throws(Failure) in try add(invocation) })

    private static func add(_ invocation: Invocation) throws(Failure) {
        guard let server = invocation.value("s"), let account = invocation.value("a") else {
            throw .usage("say whose password it is: -s SERVER and -a ACCOUNT")
        }
        let address = try address(invocation)
        let label = invocation.value("l")
        let secret = Secret(
            name: "password", option: password, fileOption: passwordFile, environmentVariable: nil,
            prompt: "Password for account \(Format.quoted(account)) on \(Format.quoted(server)): ")
        let item = "server \(Format.quoted(server)), account \(Format.quoted(account))"
        try PasswordCommands.storePassword(
            invocation, secret: secret, kind: "internet password", item: item,
            add: { keychain, value throws(KeychainError) in
                try keychain.addInternetPassword(value, account: account, address: address, label: label)
                    .label
            },
            replace: { keychain, value throws(KeychainError) in
                try keychain.updateInternetPasswords(
                    matching: InternetPasswordQuery(address: address, account: account),
                    label: label, password: value
                ).first?.label
            })
    }

    // MARK: find-internet-password

    static let findInternetPassword = Command(
        name: "find-internet-password",
        synopsis: "[-s SERVER] [-a ACCOUNT] [-p PATH] [-P PORT] [-r PROTOCOL] [-t AUTHTYPE] [-d DOMAIN] "
            + "[-l LABEL] [-w | -g]",
        summary: "Show the first internet password that matches",
        options: addressOptions + [
            label,
            Option(short: "w", help: "print only the password"),
            Option(short: "g", help: "show the password too"),
            JSONOutput.option,
        ] + PINs.unlockOptions,
        notes: [
            """
            Every option given must match; with none, the first internet password is shown.
            Shows its server, account, protocol, port, path, authentication type, security
            domain and label; -g and -w as for find-generic-password. No match is a failure
            (exit status 1).
            """,
            PINs.unlockNote,
        ],
        run: { invocation throws(Failure) in try find(invocation) })

    private static func find(_ invocation: Invocation) throws(Failure) {
        try PasswordCommands.checkShowFlags(invocation)
        let query = try query(invocation, limit: .one)
        let keychain = try invocation.unlockedKeychain()
        let found: [InternetPasswordItem]
        do {
            found = try keychain.internetPasswords(matching: query)
        } catch {
            throw Failure(error, doing: "cannot search the keychain")
        }
        guard let item = found.first else {
            throw .failed("no internet password matches \(describe(invocation))")
        }
        var fields = [("server", item.server), ("account", item.account)]
        if let value = item.protocol { fields.append(("protocol", value)) }
        if let value = item.port { fields.append(("port", String(value))) }
        if let value = item.path { fields.append(("path", value)) }
        if let value = item.authenticationType { fields.append(("authentication", value)) }
        if let value = item.securityDomain { fields.append(("security domain", value)) }
        fields.append(("label", item.label))
        try PasswordCommands.show(
            invocation, reading: { () throws(KeychainError) in try keychain.password(for: item) },
            json: jsonItem(item), command: "find-internet-password", fields: fields)
    }

    // MARK: delete-internet-password

    static let deleteInternetPassword = Command(
        name: "delete-internet-password",
        synopsis:
            "[-s SERVER] [-a ACCOUNT] [-p PATH] [-P PORT] [-r PROTOCOL] [-t AUTHTYPE] [-d DOMAIN] [-l LABEL]",
        summary: "Delete the internet password that matches",
        options: addressOptions + [label] + PINs.unlockOptions,
        notes: [
            """
            Every option given must match, and at least one must be given. Exactly one password
            must match: when several do, nothing is deleted and the command fails; say which
            with more options. No match is a failure (exit status 1).
            """,
            PINs.unlockNote,
        ],
        run: { invocation throws(Failure) in try delete(invocation) })

    private static func delete(_ invocation: Invocation) throws(Failure) {
        let criteria = addressOptions + [label]
        guard criteria.contains(where: { invocation.value($0.key) != nil }) else {
            throw .usage("say which password: -s SERVER, -a ACCOUNT, -l LABEL…")
        }
        let query = try query(invocation, limit: .maximum(2))
        let keychain = try invocation.unlockedKeychain()
        try PasswordCommands.deleteOne(
            find: { () throws(KeychainError) in try keychain.internetPasswords(matching: query) },
            none: "no internet password matches \(describe(invocation))",
            several: "\(describe(invocation)) matches several internet passwords and nothing was deleted "
                + "(say which: -a ACCOUNT, -r PROTOCOL, -P PORT, -p PATH…)",
            delete: { item throws(KeychainError) in
                _ = try keychain.deleteInternetPasswords(
                    matching: InternetPasswordQuery(persistentReference: item.persistentReference))
            },
            deleted: { item in
                "deleted internet password \(Format.quoted(item.label)) "
                    + "(server \(Format.quoted(item.server)), account \(Format.quoted(item.account)))\n"
            })
    }

    /// An internet password's attributes as a `--json` item (class "internet-password").
    static func jsonItem(_ item: InternetPasswordItem) -> JSONOutput.Item {
        [
            "class": "internet-password", "server": item.server, "account": item.account,
            "protocol": JSONOutput.optional(item.protocol), "port": JSONOutput.optional(item.port),
            "path": JSONOutput.optional(item.path),
            "authentication_type": JSONOutput.optional(item.authenticationType),
            "security_domain": JSONOutput.optional(item.securityDomain), "label": item.label,
        ]
    }

    // MARK: The address

    /// The address parts given on the command line.
    private static func address(_ invocation: Invocation) throws(Failure) -> InternetAddress {
        var port: Int?
        if let text = invocation.value("P") {
            guard let number = Int(text), (0...65_535).contains(number) else {
                throw .usage("-P takes a port number from 0 to 65535, not \(Format.quoted(text))")
            }
            port = number
        }
        return InternetAddress(
            server: invocation.value("s"), protocol: invocation.value("r"), port: port,
            path: invocation.value("p"), authenticationType: invocation.value("t"),
            securityDomain: invocation.value("d"))
    }

    private static func query(_ invocation: Invocation, limit: CertificateQuery.Limit) throws(Failure)
        -> InternetPasswordQuery
    {
        InternetPasswordQuery(
            address: try address(invocation), account: invocation.value("a"), label: invocation.value("l"),
            limit: limit)
    }

    /// The criteria given, for a message: `server "example.org" and account "me"`.
    private static func describe(_ invocation: Invocation) -> String {
        let names = [
            ("s", "server"), ("a", "account"), ("p", "path"), ("P", "port"), ("r", "protocol"),
            ("t", "authentication type"), ("d", "security domain"), ("l", "label"),
        ]
        let terms = names.compactMap { key, name in
            invocation.value(key).map { "\(name) \(Format.quoted($0))" }
        }
        return terms.isEmpty ? "any address" : terms.joined(separator: " and ")
    }
}
