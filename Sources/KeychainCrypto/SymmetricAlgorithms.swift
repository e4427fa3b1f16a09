internal import COpenSSL

/// The symmetric algorithms of the secret-key mechanisms (AES modes, key wrap, CMAC, HKDF,
/// X9.63), fetched once from the module's library context (`LibraryContext`): a fetch takes
/// a lock and a lookup each time, and PKCS#11 hosts run one operation per message.
enum SymmetricAlgorithms {
    /// The AES cipher OpenSSL names `AES-<bits>-<mode>` ("AES-128-ECB", "AES-256-WRAP-PAD"),
    /// or nil when the key length is not an AES one or OpenSSL could not fetch it.
    static func aes(keyLength: Int, _ mode: AESMode) -> OpaquePointer? {
        guard let size = AESKeySize(rawValue: keyLength) else { return nil }
        return shared.ciphers[CipherName(size: size, mode: mode).index]
    }

    /// EVP_MAC "CMAC", fetched once.
    static var cmac: OpaquePointer? { shared.cmac }
    /// EVP_KDF "HKDF", fetched once.
    static var hkdf: OpaquePointer? { shared.hkdf }
    /// EVP_KDF "X963KDF", fetched once.
    static var x963: OpaquePointer? { shared.x963 }

    /// The AES modes the token uses, by OpenSSL's name suffix.
    enum AESMode: String, CaseIterable {
        case ecb = "ECB"
        case cbc = "CBC"
        case ctr = "CTR"
        case gcm = "GCM"
        case wrap = "WRAP"
        case wrapPad = "WRAP-PAD"
    }

    /// AES key lengths in bytes (FIPS 197 §5).
    enum AESKeySize: Int, CaseIterable {
        case aes128 = 16
        case aes192 = 24
        case aes256 = 32
    }

    private struct CipherName: Hashable {
        let size: AESKeySize
        let mode: AESMode
        var text: String { "AES-\(size.rawValue * 8)-\(mode.rawValue)" }
        /// Its place in `Shared.ciphers`: every C_EncryptInit looks its cipher up, and an
        /// index costs less than hashing the name. Switches, not `allCases.firstIndex`:
        /// `allCases` builds a new array on every call.
        var index: Int { sizeIndex * Self.modeCount + modeIndex }
        private static let modeCount = AESMode.allCases.count
        static let count = AESKeySize.allCases.count * modeCount

        /// The size's place in `AESKeySize.allCases`.
        private var sizeIndex: Int {
            switch size {
            case .aes128: 0
            case .aes192: 1
            case .aes256: 2
            }
        }

        /// The mode's place in `AESMode.allCases`.
        private var modeIndex: Int {
            switch mode {
            case .ecb: 0
            case .cbc: 1
            case .ctr: 2
            case .gcm: 3
            case .wrap: 4
            case .wrapPad: 5
            }
        }
    }

    // nonisolated(unsafe): written once by the lazy initialiser (Swift runs it exactly once,
    // thread-safely), then only read; OpenSSL allows fetched algorithms to be shared by
    // any number of threads.
    nonisolated(unsafe) private static let shared = Shared()

    private final class Shared {
        /// By `CipherName.index`; nil where OpenSSL offers none.
        let ciphers: [OpaquePointer?]
        let cmac: OpaquePointer?
        let hkdf: OpaquePointer?
        let x963: OpaquePointer?

        init() {
            var ciphers = [OpaquePointer?](repeating: nil, count: CipherName.count)
            let context = LibraryContext.pointer
            if let context {
                for size in AESKeySize.allCases {
                    for mode in AESMode.allCases {
                        let name = CipherName(size: size, mode: mode)
                        ciphers[name.index] = EVP_CIPHER_fetch(context, name.text, nil)
                    }
                }
            }
            self.ciphers = ciphers
            cmac = context.flatMap { EVP_MAC_fetch($0, "CMAC", nil) }
            hkdf = context.flatMap { EVP_KDF_fetch($0, "HKDF", nil) }
            x963 = context.flatMap { EVP_KDF_fetch($0, "X963KDF", nil) }
            ERR_clear_error()
        }
        // No deinit: the one instance lives as long as the process (or the loaded module).
    }
}

/// OSSL_PARAM keys and values of the symmetric primitives: C strings with static storage,
/// since an OSSL_PARAM keeps a pointer to its key beyond the call that builds it.
enum SymmetricParameter {
    static var ivLength: UnsafePointer<CChar> { CString.make("ivlen") }
    static var cipher: UnsafePointer<CChar> { CString.make("cipher") }
    static var key: UnsafePointer<CChar> { CString.make("key") }
    static var secret: UnsafePointer<CChar> { CString.make("secret") }
    static var salt: UnsafePointer<CChar> { CString.make("salt") }
    static var info: UnsafePointer<CChar> { CString.make("info") }
    static var mode: UnsafePointer<CChar> { CString.make("mode") }

    /// The digest's OpenSSL name as a static C string.
    static func digestName(_ algorithm: DigestAlgorithm) -> UnsafePointer<CChar> {
        switch algorithm {
        case .sha1: CString.make("SHA1")
        case .sha224: CString.make("SHA224")
        case .sha256: CString.make("SHA256")
        case .sha384: CString.make("SHA384")
        case .sha512: CString.make("SHA512")
        }
    }

    /// The CBC cipher CMAC runs over, by AES key length (SP 800-38B §6.2).
    static func cmacCipherName(keyLength: Int) -> UnsafePointer<CChar>? {
        switch keyLength {
        case 16: CString.make("AES-128-CBC")
        case 24: CString.make("AES-192-CBC")
        case 32: CString.make("AES-256-CBC")
        default: nil
        }
    }
}

/// The owner of an `EVP_CIPHER_CTX`, which holds the expanded key: freed (and wiped, which
/// EVP_CIPHER_CTX_free does) on every path.
final class SymmetricCipherContext {
    let pointer: OpaquePointer

    init() throws(CryptoError) {
        guard let pointer = EVP_CIPHER_CTX_new() else {
            throw CryptoError.openSSL(.failed, "cannot allocate a cipher context")
        }
        self.pointer = pointer
    }

    deinit { EVP_CIPHER_CTX_free(pointer) }
}
