internal import COpenSSL

/// The OpenSSL library context every operation of this target runs in (ARCHITECTURE.md §6.9).
///
/// OpenSSL 3's default context reads the host's configuration (`OPENSSL_CONF`,
/// `/etc/ssl/openssl.cnf`) and takes its providers in the order the host loaded them. A host
/// that loads pkcs11-provider ahead of the default provider (`openssl … -provider pkcs11
/// -provider default`) then routes the module's own hashing back into the module, which
/// recurses until it fails; a configuration that activates only the null provider leaves the
/// default context able to do nothing. A context of our own, with OpenSSL's built-in default
/// provider loaded into it and no configuration file read, is reached by neither.
///
/// Every fetch, decoder, key operation and random draw of KeychainCrypto names this context;
/// the algorithms that are used on every operation are fetched here once (fetching costs a
/// lookup under a lock each time, and digests and AES-GCM are on every signature and login).
enum LibraryContext {
    /// The context, or nil when OpenSSL cannot create one (out of memory): every operation
    /// then fails with a `CryptoError`, and none falls back to the default context.
    static var pointer: OpaquePointer? { shared.context }

    /// SHA-1…SHA-512 fetched once, in `DigestAlgorithm.allCases` order.
    static func digest(_ algorithm: DigestAlgorithm) -> OpaquePointer? {
        shared.digests[algorithm]
    }

    /// AES-256-GCM, fetched once.
    static var aes256GCM: OpaquePointer? { shared.aes256GCM }

    /// HMAC, fetched once (RSA implicit rejection derives its synthetic messages with it).
    static var hmac: OpaquePointer? { shared.hmac }

    /// PBKDF2, fetched once.
    static var pbkdf2: OpaquePointer? { shared.pbkdf2 }

    /// Loads OpenSSL's legacy provider into the context, the first call only, for PKCS#12
    /// files encrypted with RC2 or other ciphers OpenSSL 3 keeps there. False when it is not
    /// installed. The default provider stays loaded: it was loaded explicitly.
    static func loadLegacyProvider() -> Bool { legacyLoaded }

    private static let legacyLoaded: Bool = {
        let loaded = pointer.map { OSSL_PROVIDER_load($0, "legacy") != nil } ?? false
        ERR_clear_error()
        return loaded
    }()

    // nonisolated(unsafe): written once by the lazy initialiser (Swift runs it exactly once,
    // thread-safely), then only read. OpenSSL allows a library context, its providers and
    // fetched algorithm objects to be shared by any number of threads.
    nonisolated(unsafe) private static let shared = Shared()

    private final class Shared {
        let context: OpaquePointer?
        let digests: [DigestAlgorithm: OpaquePointer]
        let aes256GCM: OpaquePointer?
        let hmac: OpaquePointer?
        let pbkdf2: OpaquePointer?

        init() {
            // No OSSL_LIB_CTX_load_config: the host's configuration is exactly what must not
            // reach this context.
            let context = OSSL_LIB_CTX_new()
            if let context, OSSL_PROVIDER_load(context, "default") == nil {
                OSSL_LIB_CTX_free(context)
                self.context = nil
            } else {
                self.context = context
            }
            var digests: [DigestAlgorithm: OpaquePointer] = [:]
            if let context = self.context {
                for algorithm in DigestAlgorithm.allCases {
                    if let md = EVP_MD_fetch(context, algorithm.name, nil) { digests[algorithm] = md }
                }
            }
            self.digests = digests
            aes256GCM = self.context.flatMap { EVP_CIPHER_fetch($0, "AES-256-GCM", nil) }
            hmac = self.context.flatMap { EVP_MAC_fetch($0, "HMAC", nil) }
            pbkdf2 = self.context.flatMap { EVP_KDF_fetch($0, "PBKDF2", nil) }
            ERR_clear_error()
        }
        // No deinit: the one instance lives as long as the process (or the loaded module),
        // and OpenSSL frees every context at its own exit.
    }
}

/// C strings with static storage, for OpenSSL arguments it keeps a pointer to beyond the call
/// (OSSL_PARAM keys, decoder and encoder type names): a Swift `String` passed as `char *`
/// lives only for the call.
enum CString {
    static var der: UnsafePointer<CChar> { make("DER") }
    static var privateKeyInfo: UnsafePointer<CChar> { make("PrivateKeyInfo") }
    static var subjectPublicKeyInfo: UnsafePointer<CChar> { make("SubjectPublicKeyInfo") }
    static var typeSpecific: UnsafePointer<CChar> { make("type-specific") }
    static var rsa: UnsafePointer<CChar> { make("RSA") }
    static var digest: UnsafePointer<CChar> { make("digest") }
    static var sha256: UnsafePointer<CChar> { make("SHA256") }

    /// A literal's bytes: Swift stores string literals NUL-terminated in read-only memory.
    static func make(_ literal: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(literal.utf8Start).assumingMemoryBound(to: CChar.self)
    }
}
