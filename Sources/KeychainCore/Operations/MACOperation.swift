internal import KeychainCrypto

// Message authentication codes (v2.40 §2.10.5 AES-CMAC, §2.20–2.24 HMAC; v3.0 §2.15) with a
// stored secret key, single- or multi-part, for every face.

/// How the Swift faces name a message authentication code: HMAC (RFC 2104) with a hash, or
/// AES-CMAC (NIST SP 800-38B). `Keychain.AuthenticationCodeAlgorithm` is this type.
public enum AuthenticationCodeAlgorithm: Hashable, Sendable {
    /// HMAC with `digest` (CKM_SHA256_HMAC…): with an HMAC key of that hash, or a generic secret.
    case hmac(HashAlgorithm)
    /// AES-CMAC (CKM_AES_CMAC): with an AES key. The full 16-byte code.
    case cmac

    /// The registry mechanism of the full-length MAC (CKM_SHA256_HMAC, CKM_AES_CMAC…), which
    /// the Swift faces name for the key-use check; nil when the registry has none.
    public var mechanism: UInt64? {
        let hash: DigestAlgorithm? =
            switch self {
            case .hmac(let digest): digest.crypto
            case .cmac: nil
            }
        return MechanismRegistry.all.first { $0.family == .mac(general: false) && $0.digest == hash }?.type
    }
}

/// A MAC in progress: the key's value opened through the one key-use check, the MAC's length
/// (the full one, or a *_GENERAL mechanism's), and the parts fed so far.
///
/// A finished MAC is kept by its caller's `KeptContexts` and restarted by the next
/// `macOperation` of the same key object, algorithm and length (`restarted`): a MAC of a short
/// message costs less than setting up a new operation, so the restart makes no allocation and
/// reads no key, yet every check of the key-use entry point runs again, on the facts read
/// with the key, while the store's change count says the object is unchanged.
///
/// One operation belongs to one caller, which serialises its calls: not thread-safe.
public final class MACOperation {
    private let mac: MessageAuthentication
    private let key: SecretBytes
    fileprivate let algorithm: MACAlgorithm
    /// Where the finished MAC waits for a restart; let go of while it waits there, so that the
    /// two never hold each other (a session dropped without its operations ended, at
    /// C_Finalize, would otherwise keep both, and the key, for the life of the process).
    @exclusivity(unchecked) private var kept: KeptContexts?
    /// The key object, the facts its use was checked on and the store's change count when
    /// they were read (nil: never restarted).
    fileprivate let reference: ObjectReference
    fileprivate let facts: KeyUseFacts
    fileprivate let changeCount: UInt64?
    /// The registry's mechanism, its key types and the use it was first started for: a pair the
    /// registry allowed, which a restart given only the mechanism's number must match
    /// (`Token.restartedMAC`). A restart through `macOperation` for another mechanism or use
    /// leaves them: every check of a restart runs on what the caller asks for, and these only
    /// decide whether the registry may be skipped.
    fileprivate let mechanism: UInt64
    fileprivate let keyTypes: [KeyType]?
    fileprivate let usage: KeyUse
    /// A *_GENERAL MAC, whose length is its parameter: never restarted without one.
    fileprivate let takesLength: Bool
    /// The MAC's length in bytes.
    public let length: Int
    /// The key is a private object: the operation ends at logout.
    public let usesPrivateObject: Bool
    /// True once a part was given: a single-part call can no longer finish it.
    public var isMultiPart: Bool { partGiven }
    /// `isMultiPart`'s storage, read through the getter: an unchecked stored property read
    /// from another module (the PKCS#11 face's C_Sign) still paid the dynamic exclusivity check.
    @exclusivity(unchecked) private var partGiven = false

    init(
        _ usable: UsableSecretKey, of reference: ObjectReference, _ registered: Mechanism, for usage: KeyUse,
        algorithm: MACAlgorithm, requestedLength: Int?, kept: KeptContexts?, reusing previous: MACOperation?
    ) throws(CoreError) {
        key = usable.value
        self.algorithm = algorithm
        self.kept = kept
        self.reference = reference
        facts = usable.facts
        changeCount = usable.changeCount
        mechanism = registered.type
        keyTypes = registered.keyTypes
        self.usage = usage
        takesLength = registered.family == .mac(general: true)
        if let previous, previous.key === usable.value, previous.algorithm == algorithm,
            (try? previous.mac.reset()) != nil
        {
            // try?: a MAC that cannot restart is simply not reused.
            mac = previous.mac
        } else {
            do throws(CryptoError) {
                mac = try MessageAuthentication(algorithm, key: usable.value)
            } catch {
                throw CoreError(.keySizeRange, error.message)
            }
        }
        length = requestedLength ?? mac.macLength
        guard length >= 1, length <= mac.macLength else {
            throw CoreError(.mechanismParameterInvalid, "the MAC length is 1 to \(mac.macLength) bytes")
        }
        usesPrivateObject = usable.isPrivate
    }

    /// This finished MAC started again for a new message, when it has `algorithm` and `length`;
    /// nil otherwise. The caller checked the key object and its use first (`restartKept`).
    fileprivate func restarted(_ algorithm: MACAlgorithm, length: Int?, kept: KeptContexts?) -> MACOperation?
    {
        // try?: a MAC whose context cannot restart is not restarted; the caller then makes a
        // new one through `useSecretKey`, so the failure costs speed, never an answer.
        guard algorithm == self.algorithm, length ?? mac.macLength == self.length, (try? mac.reset()) != nil
        else { return nil }
        partGiven = false
        self.kept = kept
        return self
    }

    /// Feeds one part.
    public func update(_ part: UnsafeRawBufferPointer) throws(CoreError) {
        partGiven = true
        do throws(CryptoError) {
            try mac.update(part)
        } catch {
            throw CoreError(.operationFailed, error.message)
        }
    }

    /// The MAC of `data` (single-part) or of the parts fed (`nil`), cut to ``length``. The
    /// context is kept for the next MAC with the same key and algorithm.
    public func sign(_ data: UnsafeRawBufferPointer?) throws(CoreError) -> [UInt8] {
        var failure: CoreError?
        let code = [UInt8](unsafeUninitializedCapacity: length) { buffer, count in
            do throws(CoreError) {
                try sign(data, into: UnsafeMutableRawBufferPointer(buffer))
                count = length
            } catch {
                failure = error
                count = 0
            }
        }
        if let failure { throw failure }
        return code
    }

    /// `sign`, writing the ``length`` bytes of the MAC into the start of `output`, which holds
    /// at least that many.
    public func sign(_ data: UnsafeRawBufferPointer?, into output: UnsafeMutableRawBufferPointer)
        throws(CoreError)
    {
        do throws(CryptoError) {
            if let data { try mac.update(data) }
            if length == mac.macLength {
                try mac.finish(into: output)
            } else {
                // A *_GENERAL MAC: the full one, then its first `length` bytes.
                let full = try mac.finish()
                guard output.count >= length else { throw CryptoError(.failed, "the output is too short") }
                output.copyBytes(from: full.prefix(length))
            }
            if let kept = kept.take() { kept.mac = self }
        } catch {
            throw CoreError(.operationFailed, error.message)
        }
    }

    /// Checks `code` against the MAC of `data` or of the parts fed, in constant time:
    /// `signatureLengthRange` for a code of the wrong length, `signatureInvalid` for a wrong one.
    public func verify(_ code: [UInt8], of data: UnsafeRawBufferPointer?) throws(CoreError) {
        guard code.count == length else {
            throw CoreError(.signatureLengthRange, "this MAC has \(length) bytes")
        }
        let expected = try sign(data)
        guard MessageAuthentication.isEqual(expected, code) else {
            throw CoreError(.signatureInvalid, "the MAC does not verify")
        }
    }
}

extension MACOperation {
    /// The MAC of `data`, in one call (the Swift faces).
    public func code(of data: [UInt8]) throws(CoreError) -> [UInt8] {
        try withBytes(data) { (bytes) throws(CoreError) in try sign(bytes) }
    }

    /// Whether `code` is the MAC of `data`, compared in constant time; a code of the wrong
    /// length is not.
    public func isValid(_ code: [UInt8], of data: [UInt8]) throws(CoreError) -> Bool {
        let expected = try self.code(of: data)
        return code.count == length && MessageAuthentication.isEqual(expected, code)
    }
}

extension Token {
    /// Starts a MAC (`usage` `.sign`) or its check (`.verify`) of mechanism `type` with the
    /// secret key `reference` names, through the one key-use entry point (`useSecretKey`):
    /// a key of a type the mechanism takes, its usage attribute, allowed mechanisms, login.
    public func macOperation(
        _ reference: ObjectReference, _ type: UInt64, _ parameters: SignatureParameters, for usage: KeyUse,
        context: AccessContext, kept: KeptContexts? = nil
    ) throws(CoreError) -> MACOperation {
        try macOperation(
            reference, MechanismRegistry.require(type, for: MechanismFunctions(usage)), parameters,
            for: usage,
            context: context, kept: kept)
    }

    /// `macOperation` with the mechanism already looked up in the registry for `usage`.
    public func macOperation(
        _ reference: ObjectReference, _ registered: Mechanism, _ parameters: SignatureParameters,
        for usage: KeyUse, context: AccessContext, kept: KeptContexts? = nil
    ) throws(CoreError) -> MACOperation {
        guard case .mac(let general) = registered.family else {
            throw CoreError(.mechanismInvalid, "\(registered.name) is not a MAC mechanism")
        }
        var requested: Int?
        switch (general, parameters) {
        case (true, .macLength(let length)): requested = length
        case (false, .none): break
        default:
            throw CoreError(
                .mechanismParameterInvalid,
                general
                    ? "a _GENERAL MAC needs CK_MAC_GENERAL_PARAMS" : "this MAC mechanism takes no parameter")
        }
        let algorithm = registered.digest.map(MACAlgorithm.hmac) ?? .cmac
        let previous = kept?.takeMAC()
        if let previous,
            let restarted = try restartKept(
                previous, reference, algorithm, length: requested, for: usage, mechanism: registered.type,
                keyTypes: registered.keyTypes, context: context, kept: kept)
        {
            return restarted
        }
        let usable = try useSecretKey(
            reference, for: usage, keyTypes: registered.keyTypes, mechanism: registered.type, context: context
        )
        return try MACOperation(
            usable, of: reference, registered, for: usage, algorithm: algorithm, requestedLength: requested,
            kept: kept, reusing: previous)
    }

    /// The caller's last MAC restarted for mechanism `type` given no parameter, before the
    /// registry is asked: when it is a MAC of that mechanism, started for the same `usage`, with
    /// the key object `reference` names. The registry is not asked again: the kept MAC's
    /// mechanism passed it for this function when it started, and the registry does not change.
    /// nil leaves the start to `macOperation`, which gives every answer a first use gives (and
    /// reuses the kept context when the key is the same); a refusal of the key's use is thrown
    /// as `macOperation` would throw it.
    public func restartedMAC(
        _ reference: ObjectReference, _ type: UInt64, for usage: KeyUse, context: AccessContext,
        kept: KeptContexts
    ) throws(CoreError) -> MACOperation? {
        guard let previous = kept.takeMAC() else { return nil }
        do throws(CoreError) {
            if previous.mechanism == type, previous.usage == usage, !previous.takesLength,
                previous.reference == reference,
                let restarted = try restartKept(
                    previous, reference, previous.algorithm, length: nil, for: usage, mechanism: type,
                    keyTypes: previous.keyTypes, context: context, kept: kept)
            {
                return restarted
            }
        } catch {
            kept.mac = previous
            throw error
        }
        // Left where it was, for `macOperation`, which may reuse its context.
        kept.mac = previous
        return nil
    }

    /// `previous`, a finished MAC, restarted for `reference`'s key when `useSecretKey`'s checks
    /// may run on the facts it kept, and pass (`checkKeptSecretKeyUse`).
    private func restartKept(
        _ previous: MACOperation, _ reference: ObjectReference, _ algorithm: MACAlgorithm, length: Int?,
        for usage: KeyUse, mechanism: UInt64, keyTypes: [KeyType]?, context: AccessContext,
        kept: KeptContexts?
    ) throws(CoreError) -> MACOperation? {
        guard previous.reference == reference,
            try checkKeptSecretKeyUse(
                reference, facts: previous.facts, changeCount: previous.changeCount, for: usage,
                keyTypes: keyTypes, mechanism: mechanism, context: context)
        else { return nil }
        return previous.restarted(algorithm, length: length, kept: kept)
    }
}
