internal import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// X.509 v3 extensions made by OpenSSL, for objects that carry one on its own: p11-kit's stapled
/// extensions (CKO_X_CERTIFICATE_EXTENSION).
public enum CertificateExtension {
    /// A non-critical extendedKeyUsage extension (RFC 5280 §4.2.1.12) naming `usages` by
    /// OpenSSL's short names (`serverAuth`, `clientAuth`, `codeSigning`, `emailProtection`…):
    /// the DER of the whole Extension and of its OID (id-ce-extKeyUsage).
    /// - Throws: ``CryptoError/Code/invalidInput`` for no usage or one OpenSSL does not name.
    public static func extendedKeyUsage(_ usages: [String]) throws(CryptoError) -> (
        objectID: [UInt8], der: [UInt8]
    ) {
        guard !usages.isEmpty, usages.allSatisfy({ !$0.isEmpty && !$0.contains(",") }) else {
            throw CryptoError(.invalidInput, "an extendedKeyUsage extension names one usage at least")
        }
        guard let made = X509V3_EXT_conf_nid(nil, nil, NID_ext_key_usage, usages.joined(separator: ","))
        else {
            throw .openSSL(.invalidInput, "cannot make an extendedKeyUsage extension of \(usages)")
        }
        defer { X509_EXTENSION_free(made) }
        guard let der = encoded({ i2d_X509_EXTENSION(made, &$0) }),
            let objectID = encoded({ i2d_ASN1_OBJECT(X509_EXTENSION_get_object(made), &$0) })
        else {
            throw .openSSL(.failed, "cannot encode an extendedKeyUsage extension")
        }
        return (objectID, der)
    }

    /// What an OpenSSL i2d function writes into the buffer it allocates; nil when it fails.
    private static func encoded(_ encode: (inout UnsafeMutablePointer<UInt8>?) -> Int32) -> [UInt8]? {
        var output: UnsafeMutablePointer<UInt8>?
        let length = encode(&output)
        guard length > 0, let output else { return nil }
        defer { CRYPTO_free(output, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }
}
