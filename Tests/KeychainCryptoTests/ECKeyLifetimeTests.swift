import COpenSSL
import Synchronization
import Testing

@testable import KeychainCrypto

/// An ECDSA signing context holds a reference to the key's `EC_KEY` (OpenSSL's copy of the
/// private key, which it signs with); it must let it go with itself, or the key's bytes stay
/// in memory for good once the key and the context are gone. OpenSSL calls an `EC_KEY`
/// ex-data index's free callback for every `EC_KEY` it frees, with that key as the parent:
/// the test watches for the signer's.
@Suite("An ECDSA signer's EC_KEY lives no longer than the signer and its key")
struct ECKeyLifetimeTests {
    /// The `EC_KEY` watched for, and whether OpenSSL has freed it.
    private static let watched = Mutex<(key: UInt, freed: Bool)>((0, false))

    /// The free callback, registered once for the process.
    private static let registered: Bool = {
        let index = CRYPTO_get_ex_new_index(CRYPTO_EX_INDEX_EC_KEY, 0, nil, nil, nil) {
            parent, _, _, _, _, _ in
            let address = UInt(bitPattern: parent)
            ECKeyLifetimeTests.watched.withLock { if $0.key == address { $0.freed = true } }
        }
        return index >= 0
    }()

    @Test("the signer's EC_KEY is freed once the signer and the key are released")
    func signerReleasesTheECKey() throws {
        try #require(Self.registered)
        do {
            let key = try AsymmetricKey.generate(.ec(.p256))
            let signer = try SigningContext(key: key, scheme: .ecdsa(nil))
            #expect(try key.verifyHash(signer.sign(hash: [1, 2, 3]), input: [1, 2, 3], scheme: .ecdsa(nil)))
            // The EC_KEY the signer signs with: OpenSSL keeps one per key, so this is it.
            let ecKey = try #require(p11k_ec_key(key.pkey))
            p11k_ec_key_free(ecKey)
            Self.watched.withLock { $0 = (UInt(bitPattern: ecKey), false) }
            withExtendedLifetime((key, signer)) {}
        }
        #expect(Self.watched.withLock { $0.freed })
    }
}
