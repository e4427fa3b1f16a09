import KeychainCrypto
import Testing

@Suite("X.509 extensions OpenSSL makes")
struct CertificateExtensionTests {
    @Test("an extendedKeyUsage extension of two usages is the DER RFC 5280 gives, non-critical")
    func extendedKeyUsageBytes() throws {
        let made = try CertificateExtension.extendedKeyUsage(["serverAuth", "emailProtection"])
        let extKeyUsage: [UInt8] = [0x06, 0x03, 0x55, 0x1D, 0x25]
        let kp: [UInt8] = [0x06, 0x08, 0x2B, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03]
        let usages: [UInt8] = [0x30, 0x14] + kp + [0x01] + kp + [0x04]
        #expect(made.objectID == extKeyUsage)
        #expect(made.der == [0x30, 0x1D] + extKeyUsage + [0x04, 0x16] + usages)
    }

    @Test(
        "no usage, an unknown one, or a list smuggled into one name is refused",
        arguments: [
            [], ["noSuchUsage"], ["serverAuth,clientAuth"], [""],
        ])
    func refused(usages: [String]) {
        #expect(throws: CryptoError.self) { try CertificateExtension.extendedKeyUsage(usages) }
    }
}
