public import Foundation

/// The error domain of LocalAuthentication's errors (Apple's `LAErrorDomain`).
public let LAErrorDomain = "com.apple.LocalAuthentication"

/// LocalAuthentication's error, with Apple's codes (LAError.h): code written for Apple
/// platforms catches `LAError.userCancel`, reads `error.code` and compares with Apple's numbers.
public struct LAError: CustomNSError, Hashable, Sendable {
    /// Apple's LAError codes, with their values.
    public enum Code: Int, Sendable, Hashable {
        case authenticationFailed = -1
        case userCancel = -2
        case userFallback = -3
        case systemCancel = -4
        case passcodeNotSet = -5
        case biometryNotAvailable = -6
        case biometryNotEnrolled = -7
        case biometryLockout = -8
        case appCancel = -9
        case invalidContext = -10
        case companionNotAvailable = -11
        case biometryNotPaired = -12
        case biometryDisconnected = -13
        case invalidDimensions = -14
        case notInteractive = -1004

        @available(*, deprecated, renamed: "biometryNotAvailable")
        public static var touchIDNotAvailable: Code { .biometryNotAvailable }
        @available(*, deprecated, renamed: "biometryNotEnrolled")
        public static var touchIDNotEnrolled: Code { .biometryNotEnrolled }
        @available(*, deprecated, renamed: "biometryLockout")
        public static var touchIDLockout: Code { .biometryLockout }
        @available(*, deprecated, renamed: "companionNotAvailable")
        public static var watchNotAvailable: Code { .companionNotAvailable }
    }

    public let code: Code
    /// What went wrong, for people (NSLocalizedDescriptionKey).
    public let message: String

    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        self.code = code
        message = userInfo[NSLocalizedDescriptionKey] as? String ?? "\(code)"
    }

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public static var errorDomain: String { LAErrorDomain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: message] }
    public var localizedDescription: String { message }

    public static var authenticationFailed: Code { .authenticationFailed }
    public static var userCancel: Code { .userCancel }
    public static var userFallback: Code { .userFallback }
    public static var systemCancel: Code { .systemCancel }
    public static var passcodeNotSet: Code { .passcodeNotSet }
    public static var biometryNotAvailable: Code { .biometryNotAvailable }
    public static var biometryNotEnrolled: Code { .biometryNotEnrolled }
    public static var biometryLockout: Code { .biometryLockout }
    public static var appCancel: Code { .appCancel }
    public static var invalidContext: Code { .invalidContext }
    public static var companionNotAvailable: Code { .companionNotAvailable }
    public static var biometryNotPaired: Code { .biometryNotPaired }
    public static var biometryDisconnected: Code { .biometryDisconnected }
    public static var invalidDimensions: Code { .invalidDimensions }
    public static var notInteractive: Code { .notInteractive }

}

/// `catch LAError.userCancel`, as Apple's bridged error allows; also for the `NSError` that
/// `canEvaluatePolicy(_:error:)` hands back (Apple bridges the two).
public func ~= (code: LAError.Code, error: any Error) -> Bool {
    if let error = error as? LAError { return error.code == code }
    let bridged = error as NSError
    return bridged.domain == LAErrorDomain && bridged.code == code.rawValue
}
