internal import Foundation
internal import KeychainCore

#if canImport(Glibc)
    import Glibc
#endif

/// A keychain: one token's store of certificates, shared with the PKCS#11 module and the
/// `p11keychain` command.
///
/// Items are PKCS#11 token objects in the same SQLite file the module serves, so a
/// certificate added here is visible to `p11tool`, NSS or OpenSSL at once, in any process,
/// and the other way round.
///
///     let keychain = try Keychain()                     // the default `login` keychain
///     let certificate = try Certificate(derEncoded: bytes)
///     try keychain.add(certificate, label: "My Certificate")
///     let mine = try keychain.certificates(matching: CertificateQuery(label: "My Certificate"))
///
/// Where the default keychain lives follows the module's configuration (ARCHITECTURE.md §5):
/// `$P11KEYCHAIN_DIR/login.sqlite3`, else `$XDG_DATA_HOME/p11keychain/` (by default
/// `~/.local/share/p11keychain/`); a configuration file (`$P11KEYCHAIN_CONF`, else
/// `~/.config/p11keychain/p11keychain.conf`, else `/etc/p11keychain/p11keychain.conf`) may
/// move it and add named tokens. Opening a keychain follows the environment and the file as
/// they are now: what was read is kept only while the variables are byte for byte the same
/// and the file tried is, by `stat`, the same file unchanged (KeychainCore
/// `ConfigurationCache`; a file changed in the second before it was read is read again on
/// each open until it has settled), so a change is seen by the next open, at the price of a
/// `stat` instead of a read and a parse.
///
/// Thread-safe: a keychain may be shared between threads and tasks. Each operation is
/// checked against the store as it is now: what the core keeps between calls (the store
/// connection, parsed keys) is kept only while the store's change counter says no process
/// has written since (ARCHITECTURE.md §4.3).
public final class Keychain: Sendable {
    /// A token of the configuration: where it lives and whether it can be written.
    public struct TokenInfo: Hashable, Sendable {
        /// The token's name (its PKCS#11 label), e.g. `login`.
        public let name: String
        /// Where it is stored: the SQLite file, or `postgresql:` and the server's host, port,
        /// database and user, never the rest of its connection string (it may hold a password).
        public let path: String
        /// True when the configuration makes it read-only.
        public let isReadOnly: Bool
    }

    /// What a batch add does with a certificate that is already stored (same issuer and
    /// serial number) or given twice.
    public enum DuplicatePolicy: Hashable, Sendable {
        /// Add nothing and throw ``KeychainError/Code/duplicateItem``.
        case fail
        /// Leave the stored item as it is and add the others.
        case skip
    }

    /// The token's name: `login` for the default keychain, the configured name of a named
    /// token, the file name of a keychain opened by path.
    public let name: String
    /// Where this keychain is stored: the SQLite file, or `postgresql:` and the server's host,
    /// port, database and user, never the rest of its connection string (it may hold a password).
    public var path: String { token.configuration.printableStore }

    let token: Token

    /// Who this process is to the token right now. Logging in is per process and per store
    /// (PKCS#11 v2.40 §5.6): once any `Keychain` on this store is unlocked, every one of them
    /// sees private items, until one locks it.
    var context: AccessContext {
        let user = token.loggedInUser
        return AccessContext(
            readWrite: true, userLoggedIn: user == .user, securityOfficer: user == .securityOfficer)
    }

    /// Opens the default keychain: the `login` token of the current configuration, created
    /// on first use.
    ///
    /// - Throws: ``KeychainError/Code/notAvailable`` when the configuration file is invalid
    ///   (the message gives its file and line); ``KeychainError/Code/noSuchKeychain`` when
    ///   the store cannot be opened or created (the message names the path and the reason).
    public convenience init() throws(KeychainError) {
        try self.init(configuration: Keychain.loadConfiguration().tokens[0])
    }

    /// The default keychain, opened now with the configuration as it is now. Each access
    /// opens it anew, cheaply: the store connection is shared, and the configuration is read
    /// again only when the environment or the file changed.
    public static var `default`: Keychain {
        get throws(KeychainError) { try Keychain() }
    }

    /// Opens a token of the configuration by name (`login`, or a `[token NAME]` section).
    ///
    /// - Throws: ``KeychainError/Code/noSuchKeychain`` when no token has that name (the
    ///   message lists the configured ones) or its store cannot be opened.
    public convenience init(tokenNamed name: String) throws(KeychainError) {
        let configuration = try Keychain.loadConfiguration()
        guard let token = configuration.tokens.first(where: { $0.name == name }) else {
            let known = configuration.tokens.map(\.name).joined(separator: ", ")
            let source = configuration.source.map { " in \($0)" } ?? ""
            throw KeychainError(
                .noSuchKeychain, "no token named '\(name)'\(source); configured tokens: \(known)")
        }
        try self.init(configuration: token)
    }

    /// Opens the keychain stored in the SQLite file at `path`.
    ///
    /// - Parameters:
    ///   - path: The store file, e.g. `/var/lib/p11keychain/system.sqlite3`.
    ///   - readOnly: Refuse every change, whatever the file's permissions.
    ///   - createIfMissing: Create the file (and its directory, mode 0700) when it does not
    ///     exist. By default a missing file is an error, so that a mistyped path is reported
    ///     rather than silently becoming a new, empty keychain.
    ///   - pinIterations: The PBKDF2 count of PINs set on it from now on (1,000 to
    ///     10,000,000); nil: `$P11KEYCHAIN_PIN_ITERATIONS` as the process started, else
    ///     600,000. No configuration file is read: none names this store.
    /// - Throws: ``KeychainError/Code/noSuchKeychain`` naming the path when the file does not
    ///   exist (and `createIfMissing` is false) or cannot be opened;
    ///   ``KeychainError/Code/invalidKeychain`` when it is not a keychain store.
    public convenience init(
        path: String, readOnly: Bool = false, createIfMissing: Bool = false, pinIterations: Int? = nil
    ) throws(KeychainError) {
        guard !path.isEmpty else { throw KeychainError(.parameter, "the keychain path is empty") }
        if let pinIterations, !Configuration.pinIterationRange.contains(pinIterations) {
            throw KeychainError(
                .parameter,
                "a PIN's iteration count is \(Configuration.pinIterationRange.lowerBound) to "
                    + "\(Configuration.pinIterationRange.upperBound), not \(pinIterations)")
        }
        if !createIfMissing || readOnly, access(path, F_OK) != 0 {
            throw KeychainError(
                .noSuchKeychain, "no keychain at \(path): \(String(cString: strerror(errno)))")
        }
        let fileName = path.split(separator: "/").last.map(String.init) ?? path
        let name = fileName.hasSuffix(".sqlite3") ? String(fileName.dropLast(".sqlite3".count)) : fileName
        var configuration = TokenConfiguration(name: name, path: path, readOnly: readOnly)
        switch (pinIterations, Configuration.processPINIterations) {
        case (let given?, _): configuration.pinIterations = given
        case (nil, .success(let fromEnvironment)):
            configuration.pinIterations = fromEnvironment ?? Configuration.defaultPINIterations
        case (nil, .failure(let error)):
            throw KeychainError(.notAvailable, "invalid environment: \(error.description)")
        }
        try self.init(configuration: configuration)
    }

    private init(configuration: TokenConfiguration) throws(KeychainError) {
        name = configuration.name
        let (token, isOpen) = TokenCache.shared.token(for: configuration)
        self.token = token
        if !isOpen {
            try KeychainError.mapping { () throws(CoreError) in try token.open() }
            TokenCache.shared.opened(token, for: configuration)
        }
        // Unlocked (or locked again) for the login session by `p11keychain unlock`/`lock`.
        token.followSessionUnlock()
    }

    /// The tokens of the current configuration, in slot order: `login` first.
    ///
    /// - Throws: ``KeychainError/Code/notAvailable`` when the configuration file is invalid.
    public static func configuredTokens() throws(KeychainError) -> [TokenInfo] {
        try loadConfiguration().tokens.map {
            TokenInfo(name: $0.name, path: $0.printableStore, isReadOnly: $0.readOnly)
        }
    }

    private static func loadConfiguration() throws(KeychainError) -> Configuration {
        do {
            return try ConfigurationCache.shared.current()
        } catch {
            throw KeychainError(.notAvailable, "invalid configuration: \(error.description)")
        }
    }

    /// True when this process cannot change the keychain: configured read-only, or the file
    /// or its directory is not writable.
    public var isReadOnly: Bool { token.isWriteProtected }

    // MARK: Adding

    /// Adds a certificate.
    ///
    /// - Parameters:
    ///   - certificate: The certificate to store.
    ///   - label: The item's label; by default the certificate's subject summary.
    ///   - publicKeyHash: The item's key identifier (CKA_ID); by default the certificate's
    ///     ``Certificate/publicKeyHash``, which pairs it with its key.
    ///   - attributes: Apple's common attributes (accessibility, access group,
    ///     synchronizable); not part of the certificate's identity. No access control.
    /// - Returns: The stored item.
    /// - Throws: ``KeychainError/Code/duplicateItem`` when a certificate with the same issuer
    ///   and serial number is stored (whatever its label; the stored item is kept as it is);
    ///   ``KeychainError/Code/readOnly`` when the keychain cannot be written.
    @discardableResult
    public func add(
        _ certificate: Certificate, label: String? = nil, publicKeyHash: [UInt8]? = nil,
        attributes: ItemAttributes = ItemAttributes()
    ) throws(KeychainError) -> CertificateItem {
        var template = Keychain.template(for: certificate, label: label, publicKeyHash: publicKeyHash)
        template.merge(try attributes.certificateTemplate) { given, _ in given }
        let reference = try KeychainError.mapping { () throws(CoreError) in
            try token.createObject(token.withDefaultAccessGroup(template), context: context)
        }
        return try item(reference, certificate: certificate)
    }

    /// Adds certificates in one transaction: all of them are stored, or none.
    ///
    /// - Parameters:
    ///   - certificates: The certificates, e.g. from ``Certificate/certificates(decoding:)``.
    ///   - label: One label for all of them; by default each gets its subject summary.
    ///   - duplicates: Whether a certificate already stored (or given twice) fails the whole
    ///     batch or is skipped.
    /// - Returns: The items added, in order (skipped duplicates are not included).
    /// - Throws: ``KeychainError/Code/duplicateItem`` (with ``DuplicatePolicy/fail``; nothing
    ///   is added); ``KeychainError/Code/readOnly`` when the keychain cannot be written.
    @discardableResult
    public func add(
        contentsOf certificates: [Certificate], label: String? = nil, duplicates: DuplicatePolicy = .fail
    ) throws(KeychainError) -> [CertificateItem] {
        var batch: [Certificate] = []
        if duplicates == .skip {
            var seen = Set<[UInt8]>()
            for certificate in certificates {
                let key = certificate.issuerDER + certificate.serialNumberDER
                guard seen.insert(key).inserted, try !isStored(certificate) else { continue }
                batch.append(certificate)
            }
        } else {
            batch = certificates
        }
        let templates = batch.map { Keychain.template(for: $0, label: label, publicKeyHash: nil) }
        let references = try KeychainError.mapping { () throws(CoreError) in
            try token.createObjects(templates.map(token.withDefaultAccessGroup), context: context)
        }
        var items: [CertificateItem] = []
        for (reference, certificate) in zip(references, batch) {
            items.append(try item(reference, certificate: certificate))
        }
        return items
    }

    /// True when a certificate with the same issuer and serial number is stored.
    private func isStored(_ certificate: Certificate) throws(KeychainError) -> Bool {
        var template = Keychain.certificateTemplate
        template[.issuer] = certificate.issuerDER
        template[.serialNumber] = certificate.serialNumberDER
        return try !references(template).isEmpty
    }

    private static func template(for certificate: Certificate, label: String?, publicKeyHash: [UInt8]?)
        -> AttributeSet
    {
        var template = certificateTemplate
        template[.value] = certificate.derEncoded
        if let label { template[.label] = Array(label.utf8) }
        if let publicKeyHash { template[.id] = publicKeyHash }
        return template
    }

    /// What every keychain certificate is: a token object, CKO_CERTIFICATE, CKC_X_509.
    private static let certificateTemplate: AttributeSet = [
        .class: AttributeValue.encode(ObjectClass.certificate.rawValue),
        .certificateType: AttributeValue.encode(CertificateType.x509.rawValue),
        .token: [1],
    ]

    // MARK: Finding

    /// The certificates matching `query`, in the order they were added; an empty array when
    /// none does.
    public func certificates(matching query: CertificateQuery = .all) throws(KeychainError)
        -> [CertificateItem]
    {
        try matches(query).map(\.item)
    }

    /// The first certificate matching `query`, or nil.
    public func firstCertificate(matching query: CertificateQuery) throws(KeychainError) -> CertificateItem? {
        var one = query
        one.limit = .one
        return try matches(one).first?.item
    }

    // MARK: Changing

    /// Changes attributes of every certificate matching `query` (up to its limit), in one
    /// transaction: every match changes, or none does.
    ///
    /// - Returns: The changed items, as they are now; empty when nothing matched.
    /// - Throws: ``KeychainError/Code/readOnly`` when the keychain cannot be written.
    @discardableResult
    public func updateCertificates(matching query: CertificateQuery, setting changes: CertificateChanges)
        throws(KeychainError) -> [CertificateItem]
    {
        try update(try matches(query), setting: changes)
    }

    /// Changes attributes of stored items, in one transaction: all of them change, or none.
    /// Items deleted meanwhile are left out.
    ///
    /// - Returns: The changed items, as they are now.
    /// - Throws: ``KeychainError/Code/readOnly`` when the keychain cannot be written.
    @discardableResult
    public func update(_ items: [CertificateItem], setting changes: CertificateChanges) throws(KeychainError)
        -> [CertificateItem]
    {
        try update(try references(of: items), setting: changes)
    }

    /// Changes attributes of one stored item.
    ///
    /// - Returns: The item as it is now.
    /// - Throws: ``KeychainError/Code/itemNotFound`` when the item no longer exists.
    @discardableResult
    public func update(_ item: CertificateItem, setting changes: CertificateChanges) throws(KeychainError)
        -> CertificateItem
    {
        guard let updated = try update([item], setting: changes).first else {
            throw KeychainError(.itemNotFound, "the certificate item no longer exists")
        }
        return updated
    }

    private func update(_ matches: [Match], setting changes: CertificateChanges) throws(KeychainError)
        -> [CertificateItem]
    {
        let template = try changes.template
        var changed = matches.map(\.reference)
        if !template.isEmpty {
            changed = try KeychainError.mapping { () throws(CoreError) in
                try token.updateObjects(changed, with: template, context: context)
            }
        }
        let byReference = Dictionary(matches.map { ($0.reference, $0.item) }) { first, _ in first }
        // Read back (the certificate is not parsed again): the modification date is the token's.
        var items: [CertificateItem] = []
        for reference in changed {
            guard let item = byReference[reference] else { continue }
            items.append(try self.item(reference, certificate: item.certificate))
        }
        return items
    }

    /// Deletes every certificate matching `query` (up to its limit), in one transaction:
    /// every match goes, or none does.
    ///
    /// - Returns: How many items were deleted; 0 when nothing matched.
    /// - Throws: ``KeychainError/Code/readOnly`` when the keychain cannot be written.
    @discardableResult
    public func deleteCertificates(matching query: CertificateQuery) throws(KeychainError) -> Int {
        try delete(try matches(query))
    }

    /// Deletes stored items, in one transaction: all of them go, or none. Items deleted
    /// meanwhile are not counted.
    ///
    /// - Returns: How many items were deleted.
    /// - Throws: ``KeychainError/Code/readOnly`` when the keychain cannot be written.
    @discardableResult
    public func delete(_ items: [CertificateItem]) throws(KeychainError) -> Int {
        try delete(try references(of: items))
    }

    /// Deletes one stored item.
    ///
    /// - Throws: ``KeychainError/Code/itemNotFound`` when the item no longer exists.
    public func delete(_ item: CertificateItem) throws(KeychainError) {
        guard try delete([item]) > 0 else {
            throw KeychainError(.itemNotFound, "the certificate item no longer exists")
        }
    }

    private func delete(_ matches: [Match]) throws(KeychainError) -> Int {
        let references = matches.map(\.reference)
        return try KeychainError.mapping { () throws(CoreError) in
            try token.destroyObjects(references, context: context)
        }.count
    }

    /// The stored objects behind items, found by their persistent references; items that no
    /// longer exist are left out.
    private func references(of items: [CertificateItem]) throws(KeychainError) -> [Match] {
        var found: [Match] = []
        for item in items {
            var template = Keychain.certificateTemplate
            template[.uniqueID] = item.persistentReference
            if let reference = try references(template).first {
                found.append(Match(reference: reference, item: item))
            }
        }
        return found
    }

    // MARK: Matching

    private struct Match {
        var reference: ObjectReference
        var item: CertificateItem
    }

    /// The items matching `query`: one index lookup on the template's most selective term,
    /// then the criteria no index serves, checked on those candidates only.
    private func matches(_ query: CertificateQuery) throws(KeychainError) -> [Match] {
        let limit: Int
        switch query.limit {
        case .one: limit = 1
        case .all: limit = Int.max
        case .maximum(let count):
            guard count > 0 else { throw KeychainError(.parameter, "a match limit must be 1 or more") }
            limit = count
        }
        guard var plan = SearchPlan(query) else { return [] }
        var candidates = try references(plan.template)
        if candidates.isEmpty, let fallback = plan.normalizedNameFallback() {
            // The names were given in Apple's normalized form, which is not indexed.
            plan = fallback
            candidates = try references(plan.template)
        }
        var found: [Match] = []
        for reference in candidates where found.count < limit {
            guard let item = try loadItem(reference), plan.accepts(item.certificate),
                query.matchesAttributes(of: item)
            else { continue }
            found.append(Match(reference: reference, item: item))
        }
        return found
    }

    private func references(_ template: AttributeSet) throws(KeychainError) -> [ObjectReference] {
        try KeychainError.mapping { () throws(CoreError) in
            try token.findObjects(template, context: context)
        }
    }

    /// The item behind a reference, or nil when it vanished meanwhile or is not a certificate
    /// this API can read.
    private func loadItem(_ reference: ObjectReference) throws(KeychainError) -> CertificateItem? {
        let attributes: AttributeSet
        do {
            attributes = try token.attributes(of: reference, context: context)
        } catch  where error.code == .objectNotFound {
            return nil
        } catch {
            throw KeychainError(error)
        }
        guard let der = attributes[.value], let certificate = try? Certificate(derEncoded: der) else {
            return nil
        }
        return CertificateItem(attributes, certificate: certificate)
    }

    private func item(_ reference: ObjectReference, certificate: Certificate) throws(KeychainError)
        -> CertificateItem
    {
        let attributes = try KeychainError.mapping { () throws(CoreError) in
            try token.attributes(of: reference, context: context)
        }
        return CertificateItem(attributes, certificate: certificate)
    }
}

extension CertificateItem {
    init(_ attributes: AttributeSet, certificate: Certificate) {
        self.init(
            certificate: certificate, label: attributes.string(.label) ?? "",
            publicKeyHash: attributes[.id] ?? [], persistentReference: attributes[.uniqueID] ?? [],
            attributes: ItemAttributes(stored: attributes))
    }
}

/// How a query runs: the template the token's index serves, and the checks left for the
/// candidates it returns.
private struct SearchPlan {
    var template: AttributeSet
    let query: CertificateQuery
    /// Subject and issuer are compared in Apple's normalized form on the candidates (they
    /// are in the template only when no better index term exists).
    var namesInTemplate: Bool

    /// Nil when the query can match nothing (e.g. a serial number no DER INTEGER has).
    init?(_ query: CertificateQuery) {
        self.query = query
        var template: AttributeSet = [
            .class: AttributeValue.encode(ObjectClass.certificate.rawValue),
            .certificateType: AttributeValue.encode(CertificateType.x509.rawValue),
            .token: [1],
        ]
        /// Adds a term; false when the query already requires another value for it.
        func require(_ type: AttributeType, _ value: [UInt8]) -> Bool {
            if let existing = template[type], existing != value { return false }
            template[type] = value
            return true
        }
        if let label = query.label, !require(.label, Array(label.utf8)) { return nil }
        if let hash = query.publicKeyHash, !require(.id, hash) { return nil }
        if let reference = query.persistentReference, !require(.uniqueID, reference) { return nil }
        if let serial = query.serialNumber {
            guard let der = ParsedCertificate.serialNumberDER(content: serial), require(.serialNumber, der)
            else {
                return nil
            }
        }
        if let fingerprint = query.sha1Fingerprint {
            // CKA_CHECK_VALUE is the first three bytes of the SHA-1: indexed, then checked.
            guard fingerprint.count == DigestAlgorithm.sha1.length,
                require(.checkValue, Array(fingerprint.prefix(3)))
            else { return nil }
        }
        if let certificate = query.certificate {
            guard require(.serialNumber, certificate.serialNumberDER),
                require(.issuer, certificate.issuerDER)
            else { return nil }
        }
        let hasIndexTerm = [.label, .id, .uniqueID, .serialNumber, .checkValue].contains {
            template[$0] != nil
        }
        namesInTemplate = !hasIndexTerm
        if namesInTemplate {
            if let subject = query.subject, !require(.subject, subject) { return nil }
            if let issuer = query.issuer, !require(.issuer, issuer) { return nil }
        }
        self.template = template
    }

    /// When names were looked up as exact DER and nothing matched: the same search with the
    /// names compared in normalized form on every certificate. Nil when there is nothing to
    /// retry (no names, or they were not in the template).
    func normalizedNameFallback() -> SearchPlan? {
        guard namesInTemplate, query.subject != nil || query.issuer != nil else { return nil }
        var plan = self
        plan.namesInTemplate = false
        plan.template[.subject] = nil
        if query.certificate == nil { plan.template[.issuer] = nil }
        return plan
    }

    /// The checks no index serves.
    func accepts(_ certificate: Certificate) -> Bool {
        if !namesInTemplate {
            if let subject = query.subject, !Self.sameName(certificate.normalizedSubjectSequence, subject) {
                return false
            }
            if let issuer = query.issuer, !Self.sameName(certificate.normalizedIssuerSequence, issuer) {
                return false
            }
        }
        if let wanted = query.certificate, wanted != certificate { return false }
        if let fingerprint = query.sha1Fingerprint, fingerprint != certificate.sha1Fingerprint {
            return false
        }
        if let fingerprint = query.sha256Fingerprint, fingerprint != certificate.sha256Fingerprint {
            return false
        }
        if let identifier = query.subjectKeyIdentifier, identifier != certificate.subjectKeyIdentifier {
            return false
        }
        if let date = query.validOn, !certificate.isValid(at: date) { return false }
        if let address = query.emailAddress,
            !certificate.emailAddresses.contains(where: { $0.caseInsensitiveCompare(address) == .orderedSame }
            )
        {
            return false
        }
        if let text = query.subjectContains, !text.isEmpty {
            let values = certificate.parsed.subjectValues + [certificate.subjectDescription]
            guard values.contains(where: { $0.range(of: text, options: .caseInsensitive) != nil }) else {
                return false
            }
        }
        return true
    }

    /// Apple's rule: names are equal when their normalized forms are.
    private static func sameName(_ normalizedStored: [UInt8], _ wanted: [UInt8]) -> Bool {
        normalizedStored == (ParsedCertificate.normalizedName(wanted) ?? wanted)
    }
}

/// One `Token` per store file for the whole process, so that opening a keychain is cheap and
/// every `Keychain` on a file shares one connection. Keyed by the whole token configuration
/// (a changed setting gets a `Token` that applies it): the configuration itself is checked
/// anew by every `Keychain` initializer. A file that was deleted or replaced since (another
/// inode) gets a new `Token`, so a connection never keeps serving a file that is no longer at
/// its path.
final class TokenCache: @unchecked Sendable {
    // @unchecked: `entries` is touched only with `lock` held.
    static let shared = TokenCache()
    private let lock = Lock()
    private var entries: [TokenConfiguration: Entry] = [:]

    private struct Entry {
        var token: Token
        /// The file's device and inode once the token opened it; nil before.
        var file: FileIdentity?
    }

    private struct FileIdentity: Equatable {
        var device: UInt64
        var inode: UInt64
    }

    /// The token for `configuration`: the cached one while its file is still the one it
    /// opened (`isOpen`: nothing more to check), else a new one, to be opened and recorded
    /// with `opened`.
    func token(for configuration: TokenConfiguration) -> (token: Token, isOpen: Bool) {
        let key = configuration
        let current = TokenCache.identity(of: configuration.path)
        return lock.withLock {
            if let entry = entries[key], let file = entry.file, file == current { return (entry.token, true) }
            let token = Token(configuration: configuration)
            entries[key] = Entry(token: token, file: nil)
            return (token, false)
        }
    }

    /// Records which file `token` opened for `configuration`.
    func opened(_ token: Token, for configuration: TokenConfiguration) {
        let key = configuration
        let file = TokenCache.identity(of: configuration.path)
        lock.withLock {
            if entries[key]?.token === token { entries[key]?.file = file }
        }
    }

    private static func identity(of path: String) -> FileIdentity? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }
}

extension Keychain {
    /// True in a privileged host (setuid, setgid, file capabilities): its environment is its
    /// caller's and chooses nothing — no configuration, store or program (ARCHITECTURE.md §5).
    package static var isPrivilegedHost: Bool { KeychainCore.Environment.isPrivileged }
}
