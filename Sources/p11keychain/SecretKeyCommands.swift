import Foundation
import Keychain

/// The commands on secret keys (AES, HMAC, generic secrets): `generate-key --type aes:256`
/// and `find-key` come here for them; `wrap-key` and `unwrap-key` back a key up to a file
/// under a wrapping key and store it back. Secret keys are private items, so each unlocks
/// the keychain with the user PIN.
enum SecretKeyCommands {
    static let all = [wrapKey, unwrapKey]

    /// What generate-key's --type names for secret keys, for messages.
    static let typeNames = "aes:128, aes:192, aes:256, hmac-sha1 … hmac-sha512, generic:BYTES"

    // MARK: generate-key --type aes:256 | hmac-sha256 | generic:BYTES

    /// The secret key a generate-key --type value names: `aes[:BITS]` (256 by default),
    /// `hmac-sha256[:BYTES]` (the hash's length by default), `generic:BYTES`; nil for a
    /// value that names no secret key (a key pair's type, or a mistake generate-key reports).
    static func algorithm(named name: String) throws(Failure) -> SecretKeyAlgorithm? {
        let parts = name.lowercased().split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let base = String(parts.first ?? "")
        let size = parts.count > 1 ? String(parts[1]) : nil
        func number(_ allowed: ClosedRange<Int>, _ what: String) throws(Failure) -> Int? {
            guard let size else { return nil }
            guard let value = Int(size), allowed.contains(value) else {
                throw .usage(
                    "--type \(base):\(what) takes \(what) from \(allowed.lowerBound) to \(allowed.upperBound)"
                )
            }
            return value
        }
        if base == "aes" {
            let bits = size.flatMap(Int.init) ?? (size == nil ? 256 : 0)
            guard [128, 192, 256].contains(bits) else {
                throw .usage("--type takes aes:128, aes:192 or aes:256, not \(Format.quoted(name))")
            }
            return .aes(bits: bits)
        }
        if base == "generic" {
            guard let bytes = try number(1...4096, "BYTES") else {
                throw .usage("--type generic:BYTES needs the key's length in bytes, e.g. generic:32")
            }
            return .generic(bits: bytes * 8)
        }
        if base.hasPrefix("hmac") {
            guard
                let digest = digest(named: String(base.dropFirst(4)).replacingOccurrences(of: "-", with: ""))
            else {
                throw .usage("--type takes hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384 or hmac-sha512")
            }
            return .hmac(digest, bits: try number(1...4096, "BYTES").map { $0 * 8 })
        }
        return nil
    }

    /// The secret key type a find-key --type value names (`aes`, `hmac-sha256`, `generic`),
    /// or nil.
    static func type(named name: String) -> SecretKeyType? {
        let lower = name.lowercased()
        if lower == "aes" { return .aes }
        if lower == "generic" { return .generic }
        guard lower.hasPrefix("hmac"),
            let digest = digest(named: String(lower.dropFirst(4)).replacingOccurrences(of: "-", with: ""))
        else { return nil }
        return .hmac(digest)
    }

    private static func digest(named name: String) -> DigestAlgorithm? {
        switch name {
        case "sha1": .sha1
        case "sha224": .sha224
        case "sha256": .sha256
        case "sha384": .sha384
        case "sha512": .sha512
        default: nil
        }
    }

    /// The options of generate-key that only secret keys take.
    static let generationOptions = [
        Option(long: "id", value: "HEX", help: "a secret key's ID (CKA_ID; default: 16 random bytes)"),
        Option(
            long: "extractable",
            help: "let the (private or secret) key leave the token wrapped (see: wrap-key)"),
        Option(
            long: "wrap-key", help: "make an AES key that wraps and unwraps other keys, and does nothing else"
        ),
    ]

    /// generate-key for a secret key.
    static func generate(_ invocation: Invocation, _ algorithm: SecretKeyAlgorithm) throws(Failure) {
        if invocation.value("bits") != nil || invocation.value("curve") != nil {
            throw .usage(
                "--bits and --curve are for key pairs; a secret key's size is in --type (e.g. aes:128)")
        }
        guard let label = invocation.value("l") else { throw .usage("say what to call the key: -l LABEL") }
        let id = try identifier(invocation)
        let wraps = invocation.flag("wrap-key")
        if wraps, algorithm.type != .aes {
            throw .usage("--wrap-key makes an AES key; \(algorithm.type) keys do not wrap")
        }
        let keychain = try invocation.unlockedKeychain()
        let key: SecretKeyItem
        do {
            key = try keychain.generateSecretKey(
                algorithm, label: label, applicationLabel: id, usage: wraps ? [.wrap, .unwrap] : nil,
                extractable: invocation.flag("extractable"))
        } catch {
            throw Failure(error, doing: "cannot generate the key")
        }
        Console.print(
            "generated \(describe(key.algorithm)) secret key \(Format.quoted(label)) "
                + "in token \(Format.quoted(keychain.name))\n" + details(of: key, in: keychain))
        DuplicateKeyLabels.warn(label: label, id: key.applicationLabel, in: keychain, invocation)
    }

    /// The `id:`, `kcv:` and `uri:` lines of a key.
    private static func details(of key: SecretKeyItem, in keychain: Keychain) -> String {
        let tokenLabel = (try? keychain.authenticationStatus.label) ?? nil
        return "id:  \(key.applicationLabel.isEmpty ? "none" : Format.hex(key.applicationLabel))\n"
            + "kcv: \(key.checkValue.isEmpty ? "none" : Format.hex(key.checkValue))\n"
            + "uri: \(Format.pkcs11URI(token: tokenLabel ?? keychain.name, object: key.label, type: "secret-key"))\n"
    }

    /// `--id HEX`, if given.
    private static func identifier(_ invocation: Invocation) throws(Failure) -> [UInt8]? {
        guard let text = invocation.value("id") else { return nil }
        guard let bytes = Format.bytes(fromHex: text) else {
            throw .usage("--id takes hexadecimal digits, not \(Format.quoted(text))")
        }
        return bytes
    }

    /// `AES-256`, `HMAC-SHA256 (256-bit)`, `generic (128-bit)`.
    static func describe(_ algorithm: SecretKeyAlgorithm) -> String {
        algorithm.type == .aes
            ? "AES-\(algorithm.sizeInBits)" : "\(algorithm.type) (\(algorithm.sizeInBits)-bit)"
    }

    // MARK: find-key

    /// find-key's table of secret keys: class, type, size, ID, check value, flags, label.
    static func table(_ keys: [SecretKeyItem]) -> String {
        var rows = [["CLASS", "TYPE", "BITS", "ID", "KCV", "FLAGS", "LABEL"]]
        for key in keys {
            rows.append([
                "secret", "\(key.type)", "\(key.sizeInBits)",
                key.applicationLabel.isEmpty ? "-" : Format.hex(key.applicationLabel),
                key.checkValue.isEmpty ? "-" : Format.hex(key.checkValue), flags(of: key), key.label,
            ])
        }
        return Format.table(rows)
    }

    /// A secret key as a `--json` item (class "secret-key"): `usage` lists what it may do.
    static func jsonItem(_ key: SecretKeyItem, token: String) -> JSONOutput.Item {
        [
            "uri": Format.pkcs11URI(
                token: token, object: key.label, id: key.applicationLabel, type: "secret-key"),
            "class": "secret-key", "key_type": "\(key.type)", "bits": key.sizeInBits,
            "id": Format.hex(key.applicationLabel), "label": key.label,
            "check_value": Format.hex(key.checkValue),
            "usage": usageWords(of: key), "extractable": key.isExtractable, "sensitive": key.isSensitive,
        ]
    }

    /// What a key may do: `encrypt`, `decrypt`…
    private static func usageWords(of key: SecretKeyItem) -> [String] {
        let uses: [(KeyUsage, String)] = [
            (.encrypt, "encrypt"), (.decrypt, "decrypt"), (.sign, "sign"), (.verify, "verify"),
            (.wrap, "wrap"), (.unwrap, "unwrap"), (.derive, "derive"),
        ]
        return uses.filter { key.usage.contains($0.0) }.map(\.1)
    }

    /// What a key may do, and whether it may leave the token: `encrypt,decrypt,extractable`.
    private static func flags(of key: SecretKeyItem) -> String {
        var words = usageWords(of: key)
        if key.isExtractable { words.append("extractable") }
        return words.isEmpty ? "-" : words.joined(separator: ",")
    }

    // MARK: wrap-key

    private static let wrappingKey = Option(
        long: "wrapping-key", value: "LABEL",
        help: "the label of the AES key to wrap under (see: generate-key --wrap-key)")

    static let wrapKey = Command(
        name: "wrap-key",
        synopsis: "(-l LABEL | --id HEX) --wrapping-key LABEL [--mechanism aes-kwp|aes-kw] -o FILE",
        summary: "Write a secret or private key to a file, wrapped under another key of the token",
        options: [
            Option(short: "l", value: "LABEL", help: "the label of the key to wrap"),
            Option(long: "id", value: "HEX", help: "the ID of the key to wrap, as find-key shows it"),
            wrappingKey,
            Option(
                long: "mechanism", value: "MECHANISM",
                help: "aes-kwp (RFC 5649, the default) or aes-kw (RFC 3394)"),
            Option(short: "o", value: "FILE", help: "the file to write (required)"),
        ] + PINs.unlockOptions,
        notes: [
            """
            Backs a key up: the key leaves the token only encrypted under the wrapping key
            (PKCS#11 C_WrapKey), and only if it was made extractable (generate-key
            --extractable); a key that is not fails and nothing is written. The wrapping key
            needs the wrap usage (generate-key --type aes:256 --wrap-key). unwrap-key stores
            the key back, in this token or in another that holds the same wrapping key.
            A secret key is looked for first; when none matches, a private key (generate-key
            --type ec --extractable), whose PKCS#8 is wrapped with aes-kwp, and which
            unwrap-key stores back with its public key.
            """,
            WrappedKeyFile.formatNote,
            PINs.unlockNote,
        ],
        run: { invocation throws(Failure) in try wrap(invocation) })

    private static func wrap(_ invocation: Invocation) throws(Failure) {
        guard invocation.value("l") != nil || invocation.value("id") != nil else {
            throw .usage("say which key to wrap: -l LABEL or --id HEX")
        }
        guard let wrappingLabel = invocation.value(wrappingKey.key) else {
            throw .usage("say which key to wrap it under: --wrapping-key LABEL")
        }
        guard let output = invocation.value("o") else { throw .usage("say where to write it: -o FILE") }
        let mechanism = try wrapMechanism(invocation)
        let query = SecretKeyQuery(label: invocation.value("l"), applicationLabel: try identifier(invocation))
        let keychain = try invocation.unlockedKeychain()
        if let privateKey = try privateKeyToWrap(query, in: keychain) {
            let wrapping = try one(SecretKeyQuery(label: wrappingLabel), in: keychain, what: "wrapping key")
            try wrap(privateKey, with: wrapping, using: mechanism, in: keychain, into: output)
            return
        }
        let key = try one(query, in: keychain, what: "key to wrap")
        let wrapping = try one(SecretKeyQuery(label: wrappingLabel), in: keychain, what: "wrapping key")
        let wrapped: [UInt8]
        do {
            wrapped = try keychain.wrap(key, with: wrapping, using: mechanism)
        } catch {
            var hint = ""
            if !key.isExtractable {
                hint = "; only a key made with generate-key --extractable can be wrapped"
            } else if !wrapping.usage.contains(.wrap) {
                hint = "; a wrapping key is made with: generate-key --type aes:256 --wrap-key"
            }
            throw .failed(
                Format.oneLine(
                    "cannot wrap the key \(Format.quoted(key.label)): \(error.message)\(hint); nothing was written"
                ))
        }
        let file = WrappedKeyFile(
            mechanism: mechanism, contents: .secretKey(key.algorithm), label: key.label,
            id: key.applicationLabel,
            checkValue: key.checkValue, usage: key.usage, isExtractable: key.isExtractable,
            wrappingKeyCheckValue: wrapping.checkValue, wrapped: wrapped)
        try Files.write(Array(file.text.utf8), to: output, mode: 0o600)
        Console.print(
            "wrapped \(describe(key.algorithm)) secret key \(Format.quoted(key.label)) under "
                + "\(Format.quoted(wrapping.label)) (\(WrappedKeyFile.name(of: mechanism))) into \(output)\n"
                + "kcv: \(key.checkValue.isEmpty ? "none" : Format.hex(key.checkValue))\n")
    }

    /// The private key a selection names when no secret key does; nil when a secret key
    /// matches or nothing does (``one(_:in:what:)`` then reports it).
    private static func privateKeyToWrap(_ query: SecretKeyQuery, in keychain: Keychain) throws(Failure)
        -> KeyItem?
    {
        let keys: [KeyItem]
        do {
            guard try keychain.secretKeys(matching: query).isEmpty else { return nil }
            keys = try keychain.keys(
                matching: KeyQuery(
                    keyClass: .private, label: query.label, applicationLabel: query.applicationLabel))
        } catch {
            throw Failure(error, doing: "cannot search the keychain")
        }
        guard keys.count <= 1 else {
            throw .failed(
                "the selection matches \(keys.count) private keys and nothing was wrapped (list them: "
                    + "p11keychain find-key --class private; name one by --id HEX)")
        }
        return keys.first
    }

    /// wrap-key of a private key: its PKCS#8 under AES-KWP (PKCS#11 v3.0 §2.14.4).
    private static func wrap(
        _ key: KeyItem, with wrapping: SecretKeyItem, using mechanism: KeyWrapAlgorithm,
        in keychain: Keychain,
        into output: String
    ) throws(Failure) {
        guard mechanism == .aesKeyWrapPadded else {
            throw .usage("a private key is wrapped with aes-kwp: its PKCS#8 need not be whole 8-byte blocks")
        }
        let wrapped: [UInt8]
        do {
            wrapped = try keychain.wrap(key, with: wrapping, using: mechanism)
        } catch {
            let hint =
                key.isExtractable
                ? "" : "; only a key pair made with generate-key --extractable can be wrapped"
            throw .failed(
                Format.oneLine(
                    "cannot wrap the key \(Format.quoted(key.label)): \(error.message)\(hint); nothing was written"
                ))
        }
        let file = WrappedKeyFile(
            mechanism: mechanism, contents: .privateKey(key.algorithm), label: key.label,
            id: key.applicationLabel,
            checkValue: key.publicKey.publicKeyHash, usage: nil, isExtractable: key.isExtractable,
            wrappingKeyCheckValue: wrapping.checkValue, wrapped: wrapped)
        try Files.write(Array(file.text.utf8), to: output, mode: 0o600)
        Console.print(
            "wrapped \(KeyCommands.describe(key.algorithm)) private key \(Format.quoted(key.label)) under "
                + "\(Format.quoted(wrapping.label)) (\(WrappedKeyFile.name(of: mechanism))) into \(output)\n"
                + "id:  \(Format.hex(key.applicationLabel))\n")
    }

    private static func wrapMechanism(_ invocation: Invocation) throws(Failure) -> KeyWrapAlgorithm {
        let name = invocation.value("mechanism") ?? "aes-kwp"
        guard let mechanism = WrappedKeyFile.mechanism(named: name) else {
            throw .usage("--mechanism takes aes-kwp or aes-kw, not \(Format.quoted(name))")
        }
        return mechanism
    }

    /// The one secret key `query` matches: none, or several, is a failure that says how to look.
    private static func one(_ query: SecretKeyQuery, in keychain: Keychain, what: String) throws(Failure)
        -> SecretKeyItem
    {
        let keys: [SecretKeyItem]
        do {
            keys = try keychain.secretKeys(matching: query)
        } catch {
            throw Failure(error, doing: "cannot search the keychain")
        }
        var terms: [String] = []
        if let label = query.label { terms.append("label \(Format.quoted(label))") }
        if let id = query.applicationLabel { terms.append("id \(Format.hex(id))") }
        let criteria = terms.joined(separator: " and ")
        guard let key = keys.first else {
            // A key pair by that name: say what these commands take (a lookup failure only
            // loses the hint).
            let pairs =
                (try? keychain.keys(
                    matching: KeyQuery(label: query.label, applicationLabel: query.applicationLabel))) ?? []
            let hint =
                pairs.isEmpty || what != "wrapping key"
                ? "" : "; it names a key pair, and a wrapping key is an AES key (generate-key --wrap-key)"
            throw .failed(
                "no secret key matches \(criteria) for the \(what) (list them: p11keychain find-key --class secret)"
                    + hint)
        }
        guard keys.count == 1 else {
            throw .failed(
                "\(criteria) matches \(keys.count) secret keys for the \(what) (list them: p11keychain find-key "
                    + "--class secret; name one by --id HEX)")
        }
        return key
    }

    // MARK: unwrap-key

    static let unwrapKey = Command(
        name: "unwrap-key",
        synopsis: "-i FILE --wrapping-key LABEL [-l LABEL] [--id HEX] [--allow-duplicate]",
        summary: "Store a key back from a file wrap-key wrote",
        options: [
            Option(
                short: "i", value: "FILE", help: "the file wrap-key wrote (required; - for standard input)"),
            wrappingKey,
            Option(
                short: "l", value: "LABEL", help: "the stored key's label (default: the label in the file)"),
            Option(
                long: "id", value: "HEX",
                help: "a secret key's ID (default: the file's; a private key's is its public key's hash)"),
            DuplicateKeyLabels.option,
        ] + PINs.unlockOptions,
        notes: [
            """
            Unwraps the key under the wrapping key (PKCS#11 C_UnwrapKey) and stores it sealed,
            with the type, usage and extractability the file records; it prints the key's check
            value, which equals the one wrap-key printed. A file that does not unwrap under the
            wrapping key (another key, altered bytes) fails and stores nothing.
            """,
            WrappedKeyFile.formatNote,
            PINs.unlockNote,
        ],
        run: { invocation throws(Failure) in try unwrap(invocation) })

    private static func unwrap(_ invocation: Invocation) throws(Failure) {
        guard let input = invocation.value("i") else { throw .usage("say which file to read: -i FILE") }
        guard let wrappingLabel = invocation.value(wrappingKey.key) else {
            throw .usage("say which key it was wrapped under: --wrapping-key LABEL")
        }
        let id = try identifier(invocation)
        let name = input == "-" ? "standard input" : input
        let file = try WrappedKeyFile(parsing: try Files.read(input), name: name)
        let keychain = try invocation.unlockedKeychain()
        let wrapping = try one(SecretKeyQuery(label: wrappingLabel), in: keychain, what: "wrapping key")
        let label = invocation.value("l") ?? file.label
        let algorithm: SecretKeyAlgorithm
        switch file.contents {
        case .secretKey(let secret): algorithm = secret
        case .privateKey(let pair):
            guard id == nil else { throw .usage("--id: a private key's ID is its public key's hash") }
            try unwrap(file, named: name, as: pair, with: wrapping, label: label, in: keychain, invocation)
            return
        }
        let key: SecretKeyItem
        do {
            key = try keychain.unwrapSecretKey(
                file.wrapped, with: wrapping, type: algorithm.type, using: file.mechanism, label: label,
                applicationLabel: id ?? file.id, usage: file.usage, extractable: file.isExtractable)
        } catch {
            throw .failed(
                Format.oneLine(
                    "cannot unwrap \(name) under \(Format.quoted(wrapping.label)): \(error.message)"))
        }
        guard key.sizeInBits == algorithm.sizeInBits,
            file.checkValue.isEmpty || key.checkValue == file.checkValue
        else {
            try? keychain.delete(key)  // the key is not the one the file describes: keep nothing
            throw .failed(
                "\(name) unwrapped to a key that is not the one it describes (its type, size or check value "
                    + "was altered); nothing was stored")
        }
        DuplicateKeyLabels.warn(label: label, id: key.applicationLabel, in: keychain, invocation)
        Console.print(
            "unwrapped \(describe(key.algorithm)) secret key \(Format.quoted(label)) "
                + "into token \(Format.quoted(keychain.name))\n" + details(of: key, in: keychain))
    }

    /// unwrap-key of a private key: stored with its public half, as generate-key stores a
    /// pair (unless that half is still there), after checking it is the key the file names.
    private static func unwrap(
        _ file: WrappedKeyFile, named name: String, as algorithm: KeyAlgorithm, with wrapping: SecretKeyItem,
        label: String, in keychain: Keychain, _ invocation: Invocation
    ) throws(Failure) {
        let key: KeyItem
        do {
            key = try keychain.unwrapPrivateKey(
                file.wrapped, with: wrapping, using: file.mechanism, label: label,
                extractable: file.isExtractable)
        } catch {
            throw .failed(
                Format.oneLine(
                    "cannot unwrap \(name) under \(Format.quoted(wrapping.label)): \(error.message)"))
        }
        guard key.algorithm == algorithm,
            file.checkValue.isEmpty || key.publicKey.publicKeyHash == file.checkValue
        else {
            try? keychain.delete(key)  // the key is not the one the file describes: keep nothing
            throw .failed(
                "\(name) unwrapped to a key that is not the one it describes (its type, size or public-key "
                    + "hash was altered); nothing was stored")
        }
        do {
            let halves = try keychain.keys(
                matching: KeyQuery(keyClass: .public, applicationLabel: key.applicationLabel))
            if !halves.contains(where: { $0.publicKey == key.publicKey }) {
                try keychain.add(key.publicKey, label: label)
            }
        } catch {
            throw Failure(error, doing: "the private key was stored, but not its public key")
        }
        DuplicateKeyLabels.warn(label: label, id: key.applicationLabel, in: keychain, invocation)
        let tokenLabel = (try? keychain.authenticationStatus.label) ?? nil
        Console.print(
            "unwrapped \(KeyCommands.describe(key.algorithm)) private key \(Format.quoted(label)) "
                + "into token \(Format.quoted(keychain.name))\n"
                + "id:  \(Format.hex(key.applicationLabel))\n"
                + "uri: \(Format.pkcs11URI(token: tokenLabel ?? keychain.name, object: label, type: "private"))\n"
        )
    }
}
