internal import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// What a chain is checked for: the purpose its leaf must serve, the name it must carry, and
/// the instant it must be valid at.
public struct ChainPolicy: Sendable, Equatable {
    /// The use the leaf is checked for: its extended key usage (RFC 5280 §4.2.1.12) and,
    /// for OpenSSL's purposes, the CA certificates' too.
    public enum Purpose: String, Sendable, CaseIterable {
        /// No purpose: Apple's basic X.509 policy.
        case any
        case serverAuth
        case clientAuth
        /// OpenSSL 3.0 has no code-signing purpose: the leaf's extended key usage is checked
        /// here (codeSigning or anyExtendedKeyUsage, or no such extension at all).
        case codeSigning
        case emailProtection
    }

    public var purpose: Purpose
    /// A DNS name or an IP address (v4 or v6, brackets allowed) the leaf must name, or nil.
    public var hostName: String?
    /// Seconds since 1970 the chain must be valid at; nil for the time of the evaluation.
    public var verifyTime: Int64?
    /// The most CA certificates between leaf and anchor (OpenSSL's verify depth).
    public var maximumDepth: Int

    public init(
        purpose: Purpose = .any, hostName: String? = nil, verifyTime: Int64? = nil, maximumDepth: Int = 10
    ) {
        self.purpose = purpose
        self.hostName = hostName
        self.verifyTime = verifyTime
        self.maximumDepth = maximumDepth
    }
}

/// Why a chain is not trusted, as a closed set a face maps to its own codes (Apple's
/// OSStatus values, the CLI's messages), with OpenSSL's code and text kept for detail.
public struct ChainFailure: Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, Equatable {
        case expired
        case notYetValid
        case hostNameMismatch
        /// No issuer of some certificate was found (among the given certificates and anchors).
        case missingIssuer
        /// The chain ends at a root that is not an anchor.
        case untrustedRoot
        /// A certificate of the chain is distrusted (in the keychain, or by OpenSSL's trust).
        case distrusted
        /// The extended key usage (or OpenSSL's purpose check) does not allow the policy's use.
        case wrongPurpose
        /// A critical extension OpenSSL does not know (RFC 5280 §4.2: such a certificate
        /// must be rejected).
        case unknownCriticalExtension
        /// An issuer is not a CA (basic constraints, key usage).
        case notCertificateAuthority
        case pathLengthExceeded
        /// More certificates than the depth bound, or than the input bound.
        case chainTooLong
        /// A name outside an issuer's name constraints (RFC 5280 §4.2.1.10).
        case nameConstraintViolation
        case invalidSignature
        /// A certificate or its dates do not decode as OpenSSL needs.
        case malformed
        case other
    }

    public var reason: Reason
    /// Position in the chain: 0 is the leaf.
    public var depth: Int
    /// OpenSSL's X509_V_ERR_* code (0 for checks made here).
    public var code: Int32
    public var message: String

    public init(_ reason: Reason, depth: Int, code: Int32 = 0, message: String) {
        self.reason = reason
        self.depth = depth
        self.code = code
        self.message = message
    }

    public var description: String { "\(message) (depth \(depth))" }
}

/// The outcome of one chain verification.
public struct ChainVerification: Sendable {
    /// The chain OpenSSL built, leaf first, as DER; when no anchor was reached, as far as it got.
    public var chain: [[UInt8]]
    /// Every failure found, in the order OpenSSL found them; empty when trusted.
    public var failures: [ChainFailure]
    /// True when the chain ends at an anchor (none of the failures is a missing issuer or an
    /// untrusted root).
    public var reachedAnchor: Bool

    public var isTrusted: Bool { failures.isEmpty }
}

/// An X.509 certificate decoded by OpenSSL in the private library context, kept so that a
/// trust object evaluated again does not decode its certificates again (decoding the key
/// is most of a verification's cost). Immutable once made.
public final class VerifiableCertificate: @unchecked Sendable {
    // @unchecked Sendable: the X509 is never modified after init and OpenSSL's verification
    // only reads it (its cached extension data is computed under OpenSSL's own lock).
    let pointer: OpaquePointer
    public let der: [UInt8]
    /// SHA-256 of the DER: how distrusted certificates are recognised.
    public let fingerprint: [UInt8]

    /// Decodes `der`; throws `.invalidInput` unless it is exactly one X.509 certificate.
    public init(der: [UInt8]) throws(CryptoError) {
        guard let made = X509_new_ex(LibraryContext.pointer, nil) else {
            throw CryptoError.openSSL(.failed, "cannot allocate a certificate")
        }
        var target: OpaquePointer? = made
        let consumed = der.withUnsafeBufferPointer { buffer -> Bool in
            guard let base = buffer.baseAddress else { return false }
            var cursor: UnsafePointer<UInt8>? = base
            guard d2i_X509(&target, &cursor, buffer.count) != nil, let cursor else { return false }
            return cursor - base == buffer.count
        }
        guard consumed, let target else {
            X509_free(target ?? made)
            throw CryptoError.openSSL(.invalidInput, "certificate DER does not parse")
        }
        pointer = target
        self.der = der
        fingerprint = DigestAlgorithm.sha256.hash(der)
    }

    /// Takes ownership of one reference to `pointer`, whose encoding `der` is.
    init(taking pointer: OpaquePointer, der: [UInt8]) {
        self.pointer = pointer
        self.der = der
        fingerprint = DigestAlgorithm.sha256.hash(der)
    }

    /// Takes ownership of one reference to `pointer`, encoding it; nil (the reference freed)
    /// when it does not encode.
    convenience init?(encoding pointer: OpaquePointer) {
        var output: UnsafeMutablePointer<UInt8>?
        let length = i2d_X509(pointer, &output)
        guard length > 0, let output else {
            X509_free(pointer)
            return nil
        }
        defer { CRYPTO_free(output, #fileID, #line) }
        self.init(taking: pointer, der: Array(UnsafeBufferPointer(start: output, count: Int(length))))
    }

    deinit { X509_free(pointer) }

    /// The most certificates a PEM bundle may hold; a system bundle has about 150.
    public static let maximumBundleCount = 20_000

    /// Every certificate of a PEM file (`/etc/ssl/certs/ca-certificates.crt`), in order.
    /// Blocks that are not certificates are skipped; a file that cannot be read throws.
    public static func certificates(inPEMFile path: String) throws(CryptoError) -> [VerifiableCertificate] {
        guard let bio = BIO_new_file(path, "r") else {
            throw CryptoError.openSSL(.invalidInput, "cannot read \(path)")
        }
        defer {
            BIO_free(bio)
            ERR_clear_error()
        }
        var result: [VerifiableCertificate] = []
        while result.count < maximumBundleCount {
            guard let made = X509_new_ex(LibraryContext.pointer, nil) else { break }
            var target: OpaquePointer? = made
            guard PEM_read_bio_X509(bio, &target, nil, nil) != nil, let target else {
                X509_free(made)
                break
            }
            if let certificate = VerifiableCertificate(encoding: target) { result.append(certificate) }
        }
        return result
    }
}

/// A set of anchors as an OpenSSL X509_STORE, built once and shared by every verification
/// that uses the same anchors (building one for 150 system roots costs more than a
/// verification).
public final class TrustAnchorStore: @unchecked Sendable {
    // @unchecked Sendable: certificates are added only in init; afterwards X509_STORE is only
    // read by X509_verify_cert, which OpenSSL guards with the store's own lock.
    let store: OpaquePointer
    /// SHA-256 fingerprints of the anchors.
    public let fingerprints: Set<[UInt8]>
    /// The anchors by their X509 pointer: the store hands back the very objects added to it,
    /// so a built chain's anchor is found without encoding it again.
    let byPointer: [OpaquePointer: VerifiableCertificate]

    public init(_ anchors: [VerifiableCertificate]) throws(CryptoError) {
        guard let store = X509_STORE_new() else {
            throw CryptoError.openSSL(.failed, "cannot allocate a certificate store")
        }
        for anchor in anchors {
            // A duplicate is not an error (OpenSSL 3 ignores it); nothing else can fail but memory.
            _ = X509_STORE_add_cert(store, anchor.pointer)
        }
        ERR_clear_error()
        self.store = store
        fingerprints = Set(anchors.map(\.fingerprint))
        var byPointer: [OpaquePointer: VerifiableCertificate] = [:]
        for anchor in anchors { byPointer[anchor.pointer] = anchor }
        self.byPointer = byPointer
    }

    deinit { X509_STORE_free(store) }

    public var count: Int { fingerprints.count }
}
