internal import COpenSSL

/// A SubjectPublicKeyInfo's algorithm name and size in bits, as `EVP_PKEY_get_base_id` and
/// `EVP_PKEY_get_bits` give them, read without decoding the key where its DER says enough:
/// OpenSSL 3 looks its key managers up by name on every decode, which was most of the time of a
/// listing of 10,000 certificates. An RSA key's size is its modulus's bits (RSA_bits); a
/// named-curve EC key's is the curve order's bits (what OpenSSL's EC key reports), computed once
/// per curve. Other keys, explicit curve parameters and anything that does not parse are
/// decoded by OpenSSL as before.
enum PublicKeySummary {
    static func of(_ spki: [UInt8]) -> (algorithm: String, bits: Int) {
        read(spki) ?? decoded(spki)
    }

    /// The key decoded into an EVP_PKEY: ("unknown", 0) when OpenSSL cannot.
    static func decoded(_ spki: [UInt8]) -> (algorithm: String, bits: Int) {
        let key: OpaquePointer? = spki.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY_ex(nil, &cursor, buffer.count, LibraryContext.pointer, nil)
        }
        defer {
            EVP_PKEY_free(key)
            ERR_clear_error()
        }
        guard let key else { return ("unknown", 0) }
        return (String(cString: OBJ_nid2sn(EVP_PKEY_get_base_id(key))), Int(EVP_PKEY_get_bits(key)))
    }

    /// RSA and named-curve EC keys from their DER; nil for anything else.
    static func read(_ spki: [UInt8]) -> (algorithm: String, bits: Int)? {
        spki.withUnsafeBufferPointer { buffer -> (algorithm: String, bits: Int)? in
            // SubjectPublicKeyInfo ::= SEQUENCE { SEQUENCE { OID, parameters }, BIT STRING }
            guard let base = buffer.baseAddress,
                let info = DERElement(base, at: 0, limit: buffer.count), info.tag == V_ASN1_SEQUENCE,
                info.whole.upperBound == buffer.count,
                let algorithm = DERElement(base, at: info.content.lowerBound, limit: info.content.upperBound),
                algorithm.tag == V_ASN1_SEQUENCE,
                let key = DERElement(base, at: algorithm.whole.upperBound, limit: info.content.upperBound),
                key.tag == V_ASN1_BIT_STRING, key.whole.upperBound == info.content.upperBound,
                let oid = DERElement(
                    base, at: algorithm.content.lowerBound, limit: algorithm.content.upperBound),
                oid.tag == V_ASN1_OBJECT
            else { return nil }
            let parameters = DERElement(base, at: oid.whole.upperBound, limit: algorithm.content.upperBound)
            switch nid(base, oid) {
            case NID_rsaEncryption:
                // The BIT STRING holds RSAPublicKey ::= SEQUENCE { modulus INTEGER, exponent INTEGER }
                // after its unused-bits octet, which must be 0.
                guard key.content.count > 1, base[key.content.lowerBound] == 0,
                    let sequence = DERElement(
                        base, at: key.content.lowerBound + 1, limit: key.content.upperBound),
                    sequence.tag == V_ASN1_SEQUENCE, sequence.whole.upperBound == key.content.upperBound,
                    let modulus = DERElement(
                        base, at: sequence.content.lowerBound, limit: sequence.content.upperBound),
                    modulus.tag == V_ASN1_INTEGER, modulus.tagClass == 0,
                    let exponent = DERElement(
                        base, at: modulus.whole.upperBound, limit: sequence.content.upperBound),
                    exponent.tag == V_ASN1_INTEGER, exponent.whole.upperBound == sequence.content.upperBound,
                    let bits = positiveBits(base, modulus), bits > 0
                else { return nil }
                return (String(cString: OBJ_nid2sn(NID_rsaEncryption)), bits)
            case NID_X9_62_id_ecPublicKey:
                // A named curve's OID as parameters. The point is not checked: a point off its
                // curve, which OpenSSL's decode refuses ("unknown", 0), shows the curve's size.
                guard let parameters, parameters.tag == V_ASN1_OBJECT,
                    parameters.whole.upperBound == algorithm.content.upperBound,
                    key.content.count > 1, base[key.content.lowerBound] == 0,
                    let bits = curveOrderBits[nid(base, parameters)]
                else { return nil }
                return (String(cString: OBJ_nid2sn(NID_X9_62_id_ecPublicKey)), bits)
            default:
                return nil
            }
        }
    }

    /// The NID of the OBJECT IDENTIFIER `element`, NID_undef when OpenSSL knows none.
    private static func nid(_ base: UnsafePointer<UInt8>, _ element: DERElement) -> Int32 {
        var cursor: UnsafePointer<UInt8>? = base + element.whole.lowerBound
        guard let object = d2i_ASN1_OBJECT(nil, &cursor, element.whole.count) else {
            ERR_clear_error()
            return NID_undef
        }
        defer { ASN1_OBJECT_free(object) }
        return OBJ_obj2nid(object)
    }

    /// The bits of a non-negative INTEGER `element` (BN_num_bits); nil for a negative one.
    private static func positiveBits(_ base: UnsafePointer<UInt8>, _ element: DERElement) -> Int? {
        guard let count = Int32(exactly: element.content.count), count > 0,
            base[element.content.lowerBound] & 0x80 == 0,
            let number = BN_bin2bn(base + element.content.lowerBound, count, nil)
        else { return nil }
        defer { BN_free(number) }
        return Int(BN_num_bits(number))
    }

    /// The order's bits of every named curve OpenSSL builds in, made once (a few milliseconds).
    private static let curveOrderBits: [Int32: Int] = {
        let count = EC_get_builtin_curves(nil, 0)
        var curves = [EC_builtin_curve](repeating: EC_builtin_curve(), count: count)
        let filled = curves.withUnsafeMutableBufferPointer { EC_get_builtin_curves($0.baseAddress, count) }
        var bits: [Int32: Int] = [:]
        for curve in curves.prefix(filled) {
            guard let group = EC_GROUP_new_by_curve_name_ex(LibraryContext.pointer, nil, curve.nid) else {
                continue
            }
            bits[curve.nid] = Int(EC_GROUP_order_bits(group))
            EC_GROUP_free(group)
        }
        ERR_clear_error()
        return bits
    }()
}
