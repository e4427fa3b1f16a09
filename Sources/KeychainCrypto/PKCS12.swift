internal import COpenSSL

/// The contents of a password-protected PKCS#12 file (RFC 7292, `.p12` / `.pfx`), as
/// OpenSSL's `PKCS12_parse` reads them: one private key, the certificate that matches it and
/// the other certificates of the file (its chain).
///
/// Files made with the legacy encodings (RC2-40 for certificates, as `openssl pkcs12 -legacy`
/// and older tools write) need OpenSSL 3's legacy provider. It is loaded the first time a
/// file whose password is right fails to decrypt, and only then: most files never need it.
public struct PKCS12Contents: Sendable {
    /// The private key, or nil when the file holds certificates only.
    public let privateKey: AsymmetricKey?
    /// The DER of the certificate whose public key is `privateKey`'s (or, without a key, the
    /// first certificate).
    public let certificate: [UInt8]?
    /// The DER of the file's other certificates, in file order.
    public let otherCertificates: [[UInt8]]
    /// The friendlyName bag attribute of the certificate, if the file gives one (Apple's
    /// kSecImportItemLabel).
    public let friendlyName: String?
    /// The localKeyId bag attribute of the certificate, if the file gives one (Apple's
    /// kSecImportItemKeyID).
    public let localKeyID: [UInt8]?

    /// Parses and decrypts a DER PKCS#12 file.
    ///
    /// - Throws: ``CryptoError/Code/wrongPassword`` when the password does not open the file
    ///   (its integrity MAC does not verify, or, without a MAC, nothing decrypts);
    ///   ``CryptoError/Code/invalidInput`` when the bytes are not PKCS#12;
    ///   ``CryptoError/Code/unsupported`` for a key type the token cannot hold.
    public init(der: [UInt8], password: String) throws(CryptoError) {
        let p12: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PKCS12(nil, &cursor, buffer.count)
        }
        guard let p12 else { throw CryptoError.openSSL(.invalidInput, "the data is not a DER PKCS#12 file") }
        defer { PKCS12_free(p12) }
        // PKCS12_parse treats an empty password as "none" and tries both forms, so its failure
        // cannot tell a wrong password from damage; the MAC check here can.
        let passwords: [[CChar]?] = password.isEmpty ? [nil, [0]] : [Array(password.utf8CString)]
        let hasMAC = PKCS12_mac_present(p12) == 1
        var chosen: [CChar]?? = hasMAC ? nil : .some(passwords[0])
        if hasMAC {
            for candidate in passwords where PKCS12Contents.verifyMAC(p12, candidate) {
                chosen = .some(candidate)
                break
            }
            ERR_clear_error()
        }
        guard let chosen else {
            throw CryptoError(.wrongPassword, "the password does not open the PKCS#12 file")
        }
        var parsed = PKCS12Contents.parse(p12, password: chosen)
        if parsed == nil, LegacyProvider.load() {
            // RC2 and other legacy ciphers live in OpenSSL 3's legacy provider.
            parsed = PKCS12Contents.parse(p12, password: chosen)
        }
        guard let parsed else {
            if !hasMAC {
                throw CryptoError(.wrongPassword, "the PKCS#12 file does not decrypt with this password")
            }
            throw CryptoError.openSSL(.invalidInput, "the PKCS#12 file does not decode")
        }
        self = parsed
    }

    private init(
        privateKey: AsymmetricKey?, certificate: [UInt8]?, otherCertificates: [[UInt8]],
        friendlyName: String?,
        localKeyID: [UInt8]?
    ) {
        self.privateKey = privateKey
        self.certificate = certificate
        self.otherCertificates = otherCertificates
        self.friendlyName = friendlyName
        self.localKeyID = localKeyID
    }

    private static func verifyMAC(_ p12: OpaquePointer, _ password: [CChar]?) -> Bool {
        guard let password else { return PKCS12_verify_mac(p12, nil, 0) == 1 }
        return password.withUnsafeBufferPointer { buffer in
            PKCS12_verify_mac(p12, buffer.baseAddress, Int32(buffer.count - 1)) == 1
        }
    }

    /// One PKCS12_parse run; nil when it fails (OpenSSL's error queue is cleared).
    private static func parse(_ p12: OpaquePointer, password: [CChar]?) -> PKCS12Contents? {
        var pkey: OpaquePointer?
        var certificate: OpaquePointer?
        var others: OpaquePointer?
        let ok: Int32
        if let password {
            ok = password.withUnsafeBufferPointer {
                PKCS12_parse(p12, $0.baseAddress, &pkey, &certificate, &others)
            }
        } else {
            ok = PKCS12_parse(p12, nil, &pkey, &certificate, &others)
        }
        defer {
            X509_free(certificate)
            if let others { OPENSSL_sk_pop_free(others, freeCertificate) }
        }
        guard ok == 1 else {
            EVP_PKEY_free(pkey)
            ERR_clear_error()
            return nil
        }
        let key = pkey.map { AsymmetricKey(owning: $0, hasPrivateKey: true) }
        var otherDERs: [[UInt8]] = []
        if let others {
            for index in 0..<OPENSSL_sk_num(others) {
                if let element = OPENSSL_sk_value(others, index),
                    let der = derEncoding(OpaquePointer(element))
                {
                    otherDERs.append(der)
                }
            }
        }
        var leaf = certificate.flatMap(derEncoding)
        if leaf == nil, key == nil, !otherDERs.isEmpty { leaf = otherDERs.removeFirst() }
        var friendlyName: String?
        var localKeyID: [UInt8]?
        if let certificate {
            var length: Int32 = 0
            if let alias = X509_alias_get0(certificate, &length), length > 0 {
                friendlyName = String(
                    decoding: UnsafeBufferPointer(start: alias, count: Int(length)), as: UTF8.self)
            }
            length = 0
            if let keyID = X509_keyid_get0(certificate, &length), length > 0 {
                localKeyID = Array(UnsafeBufferPointer(start: keyID, count: Int(length)))
            }
        }
        return PKCS12Contents(
            privateKey: key, certificate: leaf, otherCertificates: otherDERs, friendlyName: friendlyName,
            localKeyID: localKeyID)
    }

    private static func derEncoding(_ certificate: OpaquePointer) -> [UInt8]? {
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509(certificate, &output)
        guard length > 0, let output else { return nil }
        defer { CRYPTO_free(output, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }
}

/// `sk_X509_pop_free`'s free function (the macro does not import).
private func freeCertificate(_ element: UnsafeMutableRawPointer?) {
    X509_free(element.map { OpaquePointer($0) })
}

/// OpenSSL 3's legacy provider (RC2, RC4, DES…), loaded at most once per process, with the
/// default provider, which loading any provider explicitly would otherwise stop loading
/// implicitly.
enum LegacyProvider {
    /// Loads it (the first call only); false when it is not installed.
    static func load() -> Bool { loaded }

    private static let loaded: Bool = {
        guard OSSL_PROVIDER_load(nil, "default") != nil else { return false }
        let legacy = OSSL_PROVIDER_load(nil, "legacy") != nil
        ERR_clear_error()
        return legacy
    }()
}
