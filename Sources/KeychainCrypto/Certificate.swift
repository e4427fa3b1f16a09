internal import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// A calendar date as PKCS#11 stores it (CK_DATE) and the instant it stands for.
public struct CertificateTime: Sendable, Equatable {
    public var year: Int
    public var month: Int
    public var day: Int
    /// Seconds since 1970-01-01T00:00:00Z.
    public var secondsSince1970: Int64

    /// The 8 ASCII digits "YYYYMMDD" of a CK_DATE: each field's last 4, 2 and 2 decimal
    /// digits, zero-padded. Written digit by digit: through `String` it was 4,000 instructions
    /// a date, two of them in every certificate import.
    public var ckDate: [UInt8] {
        var date = [UInt8](repeating: 0x30, count: 8)
        for (value, end, width) in [(year, 4, 4), (month, 6, 2), (day, 8, 2)] {
            var rest = value.magnitude
            for index in stride(from: end - 1, through: end - width, by: -1) {
                date[index] = 0x30 + UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            }
        }
        return date
    }
}

/// An X.509 certificate parsed once, with every value the item model derives from it
/// (ARCHITECTURE.md §3.4) but the subject's names, decoded when read (`subjectNames`).
/// Immutable; safe to share.
///
/// The structure is walked with OpenSSL's DER reader (`ASN1_get_object`) and the parts
/// decoded with OpenSSL's d2i functions, but the public key is not decoded at parse time:
/// OpenSSL 3.0's `d2i_X509` builds a provider decoder chain for every key, which measured
/// 1.4 million instructions per certificate here, more than everything else an import does.
/// Values taken from the DER (subject, issuer, serial, SubjectPublicKeyInfo) are the exact
/// bytes of the certificate, never a re-encoding.
public struct X509Certificate: Sendable {
    /// The certificate's DER, exactly as given.
    public let der: [UInt8]
    public let subject: [UInt8]
    public let issuer: [UInt8]
    /// The serial number as a full DER INTEGER (tag, length, content): CKA_SERIAL_NUMBER.
    public let serialNumber: [UInt8]
    public let notBefore: CertificateTime
    public let notAfter: CertificateTime
    /// SubjectPublicKeyInfo DER: CKA_PUBLIC_KEY_INFO.
    public let subjectPublicKeyInfo: [UInt8]
    /// Contents of the subjectPublicKey BIT STRING (the key itself, without algorithm).
    public let subjectPublicKey: [UInt8]
    public let isCertificateAuthority: Bool
    /// True when the certificate names itself as issuer and, if it says which key signed it,
    /// that key is its own: a root. (The signature is not verified.)
    public let isSelfSigned: Bool
    public let subjectKeyIdentifier: [UInt8]?
    /// The subjectAltName's e-mail addresses (`emailAddresses` adds the subject's).
    private let alternativeEmailAddresses: [String]

    /// Parses `der`. Throws `.invalidInput` unless the bytes are exactly one DER X.509
    /// certificate (trailing bytes are refused too).
    public init(der: [UInt8]) throws(CryptoError) {
        self.der = der
        let fields = try der.withUnsafeBufferPointer { (buffer) throws(CryptoError) in
            try CertificateFields(buffer)
        }
        subject = Array(der[fields.subject])
        issuer = Array(der[fields.issuer])
        serialNumber = Array(der[fields.serialNumber])
        subjectPublicKeyInfo = Array(der[fields.subjectPublicKeyInfo])
        subjectPublicKey = Array(der[fields.subjectPublicKey])
        (notBefore, notAfter) = try X509Certificate.validity(Array(der[fields.validity]))
        let extensions = try Extensions(fields.extensions.map { Array(der[$0]) })
        isCertificateAuthority = extensions.isCertificateAuthority
        subjectKeyIdentifier = extensions.subjectKeyIdentifier
        isSelfSigned =
            subject == issuer
            && (extensions.authorityKeyIdentifier == nil
                || extensions.authorityKeyIdentifier == extensions.subjectKeyIdentifier)
        alternativeEmailAddresses = extensions.emailAddresses
    }

    /// The subject's values, decoded from `subject` when asked for. An import reads none of
    /// them unless it must make a label, and decoding the name was a tenth of an import's
    /// instructions. A subject OpenSSL cannot decode has none.
    public var subjectNames: SubjectNames { SubjectNames(subject) }

    public var commonNames: [String] { subjectNames.commonNames }
    /// The subject's e-mail addresses, then the subjectAltName's.
    public var emailAddresses: [String] { subjectNames.emailAddresses + alternativeEmailAddresses }
    /// Values of the subject's RDNs in order, for a summary when there is no CN or e-mail.
    public var subjectValues: [String] { subjectNames.values }

    /// Apple's subject summary: the common name, else the first e-mail address, else the
    /// first RDN value of the subject.
    public var subjectSummary: String? {
        let names = subjectNames
        return names.commonNames.first ?? names.emailAddresses.first ?? alternativeEmailAddresses.first
            ?? names.values.first
    }

    /// SHA-1 of the subjectPublicKey contents: Apple's public-key hash and RFC 5280's
    /// key identifier method 1. The default CKA_ID of a certificate and of its keys.
    public var publicKeyHash: [UInt8] { DigestAlgorithm.sha1.hash(subjectPublicKey) }

    public var sha1Fingerprint: [UInt8] { DigestAlgorithm.sha1.hash(der) }
    public var sha256Fingerprint: [UInt8] { DigestAlgorithm.sha256.hash(der) }

    /// The serial number's INTEGER content bytes (Apple's kSecAttrSerialNumber).
    public var serialNumberContent: [UInt8] { DERInteger.content(of: serialNumber) ?? [] }

    /// The subject as a one-line RFC 2253 string ("CN=x,O=y").
    public var subjectDescription: String { X509Certificate.oneLine(subject) }
    public var issuerDescription: String { X509Certificate.oneLine(issuer) }

    /// Public key algorithm short name ("rsaEncryption", "id-ecPublicKey", "ED25519").
    public var publicKeyAlgorithm: String { publicKeyDetails.algorithm }
    /// Key size in bits (RSA modulus, EC curve order), 0 when OpenSSL cannot decode the key.
    public var publicKeyBits: Int { publicKeyDetails.bits }

    /// `publicKeyAlgorithm` and `publicKeyBits` together (PublicKeySummary.swift: read from the
    /// DER for RSA and named-curve EC keys, else one decode of the key).
    public var publicKeyDetails: (algorithm: String, bits: Int) { PublicKeySummary.of(subjectPublicKeyInfo) }

    // MARK: Decoding parts

    private static func validity(_ der: [UInt8]) throws(CryptoError) -> (CertificateTime, CertificateTime) {
        let times: [CertificateTime]? = der.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress,
                let sequence = DERElement(base, at: 0, limit: buffer.count), sequence.tag == V_ASN1_SEQUENCE
            else { return nil }
            var times: [CertificateTime] = []
            var offset = sequence.content.lowerBound
            while offset < sequence.content.upperBound, times.count < 3 {
                guard let element = DERElement(base, at: offset, limit: sequence.content.upperBound),
                    element.tagClass == 0,
                    element.tag == V_ASN1_UTCTIME || element.tag == V_ASN1_GENERALIZEDTIME
                else { return nil }
                var cursor: UnsafePointer<UInt8>? = base + offset
                guard let time = d2i_ASN1_TIME(nil, &cursor, element.whole.count) else { return nil }
                defer { ASN1_TIME_free(time) }
                guard let parsed = try? CertificateTime(time) else { return nil }
                times.append(parsed)
                offset = element.whole.upperBound
            }
            return times.count == 2 ? times : nil
        }
        ERR_clear_error()
        guard let times else { throw CryptoError(.invalidInput, "certificate validity does not parse") }
        return (times[0], times[1])
    }

    static func utf8(_ string: UnsafePointer<ASN1_STRING>) -> String? {
        var output: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&output, string)
        guard length >= 0, let output else { return nil }
        defer { CRYPTO_free(output, #fileID, #line) }
        return String(decoding: UnsafeBufferPointer(start: output, count: Int(length)), as: UTF8.self)
    }

    private static func oneLine(_ der: [UInt8]) -> String {
        let name: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_X509_NAME(nil, &cursor, buffer.count)
        }
        defer { ERR_clear_error() }
        guard let name, let bio = BIO_new(BIO_s_mem()) else {
            X509_NAME_free(name)
            return ""
        }
        defer {
            BIO_free(bio)
            X509_NAME_free(name)
        }
        guard X509_NAME_print_ex(bio, name, 0, p11k_name_flags_rfc2253) >= 0 else { return "" }
        var pointer: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
        guard length > 0, let pointer else { return "" }
        return UnsafeRawBufferPointer(start: pointer, count: length).withMemoryRebound(
            to: UInt8.self
        ) { String(decoding: $0, as: UTF8.self) }
    }
}

/// The values of a certificate subject's RDNs, in order, and which are common names and
/// e-mail addresses (PKCS #9 emailAddress), as OpenSSL decodes them.
public struct SubjectNames: Sendable {
    public private(set) var values: [String] = []
    public private(set) var commonNames: [String] = []
    public private(set) var emailAddresses: [String] = []

    /// Decodes the Name DER `der`; a name OpenSSL does not decode has no values.
    init(_ der: [UInt8]) {
        let name: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_X509_NAME(nil, &cursor, buffer.count)
        }
        guard let name else {
            ERR_clear_error()
            return
        }
        defer { X509_NAME_free(name) }
        for index in 0..<X509_NAME_entry_count(name) {
            guard let entry = X509_NAME_get_entry(name, index),
                let value = X509_NAME_ENTRY_get_data(entry),
                let text = X509Certificate.utf8(value)
            else { continue }
            values.append(text)
            switch OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry)) {
            case NID_commonName: commonNames.append(text)
            case NID_pkcs9_emailAddress: emailAddresses.append(text)
            default: break
            }
        }
    }
}

extension CertificateTime {
    init(_ time: UnsafePointer<ASN1_TIME>) throws(CryptoError) {
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else {
            throw CryptoError.openSSL(.invalidInput, "certificate validity date does not parse")
        }
        self.init(
            year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday),
            secondsSince1970: Int64(timegm(&parts)))
    }
}

/// One DER element as OpenSSL's `ASN1_get_object` reads its header: byte ranges of the
/// whole element and of its contents within the buffer.
struct DERElement {
    let tag: Int32
    let tagClass: Int32
    let whole: Range<Int>
    let content: Range<Int>

    init?(_ base: UnsafePointer<UInt8>, at offset: Int, limit: Int) {
        guard offset < limit else { return nil }
        var cursor: UnsafePointer<UInt8>? = base + offset
        var length = 0
        var tag: Int32 = 0
        var tagClass: Int32 = 0
        let result = ASN1_get_object(&cursor, &length, &tag, &tagClass, limit - offset)
        // 0x80: error or overrun; 0x21: constructed with indefinite length (BER, not DER).
        guard result & 0x80 == 0, result != 0x21, let cursor else { return nil }
        let start = cursor - base
        guard length >= 0, start + length <= limit else { return nil }
        // ASN1_get_object also reads BER's long forms (30 83 00 01 11 for 30 82 01 11). DER
        // allows only the shortest (X.690 §10.1); accepting others would let one certificate
        // be stored twice, under two encodings of its issuer or serial.
        guard start - offset == DERElement.headerLength(tag: tag, length: length) else { return nil }
        self.tag = tag
        self.tagClass = tagClass
        whole = offset..<(start + length)
        content = start..<(start + length)
    }

    /// Octets of the shortest identifier and length encoding of an element (X.690 §8.1.2,
    /// §10.1): one tag octet below 31, else one plus a base-128 digit per 7 bits; one length
    /// octet below 128, else one plus a base-256 digit per 8 bits.
    static func headerLength(tag: Int32, length: Int) -> Int {
        var octets = 2
        if tag >= 31 {
            var rest = tag
            repeat {
                octets += 1
                rest >>= 7
            } while rest > 0
        }
        if length >= 128 {
            var rest = length
            repeat {
                octets += 1
                rest >>= 8
            } while rest > 0
        }
        return octets
    }
}

/// Where the parts of a certificate lie in its DER (RFC 5280 §4.1).
private struct CertificateFields {
    var serialNumber: Range<Int>
    var issuer: Range<Int>
    var validity: Range<Int>
    var subject: Range<Int>
    var subjectPublicKeyInfo: Range<Int>
    var subjectPublicKey: Range<Int>
    /// Contents of the [3] EXPLICIT wrapper: the Extensions SEQUENCE.
    var extensions: Range<Int>?

    init(_ buffer: UnsafeBufferPointer<UInt8>) throws(CryptoError) {
        let invalid = CryptoError(.invalidInput, "certificate DER does not parse")
        guard let base = buffer.baseAddress,
            let certificate = DERElement(base, at: 0, limit: buffer.count),
            certificate.tagClass == 0, certificate.tag == V_ASN1_SEQUENCE,
            certificate.whole.upperBound == buffer.count
        else { throw invalid }
        // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue }
        let limit = certificate.content.upperBound
        guard let tbs = DERElement(base, at: certificate.content.lowerBound, limit: limit),
            tbs.tag == V_ASN1_SEQUENCE,
            let algorithm = DERElement(base, at: tbs.whole.upperBound, limit: limit),
            algorithm.tag == V_ASN1_SEQUENCE,
            let signature = DERElement(base, at: algorithm.whole.upperBound, limit: limit),
            signature.tag == V_ASN1_BIT_STRING, signature.whole.upperBound == limit
        else { throw invalid }
        var parts: [DERElement] = []
        var offset = tbs.content.lowerBound
        while offset < tbs.content.upperBound {
            guard let element = DERElement(base, at: offset, limit: tbs.content.upperBound) else {
                throw invalid
            }
            parts.append(element)
            offset = element.whole.upperBound
        }
        // Optional [0] EXPLICIT version, then serial, signature, issuer, validity, subject, SPKI.
        if let first = parts.first, first.tagClass == V_ASN1_CONTEXT_SPECIFIC, first.tag == 0 {
            parts.removeFirst()
        }
        guard parts.count >= 6,
            parts[0].tagClass == 0, parts[0].tag == V_ASN1_INTEGER,
            parts[1].tag == V_ASN1_SEQUENCE, parts[2].tag == V_ASN1_SEQUENCE,
            parts[3].tag == V_ASN1_SEQUENCE, parts[4].tag == V_ASN1_SEQUENCE,
            parts[5].tag == V_ASN1_SEQUENCE
        else { throw invalid }
        guard CertificateFields.isName(parts[2], base), CertificateFields.isName(parts[4], base)
        else { throw invalid }
        serialNumber = parts[0].whole
        issuer = parts[2].whole
        validity = parts[3].whole
        subject = parts[4].whole
        subjectPublicKeyInfo = parts[5].whole
        // SubjectPublicKeyInfo ::= SEQUENCE { algorithm, subjectPublicKey BIT STRING }
        let spki = parts[5]
        guard
            let keyAlgorithm = DERElement(base, at: spki.content.lowerBound, limit: spki.content.upperBound),
            keyAlgorithm.tag == V_ASN1_SEQUENCE,
            let key = DERElement(base, at: keyAlgorithm.whole.upperBound, limit: spki.content.upperBound),
            key.tag == V_ASN1_BIT_STRING, key.whole.upperBound == spki.content.upperBound,
            !key.content.isEmpty
        else { throw invalid }
        // The first content octet counts unused bits; keys are whole octets.
        subjectPublicKey = (key.content.lowerBound + 1)..<key.content.upperBound
        extensions =
            parts.dropFirst(6).first { $0.tagClass == V_ASN1_CONTEXT_SPECIFIC && $0.tag == 3 }?.content
        // The integer must be one OpenSSL accepts.
        var cursor: UnsafePointer<UInt8>? = base + serialNumber.lowerBound
        guard let integer = d2i_ASN1_INTEGER(nil, &cursor, serialNumber.count) else {
            ERR_clear_error()
            throw invalid
        }
        ASN1_INTEGER_free(integer)
    }
}

extension CertificateFields {
    /// True when `name` is laid out as an X.501 Name (RFC 5280 §4.1.2.4): a SEQUENCE of SETs,
    /// each of one or more SEQUENCEs holding an OBJECT IDENTIFIER and a value. The values are
    /// decoded only when asked for (`SubjectNames`).
    static func isName(_ name: DERElement, _ base: UnsafePointer<UInt8>) -> Bool {
        var offset = name.content.lowerBound
        while offset < name.content.upperBound {
            guard let set = DERElement(base, at: offset, limit: name.content.upperBound),
                set.tagClass == 0, set.tag == V_ASN1_SET, !set.content.isEmpty
            else { return false }
            var member = set.content.lowerBound
            while member < set.content.upperBound {
                guard let pair = DERElement(base, at: member, limit: set.content.upperBound),
                    pair.tagClass == 0, pair.tag == V_ASN1_SEQUENCE,
                    let type = DERElement(base, at: pair.content.lowerBound, limit: pair.content.upperBound),
                    type.tagClass == 0, type.tag == V_ASN1_OBJECT, !type.content.isEmpty,
                    let value = DERElement(base, at: type.whole.upperBound, limit: pair.content.upperBound),
                    value.whole.upperBound == pair.content.upperBound
                else { return false }
                member = pair.whole.upperBound
            }
            offset = set.whole.upperBound
        }
        return true
    }
}

/// The extensions the item model reads, decoded by OpenSSL.
private struct Extensions {
    var isCertificateAuthority = false
    var subjectKeyIdentifier: [UInt8]?
    var authorityKeyIdentifier: [UInt8]?
    var emailAddresses: [String] = []

    init(_ der: [UInt8]?) throws(CryptoError) {
        guard let der else { return }
        let stack: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_X509_EXTENSIONS(nil, &cursor, buffer.count)
        }
        guard let stack else {
            ERR_clear_error()
            throw CryptoError(.invalidInput, "certificate extensions do not parse")
        }
        defer {
            OPENSSL_sk_pop_free(stack) { X509_EXTENSION_free(OpaquePointer($0)) }
            ERR_clear_error()
        }
        if let raw = X509V3_get_d2i(stack, NID_basic_constraints, nil, nil) {
            let constraints = raw.assumingMemoryBound(to: BASIC_CONSTRAINTS.self)
            isCertificateAuthority = constraints.pointee.ca != 0
            BASIC_CONSTRAINTS_free(constraints)
        }
        if let raw = X509V3_get_d2i(stack, NID_subject_key_identifier, nil, nil) {
            let octets = raw.assumingMemoryBound(to: ASN1_OCTET_STRING.self)
            subjectKeyIdentifier = Extensions.bytes(octets)
            ASN1_OCTET_STRING_free(octets)
        }
        if let raw = X509V3_get_d2i(stack, NID_authority_key_identifier, nil, nil) {
            let identifier = raw.assumingMemoryBound(to: AUTHORITY_KEYID.self)
            let keyID: UnsafeMutablePointer<ASN1_OCTET_STRING>? = identifier.pointee.keyid
            if let keyID { authorityKeyIdentifier = Extensions.bytes(keyID) }
            AUTHORITY_KEYID_free(identifier)
        }
        if let raw = X509V3_get_d2i(stack, NID_subject_alt_name, nil, nil) {
            let names = OpaquePointer(raw)
            defer { GENERAL_NAMES_free(names) }
            for index in 0..<OPENSSL_sk_num(names) {
                guard let entry = OPENSSL_sk_value(names, index) else { continue }
                let name = entry.assumingMemoryBound(to: GENERAL_NAME.self)
                guard name.pointee.type == GEN_EMAIL, let ia5 = name.pointee.d.rfc822Name,
                    let text = X509Certificate.utf8(ia5)
                else { continue }
                emailAddresses.append(text)
            }
        }
    }

    private static func bytes(_ string: UnsafePointer<ASN1_STRING>) -> [UInt8] {
        guard let data = ASN1_STRING_get0_data(string) else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(string))))
    }
}

/// Converts PKCS#11's full DER INTEGER to Apple's serial content bytes. OpenSSL parses and
/// re-encodes; only the already-validated tag and length are skipped here.
public enum DERInteger {
    /// The content bytes of a DER INTEGER, or nil when `der` is not one.
    public static func content(of der: [UInt8]) -> [UInt8]? {
        let parsed: [UInt8]? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            guard let integer = d2i_ASN1_INTEGER(nil, &cursor, buffer.count) else { return nil }
            defer { ASN1_INTEGER_free(integer) }
            guard let cursor, let base = buffer.baseAddress, cursor - base == buffer.count
            else { return nil }
            var output: UnsafeMutablePointer<UInt8>?
            let length = i2d_ASN1_INTEGER(integer, &output)
            guard length > 2, let output else { return nil }
            defer { CRYPTO_free(output, #fileID, #line) }
            let encoded = Array(UnsafeBufferPointer(start: output, count: Int(length)))
            guard encoded == der else { return nil }  // not DER (e.g. non-minimal)
            let lengthOctets = encoded[1] < 0x80 ? 1 : 1 + Int(encoded[1] & 0x7f)
            return Array(encoded[(1 + lengthOctets)...])
        }
        ERR_clear_error()
        return parsed
    }
}

/// DER object identifiers (CKA_OBJECT_ID of data objects).
public enum DERObjectIdentifier {
    /// True when `der` is exactly one DER OBJECT IDENTIFIER.
    public static func isValid(_ der: [UInt8]) -> Bool {
        let valid = der.withUnsafeBufferPointer { buffer -> Bool in
            var cursor = buffer.baseAddress
            guard let object = d2i_ASN1_OBJECT(nil, &cursor, buffer.count) else { return false }
            defer { ASN1_OBJECT_free(object) }
            guard let cursor, let base = buffer.baseAddress else { return false }
            return cursor - base == buffer.count
        }
        ERR_clear_error()
        return valid
    }
}

/// DER OCTET STRING wrapping (CKA_EC_POINT holds the point as a DER OCTET STRING).
public enum DEROctetString {
    public static func encode(_ bytes: [UInt8]) -> [UInt8] {
        guard let string = ASN1_OCTET_STRING_new() else { return [] }
        defer { ASN1_OCTET_STRING_free(string) }
        guard let count = Int32(exactly: bytes.count), ASN1_OCTET_STRING_set(string, bytes, count) == 1 else {
            return []
        }
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_ASN1_OCTET_STRING(string, &output)
        guard length > 0, let output else { return [] }
        defer { CRYPTO_free(output, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }
}

extension DEROctetString {
    /// The contents of `der` when it is exactly one DER OCTET STRING, else nil.
    public static func decode(_ der: [UInt8]) -> [UInt8]? {
        let result: [UInt8]? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            guard let string = d2i_ASN1_OCTET_STRING(nil, &cursor, buffer.count) else { return nil }
            defer { ASN1_OCTET_STRING_free(string) }
            guard let cursor, let base = buffer.baseAddress, cursor - base == buffer.count,
                let data = ASN1_STRING_get0_data(string)
            else { return nil }
            return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(string))))
        }
        ERR_clear_error()
        return result
    }
}
