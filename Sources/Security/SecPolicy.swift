public import Foundation
internal import Keychain

// SecPolicy (Apple's SecPolicy.h): what a trust evaluation checks a chain for.

/// A trust policy, as Apple's `SecPolicyRef`: basic X.509, SSL (server or client, with a host
/// name), or revocation. Immutable.
public final class SecPolicy: Hashable, Sendable, CustomStringConvertible {
    enum Kind: Hashable, Sendable {
        case basic
        case ssl(server: Bool, hostName: String?)
        /// Accepted so that Apple's code runs; revocation is not checked (see
        /// `SecPolicyCreateRevocation`).
        case revocation(CFOptionFlags)
    }

    let kind: Kind

    init(_ kind: Kind) { self.kind = kind }

    /// The typed policy this one evaluates as; nil for revocation, which adds no check.
    var trustPolicy: TrustPolicy? {
        switch kind {
        case .basic: .basic
        case .ssl(let server, let hostName): .ssl(server: server, hostName: hostName)
        case .revocation: nil
        }
    }

    /// Two policies are equal when they check the same.
    public static func == (lhs: SecPolicy, rhs: SecPolicy) -> Bool { lhs.kind == rhs.kind }

    /// Hashes what the policy checks.
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// The policy's name and, for SSL, its host name.
    public var description: String {
        switch kind {
        case .basic: "<SecPolicy: X509 Basic>"
        case .ssl(let server, let host):
            "<SecPolicy: SSL \(server ? "server" : "client") \(host ?? "(no name)")>"
        case .revocation: "<SecPolicy: Revocation>"
        }
    }
}

/// The type identifier of policies, for comparison with `CFGetTypeID`.
public func SecPolicyGetTypeID() -> CFTypeID { 0x5EC0_0010 }

/// The OID of Apple's basic X.509 policy, as `SecPolicyCopyProperties` reports it.
nonisolated(unsafe) public let kSecPolicyAppleX509Basic: CFString = "1.2.840.113635.100.1.2"
/// The OID of Apple's SSL policy.
nonisolated(unsafe) public let kSecPolicyAppleSSL: CFString = "1.2.840.113635.100.1.3"
/// The OID of Apple's revocation policy.
nonisolated(unsafe) public let kSecPolicyAppleRevocation: CFString = "1.2.840.113635.100.1.32"
/// `SecPolicyCopyProperties` key: the policy's OID (CFString).
nonisolated(unsafe) public let kSecPolicyOid: CFString = "SecPolicyOid"
/// `SecPolicyCopyProperties` key: the SSL policy's host name (CFString).
nonisolated(unsafe) public let kSecPolicyName: CFString = "SecPolicyName"
/// `SecPolicyCopyProperties` key: true for the SSL policy of a client (CFBoolean).
nonisolated(unsafe) public let kSecPolicyClient: CFString = "SecPolicyClient"

/// Revocation flags (`SecPolicyCreateRevocation`): accepted, not acted on.
public let kSecRevocationOCSPMethod: CFOptionFlags = 1 << 0
public let kSecRevocationCRLMethod: CFOptionFlags = 1 << 1
public let kSecRevocationPreferCRL: CFOptionFlags = 1 << 2
public let kSecRevocationRequirePositiveResponse: CFOptionFlags = 1 << 3
public let kSecRevocationNetworkAccessDisabled: CFOptionFlags = 1 << 4
public let kSecRevocationUseAnyAvailableMethod: CFOptionFlags =
    kSecRevocationOCSPMethod | kSecRevocationCRLMethod

/// The basic X.509 policy: a chain of valid certificates to an anchor, for no particular use.
public func SecPolicyCreateBasicX509() -> SecPolicy { SecPolicy(.basic) }

/// The SSL policy.
///
/// - Parameters:
///   - server: True to check a server's certificate (extended key usage serverAuth and, when
///     given, `hostname`), false for a client's (clientAuth).
///   - hostname: The DNS name or IP address the server's certificate must carry; nil for none.
///     An IP address matches only the certificate's IP addresses; a wildcard only a whole
///     left-most label.
public func SecPolicyCreateSSL(_ server: Bool, _ hostname: CFString?) -> SecPolicy {
    SecPolicy(.ssl(server: server, hostName: hostname.map { $0 as String }))
}

/// A revocation policy. Accepted so that Apple's code runs unchanged, but this implementation
/// checks no revocation: it fetches no CRL and asks no OCSP responder (no network access
/// during evaluation). A revoked certificate should be marked distrusted in the keychain
/// (`SecTrustSettingsSetTrustSettings` with `kSecTrustSettingsResultDeny`, or
/// `p11keychain add-trusted-cert -r deny`): distrust is always checked.
public func SecPolicyCreateRevocation(_ revocationFlags: CFOptionFlags) -> SecPolicy? {
    SecPolicy(.revocation(revocationFlags))
}

/// The policy's properties: `kSecPolicyOid`, and for SSL `kSecPolicyName` and `kSecPolicyClient`.
public func SecPolicyCopyProperties(_ policyRef: SecPolicy) -> CFDictionary? {
    var properties: [String: Any] = [:]
    switch policyRef.kind {
    case .basic: properties[kSecPolicyOid as String] = kSecPolicyAppleX509Basic
    case .ssl(let server, let host):
        properties[kSecPolicyOid as String] = kSecPolicyAppleSSL
        properties[kSecPolicyClient as String] = !server
        if let host { properties[kSecPolicyName as String] = host }
    case .revocation: properties[kSecPolicyOid as String] = kSecPolicyAppleRevocation
    }
    return properties as CFDictionary
}
