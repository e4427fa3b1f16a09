// trust-bench: SecTrustEvaluateWithError in a loop, for bench/trust.sh.
//
//     trust-bench LEAF.pem INTERMEDIATE.pem HOSTNAME SECONDS
//
// Each round creates a fresh trust object from the same two certificates (as a TLS client does
// per connection) with the SSL policy for HOSTNAME, and evaluates it against the default
// keychain (P11KEYCHAIN_DIR) and the system bundle (P11KEYCHAIN_SYSTEM_ANCHORS). Prints
// `evaluations=N seconds=S per_second=R`. Every evaluation must succeed.

import Foundation
import Security

func certificate(_ path: String) -> SecCertificate? {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
    let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    guard let der = Data(base64Encoded: body) else { return nil }
    return SecCertificateCreateWithData(nil, der as CFData)
}

let arguments = CommandLine.arguments
guard arguments.count == 5, let leaf = certificate(arguments[1]),
    let intermediate = certificate(arguments[2]),
    let seconds = Double(arguments[4])
else {
    FileHandle.standardError.write(
        Data("usage: trust-bench LEAF.pem INTERMEDIATE.pem HOSTNAME SECONDS\n".utf8))
    exit(2)
}
let policy = SecPolicyCreateSSL(true, arguments[3] as CFString)

func evaluateOnce() -> Bool {
    var trust: SecTrust?
    guard SecTrustCreateWithCertificates([leaf, intermediate] as AnyObject, policy, &trust) == errSecSuccess,
        let trust
    else { return false }
    var error: CFError?
    return SecTrustEvaluateWithError(trust, &error)
}

// One evaluation outside the clock: it loads the system bundle and opens the keychain.
guard evaluateOnce() else {
    FileHandle.standardError.write(Data("trust-bench: the chain does not evaluate as trusted\n".utf8))
    exit(1)
}
let start = Date()
var count = 0
while true {
    for _ in 0..<50 {
        guard evaluateOnce() else {
            FileHandle.standardError.write(Data("trust-bench: an evaluation failed\n".utf8))
            exit(1)
        }
    }
    count += 50
    if Date().timeIntervalSince(start) >= seconds { break }
}
let elapsed = Date().timeIntervalSince(start)
print(
    "evaluations=\(count) seconds=\(String(format: "%.3f", elapsed)) per_second=\(String(format: "%.1f", Double(count) / elapsed))"
)
