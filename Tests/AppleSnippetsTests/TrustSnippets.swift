// Trust code written as Apple's documentation writes it ("Creating a Trust Object",
// "Evaluating a Trust and Parsing the Result", "Importing an Identity", trust settings on
// macOS), with only Foundation and Security imported. That it compiles is half the test;
// TrustSnippetsTests runs it on the chains of Tests/Fixtures/trust.

import Dispatch
import Foundation
import Security

/// What an evaluation gave: Apple's Boolean, error code and result type.
struct TrustOutcome: Equatable {
    var trusted: Bool
    var code: Int?
    var result: SecTrustResultType
}

/// "Creating a Trust Object": the certificates, leaf first, and a policy.
func makeTrust(_ certificates: [SecCertificate], policy: SecPolicy) throws -> SecTrust {
    var optionalTrust: SecTrust?
    let status = SecTrustCreateWithCertificates(certificates as AnyObject, policy, &optionalTrust)
    guard status == errSecSuccess, let trust = optionalTrust else {
        throw KeychainError.unhandledError(status: status)
    }
    return trust
}

/// "Evaluating a Trust and Parsing the Result": evaluate, and on failure ask why.
func evaluateTrust(_ trust: SecTrust) -> TrustOutcome {
    var error: CFError?
    let trusted = SecTrustEvaluateWithError(trust, &error)
    var result = SecTrustResultType.invalid
    SecTrustGetTrustResult(trust, &result)
    if !trusted {
        // Apple's sample prints the error and decides from the result type.
        switch result {
        case .recoverableTrustFailure: break  // the user might override
        case .deny, .fatalTrustFailure: break  // never trusted
        default: break
        }
    }
    return TrustOutcome(trusted: trusted, code: error.map { $0.code }, result: result)
}

/// TLS pinning and private CAs: "trust only this root".
func evaluate(
    _ certificates: [SecCertificate], host: String?, anchors: [SecCertificate]?, anchorsOnly: Bool = true
)
    throws -> TrustOutcome
{
    let policy = host.map { SecPolicyCreateSSL(true, $0 as CFString) } ?? SecPolicyCreateBasicX509()
    let trust = try makeTrust(certificates, policy: policy)
    if let anchors {
        SecTrustSetAnchorCertificates(trust, anchors as CFArray)
        SecTrustSetAnchorCertificatesOnly(trust, anchorsOnly)
    }
    return evaluateTrust(trust)
}

/// The verify date: "was this chain valid when the document was signed?"
func evaluate(_ certificates: [SecCertificate], anchors: [SecCertificate], at date: Date) throws -> Bool {
    let trust = try makeTrust(certificates, policy: SecPolicyCreateBasicX509())
    SecTrustSetAnchorCertificates(trust, anchors as CFArray)
    SecTrustSetVerifyDate(trust, date as CFDate)
    var error: CFError?
    return SecTrustEvaluateWithError(trust, &error)
}

/// The asynchronous evaluation Apple recommends off the main thread.
func evaluateAsync(_ trust: SecTrust, completion: @escaping @Sendable (Bool, CFError?) -> Void) {
    let queue = DispatchQueue(label: "trust evaluation")
    let status = SecTrustEvaluateAsyncWithError(trust, queue) { _, trusted, error in
        completion(trusted, error)
    }
    if status != errSecSuccess { completion(false, nil) }
}

/// macOS: add a root to the keychain and mark it trusted (or denied) for every policy.
func storeRoot(_ root: SecCertificate, deny: Bool) throws {
    let addquery: [String: Any] = [kSecClass as String: kSecClassCertificate, kSecValueRef as String: root]
    let added = SecItemAdd(addquery as CFDictionary, nil)
    guard added == errSecSuccess || added == errSecDuplicateItem else {
        throw KeychainError.unhandledError(status: added)
    }
    let settings: CFTypeRef? =
        deny
        ? [kSecTrustSettingsResult as String: SecTrustSettingsResult.deny.rawValue] as CFDictionary
            as CFTypeRef : nil
    let status = SecTrustSettingsSetTrustSettings(root, .user, settings)
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
}

/// macOS: read back and remove the settings.
func trustSettingsResults(_ certificate: SecCertificate) -> [UInt32]? {
    var settings: CFArray?
    guard SecTrustSettingsCopyTrustSettings(certificate, .user, &settings) == errSecSuccess,
        let entries = settings as? [[String: Any]]
    else { return nil }
    return entries.compactMap { ($0[kSecTrustSettingsResult as String] as? NSNumber)?.uint32Value }
}

func removeTrustSettings(_ certificate: SecCertificate) -> OSStatus {
    SecTrustSettingsRemoveTrustSettings(certificate, .user)
}

/// "Importing an Identity": the identity, its trust and its certificates out of a PKCS#12
/// file (kept in memory: the keychain has no PIN to unlock here).
struct IdentityAndTrust {
    var identityRef: SecIdentity
    var trust: SecTrust
    var certificates: [SecCertificate]
}

func extractIdentity(certData: Data, certPassword: String) -> IdentityAndTrust? {
    var items: CFArray?
    let options =
        [kSecImportExportPassphrase as String: certPassword, kSecImportToMemoryOnly as String: true]
        as [String: Any]
    let securityError = SecPKCS12Import(certData as CFData, options as CFDictionary, &items)
    guard securityError == errSecSuccess, let certItems = items as? [[String: Any]],
        let certEntry = certItems.first
    else { return nil }
    let identityPointer = certEntry[kSecImportItemIdentity as String]
    let trustPointer = certEntry[kSecImportItemTrust as String]
    let chainPointer = certEntry[kSecImportItemCertChain as String]
    guard let secIdentityRef = identityPointer as? SecIdentity, let trustRef = trustPointer as? SecTrust,
        let certArray = chainPointer as? [SecCertificate]
    else { return nil }
    return IdentityAndTrust(identityRef: secIdentityRef, trust: trustRef, certificates: certArray)
}
