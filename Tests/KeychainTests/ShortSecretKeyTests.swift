import Foundation
import Keychain
import KeychainCore
import Testing

/// The typed API keeps the core's check-value rule: a secret key under 16
/// bytes, whose 3-byte check value would name it after a short search, has none.
@Suite("Short secret keys through the typed API")
struct ShortSecretKeyTests {
    @Test("a generated or imported key under 16 bytes has an empty check value; a 16-byte key has one")
    func shortKeysHaveNoCheckValue() throws {
        try withPINKeychain { keychain, _ in
            let generated = try keychain.generateSecretKey(.generic(bits: 64), label: "short")
            #expect(generated.checkValue == [])
            let imported = try keychain.importSecretKey([0x01, 0x02, 0x03], type: .generic, label: "tiny")
            #expect(imported.checkValue == [])
            let found = try #require(try keychain.firstSecretKey(matching: SecretKeyQuery(label: "tiny")))
            #expect(found.checkValue == [])
            let long = try keychain.importSecretKey(Array(repeating: 0x07, count: 16), type: .generic)
            #expect(long.checkValue.count == 3)
        }
    }
}
