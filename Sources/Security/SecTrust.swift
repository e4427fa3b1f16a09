public import Dispatch
public import Foundation
internal import Keychain

#if canImport(Glibc)
    import Glibc
#endif

// SecTrust (Apple's SecTrust.h): a chain, the policies it is checked for, and the outcome.

/// The outcome of a trust evaluation, as Apple's `SecTrustResultType`.
public struct SecTrustResultType: RawRepresentable, Hashable, Sendable {
    /// The numeric value, Apple's.
    public var rawValue: UInt32
    /// Wraps a value.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Not evaluated, or the evaluation could not run.
    public static let invalid = SecTrustResultType(rawValue: 0)
    /// Trusted, because the user (this keychain's trust settings) explicitly trusts the anchor.
    public static let proceed = SecTrustResultType(rawValue: 1)
    /// Deprecated by Apple; never returned.
    public static let confirm = SecTrustResultType(rawValue: 2)
    /// Not trusted, because the user (this keychain) distrusts a certificate of the chain.
    public static let deny = SecTrustResultType(rawValue: 3)
    /// Trusted, through an anchor with no explicit user setting (a system root, or one given
    /// with `SecTrustSetAnchorCertificates`): Apple's usual "trusted" answer.
    public static let unspecified = SecTrustResultType(rawValue: 4)
    /// Not trusted, for a reason a user could override: expired, wrong host name, unknown root.
    public static let recoverableTrustFailure = SecTrustResultType(rawValue: 5)
    /// Not trusted, for a reason no user can override: a bad signature, a malformed certificate,
    /// an unknown critical extension.
    public static let fatalTrustFailure = SecTrustResultType(rawValue: 6)
    /// The evaluation failed for another reason.
    public static let otherError = SecTrustResultType(rawValue: 7)
}

/// A trust object, as Apple's `SecTrustRef`: the certificates to evaluate (leaf first), the
/// policies, the anchors and the verify date, and the last evaluation's outcome.
///
/// Thread-safe: the settings and the outcome are guarded by a lock, so a trust may be
/// evaluated on a dispatch queue (`SecTrustEvaluateAsyncWithError`) while kept elsewhere.
public final class SecTrust: @unchecked Sendable, CustomStringConvertible {
    // @unchecked Sendable: every mutable field is read and written under `lock`.
    private let lock = NSLock()
    private var certificates: [SecCertificate]
    private var policies: [SecPolicy]
    private var anchors: [SecCertificate]?
    private var anchorsOnly = false
    private var verifyDate: Date?
    private var outcome: (evaluation: TrustEvaluation, date: Date)?
    /// The default keychain, opened at the first evaluation and kept: its trust settings are
    /// read again at every evaluation. `.none` until then; `.some(nil)` when it cannot be opened.
    private var keychain: Keychain??
    /// Moves with every change of the settings: an evaluation that ran meanwhile is not kept.
    private var generation = 0

    init(certificates: [SecCertificate], policies: [SecPolicy]) {
        self.certificates = certificates
        self.policies = policies
    }

    /// The leaf's subject and the number of certificates.
    public var description: String {
        let leaf = withLock { certificates.first }
        return "<SecTrust: \(leaf?.certificate.subjectSummary ?? "?"), \(count) certificates>"
    }

    private func withLock<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    var count: Int { withLock { outcome?.evaluation.chain.count ?? certificates.count } }

    func update(_ change: (SecTrust) -> Void) {
        withLock {
            change(self)
            outcome = nil
            generation += 1
        }
    }

    func setPolicies(_ new: [SecPolicy]) { update { $0.policies = new } }
    func setAnchors(_ new: [SecCertificate]?) {
        // Apple: setting anchors makes them the only ones, until SetAnchorCertificatesOnly(false).
        update {
            $0.anchors = new
            $0.anchorsOnly = new != nil
        }
    }
    func setAnchorsOnly(_ only: Bool) { update { $0.anchorsOnly = only } }
    func setVerifyDate(_ date: Date) { update { $0.verifyDate = date } }
    var policyList: [SecPolicy] { withLock { policies } }
    var leaf: SecCertificate? { withLock { certificates.first } }

    /// The settings an evaluation runs with, read at once under the lock.
    private struct Snapshot {
        var certificates: [Certificate]
        var policies: [TrustPolicy]
        var anchors: [Certificate]
        var anchorsOnly: Bool
        var verifyDate: Date?
        var generation: Int
    }

    /// The outcome of the last evaluation, evaluating first if there is none.
    func evaluation() throws(KeychainError) -> (evaluation: TrustEvaluation, date: Date) {
        lock.lock()
        if let outcome {
            lock.unlock()
            return outcome
        }
        let checked = policies.compactMap { (policy: SecPolicy) -> TrustPolicy? in policy.trustPolicy }
        let snapshot = Snapshot(
            certificates: certificates.map { (certificate: SecCertificate) in certificate.certificate },
            policies: checked.isEmpty ? [TrustPolicy.basic] : checked,
            anchors: (anchors ?? []).map { (certificate: SecCertificate) in certificate.certificate },
            anchorsOnly: anchorsOnly, verifyDate: verifyDate, generation: generation)
        let known = keychain
        lock.unlock()
        // The default keychain holds the user's trust settings; without one (no usable
        // store), the evaluation uses the given and the system anchors alone.
        let opened: Keychain?
        if let known {
            opened = known
        } else {
            opened = DefaultKeychain.shared.current()
            withLock { keychain = .some(opened) }
        }
        let date = snapshot.verifyDate ?? Date()
        var result: TrustEvaluation?
        for policy in snapshot.policies {
            let one: TrustEvaluation
            if let opened {
                one = try opened.evaluate(
                    chain: snapshot.certificates, policy: policy, at: date, anchors: snapshot.anchors,
                    anchorsOnly: snapshot.anchorsOnly)
            } else {
                one = try Keychain.evaluate(
                    chain: snapshot.certificates, policy: policy, at: date, anchors: snapshot.anchors,
                    anchorsOnly: snapshot.anchorsOnly)
            }
            result = result.map { $0.merging(one) } ?? one
        }
        guard let result else { throw KeychainError(.internal, "no policy was evaluated") }
        let made = (evaluation: result, date: date)
        withLock {
            // A change since the settings were read makes this outcome stale: do not keep it.
            if generation == snapshot.generation { outcome = made }
        }
        return made
    }
}

/// The default keychain, for the trust settings of evaluations: opened again when the
/// environment that chooses it changes, and at least once a second (so a changed
/// configuration file counts within a second). A TLS client makes a trust object per
/// connection; opening the keychain for each (reading the environment and the configuration)
/// cost more than the chain's signatures.
final class DefaultKeychain: @unchecked Sendable {
    // @unchecked Sendable: `cached` is read and written under `lock`; Keychain is Sendable.
    static let shared = DefaultKeychain()

    private static let variables = [
        "P11KEYCHAIN_DIR", "P11KEYCHAIN_CONF", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "HOME",
    ]
    private let lock = NSLock()
    private var cached: (key: [String?], until: Date, keychain: Keychain?)?

    /// The default keychain, or nil when it cannot be opened.
    func current() -> Keychain? {
        let key = Self.variables.map { name in getenv(name).map { String(cString: $0) } }
        let now = Date()
        lock.lock()
        if let cached, cached.key == key, cached.until > now {
            lock.unlock()
            return cached.keychain
        }
        lock.unlock()
        // try?: no default keychain (unreadable store, bad configuration) means evaluation
        // uses the given and system anchors only, as documented; it is retried after 1 s.
        let opened = try? Keychain.default
        lock.lock()
        cached = (key, now.addingTimeInterval(1), opened)
        lock.unlock()
        return opened
    }
}

extension TrustEvaluation {
    /// Apple's result type for this outcome.
    var resultType: SecTrustResultType {
        if isTrusted { return anchorSource == .keychain ? .proceed : .unspecified }
        if failures.contains(where: { $0.reason == .distrusted }) { return .deny }
        return isRecoverable ? .recoverableTrustFailure : .fatalTrustFailure
    }
}

/// The type identifier of trust objects, for comparison with `CFGetTypeID`.
public func SecTrustGetTypeID() -> CFTypeID { 0x5EC0_0011 }

/// Creates a trust object for a certificate and the certificates that may help build its chain.
///
/// - Parameters:
///   - certificates: One `SecCertificate` (the leaf), or an array of them, leaf first.
///   - policies: One `SecPolicy`, an array of them, or nil for the basic X.509 policy.
///   - trust: Receives the trust object.
/// - Returns: `errSecSuccess`; `errSecParam` when `certificates` holds no certificate or
///   something else than certificates, or `policies` something else than policies.
@discardableResult
public func SecTrustCreateWithCertificates(
    _ certificates: CFTypeRef, _ policies: CFTypeRef?, _ trust: UnsafeMutablePointer<SecTrust?>
) -> OSStatus {
    trust.pointee = nil
    guard let list = objects(certificates, of: SecCertificate.self), !list.isEmpty else {
        return LastError.record(
            errSecParam, "SecTrustCreateWithCertificates needs a SecCertificate or an array of them")
    }
    var policyList = [SecPolicyCreateBasicX509()]
    if let policies {
        guard let given = objects(policies, of: SecPolicy.self) else {
            return LastError.record(
                errSecParam, "SecTrustCreateWithCertificates: policies must be SecPolicy objects")
        }
        policyList = given
    }
    trust.pointee = SecTrust(certificates: list, policies: policyList)
    return errSecSuccess
}

/// One object of type T, or an array of them, or nil when `value` is neither.
func objects<T>(_ value: Any, of type: T.Type) -> [T]? {
    if let one = value as? T { return [one] }
    guard let array = value as? [Any] else { return nil }
    var result: [T] = []
    for element in array {
        guard let typed = element as? T else { return nil }
        result.append(typed)
    }
    return result
}

/// Replaces the trust's policies: one `SecPolicy` or an array of them.
@discardableResult
public func SecTrustSetPolicies(_ trust: SecTrust, _ policies: CFTypeRef) -> OSStatus {
    guard let list = objects(policies, of: SecPolicy.self) else {
        return LastError.record(errSecParam, "SecTrustSetPolicies: policies must be SecPolicy objects")
    }
    trust.setPolicies(list)
    return errSecSuccess
}

/// The trust's policies.
@discardableResult
public func SecTrustCopyPolicies(_ trust: SecTrust, _ policies: UnsafeMutablePointer<CFArray?>) -> OSStatus {
    policies.pointee = trust.policyList as CFArray
    return errSecSuccess
}

/// Makes `anchorCertificates` the anchors of the trust, and, as on Apple platforms, the only
/// ones: the keychain's and the system's anchors count again after
/// `SecTrustSetAnchorCertificatesOnly(trust, false)`. nil restores the default anchors.
@discardableResult
public func SecTrustSetAnchorCertificates(_ trust: SecTrust, _ anchorCertificates: CFArray?) -> OSStatus {
    guard let anchorCertificates else {
        trust.setAnchors(nil)
        return errSecSuccess
    }
    guard let list = objects(anchorCertificates as Any, of: SecCertificate.self) else {
        return LastError.record(errSecParam, "SecTrustSetAnchorCertificates needs an array of SecCertificate")
    }
    trust.setAnchors(list)
    return errSecSuccess
}

/// True: only the anchors given by `SecTrustSetAnchorCertificates`; false: those, this
/// keychain's trusted certificates and the system's CA bundle. A certificate the keychain
/// distrusts fails a chain either way.
@discardableResult
public func SecTrustSetAnchorCertificatesOnly(_ trust: SecTrust, _ anchorCertificatesOnly: Bool) -> OSStatus {
    trust.setAnchorsOnly(anchorCertificatesOnly)
    return errSecSuccess
}

/// The time the chain must be valid at (by default, the time of the evaluation).
@discardableResult
public func SecTrustSetVerifyDate(_ trust: SecTrust, _ verifyDate: CFDate) -> OSStatus {
    trust.setVerifyDate(verifyDate as Date)
    return errSecSuccess
}

/// Accepted and ignored: evaluation never uses the network (no AIA fetching, no revocation).
@discardableResult
public func SecTrustSetNetworkFetchAllowed(_ trust: SecTrust, _ allowFetch: Bool) -> OSStatus {
    errSecSuccess
}

/// Evaluates the trust: builds the chain with OpenSSL from the trust's certificates to an
/// anchor and checks it for every policy.
///
///     var error: CFError?
///     if SecTrustEvaluateWithError(trust, &error) { … } else { print(error!) }
///
/// - Parameter error: Receives, on failure, a `CFError` in `NSOSStatusErrorDomain` whose code
///   is Apple's: `errSecCertificateExpired`, `errSecCertificateNotValidYet`,
///   `errSecHostNameMismatch`, `errSecNotTrusted` (no anchor), `errSecTrustSettingDeny`
///   (distrusted in the keychain), `errSecInvalidExtendedKeyUsage`,
///   `errSecUnknownCriticalExtensionFlag`, …; its description names the certificate.
/// - Returns: True when the chain is trusted for every policy.
public func SecTrustEvaluateWithError(_ trust: SecTrust, _ error: UnsafeMutablePointer<CFError?>?) -> Bool {
    error?.pointee = nil
    do throws(KeychainError) {
        let (evaluation, _) = try trust.evaluation()
        if evaluation.isTrusted { return true }
        let (status, message) = TrustErrors.describe(evaluation)
        _ = LastError.record(status, message)
        error?.pointee = NSError(
            domain: NSOSStatusErrorDomain, code: Int(status), userInfo: [NSLocalizedDescriptionKey: message])
        return false
    } catch let failure {
        _ = LastError.record(failure)
        error?.pointee = NSError(
            domain: NSOSStatusErrorDomain, code: Int(failure.status),
            userInfo: [NSLocalizedDescriptionKey: failure.message])
        return false
    }
}

/// What `SecTrustEvaluateAsyncWithError` calls with the outcome. Not `@Sendable`, as in
/// Apple's SDK: Swift 6 code passes closures that capture its own state.
public typealias SecTrustWithErrorCallback = (SecTrust, Bool, CFError?) -> Void

/// The caller's callback, carried to the queue it named.
private struct QueuedCallback: @unchecked Sendable {
    // @unchecked: Apple's contract, kept here: the callback runs once, on the queue the caller
    // gave, and the caller answers for what it captures (the SDK's type is not @Sendable).
    let call: SecTrustWithErrorCallback
}

/// Evaluates the trust on `queue` and calls `result` there with the outcome.
@discardableResult
public func SecTrustEvaluateAsyncWithError(
    _ trust: SecTrust, _ queue: DispatchQueue, _ result: @escaping SecTrustWithErrorCallback
) -> OSStatus {
    let callback = QueuedCallback(call: result)
    queue.async {
        var error: CFError?
        let trusted = SecTrustEvaluateWithError(trust, &error)
        callback.call(trust, trusted, error)
    }
    return errSecSuccess
}

/// Apple's older evaluation call: evaluates and returns the result type.
@available(*, deprecated, renamed: "SecTrustEvaluateWithError")
@discardableResult
public func SecTrustEvaluate(_ trust: SecTrust, _ result: UnsafeMutablePointer<SecTrustResultType>)
    -> OSStatus
{
    SecTrustGetTrustResult(trust, result)
}

/// The result type of the last evaluation (evaluating first when there was none):
/// `.unspecified` or `.proceed` when trusted, `.recoverableTrustFailure`, `.deny` or
/// `.fatalTrustFailure` when not.
@discardableResult
public func SecTrustGetTrustResult(_ trust: SecTrust, _ result: UnsafeMutablePointer<SecTrustResultType>)
    -> OSStatus
{
    do throws(KeychainError) {
        result.pointee = try trust.evaluation().evaluation.resultType
        return errSecSuccess
    } catch {
        result.pointee = .otherError
        return LastError.record(error)
    }
}

/// The chain the evaluation built, leaf first, ending at its anchor when one was reached
/// (evaluating first when needed); nil when the evaluation could not run.
public func SecTrustCopyCertificateChain(_ trust: SecTrust) -> CFArray? {
    // try?: Apple's signature has no error out-parameter; nil is its "could not evaluate".
    guard let (evaluation, _) = try? trust.evaluation() else { return nil }
    return evaluation.chain.map(SecCertificate.init) as CFArray
}

/// The number of certificates of the built chain (of the given ones before an evaluation).
public func SecTrustGetCertificateCount(_ trust: SecTrust) -> CFIndex { trust.count }

/// The leaf's public key.
public func SecTrustCopyKey(_ trust: SecTrust) -> SecKey? {
    trust.leaf.flatMap { SecCertificateCopyKey($0) }
}

/// Apple's deprecated name of `SecTrustCopyKey`.
@available(*, deprecated, renamed: "SecTrustCopyKey")
public func SecTrustCopyPublicKey(_ trust: SecTrust) -> SecKey? { SecTrustCopyKey(trust) }

/// `SecTrustCopyResult` key: the result type (CFNumber of `SecTrustResultType.rawValue`).
nonisolated(unsafe) public let kSecTrustResultValue: CFString = "TrustResultValue"
/// `SecTrustCopyResult` key: the time the evaluation checked validity at (CFDate).
nonisolated(unsafe) public let kSecTrustEvaluationDate: CFString = "TrustEvaluationDate"
/// `SecTrustCopyResult` key: whether revocation was checked (CFBoolean): always false here.
nonisolated(unsafe) public let kSecTrustRevocationChecked: CFString = "TrustRevocationChecked"
/// `SecTrustCopyProperties` key: the kind of entry (`kSecPropertyTypeTitle` or `…Error`).
nonisolated(unsafe) public let kSecPropertyKeyType: CFString = "type"
/// `SecTrustCopyProperties` key: the entry's label.
nonisolated(unsafe) public let kSecPropertyKeyLabel: CFString = "label"
/// `SecTrustCopyProperties` key: the entry's text.
nonisolated(unsafe) public let kSecPropertyKeyValue: CFString = "value"
/// `SecTrustCopyProperties` entry type: a certificate's name.
nonisolated(unsafe) public let kSecPropertyTypeTitle: CFString = "title"
/// `SecTrustCopyProperties` entry type: what is wrong with it.
nonisolated(unsafe) public let kSecPropertyTypeError: CFString = "error"

/// The last evaluation's outcome as a dictionary: `kSecTrustResultValue`,
/// `kSecTrustEvaluationDate`, `kSecTrustRevocationChecked` (false).
public func SecTrustCopyResult(_ trust: SecTrust) -> CFDictionary? {
    guard let (evaluation, date) = try? trust.evaluation() else { return nil }
    let result: [String: Any] = [
        kSecTrustResultValue as String: NSNumber(value: evaluation.resultType.rawValue),
        kSecTrustEvaluationDate as String: date,
        kSecTrustRevocationChecked as String: false,
    ]
    return result as CFDictionary
}

/// One entry per certificate of the built chain, leaf first: its name
/// (`kSecPropertyTypeTitle`), and, for a certificate with a failure, a
/// `kSecPropertyTypeError` entry saying what is wrong.
public func SecTrustCopyProperties(_ trust: SecTrust) -> CFArray? {
    guard let (evaluation, _) = try? trust.evaluation() else { return nil }
    var entries: [Any] = []
    for (depth, certificate) in evaluation.chain.enumerated() {
        let name = certificate.subjectSummary ?? certificate.subjectDescription
        entries.append(
            [kSecPropertyKeyType as String: kSecPropertyTypeTitle, kSecPropertyKeyValue as String: name]
                as [String: Any])
        for failure in evaluation.failures where failure.depth == depth {
            entries.append(
                [
                    kSecPropertyKeyType as String: kSecPropertyTypeError,
                    kSecPropertyKeyLabel as String: name,
                    kSecPropertyKeyValue as String: failure.message,
                ] as [String: Any])
        }
    }
    return entries as CFArray
}
