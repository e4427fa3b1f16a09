/// What `LAContext.evaluatePolicy` checks (Apple's LAPolicy values). On Linux the device
/// owner is the keychain's user: `.deviceOwnerAuthentication` asks for the keychain PIN; there
/// is no biometry and no paired watch, so the other policies fail with `biometryNotAvailable`
/// or `companionNotAvailable`.
public enum LAPolicy: Int, Sendable, Hashable {
    case deviceOwnerAuthenticationWithBiometrics = 1
    case deviceOwnerAuthentication = 2
    case deviceOwnerAuthenticationWithWatch = 3
    case deviceOwnerAuthenticationWithBiometricsOrWatch = 4
    case deviceOwnerAuthenticationWithWristDetection = 5
}

/// The kinds of credential an `LAContext` holds (Apple's values).
public enum LACredentialType: Int, Sendable, Hashable {
    /// The application's password: here the keychain's user PIN.
    case applicationPassword = 0
}

/// The biometry a device has: none on Linux.
public enum LABiometryType: Int, Sendable, Hashable {
    case none = 0
    case touchID = 1
    case faceID = 2
    case opticID = 4
}

/// Apple's upper bound of `touchIDAuthenticationAllowableReuseDuration`, in seconds.
public let LATouchIDAuthenticationMaximumAllowableReuseDuration: Double = 300
