internal import COpenSSL

// The key and signature encodings of Apple's SecKey API, which the Swift faces speak:
// `SecKeyCopyExternalRepresentation` and `SecKeyCreateWithData` use PKCS#1 for RSA and
// ANSI X9.63 for EC, and `kSecKeyAlgorithmECDSASignature…X962…` signatures are DER
// ECDSA-Sig-Value, not PKCS#11's r ‖ s. Every encoding goes through OpenSSL.

extension AsymmetricKey {
    /// The public key as Apple's `SecKeyCopyExternalRepresentation` gives it: the contents of
    /// the SubjectPublicKeyInfo's BIT STRING, which is a PKCS#1 RSAPublicKey for RSA, the
    /// X9.63 uncompressed point 04 ‖ X ‖ Y for EC and the 32 raw bytes for Ed25519.
    public var publicKeyRepresentation: [UInt8] {
        AsymmetricKey.subjectPublicKeyBits(subjectPublicKeyInfo) ?? []
    }

    /// The contents of a SubjectPublicKeyInfo's BIT STRING, read with OpenSSL's DER reader
    /// (no key is decoded), or nil when `info` is not a SubjectPublicKeyInfo.
    static func subjectPublicKeyBits(_ info: [UInt8]) -> [UInt8]? {
        info.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress,
                let spki = DERElement(base, at: 0, limit: buffer.count),
                let algorithm = DERElement(base, at: spki.content.lowerBound, limit: spki.content.upperBound),
                let key = DERElement(base, at: algorithm.whole.upperBound, limit: spki.content.upperBound),
                key.tag == V_ASN1_BIT_STRING, !key.content.isEmpty
            else { return nil }
            return Array(buffer[(key.content.lowerBound + 1)..<key.content.upperBound])
        }
    }

    /// The private key as Apple's `SecKeyCopyExternalRepresentation` gives it: a PKCS#1
    /// RSAPrivateKey for RSA, 04 ‖ X ‖ Y ‖ K (the scalar as wide as the field) for EC, the 32
    /// raw bytes for Ed25519. Nil for a public key.
    public var privateKeyRepresentation: [UInt8]? { secretPrivateKeyRepresentation?.copyBytes() }

    /// ``privateKeyRepresentation`` in a self-wiping buffer; no other copy of the private
    /// parts is left behind.
    public var secretPrivateKeyRepresentation: SecretBytes? {
        guard hasPrivateKey else { return nil }
        switch algorithm {
        case .rsa: return encoded(structure: CString.typeSpecific, selection: p11k_select_keypair)
        case .ec(let curve):
            guard let point = publicPoint, let scalar = secretComponent("priv") else { return nil }
            let width = (curve.bits + 7) / 8
            guard scalar.count <= width else { return nil }
            return SecretBytes(count: point.count + width) { buffer in
                guard let base = buffer.baseAddress else { return }
                point.withUnsafeBytes { source in
                    if let pointBase = source.baseAddress {
                        base.copyMemory(from: pointBase, byteCount: source.count)
                    }
                }
                scalar.withUnsafeBytes { source in
                    if let scalarBase = source.baseAddress {
                        (base + point.count + width - source.count).copyMemory(
                            from: scalarBase, byteCount: source.count)
                    }
                }
            }
        case .ed25519, .ed448, .x25519, .x448: return secretRawPrivateKey
        case nil: return nil
        }
    }

    /// An RSA public key from its PKCS#1 RSAPublicKey DER (Apple's external representation),
    /// decoded in the module's library context. RSA sizes outside ``rsaKeySizes`` are refused.
    public convenience init(rsaPublicKey der: [UInt8]) throws(CryptoError) {
        var key: OpaquePointer?
        let decoded: Bool = der.withUnsafeBufferPointer { buffer in
            guard
                let decoder = OSSL_DECODER_CTX_new_for_pkey(
                    &key, CString.der, CString.typeSpecific, CString.rsa, p11k_select_public_key,
                    LibraryContext.pointer, nil)
            else { return false }
            defer { OSSL_DECODER_CTX_free(decoder) }
            var cursor = buffer.baseAddress
            var remaining = buffer.count
            // Trailing bytes mean the data was not one key.
            return OSSL_DECODER_from_data(decoder, &cursor, &remaining) == 1 && remaining == 0
        }
        guard decoded, let key else {
            EVP_PKEY_free(key)
            throw CryptoError.openSSL(.invalidInput, "the data is not a PKCS#1 RSA public key")
        }
        try self.init(checking: key, hasPrivateKey: false)
    }

    /// An ECDSA signature of this key as DER ECDSA-Sig-Value (X9.62, Apple's and OpenSSL's
    /// form), from PKCS#11's r ‖ s. Nil when `raw` is not two curve-wide integers.
    public func ecdsaSignatureDER(fromRaw raw: [UInt8]) -> [UInt8]? {
        derECDSA(fromRaw: raw)
    }

    /// PKCS#11's r ‖ s form of a DER ECDSA-Sig-Value made by this key's curve. Nil unless
    /// `der` is exactly one well-formed signature whose integers fit the curve.
    public func ecdsaSignatureRaw(fromDER der: [UInt8]) -> [UInt8]? {
        guard let raw = try? rawECDSA(fromDER: der), derECDSA(fromRaw: raw) == der else {
            ERR_clear_error()
            return nil
        }
        return raw
    }
}
