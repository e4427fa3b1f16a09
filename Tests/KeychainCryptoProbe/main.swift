// crypto-context-probe: runs every kind of OpenSSL work KeychainCrypto does (PBKDF2, sealing,
// random, digests, key generation, signing, verification, RSA decryption, key import,
// PKCS#12) and reports each on its own line. KeychainCryptoTests runs it as a child process
// with an OPENSSL_CONF whose default library context can do nothing: every line must still
// say "ok", because KeychainCrypto works in a library context of its own (ARCHITECTURE.md §6.9).
//
//   crypto-context-probe PKCS12-FILE PASSWORD
//
// Exit status 0 when every operation succeeded, 1 otherwise.
import KeychainCrypto

#if canImport(Glibc)
    import Glibc
#endif

nonisolated(unsafe) var failures = 0  // one thread: the probe runs its checks in order

func check(_ name: String, _ body: () throws -> Bool) {
    do {
        let ok = try body()
        print("\(name): \(ok ? "ok" : "wrong result")")
        if !ok { failures += 1 }
    } catch {
        print("\(name): failed: \(error)")
        failures += 1
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    print("usage: crypto-context-probe PKCS12-FILE PASSWORD")
    exit(2)
}

check("pbkdf2") {
    let key = try PasswordKeyDerivation.derive(
        password: SecretBytes(Array("1234".utf8)), salt: Array(repeating: 1, count: 16), iterations: 1_000,
        length: 32)
    return key.count == 32
}
check("secret box") {
    let key = try SecureRandom.secret(SecretBox.keyLength)
    let box = try SecretBox.seal(SecretBytes([1, 2, 3]), key: key, associatedData: [9])
    return try SecretBox.open(box, key: key, associatedData: [9]).copyBytes() == [1, 2, 3]
}
check("random") { try SecureRandom.bytes(16).count == 16 }
check("digest") { DigestAlgorithm.sha256.hash([0x61, 0x62, 0x63]).count == 32 }
for (name, algorithm, scheme) in [
    ("ecdsa p-256", KeyAlgorithm.ec(.p256), SignatureScheme.ecdsa(.sha256)),
    ("rsa-2048 pkcs1", .rsa(bits: 2048), .rsaPKCS1(.sha256)),
    (
        "rsa-2048 pss", .rsa(bits: 2048),
        .rsaPSS(digest: .sha256, hash: .sha256, mgf1: .sha256, saltLength: 32)
    ),
    ("ed25519", .ed25519, .ed25519),
] {
    check("generate, sign, verify \(name)") {
        let key = try AsymmetricKey.generate(algorithm)
        let signature = try key.sign([1, 2, 3], scheme: scheme)
        return try key.publicKey().verify(signature, message: [1, 2, 3], scheme: scheme)
    }
}
check("rsa decryption") {
    let key = try AsymmetricKey.generate(.rsa(bits: 2048))
    let ciphertext = try key.encrypt([7, 7, 7], padding: .pkcs1)
    return try key.decrypt(ciphertext, padding: .pkcs1) == [7, 7, 7]
}
check("pkcs8 import") {
    let key = try AsymmetricKey.generate(.ec(.p384))
    guard let der = key.secretPKCS8 else { return false }
    return try AsymmetricKey(privateKeyDER: der).subjectPublicKeyInfo == key.subjectPublicKeyInfo
}
check("pkcs12 import") {
    guard let file = fopen(arguments[1], "rb") else { return false }
    defer { fclose(file) }
    var der: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = fread(&chunk, 1, chunk.count, file)
        if count == 0 { break }
        der += chunk.prefix(count)
    }
    let contents = try PKCS12Contents(der: der, password: arguments[2])
    guard let key = contents.privateKey, let certificate = contents.certificate else { return false }
    let signature = try key.sign([1], scheme: .ecdsa(.sha256))
    let info = try X509Certificate(der: certificate).subjectPublicKeyInfo
    return try AsymmetricKey(subjectPublicKeyInfo: info).verify(
        signature, message: [1], scheme: .ecdsa(.sha256))
}
exit(failures == 0 ? 0 : 1)
