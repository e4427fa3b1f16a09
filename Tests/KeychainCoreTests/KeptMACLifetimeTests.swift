import KeychainCore
import KeychainCrypto
import Testing

/// A finished MAC waits in its caller's `KeptContexts` for a restart: the two must not hold
/// each other, or a session dropped with its operations not ended (at C_Finalize) would keep
/// both, and the key's bytes, for the life of the process.
@Suite("A finished MAC waiting for a restart does not keep its kept contexts alive")
struct KeptMACLifetimeTests {
    static let sha256HMAC: UInt64 = 0x0251

    @Test("dropping the kept contexts frees them and the MAC waiting in them, restarted or not")
    func keptContextsAndTheirMACAreFreed() throws {
        try withToken { token, _ in
            try logInUser(token)
            let kind = try #require(SecretKeyKind(.genericSecret))
            let key = try token.generateSecretKey(
                kind, mechanism: SecretKeyKind.genericSecretKeyGeneration,
                template: [.valueLength: ulong(32), .sign: yes], context: Contexts.user)
            weak var weakKept: KeptContexts?
            weak var weakMAC: MACOperation?
            do {
                let kept = KeptContexts()
                weakKept = kept
                let mac = try token.macOperation(
                    key, Self.sha256HMAC, .none, for: .sign, context: Contexts.user, kept: kept)
                weakMAC = mac
                _ = try mac.code(of: [1, 2, 3])
                let again = try token.macOperation(
                    key, Self.sha256HMAC, .none, for: .sign, context: Contexts.user, kept: kept)
                #expect(again === mac)
                _ = try again.code(of: [4])
            }
            #expect(weakKept == nil)
            #expect(weakMAC == nil)
        }
    }
}
