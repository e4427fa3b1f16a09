internal import KeychainCrypto

/// The decrypted contents of a PKCS#12 file: its private key, the key's certificate and the
/// other certificates, as the typed API's `PKCS12Bundle` holds them.
package struct PKCS12Import: Sendable {
    /// The private key, or nil for a file of certificates only.
    package let privateKey: KeyMaterial?
    /// The DER of the private key's certificate (without a key: the file's first certificate).
    package let certificate: [UInt8]?
    /// The DER of the file's other certificates, in file order.
    package let otherCertificates: [[UInt8]]
    /// The friendlyName and localKeyId the file gives the certificate, if any.
    package let friendlyName: String?
    package let localKeyID: [UInt8]?

    /// Decrypts a DER PKCS#12 file.
    ///
    /// - Throws: ``CoreError/Code/pinIncorrect`` when the password is wrong;
    ///   ``CoreError/Code/attributeValueInvalid`` when the data is not a PKCS#12 file this
    ///   keychain reads.
    package init(der: [UInt8], password: String) throws(CoreError) {
        let contents: PKCS12Contents
        do {
            contents = try PKCS12Contents(der: der, password: password)
        } catch {
            switch error.code {
            case .wrongPassword: throw CoreError(.pinIncorrect, error.message)
            case .invalidInput, .unsupported, .failed, .authenticationFailed, .invalidPadding:
                throw CoreError(.attributeValueInvalid, error.message)
            }
        }
        privateKey = contents.privateKey.map(KeyMaterial.init)
        certificate = contents.certificate
        otherCertificates = contents.otherCertificates
        friendlyName = contents.friendlyName
        localKeyID = contents.localKeyID
    }
}
