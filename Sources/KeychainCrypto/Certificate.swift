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

    /// The 8 ASCII digits "YYYYMMDD" of a CK_DATE.
    public var ckDate: [UInt8] {
        func digits(_ value: Int, _ width: Int) -> [UInt8] {
            var text = String(value)
            while text.count < width { text = "0" + text }
            return Array(text.utf8.suffix(width))
        }
        return digits(year, 4) + digits(month, 2) + digits(day, 2)
    }
}

/// An X.509 certificate parsed once by OpenSSL, with every value the item model derives from
/// it (DESIGN §4). Immutable; safe to share.
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
    /// True when the certificate's own key verifies its issuer name and signature (a root).
    public let isSelfSigned: Bool
    public let subjectKeyIdentifier: [UInt8]?
    public let commonNames: [String]
    public let emailAddresses: [String]
    /// Values of the subject's RDNs in order, for a summary when there is no CN or e-mail.
    public let subjectValues: [String]
    /// The subject as a one-line RFC 2253 string ("CN=x,O=y").
    public let subjectDescription: String
    public let issuerDescription: String
    /// Public key algorithm short name ("rsaEncryption", "id-ecPublicKey", "ED25519").
    public let publicKeyAlgorithm: String
    public let publicKeyBits: Int

    /// Parses `der`. Throws `.invalidInput` unless the bytes are exactly one DER X.509
    /// certificate (trailing bytes are refused too).
    public init(der: [UInt8]) throws(CryptoError) {
        guard !der.isEmpty else { throw CryptoError(.invalidInput, "certificate DER is empty") }
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            let certificate = d2i_X509(nil, &cursor, buffer.count)
            guard let certificate, let cursor,
                let base = buffer.baseAddress, cursor - base == buffer.count
            else {
                X509_free(certificate)
                return nil
            }
            return certificate
        }
        guard let certificate = parsed else {
            throw CryptoError.openSSL(.invalidInput, "certificate DER does not parse")
        }
        defer { X509_free(certificate) }
        self.der = der
        guard let subjectName = X509_get_subject_name(certificate),
            let issuerName = X509_get_issuer_name(certificate),
            let serial = X509_get_serialNumber(certificate),
            let start = X509_get0_notBefore(certificate),
            let end = X509_get0_notAfter(certificate),
            let publicKey = X509_get_X509_PUBKEY(certificate)
        else { throw CryptoError.openSSL(.invalidInput, "certificate lacks a required field") }
        subject = try X509Certificate.encoded { i2d_X509_NAME(subjectName, $0) }
        issuer = try X509Certificate.encoded { i2d_X509_NAME(issuerName, $0) }
        serialNumber = try X509Certificate.encoded { i2d_ASN1_INTEGER(serial, $0) }
        subjectPublicKeyInfo = try X509Certificate.encoded { i2d_X509_PUBKEY(publicKey, $0) }
        notBefore = try X509Certificate.time(start)
        notAfter = try X509Certificate.time(end)
        if let bits = X509_get0_pubkey_bitstr(certificate),
            let data = ASN1_STRING_get0_data(bits)
        {
            subjectPublicKey = Array(
                UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(bits))))
        } else {
            subjectPublicKey = []
        }
        // X509_check_ca also computes the cached extension flags.
        isCertificateAuthority = X509_check_ca(certificate) == 1
        isSelfSigned = (X509_get_extension_flags(certificate) & UInt32(EXFLAG_SS)) != 0
        if let keyID = X509_get0_subject_key_id(certificate),
            let data = ASN1_STRING_get0_data(keyID)
        {
            subjectKeyIdentifier = Array(
                UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(keyID))))
        } else {
            subjectKeyIdentifier = nil
        }
        var names: [String] = []
        var values: [String] = []
        var emails: [String] = []
        for index in 0..<X509_NAME_entry_count(subjectName) {
            guard let entry = X509_NAME_get_entry(subjectName, index),
                let value = X509_NAME_ENTRY_get_data(entry),
                let text = X509Certificate.utf8(value)
            else { continue }
            values.append(text)
            switch OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry)) {
            case NID_commonName: names.append(text)
            case NID_pkcs9_emailAddress: emails.append(text)
            default: break
            }
        }
        emails += X509Certificate.alternativeEmails(certificate)
        commonNames = names
        subjectValues = values
        emailAddresses = emails
        subjectDescription = X509Certificate.oneLine(subjectName)
        issuerDescription = X509Certificate.oneLine(issuerName)
        if let key = X509_get0_pubkey(certificate) {
            publicKeyAlgorithm = String(cString: OBJ_nid2sn(EVP_PKEY_get_base_id(key)))
            publicKeyBits = Int(EVP_PKEY_get_bits(key))
        } else {
            publicKeyAlgorithm = "unknown"
            publicKeyBits = 0
        }
        ERR_clear_error()
    }

    /// Apple's subject summary: the common name, else the first e-mail address, else the
    /// first RDN value of the subject.
    public var subjectSummary: String? {
        commonNames.first ?? emailAddresses.first ?? subjectValues.first
    }

    /// SHA-1 of the subjectPublicKey contents: Apple's public-key hash and RFC 5280's
    /// key identifier method 1. The default CKA_ID of a certificate and of its keys.
    public var publicKeyHash: [UInt8] { DigestAlgorithm.sha1.hash(subjectPublicKey) }

    public var sha1Fingerprint: [UInt8] { DigestAlgorithm.sha1.hash(der) }
    public var sha256Fingerprint: [UInt8] { DigestAlgorithm.sha256.hash(der) }

    /// The serial number's INTEGER content bytes (Apple's kSecAttrSerialNumber).
    public var serialNumberContent: [UInt8] { DERInteger.content(of: serialNumber) ?? [] }

    // MARK: Helpers

    private static func encoded(
        _ body: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32
    ) throws(CryptoError) -> [UInt8] {
        var output: UnsafeMutablePointer<UInt8>?
        let length = body(&output)
        guard length > 0, let output else {
            throw CryptoError.openSSL(.invalidInput, "certificate field does not encode")
        }
        defer { CRYPTO_free(output, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }

    private static func time(_ time: UnsafePointer<ASN1_TIME>) throws(CryptoError)
        -> CertificateTime
    {
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else {
            throw CryptoError.openSSL(.invalidInput, "certificate validity date does not parse")
        }
        let seconds = Int64(timegm(&parts))
        return CertificateTime(
            year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1,
            day: Int(parts.tm_mday), secondsSince1970: seconds)
    }

    private static func utf8(_ string: UnsafePointer<ASN1_STRING>) -> String? {
        var output: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&output, string)
        guard length >= 0, let output else { return nil }
        defer { CRYPTO_free(output, #fileID, #line) }
        return String(decoding: UnsafeBufferPointer(start: output, count: Int(length)), as: UTF8.self)
    }

    private static func oneLine(_ name: OpaquePointer) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard X509_NAME_print_ex(bio, name, 0, p11k_name_flags_rfc2253) >= 0 else { return "" }
        var pointer: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
        guard length > 0, let pointer else { return "" }
        return UnsafeRawBufferPointer(start: pointer, count: length).withMemoryRebound(
            to: UInt8.self
        ) { String(decoding: $0, as: UTF8.self) }
    }

    private static func alternativeEmails(_ certificate: OpaquePointer) -> [String] {
        guard
            let names = X509_get_ext_d2i(certificate, NID_subject_alt_name, nil, nil)
        else { return [] }
        let stack = OpaquePointer(names)
        defer { GENERAL_NAMES_free(stack) }
        var emails: [String] = []
        for index in 0..<OPENSSL_sk_num(stack) {
            guard let raw = OPENSSL_sk_value(stack, index) else { continue }
            let name = raw.assumingMemoryBound(to: GENERAL_NAME.self)
            guard name.pointee.type == GEN_EMAIL, let ia5 = name.pointee.d.rfc822Name,
                let text = utf8(ia5)
            else { continue }
            emails.append(text)
        }
        return emails
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
