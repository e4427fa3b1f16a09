private import CP11Kit
import Foundation

/// An RFC 7512 `pkcs11:` URI as the CLI reads and prints one: the token, and the object's
/// label, ID and class. libp11-kit parses and formats it (p11_kit_uri_*), so what this tool
/// prints is what p11tool, GnuTLS, OpenSSL's engines and p11-kit itself read back.
struct PKCS11URI: Equatable {
    /// `token=`: the token's label (CK_TOKEN_INFO.label).
    var token: String?
    /// `object=`: the object's label (CKA_LABEL).
    var object: String?
    /// `id=`: the object's ID (CKA_ID).
    var id: [UInt8]?
    /// `type=`: the object's class: `cert`, `private`, `public`, `secret-key` or `data`.
    var type: String?

    /// True when `text` is written as a URI (`pkcs11:…`, any case of the scheme).
    static func isURI(_ text: String) -> Bool { text.lowercased().hasPrefix("pkcs11:") }

    // CKA_CLASS, CKA_LABEL, CKA_ID (PKCS#11 3.0 §4.2, §4.4).
    private static let classAttribute: UInt = 0x0
    private static let labelAttribute: UInt = 0x3
    private static let idAttribute: UInt = 0x102
    /// CKO_* values and RFC 7512's names for them.
    private static let classNames: [(UInt, String)] = [
        (0, "data"), (1, "cert"), (2, "public"), (3, "private"), (4, "secret-key"),
    ]

    /// Parses `text`; a URI libp11-kit refuses, or one with attributes this tool cannot
    /// match (a slot, a module, a manufacturer), is a usage error that says why.
    init(parsing text: String) throws(Failure) {
        guard let uri = p11_kit_uri_new() else {
            throw .failed("cannot parse \(Format.quoted(text)): out of memory")
        }
        defer { p11_kit_uri_free(uri) }
        let result = p11_kit_uri_parse(text, P11_KIT_URI_FOR_ANY, uri)
        guard result == P11_KIT_URI_OK.rawValue else {
            let reason = p11_kit_uri_message(result).map { String(cString: $0) } ?? "code \(result)"
            throw .usage("\(Format.quoted(text)) is not a pkcs11: URI (\(reason.lowercased()))")
        }
        if p11_kit_uri_any_unrecognized(uri) != 0 {
            throw .usage(
                "\(Format.quoted(text)) has attributes this tool cannot match (token, object, id, type)")
        }
        if let info = p11_kit_uri_get_token_info(uri) {
            let label = withUnsafeBytes(of: &info.pointee.label) { Array($0) }
            // p11-kit leaves an absent field zero-filled; a given one is padded with blanks.
            if label.first != 0 { token = PKCS11URI.unpadded(label) }
        }
        object = Self.attribute(Self.labelAttribute, of: uri).map { String(decoding: $0, as: UTF8.self) }
        id = Self.attribute(Self.idAttribute, of: uri)
        if let bytes = Self.attribute(Self.classAttribute, of: uri), bytes.count == MemoryLayout<UInt>.size {
            let value = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt.self) }
            guard let name = Self.classNames.first(where: { $0.0 == value })?.1 else {
                throw .usage("\(Format.quoted(text)) names an object class this tool does not store")
            }
            type = name
        }
    }

    init(token: String? = nil, object: String? = nil, id: [UInt8]? = nil, type: String? = nil) {
        self.token = token
        self.object = object
        self.id = id
        self.type = type
    }

    /// The URI as text, percent-encoded by libp11-kit; nil only when it cannot allocate.
    var formatted: String? {
        guard let uri = p11_kit_uri_new() else { return nil }
        defer { p11_kit_uri_free(uri) }
        if let token, let info = p11_kit_uri_get_token_info(uri) {
            withUnsafeMutableBytes(of: &info.pointee.label) { field in
                let bytes = Array(token.utf8.prefix(field.count))
                for index in field.indices {
                    field[index] = index < bytes.count ? bytes[index] : UInt8(ascii: " ")
                }
            }
        }
        if let object { Self.set(Self.labelAttribute, Array(object.utf8), on: uri) }
        if let id { Self.set(Self.idAttribute, id, on: uri) }
        if let type, let value = Self.classNames.first(where: { $0.1 == type })?.0 {
            Self.set(Self.classAttribute, withUnsafeBytes(of: value) { Array($0) }, on: uri)
        }
        var text: UnsafeMutablePointer<CChar>?
        guard p11_kit_uri_format(uri, P11_KIT_URI_FOR_OBJECT_ON_TOKEN, &text) == P11_KIT_URI_OK.rawValue,
            let text
        else { return nil }
        defer { free(text) }
        return String(cString: text)
    }

    /// A label field without its trailing blanks (CK_TOKEN_INFO pads with spaces).
    private static func unpadded(_ bytes: [UInt8]) -> String {
        var end = bytes.count
        while end > 0, bytes[end - 1] == UInt8(ascii: " ") || bytes[end - 1] == 0 { end -= 1 }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    private static func attribute(_ type: UInt, of uri: OpaquePointer) -> [UInt8]? {
        guard let attribute = p11_kit_uri_get_attribute(uri, CK_ATTRIBUTE_TYPE(type)) else { return nil }
        let length = Int(clamping: attribute.pointee.ulValueLen)
        guard length > 0, let value = attribute.pointee.pValue else { return length == 0 ? [] : nil }
        return Array(UnsafeRawBufferPointer(start: value, count: length))
    }

    private static func set(_ type: UInt, _ bytes: [UInt8], on uri: OpaquePointer) {
        var copy = bytes
        copy.withUnsafeMutableBytes { buffer in
            var attribute = CK_ATTRIBUTE(
                type: CK_ATTRIBUTE_TYPE(type), pValue: buffer.baseAddress, ulValueLen: CK_ULONG(buffer.count))
            _ = p11_kit_uri_set_attribute(uri, &attribute)
        }
    }
}
