import Foundation
import Keychain

/// The commands on keys: generate, find, delete, for key pairs and (through
/// `SecretKeyCommands`) secret keys. Private and secret keys are private items, so each
/// unlocks the keychain with the user PIN.
enum KeyCommands {
    static let all = [generateKey, findKey, deleteKey]

    private static let label = Option(short: "l", value: "LABEL", help: "the key's label, exactly")
    private static let id = Option(
        long: "id", value: "HEX", help: "the key with this ID (CKA_ID) in hexadecimal, as find-key shows it")
    private static let type = Option(
        long: "type", value: "TYPE",
        help: "rsa, ec or ed25519 (key pairs); aes, hmac-sha256…, generic (secret keys)")
    private static let keyClass = Option(
        long: "class", value: "CLASS", help: "secret, private or public keys only")

    // MARK: generate-key

    static let generateKey = Command(
        name: "generate-key",
        synopsis: "--type rsa|ec|ed25519 [--bits 2048|3072|4096] [--curve p256|p384|p521] -l LABEL\n"
            + "       p11keychain generate-key --type aes:128|aes:192|aes:256|hmac-sha1|hmac-sha224|hmac-sha256|"
            + "hmac-sha384|hmac-sha512|generic:BYTES -l LABEL [--id HEX] [--extractable] [--wrap-key]",
        summary: "Generate a key pair or a secret key in the token; print its ID and PKCS#11 URI",
        options: [
            Option(
                long: "type", value: "TYPE",
                help:
                    "rsa, ec or ed25519 (a key pair); aes:BITS, hmac-sha256[:BYTES], generic:BYTES (a secret key)"
            ),
            Option(long: "bits", value: "BITS", help: "an RSA key's size: 2048 (default), 3072 or 4096"),
            Option(long: "curve", value: "CURVE", help: "an EC key's curve: p256 (default), p384 or p521"),
            Option(short: "l", value: "LABEL", help: "the key's label, of both halves of a pair (required)"),
        ] + SecretKeyCommands.generationOptions + [DuplicateKeyLabels.option] + PINs.unlockOptions,
        notes: [
            """
            The private key never leaves the token: it is marked sensitive and not extractable,
            and used through the PKCS#11 module by the URI printed, e.g.
            openssl req -new -x509 -engine pkcs11 -keyform engine -key 'pkcs11:...;type=private'.
            Its ID is the SHA-1 of the public key: a certificate issued for the key, once added,
            pairs with it as an identity (see: find-identity).
            """,
            """
            A secret key (AES of 128, 192 or 256 bits; an HMAC key, as long as its hash's output
            unless :BYTES says otherwise; a generic secret of BYTES bytes) is sealed in the
            token and never readable; the command prints its ID (16 random bytes unless --id
            gives one), its check value (kcv: three bytes that tell keys apart, PKCS#11
            CKA_CHECK_VALUE) and its URI. By default it encrypts, decrypts, signs and verifies
            (MACs) and never leaves the token; --extractable lets wrap-key back it up, and
            --wrap-key makes an AES key that only wraps and unwraps other keys.
            """,
            PINs.unlockNote,
        ],
        run: { invocation throws(Failure) in try generate(invocation) })

    private static func generate(_ invocation: Invocation) throws(Failure) {
        if let name = invocation.value("type"), let secret = try SecretKeyCommands.algorithm(named: name) {
            try SecretKeyCommands.generate(invocation, secret)
            return
        }
        let algorithm = try requestedAlgorithm(invocation)
        if invocation.flag("id") || invocation.flag("wrap-key") {
            throw .usage("--id and --wrap-key are for secret keys (e.g. --type aes:256)")
        }
        guard let label = invocation.value("l") else { throw .usage("say what to call the key: -l LABEL") }
        let keychain = try invocation.unlockedKeychain()
        let pair: KeyPair
        do {
            // --extractable: the private key may leave wrapped (wrap-key), and stays sensitive.
            pair =
                invocation.flag("extractable")
                ? try keychain.generateKeyPair(
                    algorithm,
                    privateKey: NewKeyAttributes(label: label, isSensitive: true, isExtractable: true),
                    publicKey: NewKeyAttributes(label: label))
                : try keychain.generateKeyPair(algorithm, label: label)
        } catch {
            throw Failure(error, doing: "cannot generate the key")
        }
        let tokenLabel = (try? keychain.authenticationStatus.label) ?? nil
        let id = Format.hex(pair.privateKey.applicationLabel)
        Console.print(
            "generated \(describe(pair.privateKey.algorithm)) key pair \(Format.quoted(label)) "
                + "in token \(Format.quoted(keychain.name))\n"
                + "id:  \(id)\n"
                + "uri: \(Format.pkcs11URI(token: tokenLabel ?? keychain.name, object: label, type: "private"))\n"
        )
        DuplicateKeyLabels.warn(label: label, id: pair.privateKey.applicationLabel, in: keychain, invocation)
        if pair.privateKey.algorithm.type == .ed25519 { Console.printError(ed25519Note) }
    }

    /// Debian 12's libp11 (0.4.12, OpenSSL's `pkcs11` engine) cannot enumerate a token that
    /// holds an EdDSA key: every key of the token fails through the engine, not only this one.
    static let ed25519Note =
        "note: Debian 12's OpenSSL pkcs11 engine (libp11 0.4.12) fails every key of a token that holds an "
        + "Ed25519 key; use the key through GnuTLS, p11-kit or pkcs11-tool, or keep Ed25519 keys in a token "
        + "of their own (--token NAME) apart from keys the engine uses"

    /// The algorithm --type, --bits and --curve ask for.
    private static func requestedAlgorithm(_ invocation: Invocation) throws(Failure) -> KeyAlgorithm {
        guard let typeName = invocation.value("type") else {
            throw .usage(
                "say which kind of key: --type rsa, ec or ed25519 (a key pair), or \(SecretKeyCommands.typeNames)"
            )
        }
        let type = try keyType(typeName)
        let bits = invocation.value("bits")
        let curve = invocation.value("curve")
        if type != .rsa, bits != nil {
            throw .usage(
                "--bits is the size of an RSA key; \(type) keys take \(type == .ed25519 ? "none" : "--curve")"
            )
        }
        if type != .ellipticCurve, curve != nil { throw .usage("--curve is for EC keys, not \(type) keys") }
        switch type {
        case .rsa:
            guard let size = Int(bits ?? "2048"), [2048, 3072, 4096].contains(size) else {
                throw .usage("--bits takes 2048, 3072 or 4096, not \(Format.quoted(bits ?? ""))")
            }
            return .rsa(bits: size)
        case .ellipticCurve:
            let name = (curve ?? "p256").lowercased().replacingOccurrences(of: "-", with: "")
            switch name {
            case "p256", "secp256r1", "prime256v1": return .p256
            case "p384", "secp384r1": return .p384
            case "p521", "secp521r1": return .p521
            default: throw .usage("--curve takes p256, p384 or p521, not \(Format.quoted(curve ?? ""))")
            }
        case .ed25519:
            return .ed25519
        }
    }

    /// The key type a --type value names.
    static func keyType(_ name: String) throws(Failure) -> KeyType {
        switch name.lowercased() {
        case "rsa": return .rsa
        case "ec", "ecdsa": return .ellipticCurve
        case "ed25519", "eddsa": return .ed25519
        default:
            throw .usage(
                "--type takes rsa, ec or ed25519, or for a secret key \(SecretKeyCommands.typeNames), "
                    + "not \(Format.quoted(name))")
        }
    }

    /// `RSA-2048`, `EC P-256`, `Ed25519`.
    static func describe(_ algorithm: KeyAlgorithm) -> String {
        switch algorithm.type {
        case .rsa: "RSA-\(algorithm.sizeInBits)"
        case .ellipticCurve: "EC P-\(algorithm.sizeInBits)"
        case .ed25519: "Ed25519"
        }
    }

    /// `RSA-2048`, `EC-P256`, `Ed25519`: a table cell without blanks.
    private static func column(_ algorithm: KeyAlgorithm) -> String {
        algorithm.type == .ellipticCurve ? "EC-P\(algorithm.sizeInBits)" : describe(algorithm)
    }

    /// A private or public key as a `--json` item (class "private-key" or "public-key").
    static func jsonItem(_ key: KeyItem, token: String) -> JSONOutput.Item {
        let type = key.keyClass == .private ? "private" : "public"
        return [
            "class": "\(type)-key", "key_type": describe(key.algorithm), "bits": key.algorithm.sizeInBits,
            "id": Format.hex(key.applicationLabel), "label": key.label, "extractable": key.isExtractable,
            "sensitive": key.isSensitive,
            "uri": Format.pkcs11URI(token: token, object: key.label, id: key.applicationLabel, type: type),
        ]
    }

    /// The token as URIs name it: its label (what C_GetTokenInfo shows), else its name.
    static func uriTokenLabel(_ keychain: Keychain) -> String {
        ((try? keychain.authenticationStatus.label) ?? nil) ?? keychain.name
    }

    // MARK: find-key

    static let findKey = Command(
        name: "find-key",
        synopsis:
            "[-l LABEL] [--id HEX] [--type rsa|ec|ed25519|aes|hmac-sha256|generic] [--class secret|private|public]",
        summary: "List the keys that match: class, type, ID and label",
        options: [label, id, type, keyClass, JSONOutput.option] + PINs.unlockOptions,
        notes: [
            """
            With no criteria, every key matches: those made by generate-key or import, and those
            PKCS#11 applications stored (pkcs11-tool --keypairgen, p11tool). The ID is what
            delete-key --id and pkcs11-tool --id take. Private keys are listed once the
            keychain is unlocked: when the token has a user PIN, the command asks for it. No
            match is a failure (exit status 1).
            """,
            """
            Secret keys (generate-key --type aes:256, pkcs11-tool --keygen) are listed in a
            second table, with their size in bits, check value (KCV) and flags: what they may
            do, and "extractable" when wrap-key may back them up.
            """,
            PINs.unlockNote,
        ],
        run: { invocation throws(Failure) in try find(invocation) })

    private static func find(_ invocation: Invocation) throws(Failure) {
        let selection = try KeySelection(invocation)
        let keychain = try invocation.keychainUnlockedIfPINSet()
        let (keys, secretKeys) = try selection.matches(in: keychain)
        if invocation.json {
            let token = uriTokenLabel(keychain)
            let pairs = keys.map { jsonItem($0, token: token) }
            try JSONOutput.print(
                pairs + secretKeys.map { SecretKeyCommands.jsonItem($0, token: token) }, command: "find-key")
            return
        }
        var tables: [String] = []
        if !keys.isEmpty {
            var rows = [["CLASS", "TYPE", "ID", "LABEL"]]
            for key in keys {
                rows.append([
                    key.keyClass == .private ? "private" : "public", column(key.algorithm),
                    key.applicationLabel.isEmpty ? "-" : Format.hex(key.applicationLabel), key.label,
                ])
            }
            tables.append(Format.table(rows))
        }
        if !secretKeys.isEmpty { tables.append(SecretKeyCommands.table(secretKeys)) }
        Console.print(tables.joined(separator: "\n"))
    }

    // MARK: delete-key

    static let deleteKey = Command(
        name: "delete-key", synopsis: "(-l LABEL | --id HEX) [-a]",
        summary: "Delete the key pair (its private and public key) or the secret key that matches",
        options: [
            label, id,
            Option(short: "a", help: "delete every matching key instead of refusing when several match"),
        ] + PINs.unlockOptions,
        notes: [
            """
            Exactly one key must match: a secret key, or a key pair, whose private and public
            halves are deleted (they share the ID). When several keys match (labels need not be unique), nothing is deleted and
            the command fails; delete by --id instead, or give -a to delete them all.
            Certificates issued for the key are kept (see: delete-certificate). No match is a
            failure (exit status 1).
            """,
            PINs.unlockNote,
        ],
        run: { invocation throws(Failure) in try delete(invocation) })

    private static func delete(_ invocation: Invocation) throws(Failure) {
        let selection = try KeySelection(invocation)
        guard !selection.isEmpty else { throw .usage("say which key: -l LABEL or --id HEX") }
        let keychain = try invocation.keychainUnlockedIfPINSet()
        let (matches, secretKeys) = try selection.matches(in: keychain)
        // One key is one public key: its two halves, whatever their labels.
        var pairs: [[KeyItem]] = []
        for key in matches {
            if let index = pairs.firstIndex(where: { $0[0].publicKey == key.publicKey }) {
                pairs[index].append(key)
            } else {
                pairs.append([key])
            }
        }
        if pairs.count + secretKeys.count > 1, !invocation.flag("a") {
            throw .failed(
                "\(selection.description) matches \(pairs.count + secretKeys.count) keys and nothing was deleted "
                    + "(list them: "
                    + "p11keychain find-key \(selection.arguments); then delete one with --id HEX, or all with -a)"
            )
        }
        var text = ""
        for pair in pairs {
            let first = pair[0]
            // The other half of the pair, should the selection have matched one half only.
            var halves = pair
            if !first.applicationLabel.isEmpty {
                let sameID =
                    (try? keychain.keys(matching: KeyQuery(applicationLabel: first.applicationLabel))) ?? []
                for key in sameID where key.publicKey == first.publicKey && !halves.contains(key) {
                    halves.append(key)
                }
            }
            var deleted: [String] = []
            for key in halves {
                guard try deleteKey(key.label, { () throws(KeychainError) in try keychain.delete(key) })
                else {
                    continue
                }
                deleted.append(key.keyClass == .private ? "private" : "public")
            }
            text +=
                "deleted \(describe(first.algorithm)) key \(Format.quoted(first.label)) "
                + "(id \(first.applicationLabel.isEmpty ? "none" : Format.hex(first.applicationLabel)); "
                + "\(Set(deleted).sorted().joined(separator: " and ")) key)\n"
        }
        for key in secretKeys {
            guard try deleteKey(key.label, { () throws(KeychainError) in try keychain.delete(key) }) else {
                continue
            }
            text +=
                "deleted \(SecretKeyCommands.describe(key.algorithm)) secret key \(Format.quoted(key.label)) "
                + "(id \(key.applicationLabel.isEmpty ? "none" : Format.hex(key.applicationLabel)))\n"
        }
        Console.print(text)
    }

    /// Deletes one key; false when another process deleted it meanwhile (the goal is reached).
    private static func deleteKey(_ label: String, _ delete: () throws(KeychainError) -> Void) throws(Failure)
        -> Bool
    {
        do {
            try delete()
            return true
        } catch  where error.code == .itemNotFound {
            return false
        } catch {
            throw Failure(error, doing: "cannot delete the key \(Format.quoted(label))")
        }
    }
}

/// Which keys a command applies to, from its -l, --id and --type options.
struct KeySelection {
    private var query = KeyQuery()
    private var secretQuery = SecretKeyQuery()
    /// Whether key pairs and secret keys can match (--type and --class may rule either out).
    private var includesPairs = true
    private var includesSecretKeys = true
    private var terms: [String] = []
    private var spelled: [String] = []

    init(_ invocation: Invocation) throws(Failure) {
        if let label = invocation.value("l") {
            query.label = label
            secretQuery.label = label
            terms.append("label \(Format.quoted(label))")
            spelled.append("-l \(Selection.shellQuoted(label))")
        }
        if let text = invocation.value("id") {
            guard let bytes = Format.bytes(fromHex: text) else {
                throw .usage("--id takes hexadecimal digits, not \(Format.quoted(text))")
            }
            query.applicationLabel = bytes
            secretQuery.applicationLabel = bytes
            terms.append("id \(Format.hex(bytes))")
            spelled.append("--id \(Format.hex(bytes))")
        }
        if let name = invocation.value("type") {
            if let type = SecretKeyCommands.type(named: name) {
                secretQuery.type = type
                includesPairs = false
                terms.append("type \(type)")
            } else {
                let type = try KeyCommands.keyType(name)
                query.type = type
                includesSecretKeys = false
                terms.append("type \(type)")
            }
            spelled.append("--type \(name.lowercased())")
        }
        if let name = invocation.value("class") {
            switch name.lowercased() {
            case "secret": includesPairs = false
            case "private": query.keyClass = .private
            case "public": query.keyClass = .public
            default: throw .usage("--class takes secret, private or public, not \(Format.quoted(name))")
            }
            if query.keyClass != nil { includesSecretKeys = false }
            terms.append("class \(name.lowercased())")
            spelled.append("--class \(name.lowercased())")
        }
        if !includesPairs, !includesSecretKeys {
            throw .usage(
                "--type \(invocation.value("type") ?? "") and --class \(name(invocation)) exclude each other")
        }
    }

    private func name(_ invocation: Invocation) -> String { invocation.value("class") ?? "" }

    /// True when no criterion was given: every key matches.
    var isEmpty: Bool { terms.isEmpty }

    /// The criteria for a message: `label "Web" and type EC`.
    var description: String { terms.joined(separator: " and ") }

    /// The criteria as find-key options, for a hint.
    var arguments: String { spelled.joined(separator: " ") }

    /// The matching key pair halves, private ones first, and secret keys, each in the order
    /// they were added.
    ///
    /// - Throws: a failure when nothing matches, saying so and how to look.
    func matches(in keychain: Keychain) throws(Failure) -> (keys: [KeyItem], secretKeys: [SecretKeyItem]) {
        let keys: [KeyItem]
        let secretKeys: [SecretKeyItem]
        do {
            keys = includesPairs ? try keychain.keys(matching: query) : []
            secretKeys = includesSecretKeys ? try keychain.secretKeys(matching: secretQuery) : []
        } catch {
            throw Failure(error, doing: "cannot search the keychain")
        }
        guard keys.isEmpty, secretKeys.isEmpty else {
            return (
                keys.filter { $0.keyClass == .private } + keys.filter { $0.keyClass == .public }, secretKeys
            )
        }
        if isEmpty {
            throw .failed(
                "token \(Format.quoted(keychain.name)) has no keys "
                    + "(make one: p11keychain generate-key --type ec -l LABEL)")
        }
        throw .failed("no key matches \(description) (list them: p11keychain find-key)")
    }
}

extension Format {
    /// Rows as columns padded to their widest cell, the last one unpadded (it may hold blanks).
    static func table(_ rows: [[String]]) -> String {
        guard let columns = rows.first?.count, columns > 0 else { return "" }
        let widths = (0..<columns - 1).map { column in (rows.map { $0[column].count }.max() ?? 0) + 2 }
        return rows.map { row in
            (0..<columns - 1).map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined() + row[columns - 1] + "\n"
        }.joined()
    }

    /// A PKCS#11 URI (RFC 7512) naming an object of a token by their labels, formatted by
    /// libp11-kit (PKCS11URI). The token label is cut to the 32 bytes CK_TOKEN_INFO holds, at
    /// a character boundary, as the module shows it.
    static func pkcs11URI(token: String, object: String, id: [UInt8]? = nil, type: String) -> String {
        var tokenBytes = Array(token.utf8)
        if tokenBytes.count > 32 {
            var end = 32
            while end > 0, tokenBytes[end] & 0xC0 == 0x80 { end -= 1 }
            tokenBytes = Array(tokenBytes[..<end])
        }
        let uri = PKCS11URI(
            token: String(decoding: tokenBytes, as: UTF8.self), object: object, id: id, type: type)
        return uri.formatted ?? "pkcs11:"
    }
}
