public import Foundation
internal import Keychain

/// A result code: `errSecSuccess` (0) or a negative `errSec…` value, as on Apple platforms.
public typealias OSStatus = Int32

// Result codes, with Apple's values. Every code a function of this module returns is here.

/// No error.
public let errSecSuccess: OSStatus = 0
/// Not implemented: internet passwords, hardware tokens (Secure Enclave), key exchange.
public let errSecUnimplemented: OSStatus = -4
/// The disk is full.
public let errSecDiskFull: OSStatus = -34
/// An I/O error, or the store stayed busy too long.
public let errSecIO: OSStatus = -36
/// A parameter is wrong: a missing or unknown key, a value of the wrong type, contradictory
/// options.
public let errSecParam: OSStatus = -50
/// Memory could not be allocated.
public let errSecAllocate: OSStatus = -108
/// No keychain is available: the configuration file is invalid.
public let errSecNotAvailable: OSStatus = -25291
/// The keychain cannot be modified by this process.
public let errSecReadOnly: OSStatus = -25292
/// Authentication failed.
public let errSecAuthFailed: OSStatus = -25293
/// The keychain's store does not exist or cannot be opened.
public let errSecNoSuchKeychain: OSStatus = -25294
/// The store is not a valid keychain, or was written by a newer version.
public let errSecInvalidKeychain: OSStatus = -25295
/// The item already exists.
public let errSecDuplicateItem: OSStatus = -25299
/// No item matches.
public let errSecItemNotFound: OSStatus = -25300
/// The item reference is no longer valid.
public let errSecInvalidItemRef: OSStatus = -25304
/// The item class is not known.
public let errSecNoSuchClass: OSStatus = -25306
/// The keychain is locked and no user interaction is possible.
public let errSecInteractionNotAllowed: OSStatus = -25308
/// The attribute cannot be modified.
public let errSecReadOnlyAttr: OSStatus = -25309
/// The data does not decode (e.g. bytes that are not a DER certificate).
public let errSecDecode: OSStatus = -26275
/// An internal error (Apple also returns it for a certificate without a common name).
public let errSecInternal: OSStatus = -26276
/// A signature does not verify (`SecKeyVerifySignature`'s error).
public let errSecVerifyFailed: OSStatus = -67808

/// A sentence describing a result code.
///
/// When the last failing Security call on this thread returned `status`, the sentence also
/// says what exactly went wrong: the store path that cannot be opened, the key that is not
/// known, the value of the wrong type. So the usual Apple idiom gives the details:
///
///     let status = SecItemAdd(query as CFDictionary, nil)
///     if status != errSecSuccess {
///         print(SecCopyErrorMessageString(status, nil) as String? ?? "")
///     }
///
/// - Parameters:
///   - status: A result code.
///   - reserved: Pass `nil`.
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?) -> CFString? {
    let generic = genericMessage(status)
    if status != errSecSuccess, let last = LastError.current, last.status == status {
        return ((generic.hasSuffix(".") ? String(generic.dropLast()) : generic) + ": " + last.message)
            as NSString
    }
    return generic as NSString
}

private func genericMessage(_ status: OSStatus) -> String {
    switch status {
    case errSecSuccess: "No error."
    case errSecUnimplemented: "Function or operation not implemented."
    case errSecDiskFull: "The disk is full."
    case errSecIO: "I/O error."
    case errSecParam: "One or more parameters passed to the function were not valid."
    case errSecAllocate: "Failed to allocate memory."
    case errSecNotAvailable: "No keychain is available."
    case errSecReadOnly: "This keychain cannot be modified."
    case errSecAuthFailed: "Authentication failed."
    case errSecNoSuchKeychain: "The specified keychain could not be found."
    case errSecInvalidKeychain: "The specified keychain is not a valid keychain file."
    case errSecDuplicateItem: "The specified item already exists in the keychain."
    case errSecItemNotFound: "The specified item could not be found in the keychain."
    case errSecInvalidItemRef: "The specified item is no longer valid."
    case errSecNoSuchClass: "The specified item class is not valid."
    case errSecInteractionNotAllowed: "User interaction is not allowed."
    case errSecReadOnlyAttr: "The specified attribute could not be modified."
    case errSecDecode: "Unable to decode the provided data."
    case errSecInternal: "An internal error occurred in the Security framework."
    case errSecVerifyFailed: "A cryptographic verification failure has occurred."
    default: "OSStatus \(status)."
    }
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
