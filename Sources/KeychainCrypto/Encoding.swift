internal import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

// Encodings the Swift faces need besides X.509 parsing: PEM, DER INTEGERs from Apple's serial
// content bytes, and Apple's normalized names. OpenSSL writes every byte of ASN.1 here.

extension DERInteger {
    /// The DER INTEGER whose content octets are `content` (two's complement, as Apple's
    /// kSecAttrSerialNumber carries them): CKA_SERIAL_NUMBER. Nil when `content` is empty or
    /// not minimal (a DER INTEGER never starts with 00 followed by a byte below 80, nor FF
    /// followed by a byte of 80 or above), since no stored certificate can carry it.
    public static func encode(content: [UInt8]) -> [UInt8]? {
        guard !content.isEmpty, content.count <= 1 << 16 else { return nil }
        let negative = content[0] & 0x80 != 0
        // BN_bin2bn reads an unsigned magnitude: negate a negative two's-complement value.
        var magnitude = content
        if negative {
            var carry = true
            for index in magnitude.indices.reversed() {
                magnitude[index] = ~magnitude[index]
                if carry {
                    magnitude[index] &+= 1
                    carry = magnitude[index] == 0
                }
            }
        }
        let encoded: [UInt8]? = magnitude.withUnsafeBufferPointer { buffer in
            guard let count = Int32(exactly: buffer.count),
                let number = BN_bin2bn(buffer.baseAddress, count, nil)
            else { return nil }
            defer { BN_free(number) }
            if negative { BN_set_negative(number, 1) }
            guard let integer = BN_to_ASN1_INTEGER(number, nil) else { return nil }
            defer { ASN1_INTEGER_free(integer) }
            var output: UnsafeMutablePointer<UInt8>?
            let length = i2d_ASN1_INTEGER(integer, &output)
            guard length > 0, let output else { return nil }
            defer { CRYPTO_free(output, #fileID, #line) }
            return Array(UnsafeBufferPointer(start: output, count: Int(length)))
        }
        ERR_clear_error()
        // Non-minimal content re-encodes differently: refuse it rather than match another value.
        guard let encoded, DERInteger.content(of: encoded) == content else { return nil }
        return encoded
    }
}

/// X.501 distinguished names in Apple's normalized form.
public enum DistinguishedName {
    /// Apple's normalized form of a DER Name (what `SecCertificateCopyNormalizedSubjectSequence`
    /// returns and the keychain compares): every PrintableString value is upper-cased (ASCII),
    /// stripped of leading and trailing blanks, with each run of blanks inside reduced to one
    /// space (RFC 5280 §7.1's comparison rules for that type). Other value types, the RDN
    /// structure and the attribute order are kept. Nil when `der` is not one DER Name.
    public static func normalized(_ der: [UInt8]) -> [UInt8]? {
        let result: [UInt8]? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            guard let name = d2i_X509_NAME(nil, &cursor, buffer.count) else { return nil }
            defer { X509_NAME_free(name) }
            guard let cursor, let base = buffer.baseAddress, cursor - base == buffer.count,
                let copy = X509_NAME_new()
            else { return nil }
            defer { X509_NAME_free(copy) }
            var previousSet: Int32 = -1
            for index in 0..<X509_NAME_entry_count(name) {
                guard let original = X509_NAME_get_entry(name, index),
                    let entry = X509_NAME_ENTRY_dup(original)
                else { return nil }
                defer { X509_NAME_ENTRY_free(entry) }
                if let value = X509_NAME_ENTRY_get_data(entry),
                    ASN1_STRING_type(value) == V_ASN1_PRINTABLESTRING
                {
                    let bytes = Array(
                        UnsafeBufferPointer(
                            start: ASN1_STRING_get0_data(value), count: Int(ASN1_STRING_length(value))))
                    let folded = normalizedPrintable(bytes)
                    let ok = folded.withUnsafeBufferPointer {
                        X509_NAME_ENTRY_set_data(
                            entry, V_ASN1_PRINTABLESTRING, $0.baseAddress, Int32(clamping: $0.count))
                    }
                    guard ok == 1 else { return nil }
                }
                // Entries of one multi-valued RDN share a set number: keep them together.
                let set = X509_NAME_ENTRY_set(original)
                let joinPrevious: Int32 = index > 0 && set == previousSet ? -1 : 0
                previousSet = set
                guard X509_NAME_add_entry(copy, entry, -1, joinPrevious) == 1 else { return nil }
            }
            var output: UnsafeMutablePointer<UInt8>?
            let length = i2d_X509_NAME(copy, &output)
            guard length > 0, let output else { return nil }
            defer { CRYPTO_free(output, #fileID, #line) }
            return Array(UnsafeBufferPointer(start: output, count: Int(length)))
        }
        ERR_clear_error()
        return result
    }

    /// Upper-cases ASCII letters and collapses blanks (space, tab), dropping them at both ends.
    static func normalizedPrintable(_ bytes: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        var pendingBlank = false
        for byte in bytes {
            if byte == 0x20 || byte == 0x09 {
                pendingBlank = !result.isEmpty
                continue
            }
            if pendingBlank { result.append(0x20) }
            pendingBlank = false
            result.append((0x61...0x7A).contains(byte) ? byte - 0x20 : byte)
        }
        return result
    }
}

/// PEM ("-----BEGIN CERTIFICATE-----") encoding of certificates, by OpenSSL.
public enum PEM {
    /// True when `bytes` look like PEM text (a BEGIN line) rather than DER.
    public static func looksLikePEM(_ bytes: [UInt8]) -> Bool {
        let marker = Array("-----BEGIN ".utf8)
        guard bytes.count >= marker.count else { return false }
        for start in 0...(bytes.count - marker.count) where bytes[start] == marker[0] {
            if Array(bytes[start..<start + marker.count]) == marker { return true }
        }
        return false
    }

    /// The DER of every CERTIFICATE (or X509 CERTIFICATE / TRUSTED CERTIFICATE) block in `text`,
    /// in order, as the blocks carry it. Other blocks (keys, CRLs) are skipped. Throws
    /// `.invalidInput` when a block's base64 is damaged or the text has no certificate.
    public static func certificates(in text: [UInt8]) throws(CryptoError) -> [[UInt8]] {
        // A memory BIO holding its own copy: no pointer into `text` outlives a closure.
        guard text.count < Int(Int32.max), let bio = BIO_new(BIO_s_mem()) else {
            throw CryptoError.openSSL(.failed, "cannot read PEM text")
        }
        defer { BIO_free(bio) }
        let copied = text.withUnsafeBytes { BIO_write(bio, $0.baseAddress, Int32($0.count)) }
        guard copied == Int32(text.count) else {
            throw CryptoError.openSSL(.failed, "cannot read PEM text")
        }
        var blocks: [[UInt8]] = []
        while true {
            var name: UnsafeMutablePointer<CChar>?
            var header: UnsafeMutablePointer<CChar>?
            var data: UnsafeMutablePointer<UInt8>?
            var length = 0
            let ok = PEM_read_bio(bio, &name, &header, &data, &length)
            defer {
                CRYPTO_free(name, #fileID, #line)
                CRYPTO_free(header, #fileID, #line)
                CRYPTO_free(data, #fileID, #line)
            }
            guard ok == 1, let name, let data else {
                let reason = ERR_GET_REASON(ERR_peek_last_error())
                ERR_clear_error()
                // The end of the text: no further BEGIN line.
                if reason == PEM_R_NO_START_LINE { break }
                throw CryptoError(.invalidInput, "PEM block \(blocks.count + 1) does not decode")
            }
            switch String(cString: name) {
            case "CERTIFICATE", "X509 CERTIFICATE", "TRUSTED CERTIFICATE":
                blocks.append(Array(UnsafeBufferPointer(start: data, count: length)))
            default: continue
            }
        }
        guard !blocks.isEmpty else {
            throw CryptoError(.invalidInput, "the text has no PEM CERTIFICATE block")
        }
        return blocks
    }

    /// `der` as one PEM CERTIFICATE block, lines of 64 characters, ending in a newline.
    public static func encodeCertificate(_ der: [UInt8]) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        let written = der.withUnsafeBufferPointer {
            PEM_write_bio(bio, "CERTIFICATE", "", $0.baseAddress, $0.count)
        }
        guard written > 0 else {
            ERR_clear_error()
            return ""
        }
        var pointer: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
        guard length > 0, let pointer else { return "" }
        return UnsafeRawBufferPointer(start: pointer, count: length).withMemoryRebound(to: UInt8.self) {
            String(decoding: $0, as: UTF8.self)
        }
    }
}

extension X509Certificate {
    /// The X.509 version, 1, 2 or 3 (Apple's kSecAttrCertificateType is CSSM's X.509 type
    /// of that version). Read from the TBSCertificate's optional [0] EXPLICIT field with
    /// OpenSSL's TLV reader; 1 when the field is absent.
    public var version: Int {
        let version: Int? = der.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            var length = 0
            var tag: Int32 = 0
            var tagClass: Int32 = 0
            /// Steps into the next element's header; its content follows `cursor`.
            func enter(_ limit: Int) -> Bool {
                ASN1_get_object(&cursor, &length, &tag, &tagClass, limit) & 0x80 == 0
            }
            // Certificate SEQUENCE, then TBSCertificate SEQUENCE, then its first element.
            guard enter(buffer.count), let start = cursor, enter(buffer.count - (start - base)),
                let fieldStart = cursor, enter(buffer.count - (fieldStart - base))
            else { return nil }
            guard tagClass == V_ASN1_CONTEXT_SPECIFIC, tag == 0 else { return 1 }
            guard let integer = d2i_ASN1_INTEGER(nil, &cursor, length) else { return nil }
            defer { ASN1_INTEGER_free(integer) }
            return Int(ASN1_INTEGER_get(integer)) + 1
        }
        ERR_clear_error()
        return version ?? 1
    }
}
