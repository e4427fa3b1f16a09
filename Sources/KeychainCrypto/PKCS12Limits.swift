internal import COpenSSL

/// The work a PKCS#12 file may ask for. Each password-based encryption in the file names its
/// own iteration count (RFC 8018 PBES1/PBES2 parameters, RFC 7292 appendix C), and a file
/// is host input: a count near 2^31 would keep an import busy for minutes. Counts are read
/// from the parameters with OpenSSL's decoders before anything is derived.
extension PKCS12Contents {
    /// The most iterations any one derivation of a PKCS#12 file may ask for. Tools write 2,048
    /// (OpenSSL) to a few hundred thousand; one million takes about a second here.
    public static let maximumIterations = 1_000_000

    /// Throws unless the PBE `algorithm`'s iteration count is at most ``maximumIterations``.
    /// An algorithm whose parameters are not PBES1/PKCS#12 PBE or PBES2-with-PBKDF2 is left
    /// to OpenSSL, which decrypts only those.
    static func checkIterations(_ algorithm: UnsafePointer<X509_ALGOR>?) throws(CryptoError) {
        guard let count = iterations(algorithm) else { return }
        guard count >= 1, count <= maximumIterations else {
            throw CryptoError(
                .unsupported,
                "the PKCS#12 file asks for \(count) iterations; at most \(maximumIterations) are run")
        }
    }

    /// The iteration count of a password-based encryption algorithm, or nil when its
    /// parameters are not a kind this reads. -1 stands for a count too large for a long.
    static func iterations(_ algorithm: UnsafePointer<X509_ALGOR>?) -> Int? {
        guard let sequence = sequenceParameter(algorithm) else { return nil }
        var object: OpaquePointer?
        X509_ALGOR_get0(&object, nil, nil, algorithm)
        if OBJ_obj2nid(object) == NID_pbes2 {
            guard let parameters = decode(sequence, d2i_PBE2PARAM) else { return nil }
            defer { PBE2PARAM_free(parameters) }
            var keyFunction: OpaquePointer?
            X509_ALGOR_get0(&keyFunction, nil, nil, parameters.pointee.keyfunc)
            guard OBJ_obj2nid(keyFunction) == NID_id_pbkdf2,
                let inner = sequenceParameter(parameters.pointee.keyfunc),
                let pbkdf2 = decode(inner, d2i_PBKDF2PARAM)
            else { return nil }
            defer { PBKDF2PARAM_free(pbkdf2) }
            return pbkdf2.pointee.iter.map { Int(ASN1_INTEGER_get($0)) }
        }
        guard let parameters = decode(sequence, d2i_PBEPARAM) else { return nil }
        defer { PBEPARAM_free(parameters) }
        return parameters.pointee.iter.map { Int(ASN1_INTEGER_get($0)) }
    }

    /// The DER of an algorithm's SEQUENCE parameter.
    private static func sequenceParameter(_ algorithm: UnsafePointer<X509_ALGOR>?) -> [UInt8]? {
        guard let algorithm else { return nil }
        var type: Int32 = 0
        var value: UnsafeRawPointer?
        X509_ALGOR_get0(nil, &type, &value, algorithm)
        guard type == V_ASN1_SEQUENCE, let value else { return nil }
        let string = value.assumingMemoryBound(to: ASN1_STRING.self)
        guard let data = ASN1_STRING_get0_data(string) else { return nil }
        return Array(UnsafeBufferPointer(start: data, count: Int(ASN1_STRING_length(string))))
    }

    private static func decode<T>(
        _ der: [UInt8],
        _ d2i: (
            UnsafeMutablePointer<UnsafeMutablePointer<T>?>?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, Int
        ) ->
            UnsafeMutablePointer<T>?
    ) -> UnsafeMutablePointer<T>? {
        let decoded = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i(nil, &cursor, buffer.count)
        }
        ERR_clear_error()
        return decoded
    }
}
