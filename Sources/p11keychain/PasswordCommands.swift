import Foundation
import Keychain

/// Generic passwords (a secret filed under a service and an account), named and shaped like
/// macOS `security(1)`'s commands. Each unlocks the keychain: passwords are private items.
enum PasswordCommands {
    static let all = [addGenericPassword, findGenericPassword, deleteGenericPassword]

    private static let service = Option(short: "s", value: "SERVICE", help: "the service, exactly")
    private static let account = Option(short: "a", value: "ACCOUNT", help: "the account, exactly")
    private static let password = Option(
        short: "w", value: "PASSWORD", help: "the password (other users may see it in ps: prefer the prompt)")
    private static let label = Option(short: "l", value: "LABEL", help: "the item's label, exactly")
    private static let passwordFile = Option(
        long: "password-file", value: "FILE",
        help: "read the password from the first line of FILE (- for stdin)")

    // MARK: add-generic-password

    static let addGenericPassword = Command(
        name: "add-generic-password",
        synopsis: "-s SERVICE -a ACCOUNT [-w PASSWORD | --password-file FILE] [-l LABEL] [-U]",
        summary: "Add a password for a service and account (-U: or replace it)",
        options: [
            service, account, password, passwordFile,
            Option(short: "l", value: "LABEL", help: "the item's label (default: the service)"),
            Option(short: "U", help: "update the password (and label) if the service and account have one"),
        ] + PINs.unlockOptions,
        notes: [
            """
            A service and an account identify one password: adding a second fails and keeps the
            first, unless -U is given. Without -w or --password-file the password is asked
            twice on the terminal, without echo.
            """,
            PINs.unlockNote,
        ],
        run: { invocation throws(Failure) in try add(invocation) })

    private static func add(_ invocation: Invocation) throws(Failure) {
        guard let service = invocation.value("s"), let account = invocation.value("a") else {
            throw .usage("say whose password it is: -s SERVICE and -a ACCOUNT")
        }
        let label = invocation.value("l")
        let secret = Secret(
            name: "password", option: password, fileOption: passwordFile, environmentVariable: nil,
            prompt: "Password for \(Format.quoted(service)), account \(Format.quoted(account)): ")
        let item = "service \(Format.quoted(service)), account \(Format.quoted(account))"
        try storePassword(
            invocation, secret: secret, kind: "generic password", item: item,
            add: { keychain, value throws(KeychainError) in
                try keychain.addGenericPassword(value, service: service, account: account, label: label).label
            },
            replace: { keychain, value throws(KeychainError) in
                try keychain.updateGenericPasswords(
                    matching: GenericPasswordQuery(service: service, account: account),
                    setting: GenericPasswordChanges(label: label, password: value)
                ).first?.label
            })
    }

    /// Adds a password, or with -U replaces the one already stored for the same item, as
    /// security(1)'s add-generic-password and add-internet-password do. The password's options
    /// are read (and a file's errors reported) before the PIN is. `add` returns the new item's
    /// label; `replace` the label of the item it changed, nil when none was left to change.
    static func storePassword(
        _ invocation: Invocation, secret: Secret, kind: String, item: String,
        add: (Keychain, [UInt8]) throws(KeychainError) -> String,
        replace: (Keychain, [UInt8]) throws(KeychainError) -> String?
    ) throws(Failure) {
        let given = try secret.given(invocation)
        let keychain = try invocation.unlockedKeychain()
        let value: String
        if let given {
            value = given
        } else {
            value = try secret.required(invocation, confirming: true)
        }
        do {
            let label = try add(keychain, Array(value.utf8))
            Console.print("added \(kind) \(Format.quoted(label)) (\(item))\n")
            return
        } catch  where error.code == .duplicateItem && invocation.flag("U") {
            // Replaced below.
        } catch  where error.code == .duplicateItem {
            throw .failed(
                "a password for \(item) is already stored; nothing was changed (replace it: add -U)")
        } catch {
            throw Failure(error, doing: "cannot add the password")
        }
        let replaced: String?
        do {
            replaced = try replace(keychain, Array(value.utf8))
        } catch {
            throw Failure(error, doing: "cannot update the password")
        }
        guard let replaced else {
            throw .failed("the password for \(item) was deleted meanwhile; try again")
        }
        Console.print("updated \(kind) \(Format.quoted(replaced)) (\(item))\n")
    }

    // MARK: find-generic-password

    static let findGenericPassword = Command(
        name: "find-generic-password", synopsis: "(-s SERVICE | -l LABEL) [-a ACCOUNT] [-w | -g]",
        summary: "Show the generic password of a service (and account)",
        options: [
            service, account, label,
            Option(short: "w", help: "print only the password"),
            Option(short: "g", help: "show the password too"),
            JSONOutput.option,
        ] + PINs.unlockOptions,
        notes: [
            """
            Shows the service, account and label of the first match; with -g also the password
            (quoted, or in hexadecimal when it is not printable text). With -w only the
            password is written, exactly its bytes, followed by a line break only when standard
            output is a terminal: PASSWORD=$(p11keychain find-generic-password -s S -w).
            No match is a failure (exit status 1).
            """,
            PINs.unlockNote,
        ],
        run: { invocation throws(Failure) in try find(invocation) })

    private static func find(_ invocation: Invocation) throws(Failure) {
        let service = invocation.value("s")
        let label = invocation.value("l")
        guard service != nil || label != nil else {
            throw .usage("say which password: -s SERVICE or -l LABEL")
        }
        try checkShowFlags(invocation)
        let account = invocation.value("a")
        let keychain = try invocation.unlockedKeychain()
        let found: GenericPasswordItem?
        do {
            found = try keychain.firstGenericPassword(
                matching: GenericPasswordQuery(service: service, account: account, label: label))
        } catch {
            throw Failure(error, doing: "cannot search the keychain")
        }
        guard let item = found else {
            throw .failed(
                "no generic password for \(describe(service, account, label)) (add one: p11keychain "
                    + "add-generic-password -s \(service.map(Selection.shellQuoted) ?? "SERVICE") -a "
                    + "\(account.map(Selection.shellQuoted) ?? "ACCOUNT"))")
        }
        try show(
            invocation, reading: { () throws(KeychainError) in try keychain.password(for: item) },
            json: jsonItem(item), command: "find-generic-password",
            fields: [("service", item.service), ("account", item.account), ("label", item.label)])
    }

    /// Refuses -w with -g or --json: a find prints the password alone, or with the attributes.
    static func checkShowFlags(_ invocation: Invocation) throws(Failure) {
        if invocation.flag("w"), invocation.flag("g") {
            throw .usage("-w prints the password alone and -g shows it with the attributes; give one")
        }
        if invocation.flag("w"), invocation.json {
            throw .usage("-w prints the password alone, not JSON; give one")
        }
    }

    /// Prints a found password as a find's flags ask: with -w its bytes alone, with --json the
    /// item (and with -g its password), else the attributes' `fields` one a line (and with -g
    /// the password, shown).
    static func show(
        _ invocation: Invocation, reading read: () throws(KeychainError) -> [UInt8], json: JSONOutput.Item,
        command: String, fields: [(String, String)]
    ) throws(Failure) {
        let secret: [UInt8]
        do {
            secret = try read()
        } catch {
            throw Failure(error, doing: "cannot read the password")
        }
        if invocation.flag("w") {
            Console.write(
                secret + (Console.isTerminal(Console.output) ? [UInt8(ascii: "\n")] : []), to: Console.output)
            return
        }
        if invocation.json {
            var object = json
            if invocation.flag("g") { object["password"] = JSONOutput.password(secret) }
            try JSONOutput.print([object], command: command)
            return
        }
        let password = invocation.flag("g") ? [("password", shown(secret))] : []
        Console.print(CertificateCommands.table(fields + password, indent: ""))
    }

    /// A generic password's attributes as a `--json` item (class "generic-password").
    static func jsonItem(_ item: GenericPasswordItem) -> JSONOutput.Item {
        ["class": "generic-password", "service": item.service, "account": item.account, "label": item.label]
    }

    /// A password for -g: quoted text, or `0x…` hexadecimal when it is not printable UTF-8.
    static func shown(_ secret: [UInt8]) -> String {
        if let text = String(bytes: secret, encoding: .utf8),
            !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        {
            return Format.quoted(text)
        }
        return "0x" + Format.hex(secret)
    }

    // MARK: delete-generic-password

    static let deleteGenericPassword = Command(
        name: "delete-generic-password", synopsis: "(-s SERVICE | -l LABEL) [-a ACCOUNT]",
        summary: "Delete the generic password of a service (and account)",
        options: [service, account, label] + PINs.unlockOptions,
        notes: [
            """
            Exactly one password must match: when the service has passwords for several
            accounts, nothing is deleted and the command fails; say which with -a ACCOUNT.
            No match is a failure (exit status 1).
            """,
            PINs.unlockNote,
        ],
        run: { invocation throws(Failure) in try delete(invocation) })

    private static func delete(_ invocation: Invocation) throws(Failure) {
        let service = invocation.value("s")
        let label = invocation.value("l")
        guard service != nil || label != nil else {
            throw .usage("say which password: -s SERVICE or -l LABEL")
        }
        let account = invocation.value("a")
        let keychain = try invocation.unlockedKeychain()
        try deleteOne(
            find: { () throws(KeychainError) in
                try keychain.genericPasswords(
                    matching: GenericPasswordQuery(
                        service: service, account: account, label: label, limit: .maximum(2)))
            },
            none: "no generic password for \(describe(service, account, label))",
            several:
                "\(describe(service, nil, label)) has passwords for several accounts and nothing was deleted "
                + "(say which: -a ACCOUNT)",
            delete: { item throws(KeychainError) in
                _ = try keychain.deleteGenericPasswords(
                    matching: GenericPasswordQuery(persistentReference: item.persistentReference))
            },
            deleted: { item in
                "deleted generic password \(Format.quoted(item.label)) "
                    + "(service \(Format.quoted(item.service)), account \(Format.quoted(item.account)))\n"
            })
    }

    /// Deletes the one password `find` finds (it asks for two at most), as security(1)'s
    /// delete-generic-password and delete-internet-password do: `none` when there is none,
    /// `several` (and nothing deleted) when the criteria name more than one.
    static func deleteOne<Item>(
        find: () throws(KeychainError) -> [Item], none: String, several: String,
        delete: (Item) throws(KeychainError) -> Void, deleted: (Item) -> String
    ) throws(Failure) {
        let matches: [Item]
        do {
            matches = try find()
        } catch {
            throw Failure(error, doing: "cannot search the keychain")
        }
        guard let item = matches.first else { throw .failed(none) }
        guard matches.count == 1 else { throw .failed(several) }
        do {
            try delete(item)
        } catch {
            throw Failure(error, doing: "cannot delete the password")
        }
        Console.print(deleted(item))
    }

    /// `service "S"`, `service "S" and account "A"`, `label "L"`…: the criteria given.
    static func describe(_ service: String?, _ account: String?, _ label: String? = nil) -> String {
        [
            service.map { "service \(Format.quoted($0))" }, label.map { "label \(Format.quoted($0))" },
            account.map { "account \(Format.quoted($0))" },
        ].compactMap { $0 }.joined(separator: " and ")
    }
}
