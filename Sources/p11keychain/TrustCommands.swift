import Foundation
import Keychain

/// The trust commands, named and shaped like macOS `security(1)`'s: verify a chain, and set,
/// remove and list the keychain's trust settings (the same settings the PKCS#11 module
/// serves to NSS and p11-kit).
enum TrustCommands {
    static let all = [verifyCertificate, addTrustedCertificate, removeTrustedCertificate, dumpTrustSettings]

    // MARK: verify-cert

    static let verifyCertificate = Command(
        name: "verify-cert",
        synopsis:
            "-c FILE [-c FILE...] [-p POLICY] [-C] [-n HOSTNAME] [-d DATE] [-r ANCHORFILE...] [-N] [-L] [-q]",
        summary: "Verify a certificate chain with the keychain's and the system's anchors",
        options: [
            Option(
                short: "c", value: "FILE",
                help: "certificates to verify, leaf first (PEM or DER; may be repeated)",
                repeatable: true),
            Option(short: "p", value: "POLICY", help: "basic (default), ssl, ssl-client, smime or codeSign"),
            Option(short: "C", help: "the leaf is a client's: with -p ssl, as -p ssl-client"),
            Option(
                short: "n", long: "host", value: "HOSTNAME",
                help: "the DNS name or IP address the leaf must carry (ssl)"),
            Option(
                short: "d", value: "DATE",
                help: "verify at DATE, in UTC: YYYY-MM-DD[-hh:mm:ss] or YYYY-MM-DDThh:mm:ssZ (default: now)"),
            Option(
                short: "r", long: "anchor-file", value: "ANCHORFILE",
                help: "trust only the certificates of ANCHORFILE as anchors (may be repeated)",
                repeatable: true),
            Option(
                short: "N", help: "search no keychain for intermediates: only the -c files build the chain"),
            Option(short: "L", help: "use local certificates only (always so: nothing is fetched)"),
            Option(short: "q", help: "print nothing; the exit status says it"),
        ],
        notes: [
            """
            The first certificate of the first FILE is the leaf; every other one, and
            the keychain's certificates (unless -N), may help build the chain, as security(1)
            searches the keychain for intermediates. The anchors are the keychain's certificates marked trusted
            (add-trusted-cert) for the policy's purpose and the system's CA bundle
            (/etc/ssl/certs/ca-certificates.crt), or, with -k, only those of ANCHORFILE.
            A certificate the keychain distrusts fails every chain it is in. Revocation is
            not checked.
            exit status: 0 trusted; 1 not trusted (each reason is printed), or a bad file;
            2 usage error.
            """
        ],
        run: { invocation throws(Failure) in try verify(invocation) })

    private static func verify(_ invocation: Invocation) throws(Failure) {
        let files = invocation.arguments.values("c")
        guard !files.isEmpty else { throw .usage("give the certificate to verify with -c FILE") }
        var chain: [Certificate] = []
        for file in files { chain += try certificates(in: file) }
        var anchors: [Certificate] = []
        let anchorFiles = invocation.arguments.values("anchor-file")
        for file in anchorFiles { anchors += try certificates(in: file) }
        var policyName = invocation.value("p") ?? "basic"
        if invocation.flag("C") {
            guard policyName == "ssl" || policyName == "ssl-client" else {
                throw .usage("-C (a client's certificate) needs -p ssl")
            }
            policyName = "ssl-client"
        }
        let policy = try policy(policyName, hostName: invocation.value("host"))
        let date = try invocation.value("d").map { (text) throws(Failure) in try parseDate(text) }
        let keychain = try invocation.openKeychain()
        if !invocation.flag("N") { chain += try IssuerSearch.intermediates(for: chain, in: keychain) }
        let result: TrustEvaluation
        do {
            // With -k only the given anchors, as macOS's `-r` does; the keychain's distrust still counts.
            result = try keychain.evaluate(
                chain: chain, policy: policy, at: date, anchors: anchors, anchorsOnly: !anchorFiles.isEmpty)
        } catch {
            throw Failure(error, doing: "cannot verify")
        }
        let quiet = invocation.flag("q")
        if result.isTrusted {
            if !quiet { Console.print("...certificate verification successful.\n") }
            return
        }
        if !quiet {
            var text = ""
            for failure in result.failures {
                let name =
                    result.chain.indices.contains(failure.depth)
                    ? result.chain[failure.depth].subjectSummary : nil
                text += "Cert Verify Result: \(failure.message) (depth \(failure.depth)"
                text += name.map { ", \(Format.quoted($0)))\n" } ?? ")\n"
            }
            Console.print(text)
        }
        let hint = anchorFiles.isEmpty ? lockedKeychainHint(chain: chain, keychain: keychain) : nil
        throw .failed("certificate verification failed" + (hint.map { "; \($0)" } ?? ""))
    }

    /// Why a chain to a root stored in the keychain may fail: on a locked keychain with a user
    /// PIN, the trust stored there counts only once it is unlocked (docs/token.md, "What a
    /// locked process trusts"). Nil unless the keychain is such and holds a root of `chain`.
    private static func lockedKeychainHint(chain: [Certificate], keychain: Keychain) -> String? {
        guard let status = try? Authentication.status(of: keychain), status.hasUserPIN, !keychain.isUnlocked
        else { return nil }
        let holdsRoot = chain.contains { certificate in
            let subject = certificate.isSelfSigned ? certificate.subjectDER : certificate.issuerDER
            let stored = (try? keychain.certificates(matching: CertificateQuery(subject: subject))) ?? []
            return stored.contains { $0.certificate.isSelfSigned }
        }
        guard holdsRoot else { return nil }
        return
            "the keychain \(Format.quoted(keychain.name)) is locked, and the anchors stored in it count only "
            + "once it is unlocked (p11keychain unlock --pin-file FILE)"
    }

    private static func certificates(in file: String) throws(Failure) -> [Certificate] {
        let bytes = try Files.read(file)
        do {
            return try Certificate.certificates(decoding: bytes)
        } catch {
            throw .failed(Format.oneLine("\(file) is not a PEM or DER certificate file (\(error.message))"))
        }
    }

    private static func policy(_ name: String, hostName: String?) throws(Failure) -> TrustPolicy {
        switch name {
        case "basic":
            if hostName != nil { throw .usage("-n HOSTNAME needs -p ssl") }
            return .basic
        case "ssl": return .ssl(server: true, hostName: hostName)
        case "ssl-client": return TrustPolicy(purpose: .clientAuth, hostName: hostName)
        case "smime": return TrustPolicy(purpose: .emailProtection, hostName: hostName)
        case "codeSign": return TrustPolicy(purpose: .codeSigning, hostName: hostName)
        default:
            throw .usage("unknown policy \(Format.quoted(name)) (basic, ssl, ssl-client, smime, codeSign)")
        }
    }

    /// `2026-04-25`, `2026-04-25-15:59:59` (macOS's form) or `2026-04-25T15:59:59Z`, in UTC,
    /// read by Foundation's strict (non-lenient) date parser: 2020-02-30 is refused, not moved.
    static func parseDate(_ text: String) throws(Failure) -> Date {
        for format in dateFormats {
            if let date = format.date(from: text) { return date }
        }
        throw .usage("-d takes YYYY-MM-DD[-hh:mm:ss] in UTC, not \(Format.quoted(text))")
    }

    /// The forms `-d` takes, each read whole in UTC with the Gregorian calendar.
    private static let dateFormats: [DateFormatter] = [
        "yyyy-MM-dd", "yyyy-MM-dd-HH:mm:ss", "yyyy-MM-dd'T'HH:mm:ss'Z'",
    ].map { pattern in
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.calendar = Calendar(identifier: .gregorian)
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.isLenient = false
        formatter.dateFormat = pattern
        return formatter
    }

    // MARK: add-trusted-cert

    private static let trustPolicy = Option(
        short: "p", value: "POLICY", help: "only for POLICY: basic, ssl, smime or codeSign (may be repeated)",
        repeatable: true)

    static let addTrustedCertificate = Command(
        name: "add-trusted-cert", synopsis: "[-r RESULT] [-p POLICY...] FILE",
        summary: "Add a certificate to the keychain and set its trust",
        options: [
            Option(
                short: "r", value: "RESULT", help: "trustRoot (default), trustAsRoot, deny or unspecified"),
            trustPolicy, PINs.pin, PINs.pinFile,
        ],
        operands: Operands(name: "FILE", minimum: 1, maximum: 1),
        notes: [
            """
            trustRoot makes a self-signed certificate an anchor, trustAsRoot one that is not
            self-signed (an intermediate); deny distrusts it, even where it is also an anchor
            (here or in the system's bundle); unspecified removes the setting for the policies.
            Without -p the setting is for every purpose; ssl is server and client authentication.
            The certificate is added if the keychain does not hold it yet; if the trust cannot
            be set (the keychain is locked: trust needs the user PIN when the token has one),
            nothing is added. The setting is seen at once by the PKCS#11 module (CKA_TRUSTED,
            NSS trust objects, p11-kit) and by the Swift API.
            """,
            PINs.unlockNote,
        ],
        run: { invocation throws(Failure) in try addTrusted(invocation) })

    private static func purposes(_ names: [String]) throws(Failure) -> Set<TrustPurpose> {
        guard !names.isEmpty else { return [.any] }
        var result = Set<TrustPurpose>()
        for name in names {
            switch name {
            case "basic": result.insert(.any)
            case "ssl": result.formUnion([.serverAuth, .clientAuth])
            case "smime": result.insert(.emailProtection)
            case "codeSign": result.insert(.codeSigning)
            default: throw .usage("unknown policy \(Format.quoted(name)) (basic, ssl, smime, codeSign)")
            }
        }
        return result
    }

    private static func addTrusted(_ invocation: Invocation) throws(Failure) {
        let result = invocation.value("r") ?? "trustRoot"
        let purposes = try purposes(invocation.arguments.values("p"))
        let file = invocation.operands[0]
        guard let certificate = try certificates(in: file).first else {
            throw .failed("\(file) holds no certificate")
        }
        let disposition: TrustDisposition
        switch result {
        case "trustRoot":
            guard certificate.isSelfSigned else {
                throw .failed("trustRoot is for self-signed certificates; use -r trustAsRoot for this one")
            }
            disposition = .trustedAnchor
        case "trustAsRoot":
            guard !certificate.isSelfSigned else {
                throw .failed("trustAsRoot is for certificates that are not self-signed; use -r trustRoot")
            }
            disposition = .trustedAnchor
        case "deny": disposition = .distrusted
        case "unspecified": disposition = .unspecified
        default:
            throw .usage(
                "unknown result \(Format.quoted(result)) (trustRoot, trustAsRoot, deny, unspecified)")
        }
        let keychain = try invocation.openKeychain(creating: true)
        try unlockIfPINSet(keychain, invocation)
        var added = false
        do {
            if try keychain.firstCertificate(
                matching: CertificateQuery(
                    issuer: certificate.issuerDER, serialNumber: certificate.serialNumber))
                == nil
            {
                try keychain.add(certificate)
                added = true
            }
            try keychain.setTrust(disposition, for: certificate, purposes: purposes)
        } catch {
            if added {
                // Nothing half-done: the certificate was added only to carry this setting.
                _ = try? keychain.deleteCertificates(
                    matching: CertificateQuery(
                        issuer: certificate.issuerDER, serialNumber: certificate.serialNumber))
            }
            throw Failure(
                error, doing: "cannot set the trust of \(file)\(added ? " (nothing was added)" : "")")
        }
        let settings = (try? keychain.trustSettings(for: certificate)) ?? .unspecified
        let name = Format.quoted(certificate.subjectSummary ?? certificate.subjectDescription)
        Console.print(
            "trust settings of \(name): \(settings.isUnspecified ? "none" : settings.description)\n")
    }

    /// Trust is a security decision: a keychain with a user PIN takes trust changes only
    /// unlocked (KeychainCore's rule); one without a PIN takes them from its owner as is.
    static func unlockIfPINSet(_ keychain: Keychain, _ invocation: Invocation) throws(Failure) {
        if try Authentication.status(of: keychain).hasUserPIN {
            try Authentication.unlock(keychain, invocation)
        }
    }

    // MARK: remove-trusted-cert

    static let removeTrustedCertificate = Command(
        name: "remove-trusted-cert", synopsis: "FILE",
        summary: "Remove a certificate's trust settings (the certificate stays)",
        options: [PINs.pin, PINs.pinFile],
        operands: Operands(name: "FILE", minimum: 1, maximum: 1),
        notes: [
            "A certificate without trust settings is a failure (exit status 1), as on macOS.",
            PINs.unlockNote,
        ],
        run: { invocation throws(Failure) in try removeTrusted(invocation) })

    private static func removeTrusted(_ invocation: Invocation) throws(Failure) {
        let file = invocation.operands[0]
        guard let certificate = try certificates(in: file).first else {
            throw .failed("\(file) holds no certificate")
        }
        let keychain = try invocation.openKeychain()
        try unlockIfPINSet(keychain, invocation)
        do throws(KeychainError) {
            guard try !keychain.trustSettings(for: certificate).isUnspecified else {
                throw KeychainError(.itemNotFound, "the certificate has no trust settings")
            }
            try keychain.removeTrustSettings(for: certificate)
        } catch {
            throw Failure(error, doing: "cannot remove the trust settings of \(file)")
        }
        Console.print("removed the trust settings of \(Format.quoted(certificate.subjectSummary ?? file))\n")
    }

    // MARK: dump-trust-settings

    static let dumpTrustSettings = Command(
        name: "dump-trust-settings", synopsis: "[--json]",
        summary: "List the certificates with trust settings, and the settings",
        options: [JSONOutput.option],
        notes: ["No certificate with trust settings is a failure (exit status 1), as on macOS."],
        run: { invocation throws(Failure) in try dump(invocation) })

    private static func dump(_ invocation: Invocation) throws(Failure) {
        let keychain = try invocation.openKeychain()
        let found: [(certificate: Certificate, settings: TrustSettings)]
        do {
            found = try keychain.certificatesWithTrustSettings()
        } catch {
            throw Failure(error, doing: "cannot read the trust settings")
        }
        if invocation.json {
            try JSONOutput.print(
                found.map { entry in
                    let certificate = entry.certificate
                    let settings = TrustPurpose.allCases.compactMap { purpose in
                        entry.settings.dispositions[purpose].map {
                            ["policy": policyName(purpose), "result": resultName($0, certificate)]
                        }
                    }
                    return [
                        "class": "trust-settings",
                        "subject": certificate.subjectSummary ?? certificate.subjectDescription,
                        "sha1": Format.hex(certificate.sha1Fingerprint), "settings": settings,
                    ]
                }, command: "dump-trust-settings")
            return
        }
        guard !found.isEmpty else { throw .failed("No Trust Settings were found.") }
        var text = "Number of trusted certs = \(found.count)\n"
        for (index, entry) in found.enumerated() {
            let certificate = entry.certificate
            text += "Cert \(index): \(certificate.subjectSummary ?? certificate.subjectDescription)\n"
            text += "   SHA-1 hash            : \(Format.hex(certificate.sha1Fingerprint))\n"
            let settings = TrustPurpose.allCases.compactMap { purpose in
                entry.settings.dispositions[purpose].map { (purpose, $0) }
            }
            text += "   Number of trust settings : \(settings.count)\n"
            for (number, (purpose, disposition)) in settings.enumerated() {
                text += "   Trust Setting \(number):\n"
                text += "      Policy                : \(policyName(purpose))\n"
                text += "      Result Type           : \(resultName(disposition, certificate))\n"
            }
        }
        Console.print(text)
    }

    private static func policyName(_ purpose: TrustPurpose) -> String {
        switch purpose {
        case .any: "any"
        case .serverAuth: "SSL server"
        case .clientAuth: "SSL client"
        case .codeSigning: "codeSign"
        case .emailProtection: "SMIME"
        }
    }

    private static func resultName(_ disposition: TrustDisposition, _ certificate: Certificate) -> String {
        switch disposition {
        case .trustedAnchor:
            certificate.isSelfSigned
                ? "kSecTrustSettingsResultTrustRoot" : "kSecTrustSettingsResultTrustAsRoot"
        case .trustedPeer: "trusted peer (NSS)"
        case .distrusted: "kSecTrustSettingsResultDeny"
        case .unspecified: "kSecTrustSettingsResultUnspecified"
        }
    }
}
