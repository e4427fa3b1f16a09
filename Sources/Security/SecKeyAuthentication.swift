internal import Foundation
internal import Keychain

// The PIN a key keeps from the query that found it (kSecUseAuthenticationContext).

/// An authentication context kept by a `SecKey` (Apple's LAContext; here the user PIN given as
/// `kSecUseAuthenticationContext`): the PIN in memory this object owns, wiped when it goes.
final class AuthenticationContext: @unchecked Sendable {
    // @unchecked: `bytes` is written only in init and wiped in deinit, when no other
    // reference exists; in between it is only read. `wasRefused` is guarded by `lock`.
    private let bytes: UnsafeMutableBufferPointer<UInt8>
    private let count: Int
    private let lock = NSLock()
    private var wasRefused = false

    /// Nil without a PIN.
    init?(_ pin: [UInt8]?) {
        guard let pin else { return nil }
        bytes = .allocate(capacity: max(pin.count, 1))
        bytes.initialize(repeating: 0)
        _ = UnsafeMutableBufferPointer(rebasing: bytes[0..<pin.count]).update(fromContentsOf: pin)
        count = pin.count
    }

    deinit {
        if let base = bytes.baseAddress { explicit_bzero(base, bytes.count) }
        bytes.deallocate()
    }

    /// Runs `body` with a copy of the PIN, wiped when it returns. A PIN the token refused
    /// once is not tried again: each try counts toward the lockout, so a program retrying a
    /// key found with a wrong PIN would otherwise lock the PIN within ten uses.
    func withPIN<T>(_ body: ([UInt8]?) throws(KeychainError) -> T) throws(KeychainError) -> T {
        if lock.withLock({ wasRefused }) {
            throw KeychainError(
                .authFailed,
                "the PIN given as kSecUseAuthenticationContext was refused before: find the item "
                    + "again with the right PIN")
        }
        var pin = Array(bytes.prefix(count))
        defer {
            pin.withUnsafeMutableBytes { bytes in
                if let base = bytes.baseAddress { explicit_bzero(base, bytes.count) }
            }
        }
        do {
            return try body(pin)
        } catch  where error.code == .authFailed {
            lock.withLock { wasRefused = true }
            throw error
        }
    }
}

/// Runs `body` with the PIN of `context` (a copy, wiped when it returns), or with nil.
func withPIN<T>(_ context: AuthenticationContext?, _ body: ([UInt8]?) throws(KeychainError) -> T)
    throws(KeychainError) -> T
{
    guard let context else { return try body(nil) }
    return try context.withPIN(body)
}
