internal import Foundation
internal import Keychain

// Apple's search keys for certificates and identities (SecItem.h, "Item search matching
// keys"): subject text, e-mail address, issuers, policy and trust, item lists. The typed query
// (`CertificateQuery`) finds the candidates; these keys are checked on each of them, in the
// Security face, because they are Apple's ways of asking, not rules of the keychain: trust is
// decided by `Keychain.evaluate`, names are compared in the keychain's normalized form.
//
// A limit counts the matches left after every filter (the caller asks the keychain for all
// candidates when any of these keys is set).

/// The search keys of a certificate or identity query, checked and typed.
struct CertificateSearchKeys {
    /// kSecMatchCaseInsensitive: Apple's default is case-sensitive.
    var caseInsensitive = false
    var subjectContains: String?
    var subjectStartsWith: String?
    var subjectEndsWith: String?
    var subjectWholeString: String?
    var emailAddressIfPresent: String?
    /// kSecMatchIssuers: each Name as given and in normalized form.
    var issuers: Set<[UInt8]>?
    var policy: SecPolicy?
    var trustedOnly = false
    /// kSecMatchItemList / kSecUseItemList: both restrict, so both must hold.
    var itemLists: [[ListedItem]] = []

    /// One entry of an item list.
    enum ListedItem {
        case certificate(Certificate)
        case persistentReference([UInt8])
        /// A reference that names no certificate (a key): matches nothing here.
        case other
    }

    /// The keys this type reads, for `checkedEntries`.
    static let specs: [String: KeySpec] = [
        kSecMatchCaseInsensitive as String: KeySpec(
            name: "kSecMatchCaseInsensitive", operations: [.copyMatching]),
        kSecMatchSubjectContains as String: KeySpec(
            name: "kSecMatchSubjectContains", operations: [.copyMatching]),
        kSecMatchSubjectStartsWith as String: KeySpec(
            name: "kSecMatchSubjectStartsWith", operations: [.copyMatching]),
        kSecMatchSubjectEndsWith as String: KeySpec(
            name: "kSecMatchSubjectEndsWith", operations: [.copyMatching]),
        kSecMatchSubjectWholeString as String: KeySpec(
            name: "kSecMatchSubjectWholeString", operations: [.copyMatching]),
        kSecMatchEmailAddressIfPresent as String: KeySpec(
            name: "kSecMatchEmailAddressIfPresent", operations: [.copyMatching]),
        kSecMatchIssuers as String: KeySpec(name: "kSecMatchIssuers", operations: [.copyMatching]),
        kSecMatchPolicy as String: KeySpec(name: "kSecMatchPolicy", operations: [.copyMatching]),
        kSecMatchTrustedOnly as String: KeySpec(name: "kSecMatchTrustedOnly", operations: [.copyMatching]),
        // Apple's SecItemDelete takes an item list to delete items found before (macOS).
        kSecMatchItemList as String: KeySpec(
            name: "kSecMatchItemList", operations: [.copyMatching, .delete]),
        kSecUseItemList as String: KeySpec(name: "kSecUseItemList", operations: [.copyMatching, .delete]),
    ]

    /// Reads one search key; false when `key` is not one.
    mutating func read(_ key: String, _ name: String, _ value: Any) throws(KeychainError) -> Bool {
        switch key {
        case kSecMatchCaseInsensitive: caseInsensitive = try boolean(value, name)
        case kSecMatchSubjectContains: subjectContains = try typed(value, name, "a CFString") as String
        case kSecMatchSubjectStartsWith: subjectStartsWith = try typed(value, name, "a CFString") as String
        case kSecMatchSubjectEndsWith: subjectEndsWith = try typed(value, name, "a CFString") as String
        case kSecMatchSubjectWholeString: subjectWholeString = try typed(value, name, "a CFString") as String
        case kSecMatchEmailAddressIfPresent:
            emailAddressIfPresent = try typed(value, name, "a CFString") as String
        case kSecMatchIssuers: issuers = try Self.names(value, name)
        case kSecMatchPolicy:
            guard let given = value as? SecPolicy else {
                throw KeychainError(.parameter, "\(name) must be a SecPolicy, not \(typeName(value))")
            }
            policy = given
        case kSecMatchTrustedOnly: trustedOnly = try boolean(value, name)
        case kSecMatchItemList, kSecUseItemList: itemLists.append(try Self.items(value, name))
        default: return false
        }
        return true
    }

    /// Whether any key needs a check on each candidate. A subject-contains search does: the
    /// typed query ignores case, Apple's default does not.
    var filters: Bool {
        subjectContains != nil || subjectStartsWith != nil || subjectEndsWith != nil
            || subjectWholeString != nil || emailAddressIfPresent != nil || issuers != nil || policy != nil
            || trustedOnly || !itemLists.isEmpty
    }

    // MARK: Checking a candidate

    /// Whether a candidate the typed query found also satisfies every search key.
    func accepts(_ item: CertificateItem, in context: SearchContext) throws(KeychainError) -> Bool {
        let certificate = item.certificate
        guard itemLists.allSatisfy({ list in list.contains { $0.names(item) } }) else { return false }
        guard matchesSubject(certificate) else { return false }
        if let address = emailAddressIfPresent {
            // Decoded from the subject on each read: read once.
            let addresses = certificate.emailAddresses
            if !addresses.isEmpty,
                !addresses.contains(where: { $0.caseInsensitiveCompare(address) == .orderedSame })
            {
                return false
            }
        }
        if let issuers {
            let chain = try context.chain(of: certificate)
            guard
                chain.contains(where: {
                    issuers.contains($0.issuerDER) || issuers.contains($0.normalizedIssuerSequence)
                })
            else { return false }
        }
        if policy != nil || trustedOnly {
            let evaluation = try context.keychain.evaluate(
                chain: try context.chain(of: certificate), policy: policy?.trustPolicy ?? .basic)
            if trustedOnly {
                guard evaluation.isTrusted else { return false }
            } else {
                // The policy alone: its own checks (purpose, host name, constraints) must pass;
                // an anchor and the dates are kSecMatchTrustedOnly's and kSecMatchValidOnDate's.
                let notThePolicys: Set<TrustFailure.Reason> = [
                    .untrustedRoot, .missingIssuer, .expired, .notYetValid,
                ]
                guard evaluation.failures.allSatisfy({ notThePolicys.contains($0.reason) }) else {
                    return false
                }
            }
        }
        return true
    }

    /// How a subject key compares its text with the subject.
    private enum SubjectMatch { case contains, startsWith, endsWith, wholeString }

    /// The subject keys given, each with its text.
    private var subjectKeys: [(SubjectMatch, String)] {
        let keys: [(SubjectMatch, String?)] = [
            (.contains, subjectContains), (.startsWith, subjectStartsWith), (.endsWith, subjectEndsWith),
            (.wholeString, subjectWholeString),
        ]
        return keys.compactMap { match, text in text.map { (match, $0) } }
    }

    /// The subject keys: each is met by some value of the subject, or by its one-line form
    /// (the text `kSecMatchSubjectContains` has always searched). Empty text is met by any
    /// subject, but for a whole string.
    private func matchesSubject(_ certificate: Certificate) -> Bool {
        let keys = subjectKeys
        guard !keys.isEmpty else { return true }
        let values = certificate.subjectValues + [certificate.subjectDescription]
        let options: String.CompareOptions = caseInsensitive ? [.caseInsensitive] : []
        return keys.allSatisfy { match, text in
            values.contains { value in
                switch match {
                case .contains: text.isEmpty || value.range(of: text, options: options) != nil
                case .startsWith:
                    text.isEmpty || value.range(of: text, options: options.union(.anchored)) != nil
                case .endsWith:
                    text.isEmpty
                        || value.range(of: text, options: options.union([.anchored, .backwards])) != nil
                case .wholeString: value.compare(text, options: options) == .orderedSame
                }
            }
        }
    }

    // MARK: Values

    /// kSecMatchIssuers: an array of DER Names, each kept as given and normalized.
    private static func names(_ value: Any, _ name: String) throws(KeychainError) -> Set<[UInt8]> {
        guard let array = value as? [Any] else {
            throw KeychainError(.parameter, "\(name) must be a CFArray of CFData, not \(typeName(value))")
        }
        var names = Set<[UInt8]>()
        for element in array {
            guard let data = element as? Data else {
                throw KeychainError(
                    .parameter, "\(name) must hold CFData (DER X.500 names), not \(typeName(element))")
            }
            let der = Array(data)
            names.insert(der)
            if let normalized = Certificate.normalizedName(der) { names.insert(normalized) }
        }
        return names
    }

    /// kSecMatchItemList: references and persistent references.
    private static func items(_ value: Any, _ name: String) throws(KeychainError) -> [ListedItem] {
        guard let array = value as? [Any] else {
            throw KeychainError(
                .parameter, "\(name) must be a CFArray of item references, not \(typeName(value))")
        }
        var items: [ListedItem] = []
        for element in array {
            switch element {
            case let certificate as SecCertificate: items.append(.certificate(certificate.certificate))
            case let identity as SecIdentity: items.append(.certificate(identity.certificate.certificate))
            case let reference as Data: items.append(.persistentReference(Array(reference)))
            case is SecKey: items.append(.other)
            default:
                throw KeychainError(
                    .parameter,
                    "\(name) must hold SecCertificate, SecIdentity, SecKey or persistent references (CFData), "
                        + "not \(typeName(element))")
            }
        }
        return items
    }
}

extension CertificateSearchKeys.ListedItem {
    /// Whether this entry names the stored certificate (an identity's is its certificate's).
    func names(_ item: CertificateItem) -> Bool {
        switch self {
        case .certificate(let certificate): certificate == item.certificate
        case .persistentReference(let reference): reference == item.persistentReference
        case .other: false
        }
    }
}

/// What checking the search keys needs of the keychain, read once per call: its CA
/// certificates by subject, to build chains by name.
final class SearchContext {
    let keychain: Keychain
    private var authorities: [[UInt8]: [Certificate]]?

    /// How many certificates above the leaf a chain may have (a loop, or an absurd depth, stops here).
    static let maximumDepth = 10
    /// How many certificates a chain may have in all (cross-certified CAs branch); the
    /// evaluation takes at most 32.
    static let maximumCertificates = 24

    init(_ keychain: Keychain) { self.keychain = keychain }

    /// The leaf, then every CA certificate of the keychain it chains to by issuer name (all
    /// branches, each certificate once), at most `maximumDepth` levels up.
    func chain(of leaf: Certificate) throws(KeychainError) -> [Certificate] {
        let authorities = try authoritiesBySubject()
        var chain = [leaf]
        var seen: Set<Certificate> = [leaf]
        var level = [leaf]
        for _ in 0..<Self.maximumDepth where !level.isEmpty {
            var next: [Certificate] = []
            for certificate in level where !certificate.isSelfSigned {
                for issuer in authorities[certificate.normalizedIssuerSequence] ?? []
                where !seen.contains(issuer) && chain.count + next.count < Self.maximumCertificates {
                    seen.insert(issuer)
                    next.append(issuer)
                }
            }
            chain += next
            level = next
        }
        return chain
    }

    private func authoritiesBySubject() throws(KeychainError) -> [[UInt8]: [Certificate]] {
        if let authorities { return authorities }
        var index: [[UInt8]: [Certificate]] = [:]
        for item in try keychain.certificates(matching: CertificateQuery())
        where item.certificate.isCertificateAuthority {
            index[item.certificate.normalizedSubjectSequence, default: []].append(item.certificate)
        }
        authorities = index
        return index
    }
}
