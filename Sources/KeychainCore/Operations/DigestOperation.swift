internal import KeychainCrypto

// Message digesting (v2.40 §5.10) for every face: a digest mechanism of the registry, its
// parts, and the value of a secret key (C_DigestKey).

/// A digest in progress.
///
/// One operation belongs to one caller, which serialises its calls: not thread-safe.
public final class DigestOperation {
    private let digest: Digest
    /// The digest's length in bytes.
    public let length: Int
    /// True once a part was given: a single-part call can no longer finish it.
    public private(set) var isMultiPart = false

    /// A digest of mechanism `type` (CKM_SHA256…): `mechanismInvalid` for a mechanism that does
    /// not digest, `mechanismParameterInvalid` for any parameter.
    public init(_ type: UInt64, _ parameters: SignatureParameters) throws(CoreError) {
        let registered = try MechanismRegistry.require(type, for: .digest)
        guard let algorithm = registered.digest else {
            throw CoreError(.mechanismInvalid, "mechanism \(registered.name) cannot digest")
        }
        guard parameters == .none else {
            throw CoreError(.mechanismParameterInvalid, "digest mechanisms take no parameter")
        }
        do throws(CryptoError) {
            digest = try Digest(algorithm)
        } catch {
            throw CoreError(.operationFailed, error.message)
        }
        length = algorithm.length
    }

    /// Feeds one part.
    public func update(_ part: UnsafeRawBufferPointer) throws(CoreError) {
        do throws(CryptoError) {
            try digest.update(part)
            isMultiPart = true
        } catch {
            throw CoreError(.operationFailed, error.message)
        }
    }

    /// The digest of `data` (single-part) or of the parts fed (`nil`).
    public func finish(_ data: UnsafeRawBufferPointer?) throws(CoreError) -> [UInt8] {
        do throws(CryptoError) {
            if let data { try digest.update(data) }
            return try digest.finish()
        } catch {
            throw CoreError(.operationFailed, error.message)
        }
    }
}

extension Token {
    /// Feeds the value of the secret key `reference` names to `operation` (C_DigestKey): only
    /// a key whose value could be read anyway (`keyToDigest`).
    public func digestKey(
        _ reference: ObjectReference, into operation: DigestOperation, context: AccessContext
    )
        throws(CoreError)
    {
        let value = try keyToDigest(reference, context: context)
        try value.withUnsafeBytes { (bytes) throws(CoreError) in try operation.update(bytes) }
    }
}
