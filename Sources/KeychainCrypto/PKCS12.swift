internal import COpenSSL

/// The contents of a password-protected PKCS#12 file (RFC 7292, `.p12` / `.pfx`): one private
/// key, the certificate that matches it and the other certificates of the file (its chain),
/// as OpenSSL's `PKCS12_parse` would give them.
///
/// Every step runs in the module's own library context (`LibraryContext`), which OpenSSL 3.0's
/// `PKCS12_parse` and `PKCS12_verify_mac` cannot do: they use the context of the PKCS7 inside
/// the file, and `d2i_PKCS12` leaves that at the host's default context. So the file is
/// opened here step by step with OpenSSL's context-taking functions: the integrity MAC with
/// `PKCS12_key_gen_utf8_ex` and an EVP_MAC (RFC 7292 appendix B), encrypted safes by setting
/// each unpacked PKCS7's context before `PKCS12_unpack_p7encdata`, shrouded keys with
/// `PKCS12_decrypt_skey_ex` and `EVP_PKCS82PKEY_ex`. Certificates are taken from their bags
/// as DER, never decoded by `d2i_X509` (which would decode their keys in the default context).
///
/// Files made with the legacy encodings (RC2-40 for certificates, as `openssl pkcs12 -legacy`
/// and older tools write) need OpenSSL 3's legacy provider. It is loaded into the module's
/// context the first time a file whose password is right fails to decrypt, and only then.
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
        // An empty password is tried as "none" and as "", as PKCS12_parse does; the MAC check
        // tells which one the file uses (and a wrong password from damage).
        let passwords: [SecretBytes?] =
            password.isEmpty ? [nil, SecretBytes([0])] : [SecretBytes(Array(password.utf8) + [0])]
        let hasMAC = PKCS12_mac_present(p12) == 1
        var chosen: SecretBytes?? = hasMAC ? nil : .some(passwords[0])
        if hasMAC {
            var iterations: UnsafePointer<ASN1_INTEGER>?
            PKCS12_get0_mac(nil, nil, nil, &iterations, p12)
            let count = iterations.map { Int(ASN1_INTEGER_get($0)) } ?? 1
            guard count >= 1, count <= PKCS12Contents.maximumIterations else {
                throw CryptoError(
                    .unsupported,
                    "the PKCS#12 file's MAC asks for \(count) iterations; at most \(PKCS12Contents.maximumIterations) are run"
                )
            }
            let content = PKCS12Contents.authenticatedContent(der)
            for candidate in passwords
            where PKCS12Contents.verifyMAC(p12, content: content, password: candidate) {
                chosen = .some(candidate)
                break
            }
            ERR_clear_error()
        }
        guard let chosen else {
            throw CryptoError(.wrongPassword, "the password does not open the PKCS#12 file")
        }
        var parsed = try PKCS12Contents.parse(p12, password: chosen)
        if parsed == nil, LibraryContext.loadLegacyProvider() {
            // RC2 and other legacy ciphers live in OpenSSL 3's legacy provider.
            parsed = try PKCS12Contents.parse(p12, password: chosen)
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

    /// The octets the integrity MAC covers: the content of the authSafe ContentInfo's
    /// OCTET STRING (RFC 7292 §4), found with OpenSSL's DER reader. Nil when the file is not
    /// DER (BER with indefinite lengths or constructed strings): its MAC is then checked by
    /// OpenSSL's PKCS12_verify_mac, in the default context, the only way 3.0 offers.
    private static func authenticatedContent(_ der: [UInt8]) -> [UInt8]? {
        der.withUnsafeBufferPointer { buffer -> [UInt8]? in
            guard let base = buffer.baseAddress,
                let pfx = DERElement(base, at: 0, limit: buffer.count), pfx.tag == V_ASN1_SEQUENCE,
                let version = DERElement(base, at: pfx.content.lowerBound, limit: pfx.content.upperBound),
                version.tag == V_ASN1_INTEGER,
                let info = DERElement(base, at: version.whole.upperBound, limit: pfx.content.upperBound),
                info.tag == V_ASN1_SEQUENCE,
                let type = DERElement(base, at: info.content.lowerBound, limit: info.content.upperBound),
                type.tag == V_ASN1_OBJECT,
                let explicit = DERElement(base, at: type.whole.upperBound, limit: info.content.upperBound),
                explicit.tagClass == V_ASN1_CONTEXT_SPECIFIC, explicit.tag == 0,
                let octets = DERElement(
                    base, at: explicit.content.lowerBound, limit: explicit.content.upperBound),
                octets.tagClass == 0, octets.tag == V_ASN1_OCTET_STRING
            else { return nil }
            return Array(buffer[octets.content])
        }
    }

    /// RFC 7292 appendix B: the MAC key is PKCS12_key_gen (ID 3) of the password, salt and
    /// iteration count, with the MAC's own digest; the MAC is HMAC over `content`. Run with
    /// `PKCS12_key_gen_utf8_ex` and EVP_MAC in the module's context, as OpenSSL 3.0's
    /// PKCS12_verify_mac does (UTF-8 passwords; nil is "no password", "" the empty one).
    private static func verifyMAC(_ p12: OpaquePointer, content: [UInt8]?, password: SecretBytes?) -> Bool {
        guard let content else {
            // Not DER: OpenSSL's own check, in the default context (see authenticatedContent).
            guard let password else { return PKCS12_verify_mac(p12, nil, 0) == 1 }
            return password.withUnsafeBytes { bytes in
                PKCS12_verify_mac(
                    p12, bytes.bindMemory(to: CChar.self).baseAddress, Int32(clamping: bytes.count - 1)) == 1
            }
        }
        var mac: UnsafePointer<ASN1_OCTET_STRING>?
        var algorithm: UnsafePointer<X509_ALGOR>?
        var salt: UnsafePointer<ASN1_OCTET_STRING>?
        var iterations: UnsafePointer<ASN1_INTEGER>?
        PKCS12_get0_mac(&mac, &algorithm, &salt, &iterations, p12)
        var object: OpaquePointer?
        X509_ALGOR_get0(&object, nil, nil, algorithm)
        guard let mac, let salt, let object, let digestName = OBJ_nid2sn(OBJ_obj2nid(object)),
            let md = EVP_MD_fetch(LibraryContext.pointer, digestName, nil)
        else { return false }
        defer { EVP_MD_free(md) }
        let count = iterations.map { ASN1_INTEGER_get($0) } ?? 1
        let keyLength = Int(EVP_MD_get_size(md))
        // A stored count is bounded like a PIN record's: no file may make this run for minutes.
        guard count >= 1, count <= maximumIterations, keyLength > 0,
            let macBytes = ASN1_STRING_get0_data(mac), let saltBytes = ASN1_STRING_get0_data(salt)
        else { return false }
        var generated = false
        let key = SecretBytes(count: keyLength) { output in
            let ok: Int32
            if let password {
                ok = password.withUnsafeBytes { bytes in
                    PKCS12_key_gen_utf8_ex(
                        bytes.bindMemory(to: CChar.self).baseAddress, Int32(clamping: bytes.count - 1),
                        UnsafeMutablePointer(mutating: saltBytes), ASN1_STRING_length(salt), PKCS12_MAC_ID,
                        Int32(clamping: count), Int32(clamping: keyLength),
                        output.bindMemory(to: UInt8.self).baseAddress,
                        md, LibraryContext.pointer, nil)
                }
            } else {
                ok = PKCS12_key_gen_utf8_ex(
                    nil, 0, UnsafeMutablePointer(mutating: saltBytes), ASN1_STRING_length(salt),
                    PKCS12_MAC_ID,
                    Int32(clamping: count), Int32(clamping: keyLength),
                    output.bindMemory(to: UInt8.self).baseAddress,
                    md, LibraryContext.pointer, nil)
            }
            generated = ok == 1
        }
        guard generated, let name = EVP_MD_get0_name(md),
            // A MAC that cannot be computed cannot be verified: the file is refused as if its
            // password were wrong, which is all a caller can act on.
            let expected = try? HMAC.compute(key: key, digestName: name, parts: [content])
        else { return false }
        let macLength = Int(ASN1_STRING_length(mac))
        return expected.count == macLength
            && expected.withUnsafeBytes { CRYPTO_memcmp($0.baseAddress, macBytes, macLength) == 0 }
    }

    /// What one pass over the file's safes found.
    private struct Found {
        var key: AsymmetricKey?
        var certificates: [(der: [UInt8], friendlyName: String?, localKeyID: [UInt8]?)] = []
    }

    /// One pass over the file's safes; nil when a safe or key does not decrypt (OpenSSL's
    /// error queue is cleared). Throws for a key the token cannot hold.
    private static func parse(_ p12: OpaquePointer, password: SecretBytes?) throws(CryptoError)
        -> PKCS12Contents?
    {
        guard let safes = PKCS12_unpack_authsafes(p12) else {
            ERR_clear_error()
            return nil
        }
        defer { OPENSSL_sk_pop_free(safes, freePKCS7) }
        var found = Found()
        for index in 0..<OPENSSL_sk_num(safes) {
            guard let element = OPENSSL_sk_value(safes, index) else { continue }
            let p7 = element.assumingMemoryBound(to: PKCS7.self)
            // The safes inherit the default context from d2i_PKCS12; ours decrypts them.
            p7.pointee.ctx.libctx = LibraryContext.pointer
            let bags: OpaquePointer?
            switch OBJ_obj2nid(p7.pointee.type) {
            case NID_pkcs7_data: bags = PKCS12_unpack_p7data(p7)
            case NID_pkcs7_encrypted:
                let algorithm = p7.pointee.d.encrypted?.pointee.enc_data?.pointee.algorithm
                try checkIterations(algorithm.map { UnsafePointer($0) })
                bags = withPassword(password) { pointer, length in
                    PKCS12_unpack_p7encdata(p7, pointer, length)
                }
            default: continue
            }
            guard let bags else {
                ERR_clear_error()
                return nil
            }
            defer { OPENSSL_sk_pop_free(bags, freeSafeBag) }
            guard try collect(bags, password: password, into: &found, depth: 0) else {
                ERR_clear_error()
                return nil
            }
        }
        return try PKCS12Contents(found)
    }

    /// Reads the bags of one safe (RFC 7292 §4.2), as PKCS12_parse's parse_bag does: the
    /// first key, every X.509 certificate, nested safe contents (to a bounded depth).
    private static func collect(
        _ bags: OpaquePointer, password: SecretBytes?, into found: inout Found, depth: Int
    )
        throws(CryptoError) -> Bool
    {
        guard depth < 8 else { return false }
        for index in 0..<OPENSSL_sk_num(bags) {
            guard let element = OPENSSL_sk_value(bags, index) else { continue }
            let bag = OpaquePointer(element)
            switch PKCS12_SAFEBAG_get_nid(bag) {
            case NID_keyBag, NID_pkcs8ShroudedKeyBag:
                guard found.key == nil else { continue }
                let decrypted: OpaquePointer?
                if PKCS12_SAFEBAG_get_nid(bag) == NID_keyBag {
                    decrypted = nil
                } else {
                    var algorithm: UnsafePointer<X509_ALGOR>?
                    X509_SIG_get0(PKCS12_SAFEBAG_get0_pkcs8(bag), &algorithm, nil)
                    try checkIterations(algorithm)
                    decrypted = withPassword(password) { pointer, length in
                        PKCS12_decrypt_skey_ex(bag, pointer, length, LibraryContext.pointer, nil)
                    }
                    guard decrypted != nil else { return false }
                }
                // Freeing a PKCS8_PRIV_KEY_INFO clears its key octets.
                defer { PKCS8_PRIV_KEY_INFO_free(decrypted) }
                guard let info = decrypted ?? PKCS12_SAFEBAG_get0_p8inf(bag),
                    let pkey = EVP_PKCS82PKEY_ex(info, LibraryContext.pointer, nil)
                else { return false }
                found.key = try AsymmetricKey(checking: pkey, hasPrivateKey: true)
            case NID_certBag:
                guard PKCS12_SAFEBAG_get_bag_nid(bag) == NID_x509Certificate, let der = certificateDER(bag)
                else {
                    continue
                }
                found.certificates.append((der, friendlyName(bag), attributeOctets(bag, NID_localKeyID)))
            case NID_safeContentsBag:
                guard let nested = PKCS12_SAFEBAG_get0_safes(bag),
                    try collect(nested, password: password, into: &found, depth: depth + 1)
                else { return false }
            default: continue
            }
        }
        return true
    }

    /// The key, the certificate whose public key is the key's, and the others, as
    /// PKCS12_parse pairs them (it compares the keys, X509_check_private_key).
    private init(_ found: Found) throws(CryptoError) {
        var leafIndex: Int?
        if let key = found.key {
            leafIndex = found.certificates.firstIndex { certificate in
                // A certificate that does not parse cannot be the key's: look at the next.
                guard let info = try? X509Certificate(der: certificate.der).subjectPublicKeyInfo else {
                    return false
                }
                let publicKey: OpaquePointer? = info.withUnsafeBufferPointer { buffer in
                    var cursor = buffer.baseAddress
                    return d2i_PUBKEY_ex(nil, &cursor, buffer.count, LibraryContext.pointer, nil)
                }
                defer { EVP_PKEY_free(publicKey) }
                return publicKey.map { EVP_PKEY_eq($0, key.pkey) == 1 } ?? false
            }
            ERR_clear_error()
        }
        var others = found.certificates
        var leaf: (der: [UInt8], friendlyName: String?, localKeyID: [UInt8]?)?
        if let leafIndex { leaf = others.remove(at: leafIndex) }
        var certificate = leaf?.der
        if certificate == nil, found.key == nil, !others.isEmpty { certificate = others.removeFirst().der }
        self.init(
            privateKey: found.key, certificate: certificate, otherCertificates: others.map(\.der),
            friendlyName: leaf?.friendlyName, localKeyID: leaf?.localKeyID)
    }

    /// The certificate DER a certBag carries (RFC 7292 §4.2.3: SafeBag { bagId, [0] CertBag
    /// { certId, [0] OCTET STRING } }), read from the bag's DER encoding: 3.0 has no accessor
    /// for it but PKCS12_SAFEBAG_get1_cert, which decodes the certificate in the default
    /// context.
    private static func certificateDER(_ bag: OpaquePointer) -> [UInt8]? {
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_PKCS12_SAFEBAG(bag, &output)
        guard length > 0, let output else { return nil }
        defer { CRYPTO_free(output, #fileID, #line) }
        let encoded = UnsafeBufferPointer(start: output, count: Int(length))
        guard let base = encoded.baseAddress,
            let safeBag = DERElement(base, at: 0, limit: encoded.count), safeBag.tag == V_ASN1_SEQUENCE,
            let bagID = DERElement(base, at: safeBag.content.lowerBound, limit: safeBag.content.upperBound),
            let value = DERElement(base, at: bagID.whole.upperBound, limit: safeBag.content.upperBound),
            value.tagClass == V_ASN1_CONTEXT_SPECIFIC, value.tag == 0,
            let certBag = DERElement(base, at: value.content.lowerBound, limit: value.content.upperBound),
            certBag.tag == V_ASN1_SEQUENCE,
            let certID = DERElement(base, at: certBag.content.lowerBound, limit: certBag.content.upperBound),
            let certValue = DERElement(base, at: certID.whole.upperBound, limit: certBag.content.upperBound),
            certValue.tagClass == V_ASN1_CONTEXT_SPECIFIC, certValue.tag == 0,
            let octets = DERElement(
                base, at: certValue.content.lowerBound, limit: certValue.content.upperBound),
            octets.tagClass == 0, octets.tag == V_ASN1_OCTET_STRING
        else { return nil }
        return Array(encoded[octets.content])
    }

    private static func withPassword<R>(
        _ password: SecretBytes?, _ body: (UnsafePointer<CChar>?, Int32) -> R
    ) -> R {
        guard let password else { return body(nil, 0) }
        return password.withUnsafeBytes { bytes in
            body(bytes.bindMemory(to: CChar.self).baseAddress, Int32(clamping: bytes.count - 1))
        }
    }

    /// The friendlyName attribute (a BMPString) as UTF-8, as PKCS12_parse sets X509_alias.
    private static func friendlyName(_ bag: OpaquePointer) -> String? {
        guard let value = PKCS12_SAFEBAG_get0_attr(bag, NID_friendlyName),
            value.pointee.type == V_ASN1_BMPSTRING,
            let string = value.pointee.value.bmpstring, let text = X509Certificate.utf8(string), !text.isEmpty
        else { return nil }
        return text
    }

    private static func attributeOctets(_ bag: OpaquePointer, _ nid: Int32) -> [UInt8]? {
        guard let value = PKCS12_SAFEBAG_get0_attr(bag, nid), value.pointee.type == V_ASN1_OCTET_STRING,
            let octets = value.pointee.value.octet_string
        else { return nil }
        return bytes(octets).flatMap { $0.isEmpty ? nil : $0 }
    }

    private static func bytes(_ string: UnsafePointer<ASN1_STRING>) -> [UInt8]? {
        guard let data = ASN1_STRING_get0_data(string) else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(string))))
    }
}

/// `sk_PKCS7_pop_free`'s free function (the macro does not import).
private func freePKCS7(_ element: UnsafeMutableRawPointer?) {
    PKCS7_free(element?.assumingMemoryBound(to: PKCS7.self))
}

/// `sk_PKCS12_SAFEBAG_pop_free`'s free function.
private func freeSafeBag(_ element: UnsafeMutableRawPointer?) {
    PKCS12_SAFEBAG_free(element.map { OpaquePointer($0) })
}
