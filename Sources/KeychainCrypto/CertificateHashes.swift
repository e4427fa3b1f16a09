internal import COpenSSL

/// Fingerprints of a certificate that trust objects carry so that a reader can check a
/// trust object belongs to the certificate it names: NSS's CKA_CERT_SHA1_HASH and
/// CKA_CERT_MD5_HASH, PKCS#11 3.2's CKA_HASH_OF_CERTIFICATE. MD5 is here only because NSS's
/// trust objects have it; it never decides anything in this project.
public enum CertificateHash {
    /// MD5 of `bytes`, from the module's own library context (ARCHITECTURE.md §6.9); empty when OpenSSL
    /// cannot compute it (out of memory), which a reader sees as a mismatch, never a crash.
    public static func md5(_ bytes: [UInt8]) -> [UInt8] {
        guard let context = LibraryContext.pointer, let md = EVP_MD_fetch(context, "MD5", nil) else {
            ERR_clear_error()
            return []
        }
        defer { EVP_MD_free(md) }
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            EVP_Digest(input.baseAddress, input.count, &output, &length, md, nil)
        }
        return ok == 1 ? Array(output.prefix(Int(length))) : []
    }
}
