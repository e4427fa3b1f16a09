public import Foundation
internal import Keychain

// Trust settings (Apple's SecTrustSettings.h, macOS): how Apple code marks a root trusted.
// They are stored in the default keychain, with the certificate, as the same settings the
// PKCS#11 module shows as CKA_TRUSTED and NSS trust objects (ARCHITECTURE.md §9).

/// Whose trust settings: the user's, the administrator's, or the system's.
///
/// The user and admin domains both are the default keychain's settings (one store per user
/// here, no separate admin store); the system domain is the system's CA bundle, read-only.
public struct SecTrustSettingsDomain: RawRepresentable, Hashable, Sendable {
    /// Apple's value.
    public var rawValue: UInt32
    /// Wraps a value.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let user = SecTrustSettingsDomain(rawValue: 0)
    public static let admin = SecTrustSettingsDomain(rawValue: 1)
    public static let system = SecTrustSettingsDomain(rawValue: 2)
}

/// What a trust setting says (`kSecTrustSettingsResult`'s value, as a CFNumber).
public struct SecTrustSettingsResult: RawRepresentable, Hashable, Sendable {
    /// Apple's value.
    public var rawValue: UInt32
    /// Wraps a value.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let invalid = SecTrustSettingsResult(rawValue: 0)
    /// A trusted root: only for a self-signed certificate.
    public static let trustRoot = SecTrustSettingsResult(rawValue: 1)
    /// Trusted as if a root: only for a certificate that is not self-signed.
    public static let trustAsRoot = SecTrustSettingsResult(rawValue: 2)
    /// Distrusted.
    public static let deny = SecTrustSettingsResult(rawValue: 3)
    /// No opinion.
    public static let unspecified = SecTrustSettingsResult(rawValue: 4)
}

/// Trust settings key: the policy the setting is for (`SecPolicy`); none means every policy.
nonisolated(unsafe) public let kSecTrustSettingsPolicy: CFString = "kSecTrustSettingsPolicy"
/// Trust settings key: the result (CFNumber of `SecTrustSettingsResult.rawValue`); default
/// `trustRoot`.
nonisolated(unsafe) public let kSecTrustSettingsResult: CFString = "kSecTrustSettingsResult"
/// Trust settings key: a policy string such as a host name; accepted, not matched.
nonisolated(unsafe) public let kSecTrustSettingsPolicyString: CFString = "kSecTrustSettingsPolicyString"
/// Trust settings key: an application; accepted, not matched (no per-application trust here).
nonisolated(unsafe) public let kSecTrustSettingsApplication: CFString = "kSecTrustSettingsApplication"
/// Trust settings key: an error to allow; refused (no error is ever allowed).
nonisolated(unsafe) public let kSecTrustSettingsAllowedError: CFString = "kSecTrustSettingsAllowedError"
/// Trust settings key: key usage; accepted, not matched.
nonisolated(unsafe) public let kSecTrustSettingsKeyUsage: CFString = "kSecTrustSettingsKeyUsage"

/// Sets the trust settings of a certificate of the default keychain, replacing any it had.
///
///     SecTrustSettingsSetTrustSettings(root, .user, nil)    // trust as a root, every policy
///     let deny = [kSecTrustSettingsResult: SecTrustSettingsResult.deny.rawValue] as CFDictionary
///     SecTrustSettingsSetTrustSettings(root, .user, deny as CFTypeRef)
///
/// - Parameters:
///   - trustSettingsDictOrArray: nil or an empty array for "trusted root for every policy";
///     a dictionary, or an array of them, with `kSecTrustSettingsPolicy` (a basic X.509 or
///     SSL `SecPolicy`; the SSL policy of a server sets server authentication, of a client
///     client authentication) and `kSecTrustSettingsResult`.
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when the keychain does not hold the
///   certificate (add it with `SecItemAdd` first); `errSecInvalidTrustSetting` for a
///   `trustRoot` on a certificate that is not self-signed, `trustAsRoot` on one that is, or an
///   allowed error; `errSecParam` for values of the wrong type; `errSecDataNotModifiable` for
///   the system domain; `errSecInteractionNotAllowed` when the keychain has a PIN and is locked.
@discardableResult
public func SecTrustSettingsSetTrustSettings(
    _ certRef: SecCertificate, _ domain: SecTrustSettingsDomain, _ trustSettingsDictOrArray: CFTypeRef?
) -> OSStatus {
    do throws(KeychainError) {
        let keychain = try trustKeychain(domain)
        let settings = try TrustSettingsDictionaries.settings(
            from: trustSettingsDictOrArray, for: certRef.certificate)
        try keychain.setTrustSettings(settings, for: certRef.certificate)
        return errSecSuccess
    } catch {
        return LastError.record(error)
    }
}

/// The trust settings of a certificate, as an array of dictionaries (`kSecTrustSettingsPolicy`
/// when the setting is for one policy, and `kSecTrustSettingsResult`).
///
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when the certificate has no settings or is
///   not in the keychain (Apple's answer for "no settings").
@discardableResult
public func SecTrustSettingsCopyTrustSettings(
    _ certRef: SecCertificate, _ domain: SecTrustSettingsDomain,
    _ trustSettings: UnsafeMutablePointer<CFArray?>
) -> OSStatus {
    trustSettings.pointee = nil
    do throws(KeychainError) {
        let settings = try trustKeychain(domain, reading: true).trustSettings(for: certRef.certificate)
        guard !settings.isUnspecified else {
            return LastError.record(errSecItemNotFound, "the certificate has no trust settings")
        }
        trustSettings.pointee =
            TrustSettingsDictionaries.dictionaries(settings, for: certRef.certificate) as CFArray
        return errSecSuccess
    } catch {
        return LastError.record(error)
    }
}

/// Removes every trust setting of a certificate (the certificate stays in the keychain).
///
/// - Returns: `errSecSuccess`; `errSecItemNotFound` when the certificate had none.
@discardableResult
public func SecTrustSettingsRemoveTrustSettings(_ certRef: SecCertificate, _ domain: SecTrustSettingsDomain)
    -> OSStatus
{
    do throws(KeychainError) {
        let keychain = try trustKeychain(domain)
        guard try !keychain.trustSettings(for: certRef.certificate).isUnspecified else {
            return LastError.record(errSecItemNotFound, "the certificate has no trust settings")
        }
        try keychain.removeTrustSettings(for: certRef.certificate)
        return errSecSuccess
    } catch {
        return LastError.record(error)
    }
}

/// The certificates with trust settings in a domain.
///
/// - Returns: `errSecSuccess`; `errSecNoTrustSettings` when there are none.
@discardableResult
public func SecTrustSettingsCopyCertificates(
    _ domain: SecTrustSettingsDomain, _ certArray: UnsafeMutablePointer<CFArray?>?
) -> OSStatus {
    certArray?.pointee = nil
    do throws(KeychainError) {
        let found = try trustKeychain(domain, reading: true).certificatesWithTrustSettings()
        guard !found.isEmpty else {
            return LastError.record(errSecNoTrustSettings, "no certificate has trust settings")
        }
        certArray?.pointee = found.map { SecCertificate($0.certificate) } as CFArray
        return errSecSuccess
    } catch {
        return LastError.record(error)
    }
}

private func trustKeychain(_ domain: SecTrustSettingsDomain, reading: Bool = false) throws(KeychainError)
    -> Keychain
{
    switch domain {
    case .user, .admin: return try Keychain.default
    case .system:
        throw KeychainError(
            .init(rawValue: reading ? errSecNoTrustSettings : errSecDataNotModifiable),
            "the system trust domain is the system's CA bundle: it has no settings and cannot be changed here"
        )
    default: throw KeychainError(.parameter, "unknown trust settings domain \(domain.rawValue)")
    }
}

/// Apple's trust settings dictionaries ↔ the keychain's settings per purpose.
enum TrustSettingsDictionaries {
    static func settings(from value: CFTypeRef?, for certificate: Certificate) throws(KeychainError)
        -> TrustSettings
    {
        let entries: [[String: Any]]
        if value == nil {
            entries = []
        } else if let one = value as? [String: Any] {
            entries = [one]
        } else if let many = value as? [Any] {
            var list: [[String: Any]] = []
            for element in many {
                guard let dictionary = element as? [String: Any] else {
                    throw KeychainError(.parameter, "trust settings must be dictionaries")
                }
                list.append(dictionary)
            }
            entries = list
        } else {
            throw KeychainError(.parameter, "trust settings must be a dictionary or an array of them")
        }
        // No entry: Apple's "always trust this root, for every policy".
        if entries.isEmpty { return TrustSettings([.any: try disposition(.trustRoot, for: certificate)]) }
        var settings = TrustSettings()
        for entry in entries {
            var purposes: [TrustPurpose] = [.any]
            var result = SecTrustSettingsResult.trustRoot
            for (key, element) in entry {
                switch key {
                case String(kSecTrustSettingsPolicy):
                    guard let policy = element as? SecPolicy else {
                        throw KeychainError(.parameter, "kSecTrustSettingsPolicy must be a SecPolicy")
                    }
                    purposes = Self.purposes(of: policy)
                case String(kSecTrustSettingsResult):
                    guard let number = element as? NSNumber else {
                        throw KeychainError(.parameter, "kSecTrustSettingsResult must be a CFNumber")
                    }
                    result = SecTrustSettingsResult(rawValue: number.uint32Value)
                case String(kSecTrustSettingsAllowedError):
                    throw KeychainError(
                        .init(rawValue: errSecInvalidTrustSetting),
                        "kSecTrustSettingsAllowedError is not supported: no error can be allowed")
                case String(kSecTrustSettingsPolicyString), String(kSecTrustSettingsApplication),
                    String(kSecTrustSettingsKeyUsage):
                    continue
                default: throw KeychainError(.parameter, "unknown trust settings key '\(key)'")
                }
            }
            let disposition = try disposition(result, for: certificate)
            for purpose in purposes { settings.set(disposition, for: purpose) }
        }
        return settings
    }

    private static func purposes(of policy: SecPolicy) -> [TrustPurpose] {
        switch policy.kind {
        case .basic, .revocation: [.any]
        case .ssl(let server, _): [server ? .serverAuth : .clientAuth]
        }
    }

    private static func disposition(_ result: SecTrustSettingsResult, for certificate: Certificate)
        throws(KeychainError) -> TrustDisposition
    {
        switch result {
        case .trustRoot:
            guard certificate.isSelfSigned else {
                throw KeychainError(
                    .init(rawValue: errSecInvalidTrustSetting),
                    "trustRoot is for self-signed certificates; use trustAsRoot for this one")
            }
            return .trustedAnchor
        case .trustAsRoot:
            guard !certificate.isSelfSigned else {
                throw KeychainError(
                    .init(rawValue: errSecInvalidTrustSetting),
                    "trustAsRoot is for certificates that are not self-signed; use trustRoot for this one")
            }
            return .trustedAnchor
        case .deny: return .distrusted
        case .unspecified: return .unspecified
        default:
            throw KeychainError(
                .init(rawValue: errSecInvalidTrustSetting), "unknown trust settings result \(result.rawValue)"
            )
        }
    }

    /// The settings as Apple's dictionaries: one per purpose with a setting, `.any` without a
    /// policy. A "trusted peer" setting (NSS's, which Apple has no word for) is left out.
    static func dictionaries(_ settings: TrustSettings, for certificate: Certificate) -> [Any] {
        var result: [Any] = []
        for purpose in TrustPurpose.allCases {
            guard let disposition = settings.dispositions[purpose] else { continue }
            let value: SecTrustSettingsResult
            switch disposition {
            case .trustedAnchor: value = certificate.isSelfSigned ? .trustRoot : .trustAsRoot
            case .distrusted: value = .deny
            case .trustedPeer, .unspecified: continue
            }
            var entry: [String: Any] = [kSecTrustSettingsResult as String: NSNumber(value: value.rawValue)]
            switch purpose {
            case .serverAuth: entry[kSecTrustSettingsPolicy as String] = SecPolicyCreateSSL(true, nil)
            case .clientAuth: entry[kSecTrustSettingsPolicy as String] = SecPolicyCreateSSL(false, nil)
            case .codeSigning, .emailProtection:
                entry[kSecTrustSettingsPolicyString as String] = purpose.rawValue
            case .any: break
            }
            result.append(entry)
        }
        return result
    }
}
