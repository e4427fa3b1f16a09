internal import KeychainCore

// What the `Security` face's certificate search keys (kSecMatchSubject…, kSecMatchIssuers)
// need of a certificate beyond its public properties: the subject as separate values, and a
// caller's Name in Apple's normalized form, so that the face compares names as the keychain
// does without a second normalization of its own.

extension Certificate {
    /// The text of each attribute of the subject, in order (e.g. "Alice Example",
    /// "p11keychain tests"): with ``subjectDescription``, what subject searches look at.
    public var subjectValues: [String] { parsed.subjectValues }

    /// A DER Name in Apple's normalized form, as ``normalizedSubjectSequence`` and
    /// ``normalizedIssuerSequence`` give a certificate's names; nil when `der` is not a Name.
    public static func normalizedName(_ der: [UInt8]) -> [UInt8]? {
        ParsedCertificate.normalizedName(der)
    }
}
