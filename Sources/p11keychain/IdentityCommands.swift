import Foundation
import Keychain

/// Identities (a certificate and the private key with the same ID): importing them from
/// PKCS#12 files and listing them, as macOS `security import` and `find-identity` do.
enum IdentityCommands {
    static let all = [importPKCS12, findIdentity]

    static let passphraseEnvironment = "P11KEYCHAIN_P12_PASSPHRASE"

    private static let passphrase = Option(
        long: "passphrase", value: "PASSPHRASE",
        help: "the file's passphrase (other users may see it in ps: prefer a file or the prompt)")
    private static let passphraseFile = Option(
        long: "passphrase-file", value: "FILE",
        help: "read the passphrase from the first line of FILE (- for standard input)")

    // MARK: import

    static let importPKCS12 = Command(
        name: "import",
        synopsis: "[-P | --passphrase PASSPHRASE | --passphrase-file FILE] [-l LABEL] FILE.p12",
        summary: "Import a PKCS#12 file: its private key, certificate and chain",
        options: [
            passphrase, passphraseFile,
            Option(
                short: "P",
                help: "ask for the passphrase on the terminal, ignoring $P11KEYCHAIN_P12_PASSPHRASE"),
            Option(
                short: "l", value: "LABEL",
                help:
                    "the key's and certificate's label (default: the file's friendly name, else the subject)"),
            DuplicateKeyLabels.option,
        ] + PINs.unlockOptions,
        operands: Operands(name: "FILE", minimum: 1, maximum: 1),
        notes: [
            """
            FILE is a PKCS#12 file (.p12, .pfx) in DER, e.g. from openssl pkcs12 -export, with
            the encodings OpenSSL writes today and the legacy ones (3DES, RC2) older tools
            write; - reads standard input. The passphrase comes from --passphrase, else
            --passphrase-file, else $P11KEYCHAIN_P12_PASSPHRASE, else it is asked on the
            terminal without echo. A wrong passphrase fails and imports nothing.
            """,
            """
            The private key is stored sensitive and not extractable, and pairs with its
            certificate as an identity (see: find-identity). The chain's certificates are added
            too. What is already stored (the same key, a certificate with the same issuer and
            serial number) is kept as it is, so importing a file twice changes nothing. A file
            with a key needs the keychain unlocked: the user PIN is asked for as by every
            command (--pin, --pin-file, $P11KEYCHAIN_PIN, the terminal).
            """,
        ],
        run: { invocation throws(Failure) in try importFile(invocation) })

    private static func importFile(_ invocation: Invocation) throws(Failure) {
        guard let file = invocation.operands.first else { throw .usage("missing FILE") }
        let name = file == "-" ? "standard input" : file
        let bytes = try Files.read(file)
        // security(1)'s -P: the passphrase is asked on the terminal, not taken from elsewhere.
        let prompted = invocation.flag("P")
        if prompted,
            let given = [passphrase, passphraseFile].first(where: { invocation.value($0.key) != nil })
        {
            throw .usage("-P asks for the passphrase and \(given.name) gives it; give one")
        }
        let secret = Secret(
            name: "passphrase", option: passphrase, fileOption: passphraseFile,
            environmentVariable: prompted ? nil : passphraseEnvironment, prompt: "Passphrase for \(name): ")
        let password = try secret.required(invocation)
        let bundle: PKCS12Bundle
        do {
            bundle = try PKCS12Bundle(derEncoded: bytes, password: password)
        } catch {
            switch error.code {
            case .authFailed:
                throw .failed("wrong passphrase for \(name); nothing was imported")
            default:
                throw .failed(
                    Format.oneLine(
                        "\(name) is not a PKCS#12 file this keychain reads (\(error.message)); "
                            + "nothing was imported"))
            }
        }
        let keychain =
            bundle.privateKey == nil
            ? try invocation.openKeychain(creating: true) : try invocation.unlockedKeychain(creating: true)
        let identities: [IdentityItem]
        do {
            identities = try keychain.add(bundle, label: invocation.value("l"))
        } catch {
            throw Failure(error, doing: "cannot import \(name) (nothing was imported)")
        }
        if let key = identities.first?.privateKey {
            DuplicateKeyLabels.warn(label: key.label, id: key.applicationLabel, in: keychain, invocation)
        }
        var parts: [String] = []
        if let identity = identities.first {
            parts.append(
                "identity \(Format.quoted(identity.certificate.label)) "
                    + "(\(KeyCommands.describe(identity.privateKey.algorithm)) key, "
                    + "SHA-1 \(Format.hex(identity.certificate.certificate.sha1Fingerprint)))")
        } else if let key = bundle.privateKey {
            parts.append(
                "a \(KeyCommands.describe(key.algorithm)) private key (id \(Format.hex(key.publicKey.publicKeyHash)))"
            )
            if bundle.certificate != nil { parts.append("1 certificate") }
        } else if bundle.certificate != nil {
            parts.append("1 certificate")
        }
        if !bundle.chain.isEmpty { parts.append(Format.count(bundle.chain.count, "chain certificate")) }
        Console.print(
            "imported \(parts.isEmpty ? "nothing (the file is empty)" : parts.joined(separator: " and ")) "
                + "from \(name) into \(Format.quoted(keychain.name))\n")
    }

    // MARK: find-identity

    static let findIdentity = Command(
        name: "find-identity", synopsis: "[-v] [-l LABEL]",
        summary: "List the identities: certificates with their private key",
        options: [
            Option(short: "v", help: "only valid identities: certificates valid today"),
            Option(short: "l", value: "LABEL", help: "identities whose certificate has this label"),
            JSONOutput.option,
        ] + PINs.unlockOptions,
        notes: [
            """
            As macOS security find-identity lists them: the certificate's SHA-1 hash, its label
            and subject; then how many were found. An identity is a certificate and a private key
            with the same ID, however they were stored (import, generate-key and then
            add-certificates, PKCS#11 applications). Finding none is not a failure: the count is
            0. Private keys need the keychain unlocked; a token without a user PIN has none.
            """,
            PINs.unlockNote,
        ],
        run: { invocation throws(Failure) in try find(invocation) })

    private static func find(_ invocation: Invocation) throws(Failure) {
        let validOnly = invocation.flag("v")
        let keychain = try invocation.keychainUnlockedIfPINSet()
        var query = CertificateQuery()
        query.label = invocation.value("l")
        let now = Date()
        if validOnly { query.validOn = now }
        let identities: [IdentityItem]
        do {
            identities = try keychain.identities(matching: query)
        } catch {
            throw Failure(error, doing: "cannot search the keychain")
        }
        if invocation.json {
            try JSONOutput.print(
                identities.map { identity in
                    let certificate = identity.certificate.certificate
                    let validity =
                        certificate.notValidAfter < now
                        ? "expired" : certificate.notValidBefore > now ? "not yet valid" : "valid"
                    return [
                        "class": "identity", "label": identity.certificate.label,
                        "subject": certificate.subjectDescription,
                        "sha1": Format.hex(certificate.sha1Fingerprint),
                        "id": Format.hex(identity.privateKey.applicationLabel),
                        "key_type": KeyCommands.describe(identity.privateKey.algorithm), "validity": validity,
                    ]
                }, command: "find-identity")
            return
        }
        var text = ""
        for (index, identity) in identities.enumerated() {
            let certificate = identity.certificate.certificate
            var line =
                "  \(index + 1)) \(Format.hex(certificate.sha1Fingerprint)) "
                + "\(Format.quoted(identity.certificate.label)) (\(certificate.subjectDescription))"
            if certificate.notValidAfter < now {
                line += " (expired)"
            } else if certificate.notValidBefore > now {
                line += " (not yet valid)"
            }
            text += line + "\n"
        }
        let noun = validOnly ? "valid identit" : "identit"
        text += "     \(identities.count) \(noun)\(identities.count == 1 ? "y" : "ies") found\n"
        Console.print(text)
    }
}
