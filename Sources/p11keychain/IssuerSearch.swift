import Keychain

/// The keychain's certificates that may continue a chain, as `security verify-cert` finds
/// them: it searches the keychain for the issuers the given certificates lack. Which chain
/// is trusted stays the evaluation's decision (the core's); this only gathers candidates.
enum IssuerSearch {
    /// Chains longer than this are not searched further; OpenSSL's own limit is deeper, but
    /// no real chain needs more intermediates than this from a keychain.
    static let maximumDepth = 8

    /// The stored certificates that issue `chain`'s certificates, their issuers in turn, and
    /// so on: each an index lookup by subject. Certificates already in `chain`, and roots,
    /// are left out.
    static func intermediates(for chain: [Certificate], in keychain: Keychain) throws(Failure)
        -> [Certificate]
    {
        var known = Set(chain.map(\.derEncoded))
        var found: [Certificate] = []
        var frontier = chain
        for _ in 0..<maximumDepth where !frontier.isEmpty {
            var next: [Certificate] = []
            for certificate in frontier where !certificate.isSelfSigned {
                let items: [CertificateItem]
                do {
                    items = try keychain.certificates(
                        matching: CertificateQuery(subject: certificate.issuerDER))
                } catch {
                    throw Failure(error, doing: "cannot search the keychain for issuers")
                }
                // A self-signed certificate is a root: an anchor when the keychain trusts it
                // (the evaluation knows), never an intermediate to pass along.
                for item in items
                where !item.certificate.isSelfSigned && known.insert(item.certificate.derEncoded).inserted {
                    next.append(item.certificate)
                }
            }
            found += next
            frontier = next
        }
        return found
    }
}
