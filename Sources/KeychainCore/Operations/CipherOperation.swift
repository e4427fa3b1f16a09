internal import KeychainCrypto

/// An encryption or decryption in progress (v2.40 §5.8–5.9), created by
/// ``Token/startCipher(_:mechanism:parameters:encrypting:context:reusing:)``: RSA (PKCS #1
/// v1.5, OAEP, raw) on one whole message, or AES (ECB, CBC, CBC-PAD, CTR, GCM) part by part.
///
/// It holds the opened key, the per-use PIN (``UseAuthentication``) and what multi-part use
/// needs; a face keeps its buffer convention. After an error the operation is over. A finished
/// AES operation lends its keyed OpenSSL context to the session's next one (`reusing`).
///
/// One operation belongs to one session, which serialises its calls: not thread-safe.
public final class CipherOperation {
    private enum Engine {
        case rsa(AsymmetricKey, EncryptionPadding)
        case aes(SymmetricCipher)
    }

    public let mechanism: Mechanism
    public let isEncrypting: Bool
    /// The key's per-use PIN (CKA_ALWAYS_AUTHENTICATE or an access control, for decryption).
    public let authentication: UseAuthentication
    /// The key is a private key or a private object: the operation ends at logout (v2.40 §5.6).
    public let usesPrivateObject: Bool
    private let engine: Engine
    /// The PIN was spent on this operation: a retry with a larger buffer needs no other.
    @exclusivity(unchecked) private var isAuthorized = false

    /// RSA: the input parts so far (RSA works on one whole message).
    public private(set) var collected: [UInt8] = []
    /// RSA: the output length (the modulus size); for AES 0.
    public let outputLength: Int
    /// AES: output computed but not yet delivered (a face's buffer too small for it).
    public var pending: [UInt8]? {
        get { pendingOutput }
        set { pendingOutput = newValue }
    }
    /// AES: an update ran, so a single-part call may no longer come.
    public var isMultiPart: Bool {
        get { partGiven }
        set { partGiven = newValue }
    }
    /// The storage of `pending` and `isMultiPart`, reached through accessors: a stored
    /// property used from another module (the PKCS#11 face) pays the dynamic exclusivity check
    /// on every use, unchecked or not. One operation belongs to one caller, which serialises
    /// its calls.
    @exclusivity(unchecked) private var pendingOutput: [UInt8]?
    @exclusivity(unchecked) private var partGiven = false
    /// AES-GCM decryption: the ciphertext held back until the tag is checked.
    @exclusivity(unchecked) private var heldBack = 0

    /// The most ciphertext one GCM decryption holds back before the tag can be checked: no
    /// plaintext leaves before it is (v2.40 §2.12), so the whole message is in memory.
    public static let maximumGCMCiphertext = 64 << 20

    init(
        mechanism: Mechanism, encrypting: Bool, authentication: UseAuthentication, usesPrivateObject: Bool,
        rsa key: AsymmetricKey, padding: EncryptionPadding
    ) {
        self.mechanism = mechanism
        self.isEncrypting = encrypting
        self.authentication = authentication
        self.usesPrivateObject = usesPrivateObject
        engine = .rsa(key, padding)
        outputLength = (key.bits + 7) / 8
        storedKey = nil
    }

    init(
        mechanism: Mechanism, encrypting: Bool, authentication: UseAuthentication, usesPrivateObject: Bool,
        aes cipher: SymmetricCipher, key: StoredSecretKey
    ) {
        self.mechanism = mechanism
        self.isEncrypting = encrypting
        self.authentication = authentication
        self.usesPrivateObject = usesPrivateObject
        engine = .aes(cipher)
        outputLength = 0
        storedKey = key
    }

    /// AES: the opened key value and what its use was checked on, which the session's next
    /// operation with the same key object may use again while the store is unchanged
    /// (`Token.startCipher`'s `previous`).
    fileprivate let storedKey: StoredSecretKey?

    /// The operation works on one whole message (RSA): parts are collected and the output
    /// comes at the end.
    public var isWholeMessage: Bool {
        if case .rsa = engine { return true }
        return false
    }

    /// The operation waits for the user's PIN before it may use its key.
    public var awaitsPIN: Bool { !isAuthorized && !authentication.isSatisfied }

    private func authorize() throws(CoreError) {
        guard !isAuthorized else { return }
        try authentication.spend(isEncrypting ? "encryption" : "decryption")
        isAuthorized = true
    }

    // MARK: RSA

    /// RSA: the most input the next part may have (what the message has room for).
    public var roomLeft: Int { max(outputLength - collected.count, 0) }

    /// RSA: takes the next part of the message.
    public func collect(_ part: UnsafeRawBufferPointer) { collected += part }

    /// RSA decryption: refuses a ciphertext that is not one modulus long, before any buffer
    /// convention runs.
    public func checkCiphertext(length: Int) throws(CoreError) {
        guard !isEncrypting, case .rsa(let key, _) = engine else { return }
        do throws(CryptoError) {
            try key.checkCiphertext(length: length)
        } catch {
            throw rsaFailure(error)
        }
    }

    /// RSA: encrypts or decrypts the collected message with `last` appended.
    public func finishWholeMessage(_ last: UnsafeRawBufferPointer) throws(CoreError) -> [UInt8] {
        guard case .rsa(let key, let padding) = engine else {
            throw CoreError(.operationFailed, "the operation is no RSA operation")
        }
        try authorize()
        let input = collected + last
        do throws(CryptoError) {
            return isEncrypting
                ? try key.encrypt(input, padding: padding) : try key.decrypt(input, padding: padding)
        } catch {
            throw rsaFailure(error)
        }
    }

    /// Input of a length the key never takes, or (decrypting) a ciphertext of the right length
    /// that does not decrypt.
    private func rsaFailure(_ error: CryptoError) -> CoreError {
        if isEncrypting { return CoreError(.dataLengthRange, error.message) }
        return CoreError(
            error.code == .invalidInput ? .encryptedDataLengthRange : .encryptedDataInvalid, error.message)
    }

    // MARK: AES

    fileprivate var cipher: SymmetricCipher? {
        if case .aes(let cipher) = engine { return cipher }
        return nil
    }

    /// AES-GCM decryption: how much more ciphertext it may hold back; nil for any other
    /// operation.
    public var holdBackLeft: Int? {
        guard !isEncrypting, case .aesGCM = mechanism.family else { return nil }
        return Self.maximumGCMCiphertext - heldBack
    }

    /// The exact output of `update` for `count` more input bytes.
    public func updateOutputLength(forInput count: Int) -> Int {
        cipher?.updateOutputLength(forInput: count) ?? 0
    }

    /// The output length a single-part call writes straight into a caller's buffer, or nil
    /// when it cannot (`SymmetricCipher.directOutputLength`).
    public func directOutputLength(forInput count: Int) -> Int? {
        cipher?.directOutputLength(forInput: count)
    }

    /// The next part; a GCM decryption returns nothing until `finish` checks the tag.
    public func update(_ part: UnsafeRawBufferPointer) throws(CoreError) -> [UInt8] {
        let cipher = try aes()
        isMultiPart = true
        do throws(CryptoError) {
            let output = try cipher.update(part)
            if holdBackLeft != nil { heldBack += part.count }
            return output
        } catch {
            throw aesFailure(error)
        }
    }

    /// The last output: CBC-PAD's last block, GCM's tag, or a GCM decryption's plaintext once
    /// its tag verifies.
    public func finish() throws(CoreError) -> [UInt8] {
        let cipher = try aes()
        do throws(CryptoError) {
            return try cipher.finish()
        } catch {
            throw aesFailure(error)
        }
    }

    /// A single-part call written straight into `output` (at least `directOutputLength` bytes):
    /// the bytes written.
    public func process(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer)
        throws(CoreError) -> Int
    {
        let cipher = try aes()
        do throws(CryptoError) {
            return try cipher.process(input, into: output)
        } catch {
            throw aesFailure(error)
        }
    }

    /// This finished AES operation started again in place for a new message with `mode`'s
    /// parameters: the caller checked that it has the same mechanism, direction and key object,
    /// and the key's use. nil when its cipher cannot restart in place.
    fileprivate func restarted(_ mode: BlockCipherMode) throws(CoreError) -> CipherOperation? {
        guard let cipher, !authentication.isRequired else { return nil }
        do throws(CryptoError) {
            guard try cipher.restart(mode) else { return nil }
        } catch {
            throw CipherOperation.startFailure(error)
        }
        isAuthorized = false
        pendingOutput = nil
        partGiven = false
        heldBack = 0
        return self
    }

    /// A cipher that cannot start: parameters the mode does not take, or OpenSSL failing.
    fileprivate static func startFailure(_ error: CryptoError) -> CoreError {
        CoreError(error.code == .invalidInput ? .mechanismParameterInvalid : .operationFailed, error.message)
    }

    private func aes() throws(CoreError) -> SymmetricCipher {
        guard let cipher else { throw CoreError(.operationFailed, "the operation is no AES operation") }
        return cipher
    }

    /// Input of a length the mode cannot take, or (decrypting) ciphertext that does not
    /// decrypt: bad padding or a GCM tag that does not verify.
    private func aesFailure(_ error: CryptoError) -> CoreError {
        if error.code == .invalidInput {
            return CoreError(isEncrypting ? .dataLengthRange : .encryptedDataLengthRange, error.message)
        }
        return CoreError(isEncrypting ? .operationFailed : .encryptedDataInvalid, error.message)
    }

    /// One whole message through the operation (the Swift faces' single call).
    public func run(_ input: [UInt8]) throws(CoreError) -> [UInt8] {
        var result: Result<[UInt8], CoreError> = .success([])
        input.withUnsafeBytes { buffer in
            do throws(CoreError) {
                result = .success(
                    isWholeMessage ? try finishWholeMessage(buffer) : try update(buffer) + finish())
            } catch {
                result = .failure(error)
            }
        }
        return try result.get()
    }
}

extension Token {
    /// Starts an encryption or decryption with the key `reference` names, through the one
    /// key-use entry point (registry flags, usage attribute, key type, allowed mechanisms,
    /// login, policy, per-use PIN). Parameter errors come before any key is read.
    ///
    /// `previous`, the session's last finished AES operation, lends its keyed OpenSSL context
    /// when it used the same opened key value (the token opens a new one when the object
    /// changes), mode and direction; the key-use check runs all the same.
    public func startCipher(
        _ reference: ObjectReference, mechanism type: UInt64, parameters: CipherParameters, encrypting: Bool,
        context: AccessContext, reusing previous: CipherOperation? = nil
    ) throws(CoreError) -> CipherOperation {
        let use: KeyUse = encrypting ? .encrypt : .decrypt
        let mechanism = try MechanismRegistry.require(type, for: MechanismFunctions(use))
        if let mode = try parameters.mode(for: mechanism) {
            let key: StoredSecretKey
            if let kept = previous?.storedKey, kept.use.reference == reference,
                try checkKeptSecretKeyUse(
                    reference, facts: kept.use.facts, changeCount: kept.use.changeCount, for: use,
                    keyTypes: mechanism.keyTypes, mechanism: type, context: context)
            {
                // The previous operation's key, unchanged, its use checked on its facts; the
                // operation itself starts again when it is of the same mechanism and direction.
                if let previous, previous.mechanism.type == type, previous.isEncrypting == encrypting,
                    let restarted = try previous.restarted(mode)
                {
                    return restarted
                }
                key = kept.use.usage == use ? kept : StoredSecretKey(kept.value, kept.use, for: use)
            } else {
                let usable = try useSecretKey(
                    reference, for: use, keyTypes: mechanism.keyTypes, mechanism: type, context: context)
                key = StoredSecretKey(
                    usable.value,
                    StoredKeyUse(
                        reference: reference, usage: use, facts: usable.facts, changeCount: usable.changeCount
                    ))
            }
            let cipher: SymmetricCipher
            do throws(CryptoError) {
                cipher = try SymmetricCipher(
                    key: key.value, mode: mode, encrypting: encrypting, reusing: previous?.cipher)
            } catch {
                throw CipherOperation.startFailure(error)
            }
            return CipherOperation(
                mechanism: mechanism, encrypting: encrypting,
                authentication: UseAuthentication(token: self, isRequired: false),
                usesPrivateObject: key.use.facts.isPrivate, aes: cipher, key: key)
        }
        let padding = try parameters.padding(for: mechanism)
        let key = try useKey(
            reference, for: use, keyTypes: mechanism.keyTypes, mechanism: type, context: context)
        return CipherOperation(
            mechanism: mechanism, encrypting: encrypting,
            authentication: UseAuthentication(token: self, isRequired: key.needsPINForEachUse),
            usesPrivateObject: !encrypting || key.isPrivate, rsa: key.key,
            padding: padding)
    }
}

/// An AES operation's opened key value and what its use was checked on: the session's next
/// operation with the same key object takes both over while the store is unchanged
/// (`Token.startCipher`). A class, so that handing it on is one reference.
final class StoredSecretKey {
    let value: SecretBytes
    let use: StoredKeyUse

    init(_ value: SecretBytes, _ use: StoredKeyUse) {
        self.value = value
        self.use = use
    }

    /// The same key and facts, checked for `usage`.
    convenience init(_ value: SecretBytes, _ use: StoredKeyUse, for usage: KeyUse) {
        self.init(
            value,
            StoredKeyUse(
                reference: use.reference, usage: usage, facts: use.facts, changeCount: use.changeCount))
    }
}
