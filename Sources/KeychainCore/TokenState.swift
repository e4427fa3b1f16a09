internal import KeychainCrypto
internal import KeychainStorage
internal import Synchronization

/// What a token holds between calls, by responsibility: its objects (the stores and what a
/// find kept), its authentication (who is logged in), and its operations' kept keys.
///
/// Reached only inside `Token.withState`, with its lock held: the methods of `TokenState`
/// are the ones that need the lock, and being here is what proves they have it. Not
/// `Sendable`: the compiler refuses to let it leave the thread holding the lock. It holds
/// no reference to its `Token`, so nothing run under its lock can take `Token.logins`
/// (which comes first).
final class TokenState {
    let configuration: TokenConfiguration
    /// Objects and rules: the stores, their names, and objects as a find last read them.
    @exclusivity(unchecked) var objects = ObjectState()
    /// Authentication: who is logged in, and the session unlock's state in this process.
    /// Every change is published to `loggedIn` while the lock is held.
    @exclusivity(unchecked) var authentication = LoginState() {
        didSet { loggedIn.publish(authentication.login?.user) }
    }
    /// Who is logged in, readable without the lock (`Token.loggedInUser`).
    let loggedIn: LoggedInUser
    /// Operations: keys parsed or opened, kept while their objects are unchanged.
    @exclusivity(unchecked) var keys = KeyCaches()

    init(configuration: TokenConfiguration, loggedIn: LoggedInUser) {
        self.configuration = configuration
        self.loggedIn = loggedIn
    }
}

/// Who is logged in to a token in this process, as the state last published it: every call
/// on a session asks (its `AccessContext`), and taking the state's lock for it was a tenth of
/// an HMAC's C_SignInit. A read is a snapshot, as one under the lock was: the lock is
/// released before the answer is used either way.
final class LoggedInUser: Sendable {
    private let value = Atomic<UInt8>(0)

    func publish(_ user: UserType?) {
        let raw: UInt8 =
            switch user {
            case nil: 0
            case .user: 1
            case .securityOfficer: 2
            }
        value.store(raw, ordering: .releasing)
    }

    var user: UserType? {
        switch value.load(ordering: .acquiring) {
        case 1: .user
        case 2: .securityOfficer
        default: nil
        }
    }
}

/// A token's stores and what it keeps of their objects.
struct ObjectState {
    var persistentStore: ObjectStore?
    var sessionStore: ObjectStore?
    /// The store's serial number, read once when it opens: it never changes.
    var storeSerial = ""
    /// Prefix of this process's session-object unique IDs, made with the session store:
    /// random numbers are not drawn in C_Initialize, whose time every host pays.
    var sessionPrefix = ""
    /// The key that seals the secret values of this process's session objects, made with the
    /// session store and kept as long as it (Sealing.swift): session objects never reach the
    /// disk, so a public one needs no token key, hence no login (v2.40 §6.7.1), and still no
    /// key byte lies in clear even in memory.
    var sessionSealingKey: SecretBytes?
    /// `sessionSealingKey` kept keyed for sealing, with its nonce counter (`SealingContext`):
    /// a derived session key is sealed on every C_DeriveKey.
    var sessionSealer: SealingContext?
    /// Objects as a find last read them (`storedAttributes`: sealed values still sealed), with
    /// the store's change count then (FoundObjects.swift): a keychain reads a password it has
    /// just found again by its unique ID.
    var objectCache: [ObjectReference: CachedObject] = [:]
}

/// Who is logged in to a token in this process (Authentication.swift, SessionUnlock.swift).
struct LoginState {
    /// Who is logged in, and the token key their PIN unwrapped. Logging in is per
    /// application (v2.40 §5.6).
    var login: Login?
    /// True once this process locked the keychain itself (SecKeychainLock): the session
    /// keyring's entry no longer unlocks it, until it unlocks with the PIN.
    var sessionUnlockDeclined = false
    /// This token's entry name in the session keyring, made once.
    var sessionEntryName: String?
}

/// Keys parsed or opened for operations, by object, with what they came from
/// (KeyObjects.swift, SecretKeys.swift).
struct KeyCaches {
    /// Parsed private keys.
    var privateKeys: [ObjectReference: CachedKey<AsymmetricKey>] = [:]
    /// Parsed public keys by key object (public or private).
    var publicKeys: [ObjectReference: CachedKey<AsymmetricKey>] = [:]
    /// Opened secret key values: an AES-GCM message or an HMAC costs less than reading and
    /// opening the key again.
    var secretKeys: [ObjectReference: CachedKey<SecretBytes>] = [:]

    /// Forgets every kept key (a login ends).
    mutating func removeAll() {
        privateKeys.removeAll()
        publicKeys.removeAll()
        secretKeys.removeAll()
    }
}

/// A key as last read: what it was parsed from (a private key's sealed PKCS#8, a public
/// key's SubjectPublicKeyInfo, a secret key's sealed value), the parsed or opened key,
/// the attributes a caller may see with the facts every use checks in them, and the store's
/// change count when it was read (nil: read during a write).
struct CachedKey<Key> {
    var material: [UInt8]
    var key: Key
    var attributes: AttributeSet
    var facts: KeyUseFacts
    var changeCount: UInt64?
}
