internal import KeychainCrypto

#if canImport(Glibc)
    import Glibc
#endif

// The anchor stores and decoded certificates that chain evaluations share (ChainEvaluation.swift).

/// The anchors of one evaluation as an OpenSSL store, and which of them came from where.
struct AnchorSet: Sendable {
    let store: TrustAnchorStore
    /// SHA-256 fingerprints of the given anchors and of the keychain's.
    let given: Set<[UInt8]>
    let keychain: Set<[UInt8]>
}

/// Anchor stores built once and reused: decoding the system bundle's ~150 roots and adding
/// them to a store costs far more than a verification, and evaluations with the same anchors
/// (the common case: the system's plus a few of the keychain's) share one store.
///
/// The system bundle is stat'ed on each evaluation and decoded again only when its device,
/// inode, size or modification time changes. The keychain's anchors are read from the store
/// on each evaluation (an index seek) and compared by fingerprint, so another process's
/// trust change counts at once.
final class AnchorCache: @unchecked Sendable {
    // @unchecked Sendable: every field is read and written under `lock`.
    static let shared = AnchorCache()

    /// The system bundle when no `P11KEYCHAIN_SYSTEM_ANCHORS` names another (Debian's
    /// ca-certificates, the same roots p11-kit's trust module serves).
    static let defaultSystemBundle = "/etc/ssl/certs/ca-certificates.crt"
    /// Combined stores kept at most; more distinct anchor sets than this clear the cache.
    private static let maximumStores = 8

    private let lock = Lock()
    private var system: (identity: FileIdentity, certificates: [VerifiableCertificate])?
    private var stores: [StoreKey: AnchorSet] = [:]

    private struct FileIdentity: Hashable {
        var path: String
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modified: Int64
        var modifiedNanoseconds: Int
    }

    private struct StoreKey: Hashable {
        var system: FileIdentity?
        var given: [[UInt8]]
        var keychain: [[UInt8]]
    }

    /// The system bundle's path: `$P11KEYCHAIN_SYSTEM_ANCHORS` (not in a privileged host),
    /// else Debian's bundle.
    static var systemBundlePath: String {
        // getenv, not Environment.current: this runs on every evaluation, and copying the
        // whole environment into a dictionary cost more than the lookup of the anchors.
        guard !Environment.isPrivileged, let value = getenv("P11KEYCHAIN_SYSTEM_ANCHORS"), value.pointee != 0
        else {
            return defaultSystemBundle
        }
        return String(cString: value)
    }

    func anchors(given: [[UInt8]], keychain: [[UInt8]], system useSystem: Bool) throws(CryptoError)
        -> AnchorSet
    {
        let givenPrints = given.map { fingerprint($0) }
        let keychainPrints = keychain.map { fingerprint($0) }
        let path = Self.systemBundlePath
        let identity = useSystem ? Self.identity(of: path) : nil
        let key = StoreKey(
            system: identity, given: givenPrints.sorted(by: Self.less),
            keychain: keychainPrints.sorted(by: Self.less))
        lock.lock()
        defer { lock.unlock() }
        if let found = stores[key] { return found }
        var certificates: [VerifiableCertificate] = []
        if let identity {
            if system?.identity != identity {
                // A bundle that cannot be read gives no system anchors, not an error: the
                // keychain's and the given anchors still work.
                let loaded = (try? VerifiableCertificate.certificates(inPEMFile: path)) ?? []
                system = (identity, loaded)
            }
            certificates += system?.certificates ?? []
        }
        for der in given + keychain {
            certificates.append(try VerifiableCache.shared.certificate(der))
        }
        let set = AnchorSet(
            store: try TrustAnchorStore(certificates), given: Set(givenPrints), keychain: Set(keychainPrints))
        if stores.count >= Self.maximumStores { stores.removeAll() }
        stores[key] = set
        return set
    }

    private static func less(_ a: [UInt8], _ b: [UInt8]) -> Bool { a.lexicographicallyPrecedes(b) }

    private static func identity(of path: String) -> FileIdentity? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return FileIdentity(
            path: path, device: UInt64(status.st_dev), inode: UInt64(status.st_ino),
            size: Int64(status.st_size),
            modified: Int64(status.st_mtim.tv_sec), modifiedNanoseconds: status.st_mtim.tv_nsec)
    }
}

/// Certificates decoded by OpenSSL for verification, kept by DER: decoding a certificate's
/// key is most of a verification's cost, and the same chain is often evaluated again.
final class VerifiableCache: @unchecked Sendable {
    // @unchecked Sendable: `entries` is read and written under `lock`; the values are immutable.
    static let shared = VerifiableCache()

    /// Entries kept at most; when full, the cache starts over (a bound, not a policy).
    private static let capacity = 1024

    private let lock = Lock()
    private var entries: [[UInt8]: VerifiableCertificate] = [:]

    func certificate(_ der: [UInt8]) throws(CryptoError) -> VerifiableCertificate {
        lock.lock()
        if let found = entries[der] {
            lock.unlock()
            return found
        }
        lock.unlock()
        let made = try VerifiableCertificate(der: der)
        lock.lock()
        defer { lock.unlock() }
        if entries.count >= Self.capacity { entries.removeAll() }
        entries[der] = made
        return made
    }
}

/// SHA-256 of a certificate's DER: how anchors and distrusted certificates are recognised.
func fingerprint(_ der: [UInt8]) -> [UInt8] { HashAlgorithm.sha256.hash(der) }
