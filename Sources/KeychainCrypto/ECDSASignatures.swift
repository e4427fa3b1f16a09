internal import COpenSSL

// ECDSA signatures in PKCS#11's form, r ‖ s with each integer as wide as the curve (v2.40
// §2.3.1), and in OpenSSL's and Apple's, DER ECDSA-Sig-Value (X9.62).

extension AsymmetricKey {
    /// Width of r and s in an ECDSA signature of this key.
    var ecdsaComponentLength: Int { (bits + 7) / 8 }

    /// PKCS#11 ECDSA signatures are r ‖ s, each as wide as the curve; OpenSSL's are DER.
    func rawECDSA(fromDER der: [UInt8]) throws(CryptoError) -> [UInt8] {
        var signature: OpaquePointer?
        defer { ECDSA_SIG_free(signature) }
        return try writtenBytes(capacity: 2 * ecdsaComponentLength) { (output) throws(CryptoError) in
            try withBytes(der) { (der) throws(CryptoError) in
                try writeRawECDSA(fromDER: der, into: output, reusing: &signature)
            }
        }
    }

    /// Writes r ‖ s of the DER signature `der` into `output` (at least twice
    /// `ecdsaComponentLength` bytes) and returns the bytes written. DER is decoded into
    /// `signature`, an ECDSA_SIG the caller owns and may keep for the next signature (OpenSSL
    /// reuses it and its numbers; nil makes one). A DER that does not parse frees it and
    /// leaves nil.
    func writeRawECDSA(
        fromDER der: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer,
        reusing signature: inout OpaquePointer?
    ) throws(CryptoError) -> Int {
        let width = ecdsaComponentLength
        guard output.count >= 2 * width, let base = output.baseAddress?.assumingMemoryBound(to: UInt8.self),
            let length = Int32(exactly: width)
        else { throw CryptoError(.failed, "an ECDSA signature of this key needs \(2 * width) bytes") }
        var cursor = der.baseAddress?.assumingMemoryBound(to: UInt8.self)
        guard cursor != nil, let decoded = d2i_ECDSA_SIG(&signature, &cursor, der.count),
            let r = ECDSA_SIG_get0_r(decoded),
            let s = ECDSA_SIG_get0_s(decoded)
        else {
            throw CryptoError.openSSL(.failed, "ECDSA signature does not parse")
        }
        guard BN_bn2binpad(r, base, length) == length, BN_bn2binpad(s, base + width, length) == length else {
            throw CryptoError.openSSL(.failed, "ECDSA signature does not encode")
        }
        return 2 * width
    }

    /// OpenSSL's DER of PKCS#11's r ‖ s; nil unless `raw` is two curve-wide integers.
    func derECDSA(fromRaw raw: [UInt8]) -> [UInt8]? {
        let width = ecdsaComponentLength
        guard raw.count == 2 * width, let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = BN_bin2bn(raw, Int32(width), nil)
        let s = raw.withUnsafeBufferPointer { buffer in
            buffer.baseAddress.flatMap { BN_bin2bn($0 + width, Int32(width), nil) }
        }
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_ECDSA_SIG(signature, &output)
        guard length > 0, let output else { return nil }
        defer { CRYPTO_free(output, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }
}
