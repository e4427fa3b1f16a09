package import KeychainCrypto

/// A hash function of signatures, encryption padding, MACs and fingerprints: SHA-1 or SHA-2.
/// The one vocabulary of the layers above the crypto layer: the typed API names this type
/// (`Keychain.DigestAlgorithm` is an alias of it). Named apart from the crypto layer's
/// `DigestAlgorithm` so that a file seeing both layers reads either without ambiguity.
public enum HashAlgorithm: Hashable, Sendable, CaseIterable {
    case sha1, sha224, sha256, sha384, sha512

    /// The output length in bytes.
    public var length: Int { crypto.length }

    /// `SHA1`, `SHA256`…: as OpenSSL and PKCS#11 mechanism names spell them.
    package var name: String { crypto.name }

    /// The hash of `data`.
    package func hash(_ data: [UInt8]) -> [UInt8] { crypto.hash(data) }

    /// The crypto layer's algorithm.
    package var crypto: KeychainCrypto.DigestAlgorithm {
        switch self {
        case .sha1: .sha1
        case .sha224: .sha224
        case .sha256: .sha256
        case .sha384: .sha384
        case .sha512: .sha512
        }
    }

    /// The algorithm of the crypto layer's `algorithm`.
    package init(_ algorithm: KeychainCrypto.DigestAlgorithm) {
        switch algorithm {
        case .sha1: self = .sha1
        case .sha224: self = .sha224
        case .sha256: self = .sha256
        case .sha384: self = .sha384
        case .sha512: self = .sha512
        }
    }
}

/// MD5 of a certificate's DER: NSS trust objects carry it (CKA_CERT_MD5_HASH) beside the SHA-1.
/// Only compared with what a caller gives, never a basis for trust.
package func certificateMD5(_ der: [UInt8]) -> [UInt8] { CertificateHash.md5(der) }
