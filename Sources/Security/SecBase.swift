public import Foundation
internal import Keychain

/// A result code: `errSecSuccess` (0) or a negative `errSec…` value, as on Apple platforms.
public typealias OSStatus = Int32

// Every result code of Apple's SecBase.h is declared, with Apple's value, in
// SecBaseCodes.swift (and the CSSM and SecureTransport files beside it); the codes this module
// returns are `errSecSuccess`, `errSecUnimplemented`, `errSecDiskFull`, `errSecIO`, `errSecParam`,
// `errSecAllocate`, `errSecNotAvailable`, `errSecReadOnly`, `errSecAuthFailed`,
// `errSecNoSuchKeychain`, `errSecInvalidKeychain`, `errSecDuplicateItem`, `errSecItemNotFound`,
// `errSecInvalidItemRef`, `errSecNoSuchClass`, `errSecInteractionNotAllowed`,
// `errSecReadOnlyAttr`, `errSecDecode`, `errSecInternal` and `errSecVerifyFailed`.

/// No error: Apple's MacTypes name for `errSecSuccess`, which much keychain code compares with.
public let noErr: OSStatus = 0

/// Apple's text for a result code, word for word (SecErrorMessages.swift): "The specified item
/// could not be found in the keychain." for `errSecItemNotFound`; "OSStatus <code>" for a code
/// Apple has no text for.
///
/// The text never carries the details of a failure, as Apple's does not: ask
/// `SecCopyErrorDiagnostic` what exactly went wrong.
///
/// - Parameters:
///   - status: A result code.
///   - reserved: Pass `nil`.
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?) -> CFString? {
    (secErrorMessages[status] ?? "OSStatus \(status)") as NSString
}

/// What exactly went wrong in the last Security call on this thread that failed with `status`:
/// the store path that cannot be opened, the key that is not known, the value of the wrong
/// type; nil when the last failure on this thread had another status, or none failed.
///
/// A p11keychain addition (Apple has no such call): the details `SecCopyErrorMessageString`
/// leaves out, so that Apple's texts stay Apple's.
///
///     let status = SecItemAdd(query as CFDictionary, nil)
///     if status != errSecSuccess, let details = SecCopyErrorDiagnostic(status) {
///         print(details)
///     }
public func SecCopyErrorDiagnostic(_ status: OSStatus) -> CFString? {
    guard status != errSecSuccess, let last = LastError.current, last.status == status else { return nil }
    return last.message as NSString
}

/// The details of the last failure on the current thread, for `SecCopyErrorMessageString`.
struct LastError {
    var status: OSStatus
    var message: String

    private static let key = "p11keychain.Security.lastError"

    static var current: LastError? {
        guard let entry = Thread.current.threadDictionary[key] as? [String: Any],
            let status = entry["status"] as? Int32, let message = entry["message"] as? String
        else { return nil }
        return LastError(status: status, message: message)
    }

    /// Records a failure and returns its status, so that a call can end with
    /// `return LastError.record(error)`.
    static func record(_ status: OSStatus, _ message: String) -> OSStatus {
        Thread.current.threadDictionary[key] = ["status": status, "message": message] as [String: Any]
        return status
    }

    static func record(_ error: KeychainError) -> OSStatus {
        record(error.status, error.message)
    }
}

extension LastError {
    /// Records a failure and hands it to an `error` out-parameter the way Apple's functions
    /// do: a retained `CFError` in `NSOSStatusErrorDomain` whose code is the `OSStatus` and
    /// whose description is the message (the caller takes it with `takeRetainedValue()`).
    static func record(_ error: KeychainError, into out: UnsafeMutablePointer<Unmanaged<CFError>?>?) {
        _ = record(error)
        out?.pointee = Unmanaged.passRetained(
            NSError(
                domain: NSOSStatusErrorDomain, code: Int(error.status),
                userInfo: [NSLocalizedDescriptionKey: error.message]))
    }
}
