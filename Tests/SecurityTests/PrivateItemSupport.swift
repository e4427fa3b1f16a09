import Foundation
import Keychain
import Security
import Testing

/// Runs `body` with a fresh default keychain (as `withDefaultKeychain`) whose SO and user
/// PINs are set, unlocked with `SecKeychainUnlock` unless `unlocked` is false; locked again
/// afterwards.
func withPINKeychain(unlocked: Bool = true, _ body: (String) throws -> Void) throws {
    try withDefaultKeychain { directory in
        let keychain = try Keychain()
        try keychain.initialize(securityOfficerPIN: TestPIN.securityOfficer, label: "login")
        try keychain.setUserPIN(TestPIN.user, securityOfficerPIN: TestPIN.securityOfficer)
        if unlocked { #expect(unlock(TestPIN.user) == errSecSuccess) }
        defer { _ = SecKeychainLock(nil) }
        try body(directory)
    }
}

/// `SecKeychainUnlock` of the default keychain with `pin`.
func unlock(_ pin: String) -> OSStatus {
    SecKeychainUnlock(nil, UInt32(pin.utf8.count), pin, true)
}

/// Runs `/usr/bin/<program>`.
@discardableResult
func run(_ program: String, _ arguments: [String], environment: [String: String]? = nil) throws
    -> ProgramResult
{
    try runProgram("/usr/bin/" + program, arguments, environment: environment)
}

/// Runs `openssl` and expects success.
@discardableResult
func openssl(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> ProgramResult
{
    let result = try run("openssl", arguments)
    #expect(
        result.status == 0, "openssl \(arguments.joined(separator: " ")): \(result.error)",
        sourceLocation: sourceLocation)
    return result
}

/// Runs `pkcs11-tool` with the built module on the keychain in `directory`, logged in with
/// the user PIN unless `login` is false.
func pkcs11Tool(_ arguments: [String], keychainDirectory directory: String, login: Bool = true) throws
    -> ProgramResult
{
    let loginArguments = login ? ["--login", "--pin", TestPIN.user] : []
    return try run(
        "pkcs11-tool", ["--module", try modulePath()] + loginArguments + arguments,
        environment: [
            "P11KEYCHAIN_DIR": directory, "P11KEYCHAIN_CONF": "/dev/null", "PATH": "/usr/bin:/bin",
            "HOME": directory,
        ])
}

/// A key and a self-signed certificate made by `openssl req`, exported as PKCS#12 with the
/// password `secret`, the friendlyName `name` and the given encryption.
func makePKCS12(in directory: String, keyType: String, name: String, encryption: [String] = []) throws -> Data
{
    let base = directory + "/" + name.replacingOccurrences(of: " ", with: "-")
    let newKey =
        keyType == "rsa"
        ? ["-newkey", "rsa:2048"] : ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
    try openssl(
        ["req", "-x509"] + newKey + [
            "-nodes", "-keyout", base + ".key", "-out", base + ".crt", "-days", "2", "-subj", "/CN=\(name)",
        ])
    try openssl(
        [
            "pkcs12", "-export", "-inkey", base + ".key", "-in", base + ".crt", "-name", name, "-out",
            base + ".p12",
            "-passout", "pass:secret",
        ] + encryption)
    return try Data(contentsOf: URL(fileURLWithPath: base + ".p12"))
}

/// Whether `openssl dgst -sha256 -verify` accepts `signature` of `data` with the public key of
/// a DER certificate (e.g. as `SecCertificateCopyData` exports it).
func opensslVerifies(_ signature: Data, of data: Data, certificate: Data, in directory: String) throws -> Bool
{
    let certificatePath = directory + "/exported.der"
    let publicKeyPath = directory + "/exported-public.pem"
    try certificate.write(to: URL(fileURLWithPath: certificatePath))
    try data.write(to: URL(fileURLWithPath: directory + "/signed.bin"))
    try signature.write(to: URL(fileURLWithPath: directory + "/signature.bin"))
    try openssl([
        "x509", "-inform", "DER", "-in", certificatePath, "-pubkey", "-noout", "-out", publicKeyPath,
    ])
    let result = try run(
        "openssl",
        [
            "dgst", "-sha256", "-verify", publicKeyPath, "-signature", directory + "/signature.bin",
            directory + "/signed.bin",
        ])
    return result.status == 0 && result.output.contains("Verified OK")
}

/// The `CFError` a failed call left in its out-parameter, as Apple's callers take it.
func takeError(_ error: Unmanaged<CFError>?) -> NSError? {
    error.map { $0.takeRetainedValue() as NSError }
}
