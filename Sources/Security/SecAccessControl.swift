public import Foundation
internal import Keychain

// SecAccessControl (Apple's SecAccessControl.h): a protection class and flags, stored with
// an item through kSecAttrAccessControl. What the flags demand is KeychainCore's rule
// (`AccessControl`): `.userPresence`, `.devicePasscode` and `.applicationPassword` mean the
// user's PIN must be presented for each use of the item — a password's data is returned only
// with the PIN in `kSecUseAuthenticationContext`, a private key made with them has
// CKA_ALWAYS_AUTHENTICATE. Linux has no biometry and no paired watch: the biometry and watch
// flags are refused (errSecParam), never quietly weakened.

/// Apple's SecAccessControlCreateFlags, with Apple's bit values.
public struct SecAccessControlCreateFlags: OptionSet, Sendable {
    public let rawValue: CFOptionFlags
    public init(rawValue: CFOptionFlags) { self.rawValue = rawValue }

    /// The user's PIN, for each use.
    public static let userPresence = SecAccessControlCreateFlags(rawValue: 1 << 0)
    /// Biometry (refused here: there is none).
    public static let biometryAny = SecAccessControlCreateFlags(rawValue: 1 << 1)
    /// Biometry's older name (refused here).
    public static let touchIDAny = SecAccessControlCreateFlags(rawValue: 1 << 1)
    /// The currently enrolled biometry (refused here).
    public static let biometryCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)
    /// Its older name (refused here).
    public static let touchIDCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)
    /// The device passcode: here the user's PIN, for each use.
    public static let devicePasscode = SecAccessControlCreateFlags(rawValue: 1 << 4)
    /// A paired watch (refused here).
    public static let watch = SecAccessControlCreateFlags(rawValue: 1 << 5)
    /// Any of the constraints (with one constraint here, the same as all of them).
    public static let or = SecAccessControlCreateFlags(rawValue: 1 << 14)
    /// All of the constraints.
    public static let and = SecAccessControlCreateFlags(rawValue: 1 << 15)
    /// A private key usable for signing and key agreement (Apple's Secure Enclave keys):
    /// accepted, no further meaning here.
    public static let privateKeyUsage = SecAccessControlCreateFlags(rawValue: 1 << 30)
    /// An application password: here the user's PIN, for each use.
    public static let applicationPassword = SecAccessControlCreateFlags(rawValue: 1 << 31)
}

/// An item's access control: a protection class (`kSecAttrAccessible…`) and flags.
public final class SecAccessControl: CustomStringConvertible, Sendable {
    let protection: Accessibility
    let flags: AccessControlFlags

    init(protection: Accessibility, flags: AccessControlFlags) {
        self.protection = protection
        self.flags = flags
    }

    public var description: String {
        "<SecAccessControl protection: \(protection.rawValue), flags: 0x\(String(flags.rawValue, radix: 16))>"
    }
}

/// Creates an access control object (Apple's SecAccessControlCreateWithFlags).
///
/// - Parameters:
///   - allocator: Ignored (pass nil or kCFAllocatorDefault).
///   - protection: One of the `kSecAttrAccessible…` values.
///   - flags: The constraints; biometry and watch flags are refused.
///   - error: Receives a CFError (domain NSOSStatusErrorDomain, code errSecParam) on failure.
/// - Returns: The object, or nil on failure.
public func SecAccessControlCreateWithFlags(
    _ allocator: CFAllocator?, _ protection: CFTypeRef, _ flags: SecAccessControlCreateFlags,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecAccessControl? {
    error?.pointee = nil
    let failure: String
    if let name = accessibilityName(protection), let accessibility = Accessibility(rawValue: name) {
        let accessFlags = AccessControlFlags(rawValue: UInt64(flags.rawValue))
        if accessFlags.isDisjoint(with: [.biometryAny, .biometryCurrentSet, .watch]) {
            return SecAccessControl(protection: accessibility, flags: accessFlags)
        }
        failure = "biometry and a paired watch do not exist on this keychain: use .userPresence"
    } else {
        failure = "the protection must be one of the kSecAttrAccessible… values"
    }
    LastError.record(KeychainError(.parameter, failure), into: error)
    return nil
}

/// The protection class of an access control object.
public func SecAccessControlGetProtection(_ access: SecAccessControl) -> CFTypeRef {
    access.protection.rawValue as AnyObject
}

/// A kSecAttrAccessible value, given as a CFString (or a bridged string object).
func accessibilityName(_ value: Any) -> String? {
    if let name = value as? String { return name }
    if let name = value as? NSString { return name as String }
    return nil
}
