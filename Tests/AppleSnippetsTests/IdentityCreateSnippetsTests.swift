import Foundation
import Security
import TestSupport
import Testing

@Suite("SecIdentityCreateWithCertificate joins a certificate to the keychain's private key", .serialized)
struct IdentityCreateSnippetsTests {
    @Test("no stored key is errSecItemNotFound; with the key stored, the identity signs")
    func identityOfStoredKey() throws {
        try withPINKeychain { directory in
            try unlockKeychain(password: TestPIN.user)
            let (certificate, key) = try #require(
                certificateAndKey(p12: try makeP12(in: directory), password: "secret"))
            #expect(identity(for: certificate, in: nil).0 == errSecItemNotFound)
            #expect(storePrivateKey(key) == errSecSuccess)

            let (status, made) = identity(for: certificate, in: nil)
            #expect(status == errSecSuccess)
            let found = try #require(made)
            var itsCertificate: SecCertificate?
            var itsKey: SecKey?
            SecIdentityCopyCertificate(found, &itsCertificate)
            SecIdentityCopyPrivateKey(found, &itsKey)
            #expect(itsCertificate == certificate)
            let message = Data("hello".utf8)
            let signingKey = try #require(itsKey)
            let signature = try #require(signOrCode(signingKey, message).0)
            let publicKey = try #require(SecCertificateCopyKey(certificate))
            #expect(
                SecKeyVerifySignature(
                    publicKey, .ecdsaSignatureMessageX962SHA256,
                    message as CFData, signature as CFData, nil))
        }
    }

    @Test("the keychain may be named, alone or in an array; anything else is errSecParam")
    func keychainOrArray() throws {
        try withPINKeychain { directory in
            try unlockKeychain(password: TestPIN.user)
            let (certificate, key) = try #require(
                certificateAndKey(p12: try makeP12(in: directory), password: "secret"))
            #expect(storePrivateKey(key) == errSecSuccess)
            var keychain: SecKeychain?
            #expect(SecKeychainCopyDefault(&keychain) == errSecSuccess)
            let named = try #require(keychain)
            #expect(identity(for: certificate, in: named).0 == errSecSuccess)
            #expect(identity(for: certificate, in: [named] as CFArray).0 == errSecSuccess)
            #expect(identity(for: certificate, in: "login" as CFString).0 == errSecParam)
        }
    }

    @Test("the validity dates and descriptions of a certificate read as Apple's functions give them")
    func datesAndDescriptions() throws {
        try withPINKeychain { directory in
            let (certificate, _) = try #require(
                certificateAndKey(p12: try makeP12(in: directory), password: "secret"))
            let notBefore = try #require(SecCertificateCopyNotValidBeforeDate(certificate) as Date?)
            let notAfter = try #require(SecCertificateCopyNotValidAfterDate(certificate) as Date?)
            #expect(notBefore <= Date())
            #expect(notAfter > Date())
            #expect(notAfter.timeIntervalSince(notBefore) == 2 * 86_400)
            #expect(SecCertificateCopyShortDescription(nil, certificate, nil) as String? == "Shared")
            #expect(
                (SecCertificateCopyLongDescription(nil, certificate, nil) as String?)?.contains("Shared")
                    == true)
        }
    }
}
