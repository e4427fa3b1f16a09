// Apple's "Storing a Certificate in the Keychain", written as one writes it on macOS or iOS:
// only Foundation and Security, the same calls, the same dictionaries.
//
//     store-certificate-example Examples/sample.cer
//
// stores the DER certificate in the default keychain with the label "My Certificate" (going
// on if it is already there), reads it back by that label and prints its subject summary.
// The keychain is the p11keychain store the PKCS#11 module serves, so `p11tool --list-all`
// then shows "My Certificate".

import Foundation
import Security

func fail(_ message: String, _ status: OSStatus? = nil) -> Never {
    var line = "store-certificate-example: " + message
    if let status, let details = SecCopyErrorMessageString(status, nil) as String? {
        line += ": " + details
    }
    FileHandle.standardError.write(Data((line + "\n").utf8))
    exit(1)
}

guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: store-certificate-example CERTIFICATE.cer (DER)\n".utf8))
    exit(2)
}
let path = CommandLine.arguments[1]

// Read the certificate and create a certificate object from it.
guard let certData = FileManager.default.contents(atPath: path) else {
    fail("cannot read \(path)")
}
guard let certificate = SecCertificateCreateWithData(nil, certData as CFData) else {
    fail("\(path) is not a DER-encoded X.509 certificate (convert PEM with `openssl x509 -outform der`)")
}

// Store the certificate in the keychain.
let addquery: [String: Any] = [
    kSecClass as String: kSecClassCertificate,
    kSecValueRef as String: certificate,
    kSecAttrLabel as String: "My Certificate",
]
let addStatus = SecItemAdd(addquery as CFDictionary, nil)
switch addStatus {
case errSecSuccess:
    print("Stored the certificate as \"My Certificate\".")
case errSecDuplicateItem:
    print("The certificate is already in the keychain.")
default:
    fail("cannot store the certificate", addStatus)
}

// Retrieve the certificate by its label.
let getquery: [String: Any] = [
    kSecClass as String: kSecClassCertificate,
    kSecAttrLabel as String: "My Certificate",
    kSecReturnRef as String: kCFBooleanTrue!,
]
var item: CFTypeRef?
let getStatus = SecItemCopyMatching(getquery as CFDictionary, &item)
guard getStatus == errSecSuccess else {
    fail("cannot find \"My Certificate\"", getStatus)
}
let storedCertificate = item as! SecCertificate

let summary = SecCertificateCopySubjectSummary(storedCertificate) as String?
print("Subject summary: \(summary ?? "(none)")")
