import Foundation
import Keychain
import Testing

/// A new keychain in its own temporary store with an SO PIN and a user PIN set, optionally
/// unlocked. Opened by path: no process environment is involved. Setting the PINs runs the
/// slow key derivation three times (and unlocking once more).
func withPINKeychain(unlocked: Bool = true, _ body: (Keychain, TemporaryDirectory) throws -> Void) throws {
    try withTemporaryKeychain { keychain, directory in
        try keychain.initialize(securityOfficerPIN: TestPIN.securityOfficer, label: "test")
        try keychain.setUserPIN(TestPIN.user, securityOfficerPIN: TestPIN.securityOfficer)
        if unlocked { try keychain.unlock(pin: TestPIN.user) }
        defer { keychain.lock() }
        try body(keychain, directory)
    }
}

/// Runs `/usr/bin/<program>` with `arguments`; `input` goes to its standard input.
@discardableResult
func run(_ program: String, _ arguments: [String], environment: [String: String]? = nil, input: Data? = nil)
    throws -> ProgramResult
{
    try runProgram("/usr/bin/" + program, arguments, environment: environment, input: input)
}

/// Runs `openssl` and requires success.
@discardableResult
func openssl(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> ProgramResult
{
    let result = try run("openssl", arguments)
    #expect(
        result.status == 0, "openssl \(arguments.joined(separator: " ")): \(result.error)",
        sourceLocation: sourceLocation)
    return result
}

/// How `openssl pkcs12 -export` encrypts a test file.
enum PKCS12Encoding: String, CaseIterable, CustomStringConvertible {
    /// OpenSSL 3's default: AES-256-CBC with PBKDF2, HMAC-SHA256 MAC.
    case aes
    /// 3DES for key and certificates (what many older tools write).
    case tripleDES
    /// `-legacy`: RC2-40 for certificates, 3DES for the key, which needs OpenSSL's legacy provider.
    case legacy

    var arguments: [String] {
        switch self {
        case .aes: ["-certpbe", "AES-256-CBC", "-keypbe", "AES-256-CBC"]
        case .tripleDES: ["-certpbe", "PBE-SHA1-3DES", "-keypbe", "PBE-SHA1-3DES"]
        case .legacy: ["-legacy"]
        }
    }

    var description: String { rawValue }
}

/// A key and self-signed certificate made with `openssl req`, and a PKCS#12 of them.
struct TestIdentityFiles {
    let keyPath: String
    let certificatePath: String
    let pkcs12Path: String
    var pkcs12: [UInt8] { (try? Array(Data(contentsOf: URL(fileURLWithPath: pkcs12Path)))) ?? [] }
    var certificate: Certificate {
        get throws { try Certificate(pemEncoded: String(contentsOfFile: certificatePath, encoding: .utf8)) }
    }

    /// `keyType` is `rsa` or `ec`; the file's friendlyName is `name`.
    init(
        in directory: String, keyType: String, name: String, encoding: PKCS12Encoding = .aes,
        password: String = "secret", chain: Bool = false
    ) throws {
        let base = directory + "/" + name.replacingOccurrences(of: " ", with: "-")
        keyPath = base + ".key"
        certificatePath = base + ".crt"
        pkcs12Path = base + ".p12"
        let newKey =
            keyType == "rsa"
            ? ["-newkey", "rsa:2048"] : ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
        var certificateFile: [String] = []
        if chain {
            let caKey = base + "-ca.key"
            let caCertificate = base + "-ca.crt"
            try openssl(
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-keyout", caKey, "-out",
                    caCertificate, "-days", "2", "-subj", "/CN=\(name) CA", "-addext",
                    "basicConstraints=critical,CA:TRUE",
                ])
            try openssl(
                ["req", "-new"] + newKey + [
                    "-nodes", "-keyout", keyPath, "-out", base + ".csr", "-subj", "/CN=\(name)",
                ])
            try openssl(
                [
                    "x509", "-req", "-in", base + ".csr", "-CA", caCertificate, "-CAkey", caKey,
                    "-CAcreateserial", "-out",
                    certificatePath, "-days", "2",
                ])
            certificateFile = ["-certfile", caCertificate]
        } else {
            try openssl(
                ["req", "-x509"] + newKey + [
                    "-nodes", "-keyout", keyPath, "-out", certificatePath, "-days", "2", "-subj",
                    "/CN=\(name)",
                ])
        }
        try openssl(
            [
                "pkcs12", "-export", "-inkey", keyPath, "-in", certificatePath, "-name", name, "-out",
                pkcs12Path,
                "-passout", "pass:\(password)",
            ] + certificateFile + encoding.arguments)
    }

    /// Whether `openssl dgst -sha256 -verify` accepts `signature` of `data` with the public key of
    /// the certificate `certificateDER` (as exported from the keychain).
    static func opensslVerifies(
        _ signature: [UInt8], of data: [UInt8], certificateDER: [UInt8], in directory: String,
        extra: [String] = []
    ) throws -> Bool {
        let certificatePath = directory + "/exported.der"
        let publicKeyPath = directory + "/exported-public.pem"
        let dataPath = directory + "/signed.bin"
        let signaturePath = directory + "/signature.bin"
        try Data(certificateDER).write(to: URL(fileURLWithPath: certificatePath))
        try Data(data).write(to: URL(fileURLWithPath: dataPath))
        try Data(signature).write(to: URL(fileURLWithPath: signaturePath))
        try openssl([
            "x509", "-inform", "DER", "-in", certificatePath, "-pubkey", "-noout", "-out", publicKeyPath,
        ])
        let result = try run(
            "openssl",
            ["dgst", "-sha256", "-verify", publicKeyPath, "-signature", signaturePath] + extra + [dataPath])
        return result.status == 0 && result.output.contains("Verified OK")
    }
}

/// Every byte of the store's files (the database, its WAL and shared memory), for raw scans.
func storeBytes(_ keychain: Keychain) -> [UInt8] {
    var bytes: [UInt8] = []
    for suffix in ["", "-wal", "-shm", "-journal"] {
        if let data = FileManager.default.contents(atPath: keychain.path + suffix) { bytes += Array(data) }
    }
    return bytes
}

extension Array where Element == UInt8 {
    /// True when `needle` occurs in these bytes.
    func contains(bytes needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        let first = needle[0]
        var index = startIndex
        while let found = self[index...].firstIndex(of: first), found + needle.count <= count {
            if Array(self[found..<(found + needle.count)]) == needle { return true }
            index = found + 1
        }
        return false
    }
}
