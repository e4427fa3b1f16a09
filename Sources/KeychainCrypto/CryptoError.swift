internal import COpenSSL

/// An error from the crypto layer: what failed and OpenSSL's reason, never key material.
public struct CryptoError: Error, CustomStringConvertible, Sendable {
    public enum Code: Sendable, Equatable {
        /// The input is not what it claims to be (malformed DER, wrong length).
        case invalidInput
        /// The algorithm or parameter is not supported.
        case unsupported
        /// OpenSSL failed for another reason (out of memory, internal error).
        case failed
        /// A password or key does not open the data: a PKCS#12 file's MAC or encryption, or a
        /// sealed box whose tag does not verify (wrong key, other associated data, altered
        /// bytes). Only this code means "wrong secret": a caller counting wrong PINs counts
        /// it and nothing else (`.failed` is OpenSSL failing, `.invalidInput` a malformed box).
        case wrongPassword
        /// Authenticated data does not verify under the key: a GCM tag that does not match
        /// (PKCS#11 v2.40 §2.12, CKR_ENCRYPTED_DATA_INVALID), a wrapped key whose integrity
        /// check fails on unwrapping (RFC 3394 §2.2.3, RFC 5649 §3; CKR_WRAPPED_KEY_INVALID),
        /// an RSA ciphertext of the right length that does not decrypt (OAEP's check, a value
        /// not below the modulus; CKR_ENCRYPTED_DATA_INVALID). No plaintext is released with it.
        case authenticationFailed
        /// CBC-PAD decryption found padding that is not PKCS#7 (PKCS#11 v2.40 §2.10.4,
        /// CKR_ENCRYPTED_DATA_INVALID).
        case invalidPadding
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// An error carrying OpenSSL's most recent reason, which also clears OpenSSL's
    /// thread-local error queue so that it never leaks into a later call.
    static func openSSL(_ code: Code, _ what: String) -> CryptoError {
        var reason = ""
        let last = ERR_peek_last_error()
        if last != 0, let text = ERR_reason_error_string(last) {
            reason = ": " + String(cString: text)
        }
        ERR_clear_error()
        return CryptoError(code, what + reason)
    }
}
