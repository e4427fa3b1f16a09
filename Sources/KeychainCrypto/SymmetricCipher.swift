internal import COpenSSL

/// An AES mode and its parameters, as PKCS#11 passes them (v2.40 §2.10, §2.12; v3.0 §2.15).
public enum BlockCipherMode: Sendable, Equatable {
    /// CKM_AES_ECB: no IV, no padding; the input must be whole 16-byte blocks.
    case ecb
    /// CKM_AES_CBC: a 16-byte IV, no padding; the input must be whole blocks.
    case cbc(iv: [UInt8])
    /// CKM_AES_CBC_PAD: a 16-byte IV, PKCS#7 padding (RFC 5652 §6.3).
    case cbcPad(iv: [UInt8])
    /// CKM_AES_CTR with CK_AES_CTR_PARAMS: a 16-byte counter block whose low `counterBits`
    /// bits (1...128) count; the spec forbids the counter to wrap within those bits.
    case ctr(counterBlock: [UInt8], counterBits: Int)
    /// CKM_AES_GCM with CK_GCM_PARAMS: an IV of 1...128 bytes, additional data, and a tag of
    /// `tagLength` BYTES (12...16, the spec's 96–128 bits).
    case gcm(iv: [UInt8], additionalData: [UInt8], tagLength: Int)

    /// The GCM IV lengths in bytes the cipher takes: PKCS#11 allows up to 256 (v2.40
    /// §2.12), OpenSSL 3.0's GCM at most 128 (GCM_IV_MAX_SIZE), and GCM is not to be written by
    /// hand here. Parameter parsers check against this, so no longer IV reaches OpenSSL.
    public static let gcmIVLengths = 1...128
    /// The GCM tag lengths in bytes the cipher takes (the spec's 96–128 bits).
    public static let gcmTagLengths = 12...16
}

/// A multi-part AES encryption or decryption (PKCS#11 C_EncryptInit/Update/Final and their
/// decryption twins; a single-part C_Encrypt is `update` then `finish`).
///
/// OpenSSL does the AES; this class adds what PKCS#11 asks beyond it: output lengths known
/// before each call (the two-call buffer convention, v2.40 §5.2), GCM decryption releasing
/// no plaintext before the tag verifies (v2.40 §2.12.3), a CTR counter that must not wrap
/// (CK_AES_CTR_PARAMS), and an operation that ends at its first error.
///
/// Not thread-safe: one operation belongs to one session, which PKCS#11 runs one call at a time.
public final class SymmetricCipher {
    private enum Kind {
        case block(padded: Bool)
        case ctr(blocksLeft: UInt64?)
        case gcm(tagLength: Int)
    }

    private enum State { case active, finished, failed }

    /// The most GCM ciphertext buffered for one decryption: it is all held until the tag
    /// has been checked.
    static let maximumBufferedLength = 1 << 30
    /// The most bytes handed to one OpenSSL update call, whose lengths are C ints.
    private static let chunkLength = 1 << 28
    private static let blockLength = 16

    // Unchecked exclusivity on the state below: one operation belongs to one session, which
    // serialises its calls; the dynamic checks were a measurable part of an AES-GCM call.
    private let context: SymmetricCipherContext
    @exclusivity(unchecked) private var kind: Kind
    private let encrypting: Bool
    /// The key and OpenSSL cipher the context was keyed with, and the IV length it was last
    /// given: a later operation with the same three may take over the context (`reusing`).
    private let key: SecretBytes
    private let algorithm: OpaquePointer
    @exclusivity(unchecked) private var ivLength: Int
    @exclusivity(unchecked) private var state = State.active
    /// Block modes: bytes taken in but not yet returned (a partial block; for CBC-PAD
    /// decryption also the last whole block, which OpenSSL holds back for the padding).
    @exclusivity(unchecked) private var pending = 0
    /// CTR: bytes processed so far.
    @exclusivity(unchecked) private var processed: UInt64 = 0
    /// GCM decryption: all input so far (ciphertext ‖ tag).
    @exclusivity(unchecked) private var buffered: [UInt8] = []

    /// Starts an AES operation with `key` (16, 24 or 32 bytes).
    ///
    /// With `previous`, an operation that is over and used the same key object (`===`), AES
    /// mode, key length and direction, its OpenSSL context is taken over and re-initialised
    /// with only the new IV: OpenSSL keeps the key schedule (and GCM's hash key), which costs
    /// about as much as encrypting a few KiB. `previous` can do nothing afterwards. Any other
    /// `previous` is ignored.
    ///
    /// - Throws: ``CryptoError/Code/invalidInput`` for a key, IV, counter block, counter
    ///   width or tag length the mode does not allow (a GCM IV longer than OpenSSL's 128
    ///   bytes among them); ``CryptoError/Code/failed`` when OpenSSL fails.
    public init(
        key: SecretBytes, mode: BlockCipherMode, encrypting: Bool, reusing previous: SymmetricCipher? = nil
    ) throws(CryptoError) {
        guard SymmetricAlgorithms.AESKeySize(rawValue: key.count) != nil else {
            throw CryptoError(.invalidInput, "AES keys are 16, 24 or 32 bytes, not \(key.count)")
        }
        let setup = try Setup(mode, keyLength: key.count)
        self.encrypting = encrypting
        self.key = key
        algorithm = setup.cipher
        kind = setup.kind
        ivLength = setup.iv.count
        let reused =
            previous.map {
                $0.state != .active && $0.key === key && $0.algorithm == setup.cipher
                    && $0.encrypting == encrypting
            } ?? false
        if reused, let previous {
            context = previous.context
            previous.state = .failed
        } else {
            context = try SymmetricCipherContext()
        }
        try begin(setup, keyed: reused, lastIVLength: previous?.ivLength)
    }

    /// Starts this operation, which is over, again in place with `mode`'s parameters, when
    /// `mode` is of the same AES mode (its OpenSSL cipher): only the new IV (and additional
    /// data) reach the keyed context, and nothing is allocated. False, and nothing changed,
    /// when it cannot (another mode, or an operation still under way); the caller then starts
    /// a new one (which may take over the context, `reusing`).
    ///
    /// - Throws: as `init` for `mode`'s parameters; the operation is then over.
    public func restart(_ mode: BlockCipherMode) throws(CryptoError) -> Bool {
        guard state != .active else { return false }
        let setup = try Setup(mode, keyLength: key.count)
        guard setup.cipher == algorithm else { return false }
        let lastIVLength = ivLength
        state = .failed
        kind = setup.kind
        ivLength = setup.iv.count
        pending = 0
        processed = 0
        buffered = []
        try begin(setup, keyed: true, lastIVLength: lastIVLength)
        state = .active
        return true
    }

    /// A mode's parameters, checked, and the OpenSSL cipher for them.
    private struct Setup {
        let kind: Kind
        let cipher: OpaquePointer
        var iv: [UInt8] = []
        var additionalData: [UInt8] = []

        init(_ mode: BlockCipherMode, keyLength: Int) throws(CryptoError) {
            let aesMode: SymmetricAlgorithms.AESMode
            switch mode {
            case .ecb:
                aesMode = .ecb
                kind = .block(padded: false)
            case .cbc(let vector), .cbcPad(let vector):
                guard vector.count == SymmetricCipher.blockLength else {
                    throw CryptoError(.invalidInput, "an AES-CBC IV is 16 bytes, not \(vector.count)")
                }
                aesMode = .cbc
                iv = vector
                if case .cbcPad = mode { kind = .block(padded: true) } else { kind = .block(padded: false) }
            case .ctr(let counterBlock, let counterBits):
                guard counterBlock.count == SymmetricCipher.blockLength else {
                    throw CryptoError(
                        .invalidInput, "an AES-CTR counter block is 16 bytes, not \(counterBlock.count)")
                }
                guard (1...128).contains(counterBits) else {
                    throw CryptoError(
                        .invalidInput, "an AES-CTR counter is 1 to 128 bits wide, not \(counterBits)")
                }
                aesMode = .ctr
                iv = counterBlock
                kind = .ctr(blocksLeft: SymmetricCipher.counterBlocksLeft(counterBlock, bits: counterBits))
            case .gcm(let vector, let data, let tagLength):
                guard BlockCipherMode.gcmIVLengths.contains(vector.count) else {
                    throw CryptoError(.invalidInput, "an AES-GCM IV is 1 to 128 bytes, not \(vector.count)")
                }
                guard BlockCipherMode.gcmTagLengths.contains(tagLength) else {
                    throw CryptoError(.invalidInput, "an AES-GCM tag is 12 to 16 bytes, not \(tagLength)")
                }
                guard data.count <= SymmetricCipher.maximumBufferedLength else {
                    throw CryptoError(.invalidInput, "the AES-GCM additional data is too long")
                }
                aesMode = .gcm
                iv = vector
                additionalData = data
                kind = .gcm(tagLength: tagLength)
            }
            guard let cipher = SymmetricAlgorithms.aes(keyLength: keyLength, aesMode) else {
                throw CryptoError(.failed, "OpenSSL offers no AES-\(keyLength * 8)-\(aesMode.rawValue)")
            }
            self.cipher = cipher
        }

        var isGCM: Bool {
            if case .gcm = kind { return true }
            return false
        }
    }

    /// Initialises the context for `setup`: a `keyed` one (taken over, or restarted) gets only
    /// the IV, and the IV length first when GCM's differs from `lastIVLength`; a new one the
    /// cipher and the key.
    private func begin(_ setup: Setup, keyed: Bool, lastIVLength: Int?) throws(CryptoError) {
        let direction: Int32 = encrypting ? 1 : 0
        let iv = setup.iv
        // The GCM IV length must be set before the IV is (OpenSSL reads the IV with the
        // length the context has when the IV arrives): a step of its own, with the cipher
        // for a new context, and without (keeping the key) for a keyed one whose IV length
        // differs.
        if !keyed || (setup.isGCM && lastIVLength != iv.count) {
            var length = iv.count
            var parameters = [
                OSSL_PARAM_construct_size_t(SymmetricParameter.ivLength, &length), OSSL_PARAM_construct_end(),
            ]
            let prepared = parameters.withUnsafeMutableBufferPointer { list in
                EVP_CipherInit_ex2(
                    context.pointer, keyed ? nil : setup.cipher, nil, nil, direction,
                    setup.isGCM ? list.baseAddress : nil)
            }
            guard prepared == 1 else { throw CryptoError.openSSL(.failed, "cannot start AES") }
        }
        // A keyed context gets no key: EVP_CipherInit_ex2 with a NULL key keeps the schedule
        // and resets the mode's state (buffered bytes, counter position, GCM's hash and tag).
        let started = key.withUnsafeBytes { keyBytes in
            EVP_CipherInit_ex2(
                context.pointer, nil, keyed ? nil : keyBytes.bindMemory(to: UInt8.self).baseAddress,
                iv.isEmpty ? nil : iv, direction, nil)
        }
        guard started == 1 else { throw CryptoError.openSSL(.failed, "cannot start AES") }
        if case .block(let padded) = setup.kind {
            guard EVP_CIPHER_CTX_set_padding(context.pointer, padded ? 1 : 0) == 1 else {
                throw CryptoError.openSSL(.failed, "cannot set the AES padding")
            }
        }
        let additionalData = setup.additionalData
        if !additionalData.isEmpty {
            var written: Int32 = 0
            guard
                EVP_CipherUpdate(
                    context.pointer, nil, &written, additionalData, Int32(clamping: additionalData.count))
                    == 1
            else { throw CryptoError.openSSL(.failed, "cannot authenticate the additional data") }
        }
    }

    /// Exact output length `update` returns for `n` more input bytes, without changing state
    /// (for PKCS#11 length queries, v2.40 §5.2).
    public func updateOutputLength(forInput n: Int) -> Int {
        guard n > 0 else { return 0 }
        switch kind {
        case .ctr: return n
        case .gcm: return encrypting ? n : 0
        case .block(let padded):
            let (total, overflow) = pending.addingReportingOverflow(n)
            guard !overflow else { return n }
            // OpenSSL holds back the last whole block of a CBC-PAD decryption: it may be
            // the padding block.
            if padded, !encrypting, total % Self.blockLength == 0 { return total - Self.blockLength }
            return total - total % Self.blockLength
        }
    }

    /// Output length of `finish`, without changing state: exact for encryption (the GCM tag,
    /// CBC-PAD's last block); for CBC-PAD decryption an upper bound (16); for GCM decryption
    /// the buffered ciphertext minus the tag.
    public func finishOutputLength() -> Int {
        switch kind {
        case .ctr: 0
        case .gcm(let tagLength): encrypting ? tagLength : max(buffered.count - tagLength, 0)
        case .block(let padded): padded ? Self.blockLength : 0
        }
    }

    /// False only for CBC-PAD decryption, whose last block's padding is known only once it
    /// is decrypted.
    public var finishLengthIsExact: Bool {
        if case .block(true) = kind { return encrypting }
        return true
    }

    /// The exact length `process(_:into:)` writes for `n` bytes of input, or nil when this
    /// operation cannot write straight into a caller's buffer: it has begun (an update ran),
    /// `n` is 0, the input is not whole blocks (ECB, CBC: `finish` reports that), CBC-PAD
    /// decryption (its length is known only once the padding is read) or GCM decryption
    /// (no plaintext may reach the caller before the tag verifies, v2.40 §2.12.3).
    public func directOutputLength(forInput n: Int) -> Int? {
        guard state == .active, n > 0, pending == 0, processed == 0, buffered.isEmpty else { return nil }
        switch kind {
        case .ctr:
            return n
        case .gcm(let tagLength):
            guard encrypting else { return nil }
            let (total, overflow) = n.addingReportingOverflow(tagLength)
            return overflow ? nil : total
        case .block(let padded):
            guard padded else { return n % Self.blockLength == 0 ? n : nil }
            guard encrypting else { return nil }
            let (total, overflow) = (n - n % Self.blockLength).addingReportingOverflow(Self.blockLength)
            return overflow ? nil : total
        }
    }

    /// A single-part operation (C_Encrypt, C_Decrypt) written straight into `output`, which
    /// holds at least `directOutputLength(forInput: input.count)` bytes: `update` and `finish`
    /// without the arrays they return. Returns the bytes written. On an error the operation
    /// is over and `output` is wiped.
    ///
    /// - Throws: as `update` and `finish`; ``CryptoError/Code/failed`` when
    ///   `directOutputLength` is nil or `output` is too small.
    public func process(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer)
        throws(CryptoError) -> Int
    {
        try checkActive()
        guard let length = directOutputLength(forInput: input.count), output.count >= length,
            let target = output.baseAddress?.assumingMemoryBound(to: UInt8.self)
        else { throw CryptoError(.failed, "this AES operation cannot write into the buffer given") }
        do throws(CryptoError) {
            try countCTR(input.count)
            let expected = updateOutputLength(forInput: input.count)
            let written = try feed(input, into: target, expected: expected)
            pending = pending - expected + input.count
            if case .gcm(let tagLength) = kind {
                // Encryption (directOutputLength): the tag goes straight after the ciphertext.
                guard length - written == tagLength else {
                    throw CryptoError(.failed, "AES-GCM produced \(written) bytes, not \(length - tagLength)")
                }
                try writeGCMTag(tagLength, into: target + written)
            } else {
                let last = try complete()
                guard last.count == length - written else {
                    throw CryptoError(.failed, "AES produced \(written + last.count) bytes, not \(length)")
                }
                last.withUnsafeBufferPointer { source in
                    if let base = source.baseAddress {
                        (target + written).update(from: base, count: source.count)
                    }
                }
            }
            state = .finished
            return length
        } catch {
            state = .failed
            OPENSSL_cleanse(target, length)
            throw error
        }
    }

    /// Encrypts or decrypts the next part of the input. GCM decryption returns nothing: the
    /// whole input is held until `finish` has checked the tag.
    ///
    /// - Throws: ``CryptoError/Code/invalidInput`` when a CTR counter would wrap (the spec
    ///   forbids reusing counter values) or GCM input exceeds the buffer bound. After any
    ///   error the operation is over: every later call throws.
    public func update(_ input: UnsafeRawBufferPointer) throws(CryptoError) -> [UInt8] {
        try checkActive()
        do {
            return try absorb(input)
        } catch {
            state = .failed
            throw error
        }
    }

    /// Ends the operation: the last block (CBC-PAD), the tag (GCM encryption) or the whole
    /// plaintext once the tag verifies (GCM decryption).
    ///
    /// - Throws: ``CryptoError/Code/invalidInput`` for ECB/CBC input that is not whole blocks
    ///   or GCM input shorter than the tag (PKCS#11: CKR_DATA_LEN_RANGE /
    ///   CKR_ENCRYPTED_DATA_LEN_RANGE); ``CryptoError/Code/invalidPadding`` for CBC-PAD
    ///   padding that is not PKCS#7; ``CryptoError/Code/authenticationFailed`` for a GCM tag
    ///   that does not verify, with no plaintext released.
    public func finish() throws(CryptoError) -> [UInt8] {
        try checkActive()
        do {
            let output = try complete()
            state = .finished
            return output
        } catch {
            state = .failed
            throw error
        }
    }

    private func checkActive() throws(CryptoError) {
        switch state {
        case .active: return
        case .finished: throw CryptoError(.failed, "the AES operation has already finished")
        case .failed: throw CryptoError(.failed, "the AES operation failed earlier and cannot continue")
        }
    }

    private func absorb(_ input: UnsafeRawBufferPointer) throws(CryptoError) -> [UInt8] {
        guard !input.isEmpty else { return [] }
        switch kind {
        case .gcm where !encrypting:
            guard buffered.count <= Self.maximumBufferedLength - input.count else {
                throw CryptoError(.invalidInput, "more AES-GCM ciphertext than the token buffers")
            }
            buffered.append(contentsOf: input)
            return []
        default:
            try countCTR(input.count)
        }
        let expected = updateOutputLength(forInput: input.count)
        let output = try run(input, expected: expected)
        pending = pending - expected + input.count
        return output
    }

    /// CTR: counts `count` more input bytes, refusing input that would make the counter wrap.
    private func countCTR(_ count: Int) throws(CryptoError) {
        guard case .ctr(let blocksLeft) = kind else { return }
        let (total, overflow) = processed.addingReportingOverflow(UInt64(count))
        guard !overflow else { throw CryptoError(.invalidInput, "too much AES-CTR input") }
        let blocks = total / 16 + (total % 16 == 0 ? 0 : 1)
        if let blocksLeft, blocks > blocksLeft {
            throw CryptoError(.invalidInput, "the AES-CTR counter would wrap within its counter bits")
        }
        processed = total
    }

    /// Feeds `input` to OpenSSL in int-sized pieces and checks it produced `expected` bytes.
    /// Room beyond the output is wiped: OpenSSL parks CBC-PAD's held-back plaintext block there.
    private func run(_ input: UnsafeRawBufferPointer, expected: Int) throws(CryptoError) -> [UInt8] {
        let capacity = input.count + 2 * Self.blockLength
        var failure: CryptoError?
        let output = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            count = 0
            guard let target = buffer.baseAddress else { return }
            do throws(CryptoError) {
                let written = try feed(input, into: target, expected: expected)
                OPENSSL_cleanse(target + written, capacity - written)
                count = written
            } catch {
                failure = error
                OPENSSL_cleanse(target, capacity)
            }
        }
        if let failure { throw failure }
        return output
    }

    /// EVP_CipherUpdate of `input` into `target`, which has room for `expected` bytes: the
    /// modes here write exactly what `updateOutputLength` says, and anything else is an error.
    private func feed(
        _ input: UnsafeRawBufferPointer, into target: UnsafeMutablePointer<UInt8>, expected: Int
    )
        throws(CryptoError) -> Int
    {
        guard let source = input.baseAddress else { return 0 }
        var offset = 0
        var written = 0
        while offset < input.count {
            let piece = min(Self.chunkLength, input.count - offset)
            var length: Int32 = 0
            guard
                EVP_CipherUpdate(
                    context.pointer, target + written, &length,
                    source.advanced(by: offset).assumingMemoryBound(to: UInt8.self), Int32(clamping: piece))
                    == 1, length >= 0, Int(length) <= expected - written
            else { throw CryptoError.openSSL(.failed, "AES failed") }
            written += Int(length)
            offset += piece
        }
        guard written == expected else {
            throw CryptoError(.failed, "AES produced \(written) bytes, not the \(expected) expected")
        }
        return written
    }

    private func complete() throws(CryptoError) -> [UInt8] {
        switch kind {
        case .ctr:
            return try final(expected: 0)
        case .block(let padded):
            if padded, !encrypting {
                guard pending == Self.blockLength else {
                    throw CryptoError(.invalidInput, "CBC-PAD ciphertext must be whole 16-byte blocks")
                }
            } else if !padded, pending != 0 {
                throw CryptoError(.invalidInput, "the data length is not a multiple of the 16-byte AES block")
            }
            return try final(expected: padded && encrypting ? Self.blockLength : nil)
        case .gcm(let tagLength):
            return encrypting ? try gcmTag(tagLength) : try gcmOpen(tagLength)
        }
    }

    /// EVP_CipherFinal_ex. `expected` nil: CBC-PAD decryption, 0...15 bytes after the padding.
    private func final(expected: Int?) throws(CryptoError) -> [UInt8] {
        var failed = false
        let output = [UInt8](unsafeUninitializedCapacity: 2 * Self.blockLength) { buffer, count in
            count = 0
            guard let target = buffer.baseAddress else { return }
            var length: Int32 = 0
            let ok = EVP_CipherFinal_ex(context.pointer, target, &length) == 1
            let written = min(max(Int(length), 0), buffer.count)
            if ok, expected.map({ $0 == written }) ?? (written < Self.blockLength) {
                count = written
                OPENSSL_cleanse(target + written, buffer.count - written)
            } else {
                failed = true
                OPENSSL_cleanse(target, buffer.count)
            }
        }
        guard !failed else {
            if expected == nil {
                ERR_clear_error()
                throw CryptoError(.invalidPadding, "the CBC-PAD padding is not valid")
            }
            throw CryptoError.openSSL(.failed, "AES failed")
        }
        pending = 0
        return output
    }

    private func gcmTag(_ tagLength: Int) throws(CryptoError) -> [UInt8] {
        _ = try final(expected: 0)
        var tag = [UInt8](repeating: 0, count: tagLength)
        guard
            EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_GET_TAG, Int32(clamping: tagLength), &tag) == 1
        else { throw CryptoError.openSSL(.failed, "cannot read the AES-GCM tag") }
        return tag
    }

    /// GCM encryption's end without the arrays of `gcmTag`: EVP_CipherFinal_ex (which writes
    /// nothing for GCM: its room is scratch) and the `tagLength`-byte tag written to `target`.
    private func writeGCMTag(_ tagLength: Int, into target: UnsafeMutablePointer<UInt8>) throws(CryptoError) {
        var length: Int32 = 0
        var scratch: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        let finished = withUnsafeMutableBytes(of: &scratch) { room in
            EVP_CipherFinal_ex(
                context.pointer, room.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
        }
        guard finished == 1, length == 0 else { throw CryptoError.openSSL(.failed, "AES failed") }
        pending = 0
        guard
            EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_GET_TAG, Int32(clamping: tagLength), target)
                == 1
        else { throw CryptoError.openSSL(.failed, "cannot read the AES-GCM tag") }
    }

    /// Decrypts the buffered ciphertext into a self-wiping buffer and copies it out only
    /// when the tag verifies (v2.40 §2.12.3: no plaintext from a message that fails).
    private func gcmOpen(_ tagLength: Int) throws(CryptoError) -> [UInt8] {
        guard buffered.count >= tagLength else {
            throw CryptoError(.invalidInput, "AES-GCM input is shorter than its \(tagLength)-byte tag")
        }
        let ciphertextLength = buffered.count - tagLength
        var tag = Array(buffered[ciphertextLength...])
        guard
            EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_SET_TAG, Int32(clamping: tagLength), &tag) == 1
        else { throw CryptoError.openSSL(.failed, "cannot set the AES-GCM tag") }
        var authenticated = false
        let plaintext = try SecretBytes(capacity: ciphertextLength + 2 * Self.blockLength) {
            (output) throws(CryptoError) -> Int in
            guard let target = output.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return 0 }
            var written = 0
            var length: Int32 = 0
            while written < ciphertextLength {
                let piece = min(Self.chunkLength, ciphertextLength - written)
                let ok = buffered.withUnsafeBufferPointer { source in
                    EVP_CipherUpdate(
                        context.pointer, target + written, &length, source.baseAddress.map { $0 + written },
                        Int32(clamping: piece))
                }
                guard ok == 1, Int(length) == piece else {
                    throw CryptoError.openSSL(.failed, "AES-GCM failed")
                }
                written += piece
            }
            // GCM's final call fails only when the tag does not verify.
            authenticated = EVP_CipherFinal_ex(context.pointer, target + written, &length) == 1 && length == 0
            ERR_clear_error()
            return authenticated ? written : 0
        }
        buffered = []
        guard authenticated else {
            throw CryptoError(.authenticationFailed, "the AES-GCM tag does not verify")
        }
        return plaintext.copyBytes()
    }

    /// How many counter blocks may still be used before the low `bits` bits of the counter
    /// wrap, or nil when more than any input can need (2^64 blocks or more, or a full 128-bit
    /// counter, which OpenSSL increments exactly as the spec does).
    static func counterBlocksLeft(_ block: [UInt8], bits: Int) -> UInt64? {
        guard bits < 128, block.count == blockLength else { return nil }
        let low = block[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        if bits < 64 {
            let mask = (UInt64(1) << UInt64(bits)) - 1
            return mask - (low & mask) + 1
        }
        let high = block[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let highBits = bits - 64
        let highMask = highBits == 0 ? 0 : (UInt64(1) << UInt64(highBits)) - 1
        // Unless every counting bit above the low 64 is set, 2^64 blocks or more remain.
        guard high & highMask == highMask, low != 0 else { return nil }
        return UInt64.max - low + 1
    }
}
