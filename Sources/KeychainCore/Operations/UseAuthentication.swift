/// The per-use PIN of an operation's key, run by the core so that no face can forget it: a key
/// with CKA_ALWAYS_AUTHENTICATE (for signing and decryption, v2.40 §4.9) or an Apple access
/// control that needs presence (for every use of the private key) takes the user's PIN again
/// before each operation. The PKCS#11 face passes the PIN of C_Login(CKU_CONTEXT_SPECIFIC);
/// the Swift faces pass the `pin:` their callers give.
///
/// One operation belongs to one session, which serialises its calls: not thread-safe.
public final class UseAuthentication {
    private let token: Token
    /// The key needs the PIN before each use.
    public let isRequired: Bool
    /// The PIN was given for the next use.
    private var given = false

    init(token: Token, isRequired: Bool) {
        self.token = token
        self.isRequired = isRequired
    }

    /// Whether the operation may use the key now: no PIN is needed, or it was given.
    public var isSatisfied: Bool { !isRequired || given }

    /// Checks the user's PIN for the next use; a wrong one counts as a failed login.
    public func authenticate(pin: [UInt8]) throws(CoreError) {
        try token.reauthenticateUser(pin: pin)
        given = true
    }

    /// Called by an operation before it uses the key: a needed PIN not given is
    /// `userNotLoggedIn`; a given one is spent on this use.
    func spend(_ what: String) throws(CoreError) {
        guard isRequired else { return }
        guard given else {
            throw CoreError(
                .userNotLoggedIn,
                "the key needs the user's PIN again before each \(what) (context-specific login)")
        }
        given = false
    }
}
