import Foundation
import Keychain

/// The file wrap-key writes and unwrap-key reads: a PEM-like text block (RFC 7468's
/// encapsulation, with RFC 1421-style headers) that records, beside the wrapped bytes, what
/// the bytes do not say: the key's type, size, label, ID, check value and usage, and which
/// wrapping key and mechanism were used. A private key (its PKCS#8, wrapped with AES-KWP)
/// has `Key-Class: private`, a `Key-Type` of rsa, ec or ed25519, and instead of a check
/// value the `Public-Key-Hash` (SHA-1 of the public key, its default ID).
///
///     -----BEGIN P11KEYCHAIN WRAPPED KEY-----
///     Mechanism: AES-KWP
///     Key-Type: aes
///     Key-Bits: 256
///     Label: database%20key
///     ID: 2F1C…
///     Check-Value: 8A3D1E
///     Usage: encrypt,decrypt
///     Extractable: yes
///     Wrapping-Key-Check-Value: 51A9C2
///
///     <base64 of the wrapped bytes, 64 characters a line>
///     -----END P11KEYCHAIN WRAPPED KEY-----
///
/// Only the key bytes are protected (the key wrap's integrity check); the headers are not,
/// so unwrap-key checks that the unwrapped key has the size and check value they give.
struct WrappedKeyFile {
    /// What kind of key the file holds.
    enum Contents: Equatable {
        case secretKey(SecretKeyAlgorithm)
        case privateKey(KeyAlgorithm)
    }

    var mechanism: KeyWrapAlgorithm
    var contents: Contents
    var label: String
    /// The key's ID; empty when it had none.
    var id: [UInt8]
    /// A secret key's check value, a private key's public-key hash; empty when the file
    /// gives none.
    var checkValue: [UInt8]
    /// Nil when the file gives none: the token's default then.
    var usage: KeyUsage?
    var isExtractable: Bool
    var wrappingKeyCheckValue: [UInt8]
    var wrapped: [UInt8]

    static let begin = "-----BEGIN P11KEYCHAIN WRAPPED KEY-----"
    static let end = "-----END P11KEYCHAIN WRAPPED KEY-----"

    /// How help describes the file.
    static let formatNote = """
        The file is text: a block between \(begin) and its END line, with
        headers (Mechanism, Key-Class, Key-Type, Key-Bits, Label percent-encoded, ID,
        Check-Value or Public-Key-Hash, Usage, Extractable, Wrapping-Key-Check-Value), a blank
        line, and the wrapped bytes in base64.
        Only the wrapped bytes are protected; unwrap-key checks the headers against the key.
        """

    private static let usageWords: [(KeyUsage, String)] = [
        (.encrypt, "encrypt"), (.decrypt, "decrypt"), (.sign, "sign"), (.verify, "verify"), (.wrap, "wrap"),
        (.unwrap, "unwrap"), (.derive, "derive"),
    ]

    /// `aes-kwp` or `aes-kw`, as --mechanism and the Mechanism header spell them.
    static func mechanism(named name: String) -> KeyWrapAlgorithm? {
        switch name.lowercased() {
        case "aes-kwp", "aes-key-wrap-pad", "aes-key-wrap-kwp": .aesKeyWrapPadded
        case "aes-kw", "aes-key-wrap": .aesKeyWrap
        default: nil
        }
    }

    /// `AES-KWP`, `AES-KW`.
    static func name(of mechanism: KeyWrapAlgorithm) -> String {
        mechanism == .aesKeyWrapPadded ? "AES-KWP" : "AES-KW"
    }

    /// `aes`, `hmac-sha256`, `generic`: find-key's --type spelling.
    private static func typeName(_ type: SecretKeyType) -> String {
        type.description.lowercased()
    }

    /// The file's text.
    var text: String {
        var headers = [("Mechanism", WrappedKeyFile.name(of: mechanism))]
        switch contents {
        case .secretKey(let algorithm):
            headers += [
                ("Key-Class", "secret"), ("Key-Type", WrappedKeyFile.typeName(algorithm.type)),
                ("Key-Bits", "\(algorithm.sizeInBits)"),
            ]
        case .privateKey(let algorithm):
            headers += [
                ("Key-Class", "private"), ("Key-Type", algorithm.type.description.lowercased()),
                ("Key-Bits", "\(algorithm.sizeInBits)"),
            ]
        }
        headers.append(("Label", WrappedKeyFile.percentEncoded(label)))
        if !id.isEmpty { headers.append(("ID", Format.hex(id))) }
        if !checkValue.isEmpty {
            let name = isPrivateKey ? "Public-Key-Hash" : "Check-Value"
            headers.append((name, Format.hex(checkValue)))
        }
        if let usage {
            let words = WrappedKeyFile.usageWords.filter { usage.contains($0.0) }.map(\.1)
            headers.append(("Usage", words.isEmpty ? "none" : words.joined(separator: ",")))
        }
        headers.append(("Extractable", isExtractable ? "yes" : "no"))
        if !wrappingKeyCheckValue.isEmpty {
            headers.append(("Wrapping-Key-Check-Value", Format.hex(wrappingKeyCheckValue)))
        }
        let body = Data(wrapped).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return WrappedKeyFile.begin + "\n" + headers.map { "\($0): \($1)\n" }.joined() + "\n" + body + "\n"
            + WrappedKeyFile.end + "\n"
    }

    /// True for a private key's file.
    var isPrivateKey: Bool {
        if case .privateKey = contents { return true }
        return false
    }

    init(
        mechanism: KeyWrapAlgorithm, contents: Contents, label: String, id: [UInt8],
        checkValue: [UInt8], usage: KeyUsage?, isExtractable: Bool, wrappingKeyCheckValue: [UInt8],
        wrapped: [UInt8]
    ) {
        self.mechanism = mechanism
        self.contents = contents
        self.label = label
        self.id = id
        self.checkValue = checkValue
        self.usage = usage
        self.isExtractable = isExtractable
        self.wrappingKeyCheckValue = wrappingKeyCheckValue
        self.wrapped = wrapped
    }

    /// Reads a file's bytes; `name` names it in messages.
    init(parsing bytes: [UInt8], name: String) throws(Failure) {
        let invalid = { (why: String) -> Failure in
            .failed("\(name) is not a wrapped key file from wrap-key (\(why)); nothing was stored")
        }
        guard bytes.count <= 1 << 20 else { throw invalid("it is too large") }
        let lines = String(decoding: bytes, as: UTF8.self).split(
            separator: "\n", omittingEmptySubsequences: false
        )
        .map { $0.hasSuffix("\r") ? String($0.dropLast()) : String($0) }
        guard let start = lines.firstIndex(of: WrappedKeyFile.begin) else {
            throw invalid("no \(WrappedKeyFile.begin) line")
        }
        guard let finish = lines[start...].firstIndex(of: WrappedKeyFile.end) else {
            throw invalid("no \(WrappedKeyFile.end) line")
        }
        let block = lines[(start + 1)..<finish]
        let separator = block.firstIndex(of: "") ?? block.endIndex
        var headers: [String: String] = [:]
        for line in block[block.startIndex..<separator] {
            guard let colon = line.firstIndex(of: ":") else { throw invalid("a header line without a colon") }
            let key = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            headers[key] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let encoded = block[separator...].joined()
        guard !encoded.isEmpty, let data = Data(base64Encoded: encoded) else {
            throw invalid("the wrapped bytes are not base64")
        }
        guard let mechanismName = headers["mechanism"],
            let mechanism = WrappedKeyFile.mechanism(named: mechanismName)
        else { throw invalid("no Mechanism header of AES-KWP or AES-KW") }
        guard let bitsText = headers["key-bits"], let bits = Int(bitsText), bits > 0, bits <= 4096 * 8 else {
            throw invalid("no Key-Bits header of a key size")
        }
        let typeName = headers["key-type"] ?? ""
        let contents: Contents
        let isPrivate = headers["key-class"] == "private"
        switch headers["key-class"] ?? "secret" {
        case "secret":
            guard let type = SecretKeyCommands.type(named: typeName) else {
                throw invalid("no Key-Type header of aes, hmac-sha1 … hmac-sha512 or generic")
            }
            contents = .secretKey(SecretKeyAlgorithm(type: type, sizeInBits: bits))
        case "private":
            let types: [String: KeyType] = ["rsa": .rsa, "ec": .ellipticCurve, "ed25519": .ed25519]
            guard let type = types[typeName] else {
                throw invalid("no Key-Type header of rsa, ec or ed25519")
            }
            contents = .privateKey(KeyAlgorithm(type: type, sizeInBits: bits))
        default:
            throw invalid("the Key-Class header is neither secret nor private")
        }
        func hex(_ header: String) throws(Failure) -> [UInt8] {
            guard let text = headers[header] else { return [] }
            guard let value = Format.bytes(fromHex: text) else {
                throw invalid("the \(header) header is not hex")
            }
            return value
        }
        var usage: KeyUsage?
        if let words = headers["usage"] {
            var set: KeyUsage = []
            for word in words.split(separator: ",") where word != "none" {
                guard let flag = WrappedKeyFile.usageWords.first(where: { $0.1 == word })?.0 else {
                    throw invalid("the Usage header names \(Format.quoted(String(word)))")
                }
                set.insert(flag)
            }
            usage = set
        }
        guard let label = WrappedKeyFile.percentDecoded(headers["label"] ?? "") else {
            throw invalid("the Label header is not percent-encoded UTF-8")
        }
        self.init(
            mechanism: mechanism, contents: contents, label: label, id: try hex("id"),
            checkValue: try hex(isPrivate ? "public-key-hash" : "check-value"),
            usage: usage,
            isExtractable: headers["extractable"] == "yes",
            wrappingKeyCheckValue: try hex("wrapping-key-check-value"),
            wrapped: Array(data))
    }

    /// A label as one header value: printable ASCII other than `%` as it is, every other
    /// byte (blanks, line breaks, non-ASCII UTF-8) as `%XX`.
    static func percentEncoded(_ text: String) -> String {
        Array(text.utf8).map { byte in
            (0x21...0x7E).contains(byte) && byte != UInt8(ascii: "%")
                ? String(UnicodeScalar(byte)) : "%" + Format.hex([byte])
        }.joined()
    }

    /// The text a percent-encoded value spells; nil when it is not valid UTF-8 or a `%` is not
    /// followed by two hexadecimal digits.
    static func percentDecoded(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var rest = Substring(text).utf8[...]
        while let byte = rest.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            let digits = rest.prefix(2)
            guard digits.count == 2, let value = UInt8(String(decoding: digits, as: UTF8.self), radix: 16)
            else {
                return nil
            }
            bytes.append(value)
            rest = rest.dropFirst(2)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
