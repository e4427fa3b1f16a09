import Foundation
import Keychain

/// `dump-keychain`: every item of the keychain with its attributes, as macOS
/// `security dump-keychain` shows them: certificates, key pairs, secret keys, generic and
/// internet passwords (never a secret). Private items are listed when the keychain is
/// unlocked: a token with a user PIN is unlocked with it when one is given (or asked on a
/// terminal); otherwise the public items are listed and a note says what is left out.
enum DumpKeychain {
    static let command = Command(
        name: "dump-keychain", synopsis: "[--json] [--pin PIN | --pin-file FILE]",
        summary: "Show every item of the keychain with its attributes",
        options: [JSONOutput.option] + PINs.unlockOptions,
        notes: [
            """
            Certificates, private, public and secret keys, generic and internet passwords, each
            with its attributes; no key material or password. Private items need the user PIN
            when the token has one: from --pin, --pin-file, $P11KEYCHAIN_PIN, this login
            session's unlock, or the terminal; without any, the public items are shown and a
            line says that private ones are left out.
            """,
            PINs.unlockNote,
        ],
        run: { invocation throws(Failure) in try dump(invocation) })

    /// One item: its fields for text, or its JSON object; only the form printed is built
    /// (each costs certificate decoding: building both doubled the time per item).
    private struct Entry {
        var fields: [(String, String)] = []
        var json: JSONOutput.Item = [:]

        init(
            _ asJSON: Bool, fields: @autoclosure () -> [(String, String)],
            json: @autoclosure () -> JSONOutput.Item
        ) {
            if asJSON { self.json = json() } else { self.fields = fields() }
        }
    }

    private static func dump(_ invocation: Invocation) throws(Failure) {
        let asJSON = invocation.json
        let keychain = try invocation.openKeychain()
        let unlocked = try unlockIfPossible(keychain, invocation)
        let token = KeyCommands.uriTokenLabel(keychain)
        var entries: [Entry] = []
        var counts: [(Int, String)] = []
        do {
            let certificates = try keychain.certificates()
            counts.append((certificates.count, "certificate"))
            entries += certificates.map { certificate($0, token: token, asJSON) }
            // By class: a query without one reads every object of the token (the certificates
            // too) to find the keys among them.
            let privateKeys = try keychain.keys(matching: KeyQuery(keyClass: .private))
            let publicKeys = try keychain.keys(matching: KeyQuery(keyClass: .public))
            counts.append((privateKeys.count, "private key"))
            counts.append((publicKeys.count, "public key"))
            entries += (privateKeys + publicKeys).map { key($0, token: token, asJSON) }
            if unlocked {
                let secretKeys = try keychain.secretKeys()
                counts.append((secretKeys.count, "secret key"))
                entries += secretKeys.map { secretKey($0, token: token, asJSON) }
                let generic = try keychain.genericPasswords()
                counts.append((generic.count, "generic password"))
                entries += generic.map { genericPassword($0, asJSON) }
                let internet = try keychain.internetPasswords()
                counts.append((internet.count, "internet password"))
                entries += internet.map { internetPassword($0, asJSON) }
            }
        } catch {
            throw Failure(error, doing: "cannot read the keychain")
        }
        if invocation.json {
            try JSONOutput.print(entries.map(\.json), command: "dump-keychain")
            return
        }
        var text =
            "keychain \(Format.quoted(keychain.name)) at \(keychain.path)"
        text += keychain.isReadOnly ? " (read-only)" : ""
        // The certificates always, as before; the other classes when there are some.
        let shown = counts.enumerated().filter { $0.offset == 0 || $0.element.0 > 0 }.map(\.element)
        text += ": " + shown.map { Format.count($0.0, $0.1) }.joined(separator: ", ") + "\n"
        for (index, entry) in entries.enumerated() {
            text += "\nitem \(index + 1):\n" + CertificateCommands.table(entry.fields, indent: "    ")
        }
        if !unlocked {
            text +=
                "\nprivate items (secret keys, passwords, private keys) are not shown: the token has a user PIN "
                + "(give it: --pin-file FILE)\n"
        }
        let publicShown = counts.filter { $0.1 == "certificate" || $0.1 == "public key" }.map(\.0).reduce(
            0, +)
        if let objects = try? TokenCommands.objectCount(
            of: keychain.configuration, readOnly: true),
            objects > publicShown
        {
            text +=
                "\nand \(Format.count(objects - publicShown, "other public object")) "
                + "(data objects; see: p11tool --list-all)\n"
        }
        Console.print(text)
    }

    /// Unlocks a keychain with a user PIN when a PIN is at hand; true when private items
    /// are visible (unlocked, or no user PIN: then there are none to hide).
    private static func unlockIfPossible(_ keychain: Keychain, _ invocation: Invocation) throws(Failure)
        -> Bool
    {
        guard try Authentication.status(of: keychain).hasUserPIN, !keychain.isUnlocked else { return true }
        let given = try PINs.user(token: keychain.name).given(invocation)
        guard given != nil || Console.isTerminal(0) else { return false }
        try Authentication.unlock(keychain, invocation)
        return true
    }

    private static func certificate(_ item: CertificateItem, token: String, _ asJSON: Bool) -> Entry {
        let certificate = item.certificate
        let key = certificate.publicKeyDescription
        return Entry(
            asJSON,
            fields: [("class", "certificate (X.509 v\(certificate.version))")]
                + CertificateCommands.namingFields(of: item) + [
                    ("e-mail", CertificateCommands.emailList(certificate)),
                    ("public key", "\(key.algorithm), \(key.bits) bits"),
                    ("public-key hash", Format.hex(item.publicKeyHash)),
                    ("subject key id", certificate.subjectKeyIdentifier.map { Format.hex($0) } ?? "(none)"),
                    ("authority", certificate.isCertificateAuthority ? "yes (CA)" : "no"),
                    ("self-signed", certificate.isSelfSigned ? "yes" : "no"),
                    ("SHA-1", Format.hex(certificate.sha1Fingerprint)),
                    ("SHA-256", Format.hex(certificate.sha256Fingerprint)),
                    ("unique id", String(decoding: item.persistentReference, as: UTF8.self)),
                ], json: CertificateCommands.jsonItem(item, token: token))
    }

    private static func key(_ item: KeyItem, token: String, _ asJSON: Bool) -> Entry {
        let type = item.keyClass == .private ? "private" : "public"
        let uri = Format.pkcs11URI(token: token, object: item.label, id: item.applicationLabel, type: type)
        return Entry(
            asJSON,
            fields: [
                ("class", "\(type) key"), ("label", item.label),
                ("key", KeyCommands.describe(item.algorithm)),
                ("id", Format.hex(item.applicationLabel)),
                ("access", item.isSensitive ? "sensitive" : "readable"),
                ("extractable", item.isExtractable ? "yes" : "no"), ("uri", uri),
            ],
            json: KeyCommands.jsonItem(item, token: token))
    }

    private static func secretKey(_ item: SecretKeyItem, token: String, _ asJSON: Bool) -> Entry {
        let json = SecretKeyCommands.jsonItem(item, token: token)
        return Entry(
            asJSON,
            fields: [
                ("class", "secret key"), ("label", item.label),
                ("key", "\(item.type), \(item.sizeInBits) bits"),
                ("id", Format.hex(item.applicationLabel)), ("check value", Format.hex(item.checkValue)),
                ("extractable", item.isExtractable ? "yes" : "no"), ("uri", json["uri"] as? String ?? ""),
            ], json: json)
    }

    private static func genericPassword(_ item: GenericPasswordItem, _ asJSON: Bool) -> Entry {
        Entry(
            asJSON,
            fields: [
                ("class", "generic password"), ("label", item.label), ("service", item.service),
                ("account", item.account),
            ],
            json: PasswordCommands.jsonItem(item))
    }

    private static func internetPassword(_ item: InternetPasswordItem, _ asJSON: Bool) -> Entry {
        var fields = [("class", "internet password"), ("label", item.label), ("server", item.server)]
        fields.append(("account", item.account))
        if let value = item.protocol { fields.append(("protocol", value)) }
        if let value = item.port { fields.append(("port", String(value))) }
        if let value = item.path { fields.append(("path", value)) }
        return Entry(
            asJSON, fields: fields,
            json: InternetPasswordCommands.jsonItem(item))
    }
}
