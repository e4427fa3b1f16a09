internal import COpenSSL

/// The parts a PKCS#11 key object is imported from (C_CreateObject templates, v2.40 §2.1.2–
/// §2.1.3, §2.3.3–2.3.4, v3.0 §2.3.5–2.3.6 Edwards, §2.3.7–2.3.8 Montgomery), as unsigned
/// big-endian integers or octets. The Edwards and Montgomery values are the raw octets of
/// RFC 8032 and RFC 7748.
public enum KeyComponents: Sendable {
    case rsaPublic(modulus: [UInt8], publicExponent: [UInt8])
    case rsaPrivate(
        modulus: [UInt8], publicExponent: [UInt8], privateExponent: [UInt8], prime1: [UInt8], prime2: [UInt8],
        exponent1: [UInt8], exponent2: [UInt8], coefficient: [UInt8])
    /// `point`: the uncompressed point (04 ‖ x ‖ y).
    case ecPublic(EllipticCurve, point: [UInt8])
    case ecPrivate(EllipticCurve, scalar: [UInt8])
    case ed25519Public([UInt8])
    case ed25519Private([UInt8])
    case ed448Public([UInt8])
    case ed448Private([UInt8])
    case x25519Public([UInt8])
    case x25519Private([UInt8])
    case x448Public([UInt8])
    case x448Private([UInt8])
}

extension KeyComponents {
    /// The algorithm of raw Edwards and Montgomery parts, else nil.
    var octetStringAlgorithm: KeyAlgorithm? {
        switch self {
        case .ed25519Public, .ed25519Private: .ed25519
        case .ed448Public, .ed448Private: .ed448
        case .x25519Public, .x25519Private: .x25519
        case .x448Public, .x448Private: .x448
        case .rsaPublic, .rsaPrivate, .ecPublic, .ecPrivate: nil
        }
    }
}

extension AsymmetricKey {
    /// Builds a key from its parts with OpenSSL (EVP_PKEY_fromdata); an EC private key's
    /// public point is computed from the scalar. Throws `.invalidInput` for parts that do
    /// not make a key.
    public convenience init(components: KeyComponents) throws(CryptoError) {
        let invalid = CryptoError(.invalidInput, "the key parts do not make a valid key")
        switch components {
        // try? below: every OpenSSL failure of a raw key is the same answer to the caller, bytes
        // that make no key (`invalid`); the detail is not the caller's to act on.
        case .ed25519Public(let bytes), .ed448Public(let bytes), .x25519Public(let bytes),
            .x448Public(let bytes):
            guard let algorithm = components.octetStringAlgorithm,
                let key = try? AsymmetricKey.rawKey(bytes, algorithm: algorithm, isPrivate: false)
            else { throw invalid }
            self.init(owning: key, hasPrivateKey: false)
        case .ed25519Private(let bytes), .ed448Private(let bytes), .x25519Private(let bytes),
            .x448Private(let bytes):
            guard let algorithm = components.octetStringAlgorithm,
                let key = try? AsymmetricKey.rawKey(bytes, algorithm: algorithm, isPrivate: true)
            else { throw invalid }
            self.init(owning: key, hasPrivateKey: true)
        case .rsaPublic(let n, let e):
            try AsymmetricKey.checkRSASize(AsymmetricKey.bitLength(n))
            let key = try AsymmetricKey.fromData(
                "RSA", selection: p11k_select_public_key, numbers: [("n", n), ("e", e)], strings: [],
                octets: [])
            self.init(owning: key, hasPrivateKey: false)
        case .rsaPrivate(let n, let e, let d, let p, let q, let dp, let dq, let qinv):
            // Before fromdata and the pairwise check, whose cost grows with the size.
            try AsymmetricKey.checkRSASize(AsymmetricKey.bitLength(n))
            let key = try AsymmetricKey.fromData(
                "RSA", selection: p11k_select_keypair,
                numbers: [("n", n), ("e", e)],
                secretNumbers: [
                    ("d", d), ("rsa-factor1", p), ("rsa-factor2", q), ("rsa-exponent1", dp),
                    ("rsa-exponent2", dq), ("rsa-coefficient1", qinv),
                ], strings: [], octets: [])
            self.init(owning: key, hasPrivateKey: true)
        case .ecPublic(let curve, let point):
            let key = try AsymmetricKey.fromData(
                "EC", selection: p11k_select_public_key, numbers: [], strings: [("group", curve.groupName)],
                octets: [("pub", point)])
            self.init(owning: key, hasPrivateKey: false)
        case .ecPrivate(let curve, let scalar):
            let point = try AsymmetricKey.publicPoint(curve, scalar: scalar)
            let key = try AsymmetricKey.fromData(
                "EC", selection: p11k_select_keypair, numbers: [], secretNumbers: [("priv", scalar)],
                strings: [("group", curve.groupName)], octets: [("pub", point)])
            self.init(owning: key, hasPrivateKey: true)
        }
        guard algorithm != nil else { throw invalid }
    }

    /// The length in bits of an unsigned big-endian integer (leading zero octets ignored).
    static func bitLength(_ bytes: [UInt8]) -> Int {
        guard let first = bytes.firstIndex(where: { $0 != 0 }) else { return 0 }
        let octets = bytes.count - first
        return (octets - 1) * 8 + (8 - bytes[first].leadingZeroBitCount)
    }

    /// A key from OSSL_PARAMs. `secretNumbers` go through OpenSSL's secure big numbers, which
    /// OSSL_PARAM_BLD places in a block that OSSL_PARAM_free clears.
    private static func fromData(
        _ name: String, selection: Int32, numbers: [(String, [UInt8])],
        secretNumbers: [(String, [UInt8])] = [], strings: [(String, String)],
        octets: [(String, [UInt8])]
    ) throws(CryptoError) -> OpaquePointer {
        guard let builder = OSSL_PARAM_BLD_new() else {
            throw CryptoError.openSSL(.failed, "cannot allocate")
        }
        defer { OSSL_PARAM_BLD_free(builder) }
        // The builder keeps the pointers it is given, names included, until
        // OSSL_PARAM_BLD_to_param: everything is copied into buffers that outlive it.
        var buffers: [UnsafeMutableRawPointer] = []
        defer { buffers.forEach { $0.deallocate() } }
        func copy(_ bytes: [UInt8]) -> UnsafeMutableRawPointer {
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
            bytes.withUnsafeBytes { source in
                if let base = source.baseAddress { buffer.copyMemory(from: base, byteCount: source.count) }
            }
            buffers.append(buffer)
            return buffer
        }
        func cString(_ text: String) -> UnsafeMutablePointer<CChar> {
            copy(Array(text.utf8) + [0]).assumingMemoryBound(to: CChar.self)
        }
        var bigNumbers: [OpaquePointer] = []
        defer { bigNumbers.forEach { BN_clear_free($0) } }
        var ok = true
        for (index, (key, bytes)) in (numbers + secretNumbers).enumerated() {
            let secret = index >= numbers.count
            guard !bytes.isEmpty, bytes.count <= maximumPartLength else {
                throw CryptoError(.invalidInput, "key part \(key) is empty or too long")
            }
            guard let number = secret ? BN_secure_new() : BN_new() else {
                throw CryptoError.openSSL(.failed, "cannot allocate")
            }
            bigNumbers.append(number)
            guard BN_bin2bn(bytes, Int32(bytes.count), number) != nil else {
                throw CryptoError.openSSL(.failed, "cannot read key part \(key)")
            }
            ok = ok && OSSL_PARAM_BLD_push_BN(builder, cString(key), number) == 1
        }
        for (key, value) in strings {
            ok = ok && OSSL_PARAM_BLD_push_utf8_string(builder, cString(key), cString(value), 0) == 1
        }
        for (key, bytes) in octets {
            ok = ok && OSSL_PARAM_BLD_push_octet_string(builder, cString(key), copy(bytes), bytes.count) == 1
        }
        guard ok, let parameters = OSSL_PARAM_BLD_to_param(builder) else {
            throw CryptoError.openSSL(.failed, "cannot describe the key")
        }
        defer { OSSL_PARAM_free(parameters) }
        guard let context = EVP_PKEY_CTX_new_from_name(LibraryContext.pointer, name, nil) else {
            throw CryptoError.openSSL(.failed, "cannot create a key")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_fromdata_init(context) == 1,
            EVP_PKEY_fromdata(context, &key, selection, parameters) == 1, let key
        else { throw CryptoError.openSSL(.invalidInput, "the key parts do not make a key") }
        // fromdata checks little; a key that fails OpenSSL's own check is refused here.
        guard let check = EVP_PKEY_CTX_new_from_pkey(LibraryContext.pointer, key, nil) else {
            EVP_PKEY_free(key)
            throw CryptoError.openSSL(.failed, "cannot check the key")
        }
        defer { EVP_PKEY_CTX_free(check) }
        let valid =
            selection == p11k_select_keypair ? EVP_PKEY_pairwise_check(check) : EVP_PKEY_public_check(check)
        guard valid == 1 else {
            EVP_PKEY_free(key)
            throw CryptoError.openSSL(.invalidInput, "the key parts do not make a valid key")
        }
        return key
    }

    /// The longest key part read, in octets: far above any accepted key (an 8192-bit modulus
    /// is 1024), and small enough for OpenSSL's int lengths.
    static let maximumPartLength = 64 * 1024

    /// The uncompressed public point of an EC private scalar (EC_POINT_mul).
    private static func publicPoint(_ curve: EllipticCurve, scalar: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard let group = EC_GROUP_new_by_curve_name_ex(LibraryContext.pointer, nil, curve.nid) else {
            throw CryptoError.openSSL(.failed, "cannot load the curve")
        }
        defer { EC_GROUP_free(group) }
        guard !scalar.isEmpty, scalar.count <= maximumPartLength, let number = BN_secure_new() else {
            throw CryptoError(.invalidInput, "the EC private value is empty or too long")
        }
        defer { BN_clear_free(number) }
        guard BN_bin2bn(scalar, Int32(scalar.count), number) != nil else {
            throw CryptoError.openSSL(.failed, "cannot read the EC private value")
        }
        guard let point = EC_POINT_new(group) else { throw CryptoError.openSSL(.failed, "cannot allocate") }
        defer { EC_POINT_free(point) }
        guard EC_POINT_mul(group, point, number, nil, nil, nil) == 1 else {
            throw CryptoError.openSSL(.invalidInput, "the EC private value is not valid for the curve")
        }
        let length = EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, nil, 0, nil)
        var bytes = [UInt8](repeating: 0, count: length)
        guard length > 0,
            EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, &bytes, length, nil) == length
        else { throw CryptoError.openSSL(.failed, "cannot encode the EC point") }
        return bytes
    }
}
