internal import COpenSSL

// ECDSA signatures in PKCS#11's form, r ‖ s with each integer as wide as the curve (v2.40
// §2.3.1), and in OpenSSL's and Apple's, DER ECDSA-Sig-Value (X9.62).

extension AsymmetricKey {
    /// Width of r and s in an ECDSA signature of this key.
    var ecdsaComponentLength: Int { (bits + 7) / 8 }

    /// PKCS#11 ECDSA signatures are r ‖ s, each as wide as the curve; OpenSSL's are DER.
    func rawECDSA(fromDER der: [UInt8]) throws(CryptoError) -> [UInt8] {
        try writtenBytes(capacity: 2 * ecdsaComponentLength) { (output) throws(CryptoError) in
            try withBytes(der) { (der) throws(CryptoError) in try writeRawECDSA(fromDER: der, into: output) }
        }
    }

    /// Writes r ‖ s of the DER signature `der` (a SEQUENCE of two INTEGERs and nothing after
    /// it) into `output` (at least twice `ecdsaComponentLength` bytes) and returns the bytes
    /// written. OpenSSL reads each element's tag and length (`ASN1_get_object`); an INTEGER's
    /// contents are its big-endian value, which is copied right-aligned into its half. This
    /// allocates nothing: `d2i_ECDSA_SIG` made two BIGNUMs and `BN_bn2binpad` wrote each in
    /// constant time, about 2,900 instructions per signature for a value that is public. An
    /// integer that is negative, not in DER's shortest form, or wider than the curve does not
    /// parse.
    func writeRawECDSA(fromDER der: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer)
        throws(CryptoError) -> Int
    {
        let width = ecdsaComponentLength
        guard output.count >= 2 * width, let base = output.baseAddress?.assumingMemoryBound(to: UInt8.self),
            var cursor = der.baseAddress?.assumingMemoryBound(to: UInt8.self)
        else { throw CryptoError(.failed, "an ECDSA signature of this key needs \(2 * width) bytes") }
        let end = cursor + der.count
        guard let sequence = Self.contents(&cursor, end, tag: V_ASN1_SEQUENCE, constructed: true),
            sequence == end - cursor
        else { throw CryptoError.openSSL(.failed, "ECDSA signature does not parse") }
        for half in 0..<2 {
            guard let length = Self.contents(&cursor, end, tag: V_ASN1_INTEGER, constructed: false),
                length > 0, cursor[0] & 0x80 == 0
            else { throw CryptoError.openSSL(.failed, "ECDSA signature does not parse") }
            var value = UnsafeBufferPointer(start: cursor, count: length)
            // DER's one zero byte before a value whose top bit is set, and no other.
            if value.count > 1, value[0] == 0 {
                guard value[1] & 0x80 != 0 else {
                    throw CryptoError(.failed, "ECDSA signature's integer is not in DER")
                }
                value = UnsafeBufferPointer(rebasing: value.dropFirst())
            }
            guard value.count <= width, let source = value.baseAddress else {
                throw CryptoError(.failed, "ECDSA signature's integer is wider than the curve")
            }
            let target = base + half * width
            target.update(repeating: 0, count: width - value.count)
            (target + width - value.count).update(from: source, count: value.count)
            cursor += length
        }
        guard cursor == end else {
            throw CryptoError(.failed, "ECDSA signature has bytes after its integers")
        }
        return 2 * width
    }

    /// The length of the contents of the DER element at `cursor` (before `end`) when it is a
    /// universal `tag`, constructed or not as said, and moves `cursor` to its contents; nil
    /// otherwise (OpenSSL's reason on the error queue for a malformed header).
    private static func contents(
        _ cursor: inout UnsafePointer<UInt8>, _ end: UnsafePointer<UInt8>, tag expected: Int32,
        constructed: Bool
    ) -> Int? {
        var start: UnsafePointer<UInt8>? = cursor
        var length = 0
        var tag: Int32 = 0
        var tagClass: Int32 = 0
        let flags = ASN1_get_object(&start, &length, &tag, &tagClass, end - cursor)
        guard flags & 0x80 == 0, (flags & V_ASN1_CONSTRUCTED != 0) == constructed, tag == expected,
            tagClass == V_ASN1_UNIVERSAL, let start, length >= 0, length <= end - start
        else { return nil }
        cursor = start
        return length
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
