import Foundation
import Security
import TestSupport
import Testing

@Suite("SecIdentityCreate pairs a certificate with its private key in memory", .serialized)
struct IdentityInMemoryTests {
    @Test("the certificate's own key makes an identity; another key makes none")
    func pairsOnlyTheMatchingKey() throws {
        try withPINKeychain { directory in
            try unlockKeychain(password: TestPIN.user)
            let (certificate, key) = try #require(
                certificateAndKey(p12: try makeP12(in: directory), password: "secret"))
            let identity = try #require(SecIdentityCreate(nil, certificate, key))
            var itsCertificate: SecCertificate?
            #expect(SecIdentityCopyCertificate(identity, &itsCertificate) == errSecSuccess)
            #expect(itsCertificate == certificate)

            let other = try #require(
                SecKeyCreateRandomKey(
                    [kSecAttrKeyType: kSecAttrKeyTypeECSECPrimeRandom, kSecAttrKeySizeInBits: 256]
                        as CFDictionary,
                    nil))
            #expect(SecIdentityCreate(nil, certificate, other) == nil)
        }
    }
}
