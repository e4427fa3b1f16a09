internal import KeychainCrypto

// Signing and verification with a key pair's halves (v2.40 §5.11–5.12; v2.40 §2.1 RSA, §2.3
// ECDSA; v3.0 §2.3.14 EdDSA), single- or multi-part, for every face.

/// A signature or verification in progress: the key opened through the one key-use check,
/// the per-use PIN, and the parts of a multi-part operation. Signatures are PKCS#11's form
/// (ECDSA r ‖ s); ``SignatureAlgorithm`` turns them into Apple's.
///
/// A finished operation with a stored key is kept by its caller's `KeptContexts` and restarted
/// by the next `signatureOperation` of the same key object, mechanism and use (`restarted`),
/// as a MAC is (`MACOperation`): no key is looked up and nothing is allocated, yet every check
/// of the key-use entry point runs again on the facts read with the key, while the store's
/// change count says the object is unchanged. A key that needs the PIN for each use is never
/// restarted.
///
/// One operation belongs to one caller, which serialises its calls: not thread-safe.
public final class SignatureOperation {
    let key: AsymmetricKey
    let scheme: SignatureScheme
    /// The mechanism the operation was started with, which a restart must repeat.
    fileprivate let mechanism: SignatureMechanism
    /// The stored key's object, the use, the facts it was checked on and the store's change
    /// count when they were read (nil: read during a write); nil for a key held in memory.
    /// What a restart compares.
    private let stored: StoredKeyUse?
    /// The per-use PIN (CKA_ALWAYS_AUTHENTICATE, an access control that needs presence); nil
    /// for a key that needs none, and for a key held in memory.
    private let authentication: UseAuthentication?
    /// The hash of the message, nil when the input is signed as given (a raw mechanism, EdDSA,
    /// or a digest the caller computed).
    private let messageDigest: DigestAlgorithm?
    /// The length of every signature this key makes.
    public let signatureLength: Int
    /// The key is a private key or a private object: the operation ends at logout.
    public let usesPrivateObject: Bool
    /// True once a part was given: a single-part call can no longer finish it.
    public var isMultiPart: Bool { partGiven }
    /// `isMultiPart`'s storage. Read through the getter, so that a face's read is no dynamic
    /// exclusivity check: one inlined into another module checks a stored property despite
    /// `@exclusivity(unchecked)` (seen in C_Sign's machine code, about 80 instructions).
    @exclusivity(unchecked) private var partGiven = false
    /// Kept contexts to reuse and to leave the signer in; nil while this finished operation
    /// waits in them for a restart (`park`), so that neither keeps the other alive.
    @exclusivity(unchecked) private var kept: KeptContexts?
    /// Hashes the parts of a hashing mechanism; made by the first part.
    @exclusivity(unchecked) private var digest: Digest?
    /// Collects the parts of a raw mechanism.
    @exclusivity(unchecked) private var buffer: [UInt8] = []

    init(
        key: AsymmetricKey, _ mechanism: SignatureMechanism, authentication: UseAuthentication?,
        usesPrivateObject: Bool, kept: KeptContexts?, stored: StoredKeyUse? = nil
    ) throws(CoreError) {
        let scheme = mechanism.scheme
        self.key = key
        self.mechanism = mechanism
        self.stored = stored
        switch key.algorithm {
        case .rsa(let bits): signatureLength = (bits + 7) / 8
        case .ec(let curve): signatureLength = 2 * ((curve.bits + 7) / 8)
        case .ed25519, nil: signatureLength = 64
        case .ed448: signatureLength = 114
        case .x25519, .x448:
            throw CoreError(.keyTypeInconsistent, "X25519 and X448 keys agree on secrets; they do not sign")
        }
        // CKM_EDDSA names no curve: the key decides between Ed25519 and Ed448 (v3.0 §2.3.14).
        self.scheme = scheme.signsWholeMessage && key.algorithm == .ed448 ? .ed448 : scheme
        self.authentication = authentication
        messageDigest = mechanism.signsDigest ? nil : scheme.messageDigest
        self.usesPrivateObject = usesPrivateObject
        self.kept = kept
    }

    /// The key needs the user's PIN before each use (``authenticate(pin:)``).
    public var needsPIN: Bool { authentication?.isRequired == true }

    /// The key needs the user's PIN before its next use, and it was not given yet.
    public var awaitsPIN: Bool { authentication.map { !$0.isSatisfied } ?? false }

    /// Checks the user's PIN for the next use (PKCS#11's context-specific login, the Swift
    /// faces' `pin:`); a wrong one counts as a failed login.
    public func authenticate(pin: [UInt8]) throws(CoreError) {
        guard let authentication, authentication.isRequired else {
            throw CoreError(.invalidArgument, "the operation's key needs no PIN for each use")
        }
        try authentication.authenticate(pin: pin)
    }

    /// This finished operation started again for `usage` of `reference`'s key with
    /// `mechanism`, when they are the ones it was started with, the store's change count is
    /// still the one its key's facts were read at, and `useKey`'s checks pass on those facts
    /// (`checkKeptKeyUse`, which throws the entry point's refusal); nil when it cannot restart,
    /// and the caller opens the key through `useKey`.
    fileprivate func restarted(
        on token: Token, _ reference: ObjectReference, _ mechanism: SignatureMechanism, for usage: KeyUse,
        context: AccessContext, kept: KeptContexts
    ) throws(CoreError) -> SignatureOperation? {
        guard let stored, authentication == nil, let changeCount = stored.changeCount,
            stored.reference == reference, stored.usage == usage, mechanism == self.mechanism
        else { return nil }
        let current = try token.withState { (state) throws(CoreError) in
            try state.store(for: reference).changeCount
        }
        guard current == changeCount else { return nil }
        try token.checkKeptKeyUse(
            stored.facts, for: usage, keyTypes: mechanism.keyTypes, mechanism: mechanism.type,
            context: context)
        guard !Token.needsPINForEachUse(stored.facts, for: usage) else { return nil }
        partGiven = false
        digest = nil
        buffer = []
        self.kept = kept
        return self
    }

    /// Leaves this finished operation in its caller's kept contexts for a restart, and lets go
    /// of them. Only an operation with a stored key and no per-use PIN is kept.
    private func park() {
        guard let kept, let stored, authentication == nil else { return }
        self.kept = nil
        if stored.usage == .sign {
            kept.signature = self
        } else {
            kept.verification = self
        }
    }

    /// True for EdDSA, which signs a whole message in one call: no parts.
    public var takesParts: Bool { !scheme.signsWholeMessage }

    /// The most input one operation takes. A hashing mechanism (and EdDSA, which hashes
    /// inside) takes any message; a raw one signs what it is given, so its input is bounded
    /// by what the key can take: one modulus for RSA (PKCS #1 v1.5 and PSS), and for raw ECDSA
    /// `maximumRawECDSAInput`. More is `dataLengthRange`, never collected without end.
    public var inputLimit: Int {
        if messageDigest != nil || scheme.signsWholeMessage { return Int.max }
        if case .rsa = key.algorithm { return signatureLength }
        return SignatureOperation.maximumRawECDSAInput
    }

    /// What a next part may hold: the input limit less what a raw mechanism collected.
    public var remainingInput: Int { inputLimit == Int.max ? Int.max : max(inputLimit - buffer.count, 0) }

    /// Raw ECDSA signs a digest: the longest is 64 bytes (SHA-512), and OpenSSL uses only as
    /// many leading bits as the curve's order has. 1024 bytes leaves room for any digest.
    static let maximumRawECDSAInput = 1024

    /// Takes one part of a multi-part operation.
    public func update(_ part: UnsafeRawBufferPointer) throws(CoreError) {
        guard takesParts else {
            throw CoreError(.unsupported, "EdDSA signs and verifies in one part only")
        }
        partGiven = true
        guard let algorithm = messageDigest else {
            guard part.count <= remainingInput else {
                throw CoreError(.dataLengthRange, "the input is longer than this key and mechanism take")
            }
            buffer += part
            return
        }
        do throws(CryptoError) {
            let digest: Digest
            if let existing = self.digest {
                digest = existing
            } else {
                digest = try Digest(algorithm)
                self.digest = digest
            }
            try digest.update(part)
        } catch {
            throw CoreError(.operationFailed, error.message)
        }
    }

    /// What the key signs: `data` hashed where the mechanism hashes (a single-part call), or
    /// the digest or collection of the parts.
    func prepared(_ data: UnsafeRawBufferPointer?) throws(CoreError) -> [UInt8] {
        if let data { return try prepared(message: data) }
        guard let algorithm = messageDigest else { return buffer }
        guard let digest else { return algorithm.hash([]) }  // no part at all: the empty message
        do throws(CryptoError) {
            return try digest.finish()
        } catch {
            throw CoreError(.operationFailed, error.message)
        }
    }

    /// What the key signs of a single-part `data`: its hash where the mechanism hashes.
    func prepared(message data: some Collection<UInt8>) throws(CoreError) -> [UInt8] {
        guard data.count <= inputLimit else {
            throw CoreError(.dataLengthRange, "the input is longer than this key and mechanism take")
        }
        if scheme.signsWholeMessage { return Array(data) }
        return messageDigest.map { $0.hash(data) } ?? Array(data)
    }

    /// Signs `data` (a single-part signature) or the parts given (`nil`), spending the per-use
    /// PIN. The signature is PKCS#11's form.
    ///
    /// A single-part message of a hashing mechanism goes to the signing context whole: it
    /// hashes the message with its kept digest and writes the signature straight into the
    /// result, so no digest, DER or intermediate array is made per signature.
    public func sign(_ data: UnsafeRawBufferPointer?) throws(CoreError) -> [UInt8] {
        try writtenBytes(capacity: signatureLength) { (output) throws(CoreError) in
            try sign(data, into: output)
        }
    }

    /// `sign(_:)` written into `output`, which holds at least `signatureLength` bytes (a
    /// caller's buffer): the bytes written. After an error `output` holds zeros, never part of
    /// a signature.
    public func sign(_ data: UnsafeRawBufferPointer?, into output: UnsafeMutableRawBufferPointer)
        throws(CoreError) -> Int
    {
        guard output.count >= signatureLength else {
            throw CoreError(.operationFailed, "a signature of this key has \(signatureLength) bytes")
        }
        guard let data, !scheme.signsWholeMessage else {
            let signature = try sign(prepared: try prepared(data))
            guard signature.count <= output.count else {
                throw CoreError(.operationFailed, "the signature is longer than its key's")
            }
            output.copyBytes(from: signature)
            return signature.count
        }
        guard data.count <= inputLimit else {
            throw CoreError(.dataLengthRange, "the input is longer than this key and mechanism take")
        }
        return try signed(data, hashing: messageDigest != nil, into: output)
    }

    /// Signs the prepared input, spending the per-use PIN.
    func sign(prepared input: [UInt8]) throws(CoreError) -> [UInt8] {
        if scheme.signsWholeMessage {
            try authentication?.spend("signature")
            do throws(CryptoError) {
                let signature = try key.sign(input, scheme: scheme)
                park()
                return signature
            } catch {
                throw CoreError(
                    error.code == .invalidInput ? .dataLengthRange : .operationFailed, error.message)
            }
        }
        return try writtenBytes(capacity: signatureLength) { (output) throws(CoreError) in
            try withBytes(input) { (input) throws(CoreError) in
                try signed(input, hashing: false, into: output)
            }
        }
    }

    /// Signs `input` (the message with `hashing`, else what the key signs as it is) into
    /// `output` with the kept signing context or a new one, spending the per-use PIN.
    private func signed(
        _ input: UnsafeRawBufferPointer, hashing: Bool, into output: UnsafeMutableRawBufferPointer
    )
        throws(CoreError) -> Int
    {
        try authentication?.spend("signature")
        do throws(CryptoError) {
            let signer: SigningContext
            if let idle = kept?.signer(for: key, scheme) {
                signer = idle
            } else {
                signer = try SigningContext(key: key, scheme: scheme)
            }
            let written = try signer.sign(input, hashing: hashing, into: output)
            kept?.signer = signer
            park()
            return written
        } catch {
            // A context that failed is not trusted with the next signature.
            kept?.signer = nil
            UnsafeMutableRawBufferPointer(rebasing: output[..<min(signatureLength, output.count)])
                .initializeMemory(as: UInt8.self, repeating: 0)
            throw CoreError(error.code == .invalidInput ? .dataLengthRange : .operationFailed, error.message)
        }
    }

    /// Checks `signature` (PKCS#11's form) of `data` (single-part) or of the parts given
    /// (`nil`): `signatureLengthRange` for one of the wrong length, `signatureInvalid` for one
    /// that does not verify.
    public func verify(_ signature: [UInt8], of data: UnsafeRawBufferPointer?) throws(CoreError) {
        try withBytes(signature) { (signature) throws(CoreError) in try verify(signature, of: data) }
    }

    /// `verify(_:of:)` of a signature where it lies (a caller's buffer). A single-part message
    /// of a hashing mechanism is hashed by the verifying context's kept digest.
    public func verify(_ signature: UnsafeRawBufferPointer, of data: UnsafeRawBufferPointer?)
        throws(CoreError)
    {
        let valid: Bool
        if let data, !scheme.signsWholeMessage, messageDigest != nil, kept != nil {
            guard data.count <= inputLimit else {
                throw CoreError(.dataLengthRange, "the input is longer than this key and mechanism take")
            }
            try checkSignatureLength(signature.count)
            valid = try isValid(signature, data, hashing: true)
        } else {
            let input = try prepared(data)
            try checkSignatureLength(signature.count)
            valid = try withBytes(input) { (input) throws(CoreError) in
                try isValid(signature, input, hashing: false)
            }
        }
        park()
        guard valid else { throw CoreError(.signatureInvalid, "the signature does not verify") }
    }

    private func checkSignatureLength(_ count: Int) throws(CoreError) {
        guard count == signatureLength else {
            throw CoreError(.signatureLengthRange, "a signature of this key has \(signatureLength) bytes")
        }
    }

    /// Whether `signature` is the key's signature of `input` (already hashed where the
    /// mechanism hashes).
    func isValid(_ signature: [UInt8], _ input: [UInt8]) throws(CoreError) -> Bool {
        try withBytes(signature) { (signature) throws(CoreError) in
            try withBytes(input) { (input) throws(CoreError) in try isValid(signature, input, hashing: false)
            }
        }
    }

    /// Whether `signature` is the key's signature of `input`: the message with `hashing` (a
    /// kept verifier hashes it), else what the key signed as it is.
    /// A session's verification keeps its OpenSSL context for the next one with the same key
    /// and scheme (`KeptContexts`), as a signature does.
    private func isValid(_ signature: UnsafeRawBufferPointer, _ input: UnsafeRawBufferPointer, hashing: Bool)
        throws(CoreError) -> Bool
    {
        do throws(CryptoError) {
            if scheme.signsWholeMessage {
                return try key.verify(Array(signature), message: Array(input), scheme: scheme)
            }
            guard let kept, scheme != .rsaRaw else {
                let hash = hashing ? (messageDigest?.hash(input) ?? Array(input)) : Array(input)
                return try key.verifyHash(Array(signature), input: hash, scheme: scheme)
            }
            let verifier: SigningContext
            if let idle = kept.verifier(for: key, scheme) {
                verifier = idle
            } else {
                verifier = try SigningContext(key: key, scheme: scheme, verifying: true)
            }
            kept.verifier = nil
            let valid = try verifier.verify(signature, input, hashing: hashing)
            kept.verifier = verifier
            return valid
        } catch {
            throw CoreError(.dataLengthRange, error.message)
        }
    }
}

/// What a signature with a stored key was started on, for its restart: the key object, the
/// use, the key's facts and the store's change count when they were read (`UsableKey`).
struct StoredKeyUse {
    let reference: ObjectReference
    let usage: KeyUse
    let facts: KeyUseFacts
    let changeCount: UInt64?
}

extension Token {
    /// Starts a signature (`usage` `.sign`) or verification (`.verify`) with the key pair half
    /// `reference` names, through the one key-use entry point (`useKey`), or restarts the
    /// caller's last one of the same key object and mechanism (`SignatureOperation`).
    public func signatureOperation(
        _ reference: ObjectReference, _ mechanism: SignatureMechanism, for usage: KeyUse,
        context: AccessContext, kept: KeptContexts? = nil
    ) throws(CoreError) -> SignatureOperation {
        if let kept, let previous = kept.takeSignature(for: usage),
            let restarted = try previous.restarted(
                on: self, reference, mechanism, for: usage, context: context, kept: kept)
        {
            return restarted
        }
        let usable = try useKey(
            reference, for: usage, keyTypes: mechanism.keyTypes, mechanism: mechanism.type, context: context)
        // A key that needs no PIN for each use gets no per-use state at all (as a key held in
        // memory): one allocation less on every C_SignInit, and the same answers.
        return try SignatureOperation(
            key: usable.key, mechanism,
            authentication: usable.needsPINForEachUse
                ? UseAuthentication(token: self, isRequired: true) : nil,
            usesPrivateObject: usage.needsPrivateKey || usable.isPrivate, kept: kept,
            stored: StoredKeyUse(
                reference: reference, usage: usage, facts: usable.facts, changeCount: usable.changeCount))
    }

    /// The caller's last signature (`usage` `.sign`) or verification (`.verify`) of mechanism
    /// `type` with `parameters`, restarted for the key `reference` names (`SignatureOperation`);
    /// nil when there is none to restart, and the caller starts one (`signatureOperation`),
    /// which gives every answer a first use gives. The registry is not asked again: the kept
    /// operation's mechanism was checked for the same function when it started, and the
    /// registry does not change; `useKey`'s checks run again on the key's facts.
    public func restartedSignature(
        _ reference: ObjectReference, _ type: UInt64, _ parameters: SignatureParameters, for usage: KeyUse,
        context: AccessContext, kept: KeptContexts
    ) throws(CoreError) -> SignatureOperation? {
        guard let previous = kept.signature(for: usage), previous.mechanism.type == type,
            previous.mechanism.parameters == parameters
        else { return nil }
        _ = kept.takeSignature(for: usage)
        return try previous.restarted(
            on: self, reference, previous.mechanism, for: usage, context: context, kept: kept)
    }
}
