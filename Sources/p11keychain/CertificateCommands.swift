import Foundation
import Keychain

/// The commands on certificates, named and shaped like macOS `security(1)`'s.
enum CertificateCommands {
    static let all = [addCertificates, findCertificate, deleteCertificate, export, DumpKeychain.command]

    private static let label = Option(short: "l", value: "LABEL", help: "the item's label, exactly")
    private static let commonName = Option(
        short: "c", value: "NAME", help: "certificates whose common name contains NAME (any case)")
    private static let email = Option(
        short: "e", value: "EMAIL", help: "certificates with this e-mail address")
    private static let hash = Option(
        short: "Z", value: "HASH", help: "the certificate with this SHA-1 (or SHA-256) hash, in hexadecimal")

    // MARK: add-certificates

    static let addCertificates = Command(
        name: "add-certificates", synopsis: "[-l LABEL] FILE...",
        summary: "Add the certificates of PEM or DER files to the keychain",
        options: [
            Option(
                short: "l", value: "LABEL",
                help: "label every certificate LABEL (default: its subject's name)")
        ],
        operands: Operands(name: "FILE", minimum: 1, maximum: .max),
        notes: [
            """
            FILE is a PEM file, which may hold many certificates (a CA bundle, a chain), a DER
            file, which holds one, or - for standard input.
            All of them are added in one transaction: if any file is bad, nothing is added.
            A certificate already in the keychain (same issuer and serial number) is left as it
            is and counted as "already present": adding a bundle again is not an error.
            --store PATH creates the file if it does not exist.
            """
        ],
        run: { invocation throws(Failure) in try add(invocation) })

    private static func add(_ invocation: Invocation) throws(Failure) {
        var certificates: [Certificate] = []
        for file in invocation.operands {
            let bytes = try Files.read(file)
            do {
                certificates += try Certificate.certificates(decoding: bytes)
            } catch {
                let name = file == "-" ? "standard input" : file
                throw .failed(
                    Format.oneLine(
                        "\(name) is not a PEM or DER certificate file (\(error.message)); nothing was added"))
            }
        }
        let keychain = try invocation.openKeychain(creating: true)
        // Which certificates are new: one index lookup each, the work a progress bar can show.
        // The batch add skips what is stored by then, should another process add some meanwhile.
        let progress = ProgressBar(total: certificates.count, title: "checking")
        var fresh: [Certificate] = []
        var seen = Set<[UInt8]>()
        do {
            for (index, certificate) in certificates.enumerated() {
                progress?.update(index + 1)
                guard seen.insert(certificate.issuerDER + certificate.serialNumberDER).inserted else {
                    continue
                }
                let query = CertificateQuery(
                    issuer: certificate.issuerDER, serialNumber: certificate.serialNumber)
                if try keychain.firstCertificate(matching: query) == nil { fresh.append(certificate) }
            }
        } catch {
            progress?.clear()
            throw Failure(error, doing: "cannot search the keychain")
        }
        progress?.status("storing \(Format.count(fresh.count, "certificate"))...")
        var added: [CertificateItem] = []
        let attempts = 5
        for attempt in 1...attempts {
            do {
                added = try keychain.add(contentsOf: fresh, label: invocation.value("l"), duplicates: .skip)
                break
            } catch  where error.code == .duplicateItem && attempt < attempts {
                // Another process stored one of them between the check and the transaction,
                // which then added nothing: check again. Each retry means another importer
                // made progress, so a few suffice.
                continue
            } catch {
                progress?.clear()
                throw Failure(error, doing: "cannot add the certificates (nothing was added)")
            }
        }
        progress?.clear()
        let present = certificates.count - added.count
        Console.print(
            "added \(Format.count(added.count, "certificate")) to \(Format.quoted(keychain.name))"
                + (present > 0 ? "; \(present) already present" : "") + "\n")
    }

    // MARK: find-certificate

    static let findCertificate = Command(
        name: "find-certificate", synopsis: "[-a] [-c NAME] [-l LABEL] [-e EMAIL] [-m] [-Z] [-p]",
        summary: "Show the first certificate that matches, or every one with -a",
        options: [
            Option(short: "a", help: "every match, not only the first"),
            commonName, label, email,
            Option(short: "m", help: "print the e-mail addresses too"),
            Option(short: "Z", help: "print the SHA-1 and SHA-256 hashes"),
            Option(short: "p", help: "print the certificates as PEM instead of a summary"),
            JSONOutput.option,
        ],
        notes: [
            """
            With no criteria, every certificate matches. The summary shows the label, subject,
            issuer, serial number, validity and SHA-1 hash; the SHA-1 hash is what
            delete-certificate -Z and export -Z take. No match is a failure (exit status 1).
            """
        ],
        run: { invocation throws(Failure) in try find(invocation) })

    private static func find(_ invocation: Invocation) throws(Failure) {
        if invocation.json, invocation.flag("p") { throw .usage("--json and -p: give one") }
        let selection = try Selection(invocation, hashOption: nil)
        let keychain = try invocation.openKeychain()
        let items = try selection.items(in: keychain, limit: invocation.flag("a") ? nil : 1)
        if invocation.json {
            let token = KeyCommands.uriTokenLabel(keychain)
            try JSONOutput.print(items.map { jsonItem($0, token: token) }, command: "find-certificate")
            return
        }
        var text = ""
        for (index, item) in items.enumerated() {
            if invocation.flag("p") {
                if invocation.flag("Z") { text += hashLines(item.certificate) }
                if invocation.flag("m") { text += emailLines(item.certificate) }
                text += item.certificate.pemEncoded
            } else {
                if index > 0 { text += "\n" }
                text += summary(of: item, hashes: invocation.flag("Z"), emails: invocation.flag("m"))
            }
        }
        Console.print(text)
    }

    /// `security find-certificate -Z`'s lines.
    private static func hashLines(_ certificate: Certificate) -> String {
        "SHA-256 hash: \(Format.hex(certificate.sha256Fingerprint))\n"
            + "SHA-1 hash: \(Format.hex(certificate.sha1Fingerprint))\n"
    }

    /// A certificate as a `--json` item (class "certificate").
    static func jsonItem(_ item: CertificateItem, token: String) -> JSONOutput.Item {
        let certificate = item.certificate
        let key = certificate.publicKeyDescription
        return [
            "uri": Format.pkcs11URI(token: token, object: item.label, id: item.publicKeyHash, type: "cert"),
            "class": "certificate",
            "label": item.label,
            "subject": certificate.subjectDescription,
            "issuer": certificate.issuerDescription,
            "serial": Format.serial(certificate.serialNumber),
            "not_before": JSONOutput.date(certificate.notValidBefore),
            "not_after": JSONOutput.date(certificate.notValidAfter),
            "emails": certificate.emailAddresses,
            "key_algorithm": key.algorithm,
            "key_bits": key.bits,
            "id": Format.hex(item.publicKeyHash),
            "subject_key_id": JSONOutput.optional(certificate.subjectKeyIdentifier.map { Format.hex($0) }),
            "ca": certificate.isCertificateAuthority,
            "self_signed": certificate.isSelfSigned,
            "sha1": Format.hex(certificate.sha1Fingerprint),
            "sha256": Format.hex(certificate.sha256Fingerprint),
        ]
    }

    /// `security find-certificate -m`'s lines: one per address, none for a certificate without.
    private static func emailLines(_ certificate: Certificate) -> String {
        certificate.emailAddresses.map { "e-mail: \($0)\n" }.joined()
    }

    private static func summary(of item: CertificateItem, hashes: Bool, emails: Bool) -> String {
        let certificate = item.certificate
        var fields = namingFields(of: item) + [("SHA-1", Format.hex(certificate.sha1Fingerprint))]
        if hashes { fields.append(("SHA-256", Format.hex(certificate.sha256Fingerprint))) }
        if emails { fields.append(("e-mail", emailList(certificate))) }
        return table(fields, indent: "")
    }

    /// What names a stored certificate to a person, in every listing: label, subject,
    /// issuer, serial and validity.
    static func namingFields(of item: CertificateItem) -> [(String, String)] {
        let certificate = item.certificate
        return [
            ("label", item.label),
            ("subject", certificate.subjectDescription),
            ("issuer", certificate.issuerDescription),
            ("serial", Format.serial(certificate.serialNumber)),
            ("not before", Format.date(certificate.notValidBefore)),
            ("not after", Format.date(certificate.notValidAfter)),
        ]
    }

    /// A certificate's e-mail addresses, comma-separated, or "(none)".
    static func emailList(_ certificate: Certificate) -> String {
        let addresses = certificate.emailAddresses
        return addresses.isEmpty ? "(none)" : addresses.joined(separator: ", ")
    }

    static func table(_ fields: [(String, String)], indent: String) -> String {
        let width = (fields.map(\.0.count).max() ?? 0) + 2
        // Names are ASCII: padded with String(repeating:), not Foundation's padding(toLength:),
        // which bridges through NSString for each line (7 % of dump-keychain's time).
        return fields.map { name, value in
            indent + name + ":" + String(repeating: " ", count: max(1, width - name.count - 1)) + value + "\n"
        }.joined()
    }

    // MARK: delete-certificate

    static let deleteCertificate = Command(
        name: "delete-certificate", synopsis: "(-c NAME | -l LABEL | -Z HASH) [-a] [-t]",
        summary: "Delete the certificate that matches",
        options: [
            Option(
                short: "c", value: "NAME", help: "the certificate whose common name contains NAME (any case)"),
            label, hash,
            Option(short: "a", help: "delete every match instead of refusing when several match"),
            Option(
                short: "t", help: "remove its trust settings too (they need the user PIN when one is set)"),
            PINs.pin, PINs.pinFile,
        ],
        notes: [
            """
            Exactly one certificate must match: when several do (certificates can share a
            label), nothing is deleted and the command fails; delete by hash instead, or
            give -a to delete them all. No match is a failure (exit status 1).
            """
        ],
        run: { invocation throws(Failure) in try delete(invocation) })

    private static func delete(_ invocation: Invocation) throws(Failure) {
        let selection = try Selection(invocation, hashOption: "Z")
        guard !selection.isEmpty else { throw .usage("say which certificate: -c NAME, -l LABEL or -Z HASH") }
        let keychain = try invocation.openKeychain()
        let everyMatch = invocation.flag("a")
        // Two are enough to know the choice is ambiguous.
        let items = try selection.items(in: keychain, limit: everyMatch ? nil : 2)
        if items.count > 1, !everyMatch {
            throw .failed(
                "\(selection.description) matches several certificates and nothing was deleted (list them: "
                    + "p11keychain find-certificate -a \(selection.arguments); "
                    + "then delete one with -Z SHA1, or all with -a)"
            )
        }
        if invocation.flag("t") {
            try TrustCommands.unlockIfPINSet(keychain, invocation)
        }
        var text = ""
        for item in items {
            do {
                if invocation.flag("t"), try !keychain.trustSettings(for: item.certificate).isUnspecified {
                    try keychain.removeTrustSettings(for: item.certificate)
                }
                try keychain.delete(item)
            } catch  where error.code == .itemNotFound {
                continue  // another process deleted it meanwhile: the goal is reached
            } catch {
                throw Failure(error, doing: "cannot delete \(Format.quoted(item.label))")
            }
            text +=
                "deleted \(Format.quoted(item.label)) "
                + "(SHA-1 \(Format.hex(item.certificate.sha1Fingerprint)))\n"
        }
        Console.print(text)
    }

    // MARK: export

    static let export = Command(
        name: "export", synopsis: "[-t certs] [-f pem|der|pemseq|x509] [-p] [-o FILE] [-l LABEL | -Z HASH]",
        summary: "Write certificates as PEM or DER: all of them, or those that match",
        options: [
            Option(short: "t", value: "TYPE", help: "certs, the only type exported (security(1)'s option)"),
            Option(
                short: "f", value: "FORMAT",
                help: "pem or pemseq (default; any number of certificates), der or x509 (exactly one)"),
            Option(short: "p", help: "PEM armour: with -f x509, one certificate as PEM"),
            Option(short: "o", value: "FILE", help: "write to FILE instead of standard output"),
            label, hash,
        ],
        notes: [
            """
            DER holds one certificate: with -f der, exactly one must match. FILE is replaced
            whole (written to a temporary file, then renamed). An empty selection is a
            failure (exit status 1) and writes nothing.
            """
        ],
        run: { invocation throws(Failure) in try exportCertificates(invocation) })

    private static func exportCertificates(_ invocation: Invocation) throws(Failure) {
        if let type = invocation.value("t"), type != "certs" {
            throw .failed(
                "export -t \(Format.quoted(type)): only certificates are exported (-t certs); keys stay in the "
                    + "token (back one up: p11keychain wrap-key)")
        }
        // x509 is one certificate: DER, or PEM with security(1)'s -p.
        let single: Bool
        let pem: Bool
        switch invocation.value("f") ?? "pem" {
        case "pem", "pemseq": (single, pem) = (false, true)
        case "der": (single, pem) = (true, false)
        case "x509": (single, pem) = (true, invocation.flag("p"))
        case let other:
            throw .usage("-f takes pem or der (or security(1)'s pemseq, x509), not \(Format.quoted(other))")
        }
        let output = invocation.value("o")
        if !pem, output == nil, Console.isTerminal(Console.output) {
            throw .usage("DER is binary: write it with -o FILE or redirect standard output")
        }
        let selection = try Selection(invocation, hashOption: "Z")
        let keychain = try invocation.openKeychain()
        let items = try selection.items(in: keychain, limit: single ? 2 : nil)
        let bytes: [UInt8]
        if single {
            guard items.count == 1, let item = items.first else {
                throw .failed(
                    "\(selection.isEmpty ? "the keychain" : selection.description) has several certificates, "
                        + "and DER holds one (choose one with -l LABEL or -Z HASH, or use -f pem)")
            }
            bytes = pem ? Array(item.certificate.pemEncoded.utf8) : item.certificate.derEncoded
        } else {
            bytes = Array(items.map(\.certificate.pemEncoded).joined().utf8)
        }
        if let output {
            try Files.write(bytes, to: output)
        } else {
            Console.write(bytes, to: Console.output)
        }
    }
}

/// Which certificates a command applies to, from its -l, -c, -e and -Z options.
struct Selection {
    private var query = CertificateQuery()
    private var commonName: String?
    private var terms: [String] = []
    private var spelled: [String] = []

    init(_ invocation: Invocation, hashOption: String?) throws(Failure) {
        if let label = invocation.value("l") {
            query.label = label
            terms.append("label \(Format.quoted(label))")
            spelled.append("-l \(Selection.shellQuoted(label))")
        }
        if let name = invocation.value("c") {
            // The index narrows to subjects containing the text; the common name is checked after.
            query.subjectContains = name
            commonName = name
            terms.append("common name containing \(Format.quoted(name))")
            spelled.append("-c \(Selection.shellQuoted(name))")
        }
        if let email = invocation.value("e") {
            query.emailAddress = email
            terms.append("e-mail \(Format.quoted(email))")
            spelled.append("-e \(Selection.shellQuoted(email))")
        }
        if let text = invocation.value(URIArguments.certificateIDKey), let id = Format.bytes(fromHex: text) {
            query.publicKeyHash = id
            terms.append("id \(text)")
        }
        if let key = hashOption, let text = invocation.value(key) {
            let bytes = Format.bytes(fromHex: text)
            switch bytes?.count {
            case 20: query.sha1Fingerprint = bytes
            case 32: query.sha256Fingerprint = bytes
            default:
                throw .usage(
                    "-\(key) takes a SHA-1 (40 hexadecimal digits) or SHA-256 (64) hash, "
                        + "not \(Format.quoted(text))"
                )
            }
            terms.append("hash \(text)")
        }
    }

    /// True when no criterion was given: every certificate matches.
    var isEmpty: Bool { terms.isEmpty }

    /// The criteria for a message: `label "Web" and e-mail "a@example.org"`.
    var description: String { terms.joined(separator: " and ") }

    /// The criteria as find-certificate options, for a hint.
    var arguments: String { spelled.joined(separator: " ") }

    /// The matching items, in the order they were added; at most `limit` of them.
    ///
    /// - Throws: a failure when nothing matches, saying so and how to look.
    func items(in keychain: Keychain, limit: Int?) throws(Failure) -> [CertificateItem] {
        var query = self.query
        if let limit, commonName == nil { query.limit = .maximum(limit) }
        var items: [CertificateItem]
        do {
            items = try keychain.certificates(matching: query)
        } catch {
            throw Failure(error, doing: "cannot search the keychain")
        }
        if let commonName {
            items = items.filter { item in
                item.certificate.commonNames.contains {
                    $0.range(of: commonName, options: .caseInsensitive) != nil
                }
            }
        }
        if let limit { items = Array(items.prefix(limit)) }
        guard items.isEmpty else { return items }
        if isEmpty {
            throw .failed(
                "the keychain \(Format.quoted(keychain.name)) has no certificates "
                    + "(add some: p11keychain add-certificates FILE)"
            )
        }
        throw .failed("no certificate matches \(description) (try: p11keychain find-certificate -a)")
    }

    /// Text a shell reads back as `text`.
    static func shellQuoted(_ text: String) -> String {
        let plain = text.allSatisfy { $0.isLetter || $0.isNumber || "-_.@:/+=,".contains($0) }
        if plain, !text.isEmpty { return text }
        return "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
