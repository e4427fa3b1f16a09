internal import COpenSSL

/// RSAES-PKCS1-v1_5 decryption (CKM_RSA_PKCS) with implicit rejection, so that a caller can
/// never tell a ciphertext with bad padding from a good one by the result (Bleichenbacher's
/// attack, CRYPTO '98).
///
/// A ciphertext whose padding does not check decrypts to a synthetic message, derived
/// deterministically from the private key and the ciphertext, of a length that is itself
/// derived that way: the same bad ciphertext always gives the same message, and different
/// ones give different messages. This is the method of the IRTF CFRG draft "Implementation
/// Guidance for the PKCS #1 RSA Encryption" (draft-irtf-cfrg-rsa-guidance, §7) as OpenSSL
/// 3.2 and later implement it by default, byte for byte, so a token moved to such an OpenSSL
/// gives the same synthetic messages (a difference would itself tell an attacker which
/// messages are synthetic). With an OpenSSL that has it (3.2 or later, asked at run time) the
/// library's own implementation is used.
///
/// What OpenSSL 3.0 promises about timing, and what this adds: the RSA private operation is
/// blinded and uses constant-time modular exponentiation; the raw decryption with
/// RSA_NO_PADDING has no branch on the plaintext. The padding check, the choice between the
/// real and the synthetic message and the copy out are written here without branches or
/// memory accesses that depend on the plaintext (masks, as OpenSSL's constant_time_* helpers
/// do), and the synthetic message is computed for every ciphertext, good or bad. Swift gives no
/// guarantee that its optimiser keeps code branch-free, so this is best effort at the machine
/// level. The length of the returned message is public, as it is for any decryption.
extension AsymmetricKey {
    /// True when the linked OpenSSL rejects bad PKCS#1 v1.5 padding implicitly by itself.
    static let openSSLRejectsImplicitly = OpenSSL_version_num() >= 0x3020_0000

    /// Decrypts a CKM_RSA_PKCS ciphertext. Throws only for what is public: a ciphertext
    /// that is not exactly one modulus long (RFC 8017 §7.2.2 step 1) or not below the modulus,
    /// a key that cannot decrypt, OpenSSL failing.
    func decryptPKCS1WithImplicitRejection(_ ciphertext: [UInt8]) throws(CryptoError) -> [UInt8] {
        let modulusLength = Int(EVP_PKEY_get_size(pkey))
        try checkCiphertext(length: ciphertext.count)
        guard modulusLength >= 11 + 2 else {
            throw CryptoError(.invalidInput, "the modulus is too short for PKCS#1 v1.5")
        }
        let encoded = try rawDecrypt(ciphertext, length: modulusLength)
        let kdk = try keyDerivationKey(ciphertext: ciphertext, length: modulusLength)
        let synthetic = try ImplicitRejection.prf(
            key: kdk, label: "message", length: modulusLength)
        let candidates = try ImplicitRejection.prf(
            key: kdk, label: "length", length: ImplicitRejection.lengthCandidates * 2)
        return encoded.withUnsafeBytes { message in
            synthetic.withUnsafeBytes { synthetic in
                candidates.withUnsafeBytes { candidates in
                    ImplicitRejection.select(
                        message: message, synthetic: synthetic, candidates: candidates)
                }
            }
        }
    }

    /// m = c^d mod n with no padding removed, k octets, in a self-wiping buffer.
    private func rawDecrypt(_ ciphertext: [UInt8], length: Int) throws(CryptoError) -> SecretBytes {
        guard let context = EVP_PKEY_CTX_new_from_pkey(LibraryContext.pointer, pkey, nil) else {
            throw CryptoError.openSSL(.failed, "cannot create a key operation")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_decrypt_init(context) == 1,
            EVP_PKEY_CTX_set_rsa_padding(context, RSA_NO_PADDING) == 1
        else { throw CryptoError.openSSL(.failed, "cannot start an RSA decryption") }
        var failed = false
        let output = SecretBytes(capacity: length) { buffer -> Int in
            var written = buffer.count
            let ok = EVP_PKEY_decrypt(
                context, buffer.bindMemory(to: UInt8.self).baseAddress, &written, ciphertext, ciphertext.count
            )
            failed = ok != 1 || written != length
            return failed ? 0 : written
        }
        // A ciphertext not below the modulus is refused here: that is public information.
        guard !failed else { throw CryptoError.openSSL(.authenticationFailed, "cannot decrypt this input") }
        return output
    }

    /// KDK = HMAC-SHA256(key: SHA-256(I2OSP(d, k)), message: I2OSP(c, k)) (draft §7.1).
    private func keyDerivationKey(ciphertext: [UInt8], length: Int) throws(CryptoError) -> SecretBytes {
        guard let exponent = secretComponent("d"), exponent.count <= length else {
            throw CryptoError(.failed, "cannot read the private exponent")
        }
        let widened = SecretBytes(count: length) { buffer in
            exponent.withUnsafeBytes { source in
                if let target = buffer.baseAddress, let base = source.baseAddress {
                    (target + (length - source.count)).copyMemory(from: base, byteCount: source.count)
                }
            }
        }
        let hashed = try SecretBytes(count: 32) { (buffer) throws(CryptoError) in
            let ok = widened.withUnsafeBytes { input in
                EVP_Digest(
                    input.baseAddress, input.count, buffer.bindMemory(to: UInt8.self).baseAddress, nil,
                    DigestAlgorithm.sha256.evp, nil)
            }
            guard ok == 1 else { throw CryptoError.openSSL(.failed, "cannot hash the private exponent") }
        }
        return try ImplicitRejection.hmacSHA256(key: hashed, parts: [ciphertext], length: 32)
    }
}

/// The arithmetic of implicit rejection, kept apart from key handling.
enum ImplicitRejection {
    /// Candidate lengths drawn for the synthetic message: the chance that none is short
    /// enough is below 2^-128 for every key size (draft §7.2).
    static let lengthCandidates = 128

    /// The draft's PRF: HMAC-SHA256(key, I2OSP(i, 2) ‖ label ‖ I2OSP(bits, 2)) for i = 0, 1…,
    /// concatenated and cut to `length` octets (draft §7.1).
    static func prf(key: SecretBytes, label: StaticString, length: Int) throws(CryptoError) -> SecretBytes {
        let bits = length * 8
        guard bits <= Int(UInt16.max) else { throw CryptoError(.unsupported, "the modulus is too large") }
        let labelBytes = label.withUTF8Buffer { Array($0) }
        let blocks = (length + 31) / 32
        return try SecretBytes(count: length) { (output) throws(CryptoError) in
            guard let target = output.baseAddress else { return }
            for index in 0..<blocks {
                let parts = [
                    [UInt8(truncatingIfNeeded: index >> 8), UInt8(truncatingIfNeeded: index)], labelBytes,
                    [UInt8(truncatingIfNeeded: bits >> 8), UInt8(truncatingIfNeeded: bits)],
                ]
                let block = try hmacSHA256(key: key, parts: parts, length: 32)
                let offset = index * 32
                let count = min(32, length - offset)
                block.withUnsafeBytes { source in
                    if let base = source.baseAddress {
                        (target + offset).copyMemory(from: base, byteCount: count)
                    }
                }
            }
        }
    }

    /// HMAC-SHA256 of the concatenated `parts`, `length` octets.
    static func hmacSHA256(key: SecretBytes, parts: [[UInt8]], length: Int) throws(CryptoError) -> SecretBytes
    {
        let mac = try HMAC.compute(key: key, digestName: CString.sha256, parts: parts)
        guard mac.count == length else { throw CryptoError(.failed, "HMAC failed") }
        return mac
    }

    /// The padding check and the choice of message (draft §7.2, OpenSSL 3.2's
    /// ossl_rsa_padding_check_PKCS1_type_2), without a branch on `message`: EM must be
    /// 0x00 ‖ 0x02 ‖ PS (at least 8 non-zero octets) ‖ 0x00 ‖ M; otherwise the synthetic
    /// message, the last L octets of `synthetic`, where L is the last of the candidate lengths
    /// (masked to the next power of two above k − 10) that is below k − 10.
    static func select(
        message: UnsafeRawBufferPointer, synthetic: UnsafeRawBufferPointer, candidates: UnsafeRawBufferPointer
    ) -> [UInt8] {
        let count = message.count
        guard count >= 11, synthetic.count == count, candidates.count == lengthCandidates * 2 else {
            return []
        }
        let maximumLength = UInt32(truncatingIfNeeded: count - 2 - 8)
        var lengthMask = maximumLength
        lengthMask |= lengthMask >> 1
        lengthMask |= lengthMask >> 2
        lengthMask |= lengthMask >> 4
        lengthMask |= lengthMask >> 8
        var syntheticLength: UInt32 = 0
        for index in stride(from: 0, to: candidates.count, by: 2) {
            let candidate = (UInt32(candidates[index]) << 8 | UInt32(candidates[index + 1])) & lengthMask
            syntheticLength = Mask.select(Mask.less(candidate, maximumLength), candidate, syntheticLength)
        }
        let syntheticStart = UInt32(truncatingIfNeeded: count) &- syntheticLength

        var good = Mask.isZero(UInt32(message[0])) & Mask.equal(UInt32(message[1]), 2)
        var found: UInt32 = 0
        var separator: UInt32 = 0
        for index in 2..<count {
            let isZero = Mask.isZero(UInt32(message[index]))
            separator = Mask.select(~found & isZero, UInt32(truncatingIfNeeded: index), separator)
            found |= isZero
        }
        // At least 8 octets of padding string; a missing separator leaves 0 and fails too.
        good &= ~Mask.less(separator, 2 + 8)
        let start = Mask.select(good, separator &+ 1, syntheticStart)
        // The output's length is public (the caller gets the message); its source is not.
        let length = count - Int(start)
        var output = [UInt8](repeating: 0, count: length)
        let byteMask = UInt8(truncatingIfNeeded: good)
        for index in 0..<length {
            let source = Int(start) + index
            output[index] = (message[source] & byteMask) | (synthetic[source] & ~byteMask)
        }
        return output
    }

    /// All-ones or all-zero masks computed without branches (as OpenSSL's constant_time_*).
    enum Mask {
        /// All ones when the top bit of `value` is set.
        static func fromTopBit(_ value: UInt32) -> UInt32 { 0 &- (value >> 31) }
        static func isZero(_ value: UInt32) -> UInt32 { fromTopBit(~value & (value &- 1)) }
        static func equal(_ a: UInt32, _ b: UInt32) -> UInt32 { isZero(a ^ b) }
        /// All ones when a < b (unsigned).
        static func less(_ a: UInt32, _ b: UInt32) -> UInt32 { fromTopBit(a ^ ((a ^ b) | ((a &- b) ^ b))) }
        static func select(_ mask: UInt32, _ a: UInt32, _ b: UInt32) -> UInt32 { (mask & a) | (~mask & b) }
    }
}
