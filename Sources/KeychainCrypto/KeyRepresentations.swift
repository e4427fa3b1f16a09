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
        let info = subjectPublicKeyInfo
        let pubkey: OpaquePointer? = info.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_X509_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let pubkey else { return [] }
        defer { X509_PUBKEY_free(pubkey) }
        var bytes: UnsafePointer<UInt8>?
        var length: Int32 = 0
        guard X509_PUBKEY_get0_param(nil, &bytes, &length, nil, pubkey) == 1, let bytes, length > 0 else {
            ERR_clear_error()
            return []
        }
        return Array(UnsafeBufferPointer(start: bytes, count: Int(length)))
    }

    /// The private key as Apple's `SecKeyCopyExternalRepresentation` gives it: a PKCS#1
    /// RSAPrivateKey for RSA, 04 ‖ X ‖ Y ‖ K (the scalar as wide as the field) for EC, the 32
    /// raw bytes for Ed25519. Nil for a public key.
    public var privateKeyRepresentation: [UInt8]? {
        guard hasPrivateKey else { return nil }
        switch algorithm {
        case .rsa:
            var output: UnsafeMutablePointer<UInt8>?
            let length = i2d_PrivateKey(pkey, &output)
            guard length > 0, let output else {
                ERR_clear_error()
                return nil
            }
            defer { CRYPTO_free(output, #fileID, #line) }
            return Array(UnsafeBufferPointer(start: output, count: Int(length)))
        case .ec(let curve):
            guard let point = publicPoint, let scalar = component("priv") else { return nil }
            let width = (curve.bits + 7) / 8
            guard scalar.count <= width else { return nil }
            return point + [UInt8](repeating: 0, count: width - scalar.count) + scalar
        case .ed25519: return rawPrivateKey
        case nil: return nil
        }
    }

    /// An RSA public key from its PKCS#1 RSAPublicKey DER (Apple's external representation).
    public convenience init(rsaPublicKey der: [UInt8]) throws(CryptoError) {
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            let key = d2i_PublicKey(EVP_PKEY_RSA, nil, &cursor, buffer.count)
            // Trailing bytes mean the data was not one key.
            if let key, cursor != buffer.baseAddress.map({ $0 + buffer.count }) {
                EVP_PKEY_free(key)
                return nil
            }
            return key
        }
        guard let key else {
            throw CryptoError.openSSL(.invalidInput, "the data is not a PKCS#1 RSA public key")
        }
        self.init(owning: key, hasPrivateKey: false)
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
