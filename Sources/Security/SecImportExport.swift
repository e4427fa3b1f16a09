public import Foundation
internal import Keychain

// SecPKCS12Import (Apple's SecImportExport.h).

/// The password of the PKCS#12 data (CFString), in `SecPKCS12Import`'s options.
nonisolated(unsafe) public let kSecImportExportPassphrase: CFString = "passphrase"
/// The keychain to import into (`SecKeychain`), in `SecPKCS12Import`'s options: only the
/// default keychain exists.
nonisolated(unsafe) public let kSecImportExportKeychain: CFString = "keychain"
/// Whether to keep the imported items in memory only (CFBoolean), in `SecPKCS12Import`'s
/// options. By default they are stored in the keychain, as on macOS.
nonisolated(unsafe) public let kSecImportToMemoryOnly: CFString = "memory"
/// An imported item's friendlyName (CFString), in `SecPKCS12Import`'s results.
nonisolated(unsafe) public let kSecImportItemLabel: CFString = "label"
/// An imported item's localKeyId (CFData), in `SecPKCS12Import`'s results.
nonisolated(unsafe) public let kSecImportItemKeyID: CFString = "keyid"
/// An imported item's certificates (an array of `SecCertificate`: the identity's certificate
/// first, then the file's other certificates), in `SecPKCS12Import`'s results.
nonisolated(unsafe) public let kSecImportItemCertChain: CFString = "chain"
/// An imported item's identity (`SecIdentity`), in `SecPKCS12Import`'s results.
nonisolated(unsafe) public let kSecImportItemIdentity: CFString = "identity"
/// An imported item's trust (`SecTrust`): its certificate and the file's other certificates
/// with the basic X.509 policy, not yet evaluated, in `SecPKCS12Import`'s results.
nonisolated(unsafe) public let kSecImportItemTrust: CFString = "trust"

/// Imports the identity of a PKCS#12 file (`.p12`, `.pfx`): its private key, its certificate
/// and the certificates of its chain.
///
/// By default the key pair and the certificates are stored in the default keychain, which
/// must be unlocked (the private key is a private item); what is already stored is kept, so
/// importing a file twice stores nothing new. With `kSecImportToMemoryOnly` true nothing is
/// stored and the identity's key lives in memory. Files with AES (OpenSSL 3's default) and
/// the legacy 3DES and RC2 encodings are read.
///
///     let options = [kSecImportExportPassphrase as String: "secret"]
///     var items: CFArray?
///     let status = SecPKCS12Import(p12Data as CFData, options as CFDictionary, &items)
///     let identity = (items as! [[String: Any]])[0][kSecImportItemIdentity as String] as! SecIdentity
///
/// - Parameters:
///   - pkcs12_data: The file's DER.
///   - options: `kSecImportExportPassphrase` (default: empty), `kSecImportToMemoryOnly`,
///     `kSecImportExportKeychain`.
///   - items: Receives an array with one dictionary per identity: `kSecImportItemIdentity`,
///     `kSecImportItemCertChain`, `kSecImportItemTrust`, and, when the file has them,
///     `kSecImportItemLabel` and `kSecImportItemKeyID`. Empty for a file without a key and its certificate.
/// - Returns: `errSecSuccess`; `errSecAuthFailed` for a wrong password; `errSecDecode` for
///   data that is not PKCS#12; `errSecInteractionNotAllowed` when the keychain is locked;
///   `errSecParam` for unknown options.
@discardableResult
public func SecPKCS12Import(
    _ pkcs12_data: CFData, _ options: CFDictionary, _ items: UnsafeMutablePointer<CFArray?>
)
    -> OSStatus
{
    items.pointee = nil
    do throws(KeychainError) {
        var password = ""
        var memoryOnly = false
        var target: SecKeychain?
        for (key, value) in try swiftDictionary(options) {
            switch key {
            case kSecImportExportPassphrase:
                password = try typed(value, "kSecImportExportPassphrase", "a CFString")
            case kSecImportToMemoryOnly: memoryOnly = try boolean(value, "kSecImportToMemoryOnly")
            case kSecImportExportKeychain:
                guard let keychain = value as? SecKeychain else {
                    throw KeychainError(.parameter, "kSecImportExportKeychain must be a SecKeychain")
                }
                target = keychain
            default: throw KeychainError(.parameter, "unknown key '\(key)' in SecPKCS12Import's options")
            }
        }
        let bundle = try PKCS12Bundle(derEncoded: Array(pkcs12_data as Data), password: password)
        var identities: [SecIdentity] = []
        if memoryOnly {
            if let key = bundle.privateKey, let certificate = bundle.certificate {
                identities = [
                    SecIdentity(
                        certificate: SecCertificate(certificate), privateKey: SecKey(.privateKey(key)),
                        item: nil)
                ]
            }
        } else {
            let keychain = try resolve(target)
            identities = try keychain.add(bundle).map { SecIdentity($0, in: keychain) }
        }
        items.pointee =
            identities.map { identity -> [String: Any] in
                let chain = [identity.certificate] + bundle.chain.map(SecCertificate.init)
                var item: [String: Any] = [
                    kSecImportItemIdentity as String: identity,
                    kSecImportItemCertChain as String: chain,
                    kSecImportItemTrust as String: SecTrust(
                        certificates: chain, policies: [SecPolicyCreateBasicX509()]),
                ]
                if let label = bundle.friendlyName { item[kSecImportItemLabel] = label }
                if let keyID = bundle.localKeyID { item[kSecImportItemKeyID] = Data(keyID) }
                return item
            } as NSArray
        return errSecSuccess
    } catch {
        return LastError.record(error)
    }
}
