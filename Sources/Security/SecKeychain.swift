internal import Foundation
internal import Keychain

// Apple's macOS keychain functions for locking and unlocking (SecKeychain.h). The keychain's
// password is the token's user PIN: the one PKCS#11 applications log in with.

/// A keychain, as Apple's `SecKeychainRef`: here, always the default keychain (the `login`
/// token of the configuration), as it was when the reference was made.
public final class SecKeychain: Sendable, CustomStringConvertible {
    let keychain: Keychain

    init(_ keychain: Keychain) {
        self.keychain = keychain
    }

    /// The store's path.
    public var description: String { "<SecKeychainRef \(keychain.path)>" }
}

/// A keychain's state, as `SecKeychainGetStatus` reports it: `kSecUnlockStateStatus`,
/// `kSecReadPermStatus` and `kSecWritePermStatus` bits.
public typealias SecKeychainStatus = UInt32
/// The keychain is unlocked.
public let kSecUnlockStateStatus: SecKeychainStatus = 1
/// The keychain can be read.
public let kSecReadPermStatus: SecKeychainStatus = 2
/// The keychain can be written.
public let kSecWritePermStatus: SecKeychainStatus = 4

/// The type identifier of keychains, for comparison with `CFGetTypeID`.
public func SecKeychainGetTypeID() -> CFTypeID { TypeIdentifier.keychain }

/// The default keychain.
///
/// - Returns: `errSecSuccess`; `errSecNoSuchKeychain` or `errSecNotAvailable` when it cannot
///   be opened (`SecCopyErrorDiagnostic` says why).
@discardableResult
public func SecKeychainCopyDefault(_ keychain: UnsafeMutablePointer<SecKeychain?>) -> OSStatus {
    keychain.pointee = nil
    do throws(KeychainError) {
        keychain.pointee = SecKeychain(try Keychain())
        return errSecSuccess
    } catch {
        return LastError.record(error)
    }
}

/// Unlocks a keychain with its password: the user PIN. Unlocking is per process: every
/// `Security` call of this process then sees the keychain's private items (keys,
/// identities, generic passwords), until `SecKeychainLock` or the process ends.
///
///     let pin = "1234"
///     let status = SecKeychainUnlock(nil, UInt32(pin.utf8.count), pin, true)
///
/// - Parameters:
///   - keychain: The keychain, or nil for the default keychain.
///   - passwordLength: The PIN's length in bytes.
///   - password: The PIN's bytes (UTF-8).
///   - usePassword: Must be true: there is no user interface to ask for the PIN.
/// - Returns: `errSecSuccess` (also when the keychain was already unlocked, without checking
///   the PIN again); `errSecAuthFailed` for a wrong PIN (counted: after 10 the PIN locks) or
///   a locked PIN; `errSecNotAvailable` when the keychain has no PIN yet;
///   `errSecInteractionNotAllowed` when `usePassword` is false; `errSecParam` for a NULL or
///   non-UTF-8 password.
@discardableResult
public func SecKeychainUnlock(
    _ keychain: SecKeychain?, _ passwordLength: UInt32, _ password: UnsafeRawPointer?, _ usePassword: Bool
) -> OSStatus {
    do throws(KeychainError) {
        guard usePassword else {
            throw KeychainError(
                .interactionNotAllowed, "no user interaction: pass the PIN and usePassword true")
        }
        guard let password else { throw KeychainError(.parameter, "the password pointer is NULL") }
        let bytes = UnsafeRawBufferPointer(start: password, count: Int(passwordLength))
        guard let pin = String(validating: bytes, as: UTF8.self) else {
            throw KeychainError(.parameter, "the PIN is not UTF-8")
        }
        try resolve(keychain).unlock(pin: pin)
        return errSecSuccess
    } catch {
        return LastError.record(error)
    }
}

/// Locks a keychain for this process: its private items are invisible again.
///
/// - Parameter keychain: The keychain, or nil for the default keychain.
/// - Returns: `errSecSuccess`, or the error opening the default keychain.
@discardableResult
public func SecKeychainLock(_ keychain: SecKeychain?) -> OSStatus {
    do throws(KeychainError) {
        try resolve(keychain).lock()
        return errSecSuccess
    } catch {
        return LastError.record(error)
    }
}

/// A keychain's state: unlocked, readable, writable.
///
/// - Parameter keychain: The keychain, or nil for the default keychain.
/// - Returns: `errSecSuccess`, or the error opening the default keychain.
@discardableResult
public func SecKeychainGetStatus(
    _ keychain: SecKeychain?, _ keychainStatus: UnsafeMutablePointer<SecKeychainStatus>
)
    -> OSStatus
{
    do throws(KeychainError) {
        let keychain = try resolve(keychain)
        var status = kSecReadPermStatus
        if keychain.isUnlocked { status |= kSecUnlockStateStatus }
        if !keychain.isReadOnly { status |= kSecWritePermStatus }
        keychainStatus.pointee = status
        return errSecSuccess
    } catch {
        return LastError.record(error)
    }
}

/// The keychain a `SecKeychain` argument names: the default keychain for nil.
func resolve(_ keychain: SecKeychain?) throws(KeychainError) -> Keychain {
    if let keychain { return keychain.keychain }
    return try Keychain()
}
