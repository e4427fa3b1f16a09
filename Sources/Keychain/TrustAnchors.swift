internal import Foundation
internal import KeychainCore

#if canImport(Glibc)
    import Glibc
#endif

/// The trust settings of each token as last read, kept while the store's change counter
/// stays the same (any process's write moves it): an evaluation then reads no row. Keyed by
/// the store file, a few entries at most.
final class TrustSettingsCache: @unchecked Sendable {
    // @unchecked Sendable: `entries` is read and written under `lock`; the values are immutable.
    static let shared = TrustSettingsCache()

    typealias Settings = [(der: [UInt8], settings: KeychainCore.TrustSettings)]
    private let lock = NSLock()
    private var entries: [String: (generation: UInt64, settings: Settings)] = [:]

    func settings(of token: Token) throws(KeychainError) -> Settings {
        let path = token.configuration.path
        let before = token.trustSettingsGeneration
        if let before {
            lock.lock()
            let kept = entries[path]
            lock.unlock()
            if let kept, kept.generation == before { return kept.settings }
        }
        let read = try KeychainError.mapping { () throws(CoreError) in
            try token.certificatesWithTrustSettings()
        }
        // Kept only when no write began or ended during the read.
        if let before, token.trustSettingsGeneration == before {
            lock.lock()
            if entries.count >= 16 { entries.removeAll() }
            entries[path] = (before, read)
            lock.unlock()
        }
        return read
    }
}
