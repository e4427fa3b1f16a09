internal import COpenSSL

/// Bytes that must not outlive their use: PINs, PBKDF2 output, the token key, unsealed key
/// parts (ARCHITECTURE.md §6.3, "secrets in memory live in a self-wiping buffer type").
///
/// The bytes live in one heap allocation that this object owns and that Swift never copies
/// (unlike an `Array`, whose copy-on-write and growth leave stale copies in freed memory).
/// `deinit` overwrites them with `OPENSSL_cleanse`, which the compiler cannot remove as a
/// dead store. The contents are fixed at creation, so an instance may be shared between
/// threads; it is reached only through scoped `withUnsafeBytes`.
///
/// Nothing here prints the bytes: `description` gives the length alone, so a secret that
/// reaches a log line or an error message shows no key material.
public final class SecretBytes: @unchecked Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    // @unchecked: `storage` is written only while `init` runs and read afterwards; freeing it
    // happens in deinit, when no other reference can exist.
    private let storage: UnsafeMutableRawPointer
    /// The allocation's size, all of which is wiped (it may exceed `count`).
    private let capacity: Int
    /// The number of bytes held.
    public let count: Int

    /// `count` bytes written by `initialize`, which gets a zeroed buffer of exactly that size.
    /// A failing `initialize` leaves nothing behind: the buffer is wiped and freed.
    public init<E: Error>(
        count: Int, initializingWith initialize: (UnsafeMutableRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        let count = max(count, 0)
        capacity = max(count, 1)
        storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: capacity)
        self.count = count
        try initialize(UnsafeMutableRawBufferPointer(start: storage, count: count))
    }

    /// At most `capacity` bytes written by `initialize`, which returns how many it wrote (for
    /// outputs whose length is known only afterwards, such as a decryption's).
    init<E: Error>(
        capacity requested: Int, initializingWith initialize: (UnsafeMutableRawBufferPointer) throws(E) -> Int
    ) throws(E) {
        capacity = max(requested, 1)
        storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: capacity)
        // The count is set before `initialize` runs so that a throw still deinitialises
        // cleanly; it is corrected once the length is known.
        var written = 0
        do {
            written = try initialize(UnsafeMutableRawBufferPointer(start: storage, count: max(requested, 0)))
        } catch {
            OPENSSL_cleanse(storage, capacity)
            storage.deallocate()
            throw error
        }
        count = min(max(written, 0), max(requested, 0))
    }

    /// A copy of `bytes`. The caller's array is not wiped: prefer `init(wiping:)` for an array
    /// the caller owns and no longer needs.
    public convenience init(_ bytes: some Collection<UInt8>) {
        let array = Array(bytes)
        self.init(count: array.count) { buffer in
            array.withUnsafeBytes { source in
                if let base = source.baseAddress, let target = buffer.baseAddress {
                    target.copyMemory(from: base, byteCount: source.count)
                }
            }
        }
    }

    /// Takes `bytes` over: copies them in and overwrites the caller's array with zeros.
    public convenience init(wiping bytes: inout [UInt8]) {
        self.init(count: bytes.count) { buffer in
            bytes.withUnsafeBytes { source in
                if let base = source.baseAddress, let target = buffer.baseAddress {
                    target.copyMemory(from: base, byteCount: source.count)
                }
            }
        }
        SecretBytes.wipe(&bytes)
    }

    /// A copy of the bytes at `source`.
    public convenience init(copying source: UnsafeRawBufferPointer) {
        self.init(count: source.count) { buffer in
            if let base = source.baseAddress, let target = buffer.baseAddress {
                target.copyMemory(from: base, byteCount: source.count)
            }
        }
    }

    deinit {
        OPENSSL_cleanse(storage, capacity)
        storage.deallocate()
    }

    /// True when no bytes are held.
    public var isEmpty: Bool { count == 0 }

    /// Calls `body` with the bytes. The pointer must not escape the closure.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: storage, count: count))
    }

    /// A plain array copy of the bytes, for APIs that still take `[UInt8]`. The copy is the
    /// caller's to wipe (`SecretBytes.wipe`).
    public func copyBytes() -> [UInt8] {
        withUnsafeBytes { Array($0) }
    }

    /// Equality in time independent of where the bytes differ (CRYPTO_memcmp).
    public func isEqual(to other: SecretBytes) -> Bool {
        guard count == other.count else { return false }
        return withUnsafeBytes { mine in
            other.withUnsafeBytes { theirs in
                count == 0 || CRYPTO_memcmp(mine.baseAddress, theirs.baseAddress, count) == 0
            }
        }
    }

    /// Overwrites `bytes` with zeros in a way the optimiser keeps (OPENSSL_cleanse), for the
    /// plain arrays that old-style APIs return.
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { buffer in
            if let base = buffer.baseAddress { OPENSSL_cleanse(base, buffer.count) }
        }
    }

    public var description: String { "SecretBytes(\(count) bytes)" }
    public var debugDescription: String { description }
}
