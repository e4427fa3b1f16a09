import Foundation
import Keychain
import Testing

// PINs, keys, identities, generic passwords and PKCS#12 through the typed API.
// Each test has its own store, opened by path, so the suites run in parallel.

@Suite("Unlocking and PINs")
struct UnlockTests {
    @Test("a new keychain has no PIN: unlocking it says how to set one, and private items cannot be stored")
    func newKeychainHasNoPIN() throws {
        try withTemporaryKeychain { keychain, _ in
            let status = try keychain.authenticationStatus
            #expect(!status.hasSecurityOfficerPIN && !status.hasUserPIN && !status.isUnlocked)
            expectError(.notAvailable, containing: "no user PIN") { try keychain.unlock(pin: "1234") }
            expectError(.interactionNotAllowed, containing: "no user PIN") {
                try keychain.addGenericPassword(Array("pw".utf8), service: "s", account: "a")
            }
            expectError(.notAvailable, containing: "initialize") {
                try keychain.setUserPIN("1234", securityOfficerPIN: "12345678")
            }
        }
    }

    @Test("a wrong PIN is errSecAuthFailed, counted in the store, and a right one clears the count")
    func wrongPINIsCounted() throws {
        try withPINKeychain(unlocked: false) { keychain, _ in
            expectError(.authFailed, containing: "9 attempts left") { try keychain.unlock(pin: "0000") }
            #expect(try keychain.authenticationStatus.failedUnlockAttempts == 1)
            #expect(!keychain.isUnlocked)
            // Another Keychain on the same file reads the same count from the store.
            #expect(try Keychain(path: keychain.path).authenticationStatus.failedUnlockAttempts == 1)
            try keychain.unlock(pin: TestPIN.user)
            #expect(keychain.isUnlocked)
            #expect(try keychain.authenticationStatus.failedUnlockAttempts == 0)
            #expect(try Keychain(path: keychain.path).isUnlocked, "unlocking is per process and store")
            keychain.lock()
            #expect(!keychain.isUnlocked)
        }
    }

    @Test("after ten wrong PINs the PIN is locked, even for the right PIN, until the SO sets a new one")
    func lockedPIN() throws {
        try withPINKeychain(unlocked: false) { keychain, _ in
            for _ in 1...9 { expectError(.authFailed) { try keychain.unlock(pin: "0000") } }
            expectError(.authFailed, containing: "now locked") { try keychain.unlock(pin: "0000") }
            #expect(try keychain.authenticationStatus.isUserPINLocked)
            expectError(.authFailed, containing: "locked") { try keychain.unlock(pin: TestPIN.user) }
            try keychain.setUserPIN("5678", securityOfficerPIN: TestPIN.securityOfficer)
            #expect(try !keychain.authenticationStatus.isUserPINLocked)
            try keychain.unlock(pin: "5678")
            #expect(keychain.isUnlocked)
        }
    }

    @Test("changing the PIN keeps the items and the lock state; the old PIN stops working")
    func changePIN() throws {
        try withPINKeychain { keychain, _ in
            try keychain.addGenericPassword(Array("hunter2".utf8), service: "svc", account: "me")
            expectError(.authFailed) { try keychain.changePIN(from: "9999", to: "4321") }
            try keychain.changePIN(from: TestPIN.user, to: "4321")
            #expect(keychain.isUnlocked)
            keychain.lock()
            expectError(.authFailed) { try keychain.unlock(pin: TestPIN.user) }
            try keychain.unlock(pin: "4321")
            #expect(try keychain.genericPasswords().map(\.account) == ["me"])
            expectError(.parameter) { try keychain.changePIN(from: "4321", to: "12") }
        }
    }

    @Test("initializing again needs the SO PIN and erases every item")
    func reinitializeErases() throws {
        try withPINKeychain { keychain, _ in
            try keychain.add(Fixture.alice.certificate)
            expectError(.authFailed) { try keychain.initialize(securityOfficerPIN: "87654321", label: "x") }
            #expect(try keychain.certificates().count == 1)
            try keychain.initialize(securityOfficerPIN: TestPIN.securityOfficer, label: "fresh")
            #expect(try keychain.certificates().isEmpty)
            let status = try keychain.authenticationStatus
            #expect(status.label == "fresh" && !status.hasUserPIN && !status.isUnlocked)
        }
    }
}

@Suite("Keys")
struct KeyTests {
    @Test(
        "generated key pairs sign and verify with every algorithm of their type",
        arguments: [
            KeyAlgorithm.rsa(bits: 2048), .p256, .p384, .p521, .ed25519,
        ])
    func generateSignVerify(algorithm: KeyAlgorithm) throws {
        try withPINKeychain { keychain, _ in
            let pair = try keychain.generateKeyPair(algorithm, label: "k", applicationTag: Array("tag".utf8))
            #expect(pair.privateKey.keyClass == .private && pair.publicKey.keyClass == .public)
            #expect(pair.privateKey.algorithm == algorithm)
            #expect(pair.privateKey.applicationLabel == pair.publicKey.publicKey.publicKeyHash)
            #expect(pair.privateKey.applicationLabel == pair.publicKey.applicationLabel)
            #expect(
                pair.privateKey.isSensitive && !pair.privateKey.isExtractable && !pair.privateKey.isExportable
            )
            let message = Array("attack at dawn".utf8)
            let algorithms: [SignatureAlgorithm]
            switch algorithm.type {
            case .rsa:
                algorithms = [
                    .rsaPKCS1v15(.sha256), .rsaPKCS1v15(.sha512), .rsaPSS(.sha256), .rsaPSS(.sha384),
                ]
            case .ellipticCurve: algorithms = [.ecdsa(.sha256), .ecdsa(.sha384), .ecdsa(.sha512)]
            case .ed25519: algorithms = [.ed25519]
            }
            for signatureAlgorithm in algorithms {
                let signature = try keychain.sign(
                    message, with: pair.privateKey, algorithm: signatureAlgorithm)
                #expect(
                    try pair.publicKey.publicKey.isValidSignature(
                        signature, for: message, algorithm: signatureAlgorithm))
                #expect(
                    try !pair.publicKey.publicKey.isValidSignature(
                        signature, for: message + [0], algorithm: signatureAlgorithm))
            }
        }
    }

    @Test("digest algorithms sign the caller's hash, and agree with the message algorithms")
    func digestAlgorithms() throws {
        try withPINKeychain { keychain, _ in
            let rsa = try keychain.generateKeyPair(.rsa(bits: 2048))
            let ec = try keychain.generateKeyPair(.p256)
            let message = Array("message".utf8)
            let digest = Array(Data(try sha256(message)))
            let pkcs1 = try keychain.sign(
                digest, with: rsa.privateKey, algorithm: .rsaPKCS1v15Digest(.sha256))
            #expect(
                pkcs1 == (try keychain.sign(message, with: rsa.privateKey, algorithm: .rsaPKCS1v15(.sha256))))
            let pss = try keychain.sign(digest, with: rsa.privateKey, algorithm: .rsaPSSDigest(.sha256))
            #expect(
                try rsa.publicKey.publicKey.isValidSignature(pss, for: message, algorithm: .rsaPSS(.sha256)))
            let ecdsa = try keychain.sign(digest, with: ec.privateKey, algorithm: .ecdsaDigest(.sha256))
            #expect(
                try ec.publicKey.publicKey.isValidSignature(ecdsa, for: message, algorithm: .ecdsa(.sha256)))
            #expect(ecdsa.first == 0x30, "ECDSA signatures are DER")
            expectError(.parameter, containing: "32-byte digest") {
                _ = try keychain.sign(message, with: rsa.privateKey, algorithm: .rsaPKCS1v15Digest(.sha256))
            }
            expectError(.parameter, containing: "EC key") {
                _ = try keychain.sign(message, with: rsa.privateKey, algorithm: .ecdsa(.sha256))
            }
        }
    }

    @Test("RSA keys encrypt with the public key and decrypt with the stored private key")
    func encryptDecrypt() throws {
        try withPINKeychain { keychain, _ in
            let pair = try keychain.generateKeyPair(.rsa(bits: 2048))
            let secret = Array("the cake is a lie".utf8)
            for algorithm in [EncryptionAlgorithm.rsaPKCS1, .rsaOAEP(.sha1), .rsaOAEP(.sha256)] {
                let ciphertext = try pair.publicKey.publicKey.encrypt(secret, algorithm: algorithm)
                #expect(
                    try keychain.decrypt(ciphertext, with: pair.privateKey, algorithm: algorithm) == secret)
            }
            let ec = try keychain.generateKeyPair(.p256)
            expectError(.parameter, containing: "only RSA") {
                _ = try keychain.decrypt([1, 2, 3], with: ec.privateKey, algorithm: .rsaPKCS1)
            }
        }
    }

    @Test("keys are found by class, type, size, label, tag and application label, and deleted")
    func findAndDelete() throws {
        try withPINKeychain { keychain, _ in
            let tag = Array("com.example.keys.mykey".utf8)
            let rsa = try keychain.generateKeyPair(.rsa(bits: 2048), label: "rsa key", applicationTag: tag)
            let ec = try keychain.generateKeyPair(.p384, label: "ec key")
            #expect(try keychain.keys().count == 4)
            #expect(
                try keychain.keys(matching: KeyQuery(applicationTag: tag)).map(\.keyClass) == [
                    .public, .private,
                ])
            #expect(
                try keychain.keys(matching: KeyQuery(keyClass: .private, type: .ellipticCurve)) == [
                    ec.privateKey
                ])
            #expect(try keychain.keys(matching: KeyQuery(type: .ellipticCurve, sizeInBits: 256)).isEmpty)
            #expect(try keychain.keys(matching: KeyQuery(label: "rsa key", usage: .sign)) == [rsa.privateKey])
            #expect(
                try keychain.firstKey(matching: KeyQuery(applicationLabel: ec.privateKey.applicationLabel))
                    == ec.publicKey)
            let renamed = try keychain.updateKeys(
                matching: KeyQuery(label: "ec key"), setting: KeyChanges(label: "renamed"))
            #expect(renamed.map(\.label) == ["renamed", "renamed"])
            #expect(try keychain.deleteKeys(matching: KeyQuery(applicationTag: tag)) == 2)
            try keychain.delete(ec.privateKey)
            expectError(.itemNotFound) { try keychain.delete(ec.privateKey) }
            #expect(try keychain.keys().map(\.label) == ["renamed"])
        }
    }

    @Test("a locked keychain hides private keys and refuses to sign; public keys stay visible")
    func lockedKeychainHidesPrivateKeys() throws {
        try withPINKeychain { keychain, _ in
            let pair = try keychain.generateKeyPair(.p256, label: "k")
            keychain.lock()
            #expect(try keychain.keys(matching: KeyQuery(label: "k")) == [pair.publicKey])
            expectError(.interactionNotAllowed, containing: "locked") {
                _ = try keychain.sign([1], with: pair.privateKey, algorithm: .ecdsa(.sha256))
            }
            expectError(.interactionNotAllowed) { try keychain.generateKeyPair(.p256) }
        }
    }

    @Test("only an exportable private key can be exported; an in-memory key can be stored")
    func exportAndStore() throws {
        try withPINKeychain { keychain, _ in
            let locked = try keychain.generateKeyPair(.p256)
            expectError(.interactionNotAllowed, containing: "not exportable") {
                _ = try keychain.exportPrivateKey(locked.privateKey)
            }
            let open = try keychain.generateKeyPair(.rsa(bits: 2048), exportable: true)
            let exported = try keychain.exportPrivateKey(open.privateKey)
            #expect(exported.publicKey == open.publicKey.publicKey)
            let memory = try PrivateKey.generate(.p256)
            let stored = try keychain.add(memory, label: "imported")
            #expect(stored.privateKey.applicationLabel == memory.publicKey.publicKeyHash)
            let signature = try keychain.sign([1, 2, 3], with: stored.privateKey, algorithm: .ecdsa(.sha256))
            #expect(
                try memory.publicKey.isValidSignature(signature, for: [1, 2, 3], algorithm: .ecdsa(.sha256)))
            // Apple's external representations: X9.63 for EC, PKCS#1 for RSA.
            #expect(
                memory.publicKey.externalRepresentation.count == 65
                    && memory.publicKey.externalRepresentation[0] == 4)
            #expect(memory.externalRepresentation.count == 97)
            #expect(
                try PublicKey(rsaPublicKey: open.publicKey.publicKey.externalRepresentation)
                    == open.publicKey.publicKey)
            #expect(
                try PrivateKey(derEncoded: exported.externalRepresentation).publicKey
                    == open.publicKey.publicKey)
        }
    }
}

@Suite("Generic passwords")
struct GenericPasswordTests {
    @Test("add, duplicate, find, read, update and delete a generic password")
    func lifecycle() throws {
        try withPINKeychain { keychain, _ in
            let item = try keychain.addGenericPassword(
                Array("hunter2".utf8), service: "com.example", account: "alice")
            #expect(item.label == "com.example")
            expectError(.duplicateItem) {
                try keychain.addGenericPassword(Array("other".utf8), service: "com.example", account: "alice")
            }
            try keychain.addGenericPassword(
                Array("pw-b".utf8), service: "com.example", account: "bob", label: "Bob")
            #expect(
                try keychain.genericPasswords(matching: GenericPasswordQuery(service: "com.example")).count
                    == 2)
            let alice = try #require(
                try keychain.firstGenericPassword(matching: GenericPasswordQuery(account: "alice")))
            #expect(try keychain.password(for: alice) == Array("hunter2".utf8))
            // Renaming Bob's account to Alice's would make a duplicate: nothing changes.
            expectError(.duplicateItem) {
                try keychain.updateGenericPasswords(
                    matching: GenericPasswordQuery(account: "bob"),
                    setting: GenericPasswordChanges(account: "alice"))
            }
            let updated = try keychain.updateGenericPasswords(
                matching: GenericPasswordQuery(account: "alice"),
                setting: GenericPasswordChanges(password: Array("new".utf8)))
            #expect(updated.count == 1)
            #expect(try keychain.password(for: alice) == Array("new".utf8))
            #expect(
                try keychain.deleteGenericPasswords(matching: GenericPasswordQuery(service: "com.example"))
                    == 2)
            #expect(try keychain.genericPasswords().isEmpty)
            expectError(.itemNotFound) { _ = try keychain.password(for: alice) }
        }
    }

    @Test("generic passwords are invisible and unreadable while the keychain is locked")
    func lockedKeychainHidesPasswords() throws {
        try withPINKeychain { keychain, _ in
            let item = try keychain.addGenericPassword(Array("hunter2".utf8), service: "svc", account: "me")
            keychain.lock()
            #expect(try keychain.genericPasswords().isEmpty)
            expectError(.interactionNotAllowed) { _ = try keychain.password(for: item) }
            #expect(try keychain.deleteGenericPasswords(matching: .all) == 0)
            try keychain.unlock(pin: TestPIN.user)
            #expect(try keychain.genericPasswords() == [item])
        }
    }
}

@Suite("PKCS#12 import and identities")
struct PKCS12Tests {
    @Test(
        "a PKCS#12 file imports as an identity whose key signs what openssl verifies with the certificate",
        arguments: [
            ("rsa", PKCS12Encoding.aes), ("ec", .aes), ("rsa", .tripleDES), ("ec", .legacy), ("rsa", .legacy),
        ])
    func importSignVerify(keyType: String, encoding: PKCS12Encoding) throws {
        try withPINKeychain { keychain, directory in
            let files = try TestIdentityFiles(
                in: directory.path, keyType: keyType, name: "Test \(keyType)", encoding: encoding)
            let identities = try keychain.importPKCS12(files.pkcs12, password: "secret")
            #expect(identities.count == 1)
            let identity = try #require(
                try keychain.firstIdentity(matching: CertificateQuery(label: "Test \(keyType)")))
            #expect(identity == identities.first)
            #expect(identity.certificate.certificate == (try files.certificate))
            #expect(identity.privateKey.label == "Test \(keyType)")
            let data = Array("signed by the keychain".utf8)
            let algorithm: SignatureAlgorithm = keyType == "rsa" ? .rsaPKCS1v15(.sha256) : .ecdsa(.sha256)
            let signature = try keychain.sign(data, with: identity.privateKey, algorithm: algorithm)
            #expect(
                try TestIdentityFiles.opensslVerifies(
                    signature, of: data, certificateDER: identity.certificate.certificate.derEncoded,
                    in: directory.path))
            // Importing the same file again stores nothing new.
            #expect(try keychain.importPKCS12(files.pkcs12, password: "secret") == identities)
            #expect(try keychain.keys().count == 2)
            #expect(try keychain.certificates().count == 1)
        }
    }

    @Test("the chain's certificates are stored too, and only the leaf makes an identity")
    func chain() throws {
        try withPINKeychain { keychain, directory in
            let files = try TestIdentityFiles(in: directory.path, keyType: "ec", name: "Leaf", chain: true)
            let identities = try keychain.importPKCS12(files.pkcs12, password: "secret")
            #expect(identities.map(\.certificate.label) == ["Leaf"])
            #expect(Set(try keychain.certificates().map(\.label)) == ["Leaf", "Leaf CA"])
            #expect(try keychain.identities().count == 1)
            try keychain.delete(identities[0])
            #expect(try keychain.keys().isEmpty)
            #expect(try keychain.certificates().map(\.label) == ["Leaf CA"])
        }
    }

    @Test("a wrong password is authFailed and garbage is decode; nothing is stored")
    func badInput() throws {
        try withPINKeychain { keychain, directory in
            let files = try TestIdentityFiles(in: directory.path, keyType: "ec", name: "Bad")
            expectError(.authFailed, containing: "wrong password") {
                try keychain.importPKCS12(files.pkcs12, password: "not the password")
            }
            expectError(.decode) {
                try keychain.importPKCS12(Array("not a PKCS#12 file".utf8), password: "secret")
            }
            expectError(.decode) {
                try keychain.importPKCS12(Array(files.pkcs12.prefix(100)), password: "secret")
            }
            #expect(try keychain.keys().isEmpty && keychain.certificates().isEmpty)
        }
    }

    @Test("importing a key needs the keychain unlocked")
    func importNeedsUnlock() throws {
        try withPINKeychain(unlocked: false) { keychain, directory in
            let files = try TestIdentityFiles(in: directory.path, keyType: "ec", name: "Locked")
            expectError(.interactionNotAllowed, containing: "locked") {
                try keychain.importPKCS12(files.pkcs12, password: "secret")
            }
            #expect(try keychain.certificates().isEmpty)
        }
    }

    @Test("a raw scan of the store finds none of an imported key's private bytes, nor a password")
    func rawScanFindsNoSecrets() throws {
        try withPINKeychain { keychain, directory in
            let rsa = try TestIdentityFiles(in: directory.path, keyType: "rsa", name: "Scan RSA")
            let ec = try TestIdentityFiles(in: directory.path, keyType: "ec", name: "Scan EC")
            try keychain.importPKCS12(rsa.pkcs12, password: "secret")
            try keychain.importPKCS12(ec.pkcs12, password: "secret")
            let password = Array("correct horse battery staple".utf8)
            try keychain.addGenericPassword(password, service: "svc", account: "me")
            let bytes = storeBytes(keychain)
            #expect(!bytes.isEmpty)
            for files in [rsa, ec] {
                let pkcs8 = try derOfPEMKey(files.keyPath)
                #expect(!bytes.contains(bytes: pkcs8), "PKCS#8 of \(files.keyPath)")
                let key = try PrivateKey(derEncoded: pkcs8)
                #expect(!bytes.contains(bytes: key.pkcs8DER), "re-encoded PKCS#8 of \(files.keyPath)")
                #expect(!bytes.contains(bytes: key.externalRepresentation), "external representation")
            }
            for secret in try privateNumbers(rsa.keyPath) + privateNumbers(ec.keyPath) {
                #expect(!bytes.contains(bytes: secret), "a private number of \(secret.count) bytes")
            }
            #expect(!bytes.contains(bytes: password))
            // The public parts are stored in clear, so the scan does find what it looks for.
            let certificate = try rsa.certificate
            #expect(bytes.contains(bytes: certificate.derEncoded))
        }
    }
}

/// SHA-256 with openssl, as an independent implementation.
private func sha256(_ data: [UInt8]) throws -> [UInt8] {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.path + "/data"
    try Data(data).write(to: URL(fileURLWithPath: path))
    try openssl(["dgst", "-sha256", "-binary", "-out", path + ".hash", path])
    return Array(try Data(contentsOf: URL(fileURLWithPath: path + ".hash")))
}

/// A PEM private key file's PKCS#8 DER, converted by openssl.
private func derOfPEMKey(_ path: String) throws -> [UInt8] {
    try openssl(["pkey", "-in", path, "-outform", "DER", "-out", path + ".der"])
    return Array(try Data(contentsOf: URL(fileURLWithPath: path + ".der")))
}

/// The secret numbers of a PEM private key as openssl prints them (RSA d, p, q, dP, dQ, qInv;
/// EC priv), as big-endian bytes.
private func privateNumbers(_ path: String) throws -> [[UInt8]] {
    let text = try openssl(["pkey", "-in", path, "-noout", "-text"]).output
    var numbers: [[UInt8]] = []
    var current: String?
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if !line.hasPrefix(" "), trimmed.hasSuffix(":") {
            if let current { numbers.append(hexBytes(current)) }
            let name = trimmed.dropLast()
            let secret = [
                "privateExponent", "prime1", "prime2", "exponent1", "exponent2", "coefficient", "priv",
            ]
            current = secret.contains(String(name)) ? "" : nil
        } else if current != nil, line.hasPrefix(" ") {
            current? += trimmed
        } else if !line.hasPrefix(" ") {
            if let current { numbers.append(hexBytes(current)) }
            current = nil
        }
    }
    if let current { numbers.append(hexBytes(current)) }
    return numbers.map { Array($0.drop(while: { $0 == 0 })) }.filter { $0.count >= 16 }
}

private func hexBytes(_ text: String) -> [UInt8] {
    text.split(separator: ":").compactMap { UInt8($0, radix: 16) }
}
