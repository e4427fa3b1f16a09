import Foundation
import Keychain
import Security
import Testing

// Keys, identities, generic passwords, PKCS#12 and unlocking through the Apple-compatible
// API on the default keychain (PINs and private objects), and the same items
// through the built PKCS#11 module.

@Suite("The identity flow: SecPKCS12Import, SecItemCopyMatching, SecKeyCreateSignature, openssl", .serialized)
struct IdentityFlowTests {
    @Test(
        "an imported PKCS#12 identity is found, signs, and openssl verifies with its exported certificate",
        arguments: [
            ("rsa", [String]()), ("ec", []), ("rsa", ["-legacy"]),
            ("ec", ["-certpbe", "PBE-SHA1-3DES", "-keypbe", "PBE-SHA1-3DES"]),
            ("rsa", ["-certpbe", "AES-256-CBC", "-keypbe", "AES-256-CBC"]),
        ])
    func identityFlow(keyType: String, encryption: [String]) throws {
        try withPINKeychain { directory in
            let name = "Flow \(keyType) \(encryption.first ?? "default")"
            let p12 = try makePKCS12(in: directory, keyType: keyType, name: name, encryption: encryption)
            var rawItems: CFArray?
            let options = [kSecImportExportPassphrase as String: "secret"]
            #expect(SecPKCS12Import(p12 as CFData, options as CFDictionary, &rawItems) == errSecSuccess)
            let items = try #require(rawItems as? [[String: Any]])
            #expect(items.count == 1)
            #expect(items[0][kSecImportItemLabel as String] as? String == name)
            #expect((items[0][kSecImportItemCertChain as String] as? [SecCertificate])?.count == 1)
            #expect(items[0][kSecImportItemIdentity as String] is SecIdentity)

            var item: CFTypeRef?
            let query: [String: Any] = [
                kSecClass as String: kSecClassIdentity, kSecAttrLabel as String: name,
                kSecReturnRef as String: true,
            ]
            #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess)
            let identity = try #require(item as? SecIdentity)
            #expect(CFGetTypeID(identity) == SecIdentityGetTypeID())
            var privateKey: SecKey?
            #expect(SecIdentityCopyPrivateKey(identity, &privateKey) == errSecSuccess)
            let key = try #require(privateKey)
            let algorithm: SecKeyAlgorithm =
                keyType == "rsa" ? .rsaSignatureMessagePKCS1v15SHA256 : .ecdsaSignatureMessageX962SHA256
            #expect(SecKeyIsAlgorithmSupported(key, .sign, algorithm))
            let data = Data("sign me, keychain".utf8)
            var error: Unmanaged<CFError>?
            let signature = try #require(
                SecKeyCreateSignature(key, algorithm, data as CFData, &error) as Data?)
            #expect(error == nil)

            var certificate: SecCertificate?
            #expect(SecIdentityCopyCertificate(identity, &certificate) == errSecSuccess)
            let certificateData = SecCertificateCopyData(try #require(certificate)) as Data
            #expect(try opensslVerifies(signature, of: data, certificate: certificateData, in: directory))
            let exported = try #require(certificate)
            let publicKey = try #require(SecCertificateCopyKey(exported))
            #expect(SecKeyVerifySignature(publicKey, algorithm, data as CFData, signature as CFData, &error))
        }
    }

    @Test("a wrong PKCS#12 password is errSecAuthFailed, garbage errSecDecode; nothing is stored")
    func badPKCS12() throws {
        try withPINKeychain { directory in
            let p12 = try makePKCS12(in: directory, keyType: "ec", name: "Bad")
            var items: CFArray?
            let wrong = [kSecImportExportPassphrase as String: "wrong"]
            #expect(SecPKCS12Import(p12 as CFData, wrong as CFDictionary, &items) == errSecAuthFailed)
            #expect(items == nil)
            #expect((SecCopyErrorDiagnostic(errSecAuthFailed) as String?)?.contains("wrong password") == true)
            let right = [kSecImportExportPassphrase as String: "secret"]
            #expect(
                SecPKCS12Import(Data("garbage".utf8) as CFData, right as CFDictionary, &items) == errSecDecode
            )
            #expect(SecPKCS12Import(p12 as CFData, ["bogus": 1] as CFDictionary, &items) == errSecParam)
            var found: CFTypeRef?
            #expect(
                SecItemCopyMatching([kSecClass as String: kSecClassIdentity] as CFDictionary, &found)
                    == errSecItemNotFound)
            #expect(
                SecItemCopyMatching([kSecClass as String: kSecClassCertificate] as CFDictionary, &found)
                    == errSecItemNotFound)
        }
    }

    @Test(
        "importing into a locked keychain is errSecInteractionNotAllowed; memory-only import stores nothing"
    )
    func lockedAndMemoryOnly() throws {
        try withPINKeychain(unlocked: false) { directory in
            let p12 = try makePKCS12(in: directory, keyType: "rsa", name: "Memory")
            var items: CFArray?
            let options: [String: Any] = [kSecImportExportPassphrase as String: "secret"]
            #expect(
                SecPKCS12Import(p12 as CFData, options as CFDictionary, &items) == errSecInteractionNotAllowed
            )
            let memory = options.merging([kSecImportToMemoryOnly as String: true]) { $1 }
            #expect(SecPKCS12Import(p12 as CFData, memory as CFDictionary, &items) == errSecSuccess)
            let identity = try #require(
                (items as? [[String: Any]])?.first?[kSecImportItemIdentity as String] as? SecIdentity)
            var key: SecKey?
            #expect(SecIdentityCopyPrivateKey(identity, &key) == errSecSuccess)
            var error: Unmanaged<CFError>?
            let memoryKey = try #require(key)
            let signature = SecKeyCreateSignature(
                memoryKey, .rsaSignatureMessagePSSSHA256, Data("x".utf8) as CFData, &error)
            #expect(signature != nil)
            var found: CFTypeRef?
            #expect(
                SecItemCopyMatching([kSecClass as String: kSecClassCertificate] as CFDictionary, &found)
                    == errSecItemNotFound)
            // Stored later, once unlocked, with SecItemAdd.
            #expect(unlock(TestPIN.user) == errSecSuccess)
            #expect(SecItemAdd([kSecValueRef as String: identity] as CFDictionary, nil) == errSecSuccess)
            #expect(
                SecItemCopyMatching([kSecClass as String: kSecClassIdentity] as CFDictionary, &found)
                    == errSecSuccess)
            #expect(SecItemDelete([kSecClass as String: kSecClassIdentity] as CFDictionary) == errSecSuccess)
            #expect(
                SecItemCopyMatching([kSecClass as String: kSecClassKey] as CFDictionary, &found)
                    == errSecItemNotFound)
        }
    }
}

/// The default keychain's count of failed unlocks, as stored.
private func failedUnlockAttempts() throws -> Int {
    try Keychain().authenticationStatus.failedUnlockAttempts
}

@Suite("SecKeychainUnlock", .serialized)
struct UnlockTests {
    @Test("a wrong PIN is errSecAuthFailed and counted; the right one unlocks; SecKeychainLock locks")
    func wrongPIN() throws {
        try withPINKeychain(unlocked: false) { _ in
            #expect(unlock("0000") == errSecAuthFailed)
            #expect(
                (SecCopyErrorDiagnostic(errSecAuthFailed) as String?)?.contains("9 attempts left") == true)
            let failures = try failedUnlockAttempts()
            #expect(failures == 1)
            var status: SecKeychainStatus = 0
            #expect(SecKeychainGetStatus(nil, &status) == errSecSuccess)
            #expect(status & kSecUnlockStateStatus == 0)
            #expect(unlock(TestPIN.user) == errSecSuccess)
            let cleared = try failedUnlockAttempts()
            #expect(cleared == 0)
            #expect(SecKeychainGetStatus(nil, &status) == errSecSuccess)
            #expect(status & kSecUnlockStateStatus != 0)
            #expect(SecKeychainLock(nil) == errSecSuccess)
            #expect(SecKeychainUnlock(nil, 4, "1234", false) == errSecInteractionNotAllowed)
        }
    }

    @Test("a locked PIN refuses even the right PIN with errSecAuthFailed")
    func lockedPIN() throws {
        try withPINKeychain(unlocked: false) { _ in
            for _ in 1...10 { #expect(unlock("9999") == errSecAuthFailed) }
            #expect(unlock(TestPIN.user) == errSecAuthFailed)
            #expect((SecCopyErrorDiagnostic(errSecAuthFailed) as String?)?.contains("locked") == true)
            let status = try Keychain().authenticationStatus
            #expect(status.isUserPINLocked)
        }
    }

    @Test("a keychain without a PIN cannot be unlocked: errSecNotAvailable")
    func noPIN() throws {
        try withDefaultKeychain { _ in
            #expect(unlock("1234") == errSecNotAvailable)
        }
    }
}

@Suite("SecKey", .serialized)
struct KeyTests {
    private func randomKey(_ attributes: [String: Any]) throws -> SecKey {
        var error: Unmanaged<CFError>?
        guard let key = SecKeyCreateRandomKey(attributes as CFDictionary, &error) else {
            throw takeError(error) ?? NSError(domain: "test", code: 0)
        }
        return key
    }

    @Test(
        "in-memory keys sign, verify, encrypt, decrypt and round-trip through their external representation")
    func memoryKeys() throws {
        try withDefaultKeychain { _ in
            let rsa = try randomKey([
                kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrKeySizeInBits as String: 2048,
            ])
            let ec = try randomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom])
            let rsaPublic = try #require(SecKeyCopyPublicKey(rsa))
            let ecPublic = try #require(SecKeyCopyPublicKey(ec))
            #expect(CFGetTypeID(rsa) == SecKeyGetTypeID())
            #expect(SecKeyGetBlockSize(rsa) == 256)
            let data = Data("data".utf8) as CFData
            var error: Unmanaged<CFError>?
            for (key, publicKey, algorithm) in [
                (rsa, rsaPublic, SecKeyAlgorithm.rsaSignatureMessagePKCS1v15SHA512),
                (rsa, rsaPublic, .rsaSignatureMessagePSSSHA384),
                (ec, ecPublic, .ecdsaSignatureMessageX962SHA384),
            ] {
                let signature = try #require(SecKeyCreateSignature(key, algorithm, data, &error))
                #expect(SecKeyVerifySignature(publicKey, algorithm, data, signature, &error))
                #expect(
                    !SecKeyVerifySignature(
                        publicKey, algorithm, Data("other".utf8) as CFData, signature, &error))
                #expect(takeError(error)?.code == Int(errSecVerifyFailed))
                error = nil
            }
            let ciphertext = try #require(
                SecKeyCreateEncryptedData(rsaPublic, .rsaEncryptionOAEPSHA256, data, &error))
            #expect(SecKeyCreateDecryptedData(rsa, .rsaEncryptionOAEPSHA256, ciphertext, &error) == data)
            // Apple's formats: X9.63 for EC (65 bytes public, 97 private), PKCS#1 for RSA.
            let ecData = try #require(SecKeyCopyExternalRepresentation(ecPublic, &error) as Data?)
            #expect(ecData.count == 65 && ecData.first == 4)
            let ecPrivate = try #require(SecKeyCopyExternalRepresentation(ec, &error) as Data?)
            #expect(ecPrivate.count == 97)
            let rsaData = try #require(SecKeyCopyExternalRepresentation(rsaPublic, &error))
            let attributes: [String: Any] = [
                kSecAttrKeyType as String: kSecAttrKeyTypeRSA,
                kSecAttrKeyClass as String: kSecAttrKeyClassPublic,
            ]
            #expect(SecKeyCreateWithData(rsaData, attributes as CFDictionary, &error) == rsaPublic)
            let ecPrivateData = try #require(SecKeyCopyExternalRepresentation(ec, &error))
            let ecAttributes: [String: Any] = [
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
            ]
            #expect(SecKeyCreateWithData(ecPrivateData, ecAttributes as CFDictionary, &error) == ec)
            let copied = try #require(SecKeyCopyAttributes(ecPublic))
            #expect(copied[kSecAttrKeySizeInBits as String] as? Int == 256)
            #expect(copied[kSecAttrKeyClass as String] as? String == kSecAttrKeyClassPublic as String)
        }
    }

    @Test("an algorithm that does not fit the key is refused with errSecParam in the CFError")
    func mismatches() throws {
        try withDefaultKeychain { _ in
            let ec = try randomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom])
            let ecPublic = try #require(SecKeyCopyPublicKey(ec))
            #expect(!SecKeyIsAlgorithmSupported(ec, .sign, .rsaSignatureMessagePKCS1v15SHA256))
            #expect(!SecKeyIsAlgorithmSupported(ecPublic, .sign, .ecdsaSignatureMessageX962SHA256))
            #expect(SecKeyIsAlgorithmSupported(ecPublic, .verify, .ecdsaSignatureMessageX962SHA256))
            #expect(!SecKeyIsAlgorithmSupported(ec, .encrypt, .rsaEncryptionPKCS1))
            var error: Unmanaged<CFError>?
            #expect(
                SecKeyCreateSignature(ec, .rsaSignatureMessagePKCS1v15SHA256, Data() as CFData, &error) == nil
            )
            #expect(takeError(error)?.code == Int(errSecParam))
            #expect(
                SecKeyCreateSignature(ec, .ecdsaSignatureDigestX962SHA256, Data([1, 2]) as CFData, &error)
                    == nil)
            #expect(takeError(error)?.localizedDescription.contains("32-byte digest") == true)
            #expect(SecKeyCreateRandomKey([kSecAttrKeyType as String: "DSA"] as CFDictionary, &error) == nil)
            #expect(takeError(error)?.code == Int(errSecParam))
            let enclave: [String: Any] = [
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                kSecAttrTokenID as String: kSecAttrTokenIDSecureEnclave,
            ]
            #expect(SecKeyCreateRandomKey(enclave as CFDictionary, &error) == nil)
            #expect(takeError(error)?.code == Int(errSecUnimplemented))
        }
    }

    @Test(
        "a permanent key is stored, found by tag and type, changed, deleted; locked, its private half hides"
    )
    func storedKeys() throws {
        try withPINKeychain { _ in
            let tag = Data("com.example.keys.mykey".utf8)
            let key = try randomKey([
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                kSecAttrKeySizeInBits as String: 256,
                kSecPrivateKeyAttrs as String: [
                    kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: tag,
                    kSecAttrLabel as String: "my key",
                ],
            ])
            var item: CFTypeRef?
            let query: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag,
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom, kSecReturnRef as String: true,
            ]
            #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess)
            #expect(item as? SecKey == key)
            var attributes: CFTypeRef?
            let all: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecMatchLimit as String: kSecMatchLimitAll,
                kSecReturnAttributes as String: true,
            ]
            #expect(SecItemCopyMatching(all as CFDictionary, &attributes) == errSecSuccess)
            let dictionaries = try #require(attributes as? [[String: Any]])
            #expect(dictionaries.count == 2, "the private key and the public key")
            let privateAttributes = try #require(
                dictionaries.first {
                    $0[kSecAttrKeyClass as String] as? String == kSecAttrKeyClassPrivate as String
                })
            #expect(privateAttributes[kSecAttrApplicationTag as String] as? Data == tag)
            #expect(privateAttributes[kSecAttrLabel as String] as? String == "my key")
            #expect(privateAttributes[kSecAttrIsPermanent as String] as? Bool == true)
            let publicKey = try #require(SecKeyCopyPublicKey(key))
            #expect(
                privateAttributes[kSecAttrApplicationLabel as String] as? Data
                    == SecKeyCopyAttributes(publicKey)?[kSecAttrApplicationLabel as String] as? Data)
            // Apple's default for a new key: extractable, so its external representation is given.
            var error: Unmanaged<CFError>?
            #expect(SecKeyCopyExternalRepresentation(key, &error) != nil)

            let rename: [String: Any] = [kSecAttrLabel as String: "renamed"]
            #expect(
                SecItemUpdate(
                    [kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag]
                        as CFDictionary, rename as CFDictionary) == errSecSuccess)
            #expect(
                SecItemUpdate(
                    [kSecClass as String: kSecClassKey] as CFDictionary,
                    [kSecAttrKeySizeInBits as String: 384] as CFDictionary) == errSecParam)
            #expect(SecKeychainLock(nil) == errSecSuccess)
            #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecInteractionNotAllowed)
            #expect(
                SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, Data() as CFData, &error) == nil)
            #expect(takeError(error)?.code == Int(errSecInteractionNotAllowed))
            #expect(unlock(TestPIN.user) == errSecSuccess)
            // The tag and label were the private key's (kSecPrivateKeyAttrs): the public key keeps its own.
            #expect(
                SecItemDelete(
                    [kSecClass as String: kSecClassKey, kSecAttrLabel as String: "renamed"] as CFDictionary)
                    == errSecSuccess)
            #expect(SecItemCopyMatching(all as CFDictionary, &attributes) == errSecSuccess)
            #expect(
                (attributes as? [[String: Any]])?.map { $0[kSecAttrKeyClass as String] as? String } == [
                    kSecAttrKeyClassPublic as String
                ])
            #expect(SecItemDelete([kSecClass as String: kSecClassKey] as CFDictionary) == errSecSuccess)
            #expect(SecItemCopyMatching(all as CFDictionary, &attributes) == errSecItemNotFound)
        }
    }

    @Test("a non-extractable stored key keeps its secret: SecKeyCopyExternalRepresentation fails")
    func nonExtractable() throws {
        try withPINKeychain { _ in
            let key = try randomKey([
                kSecAttrKeyType as String: kSecAttrKeyTypeRSA, kSecAttrIsPermanent as String: true,
                kSecAttrIsExtractable as String: false,
            ])
            var error: Unmanaged<CFError>?
            #expect(SecKeyCopyExternalRepresentation(key, &error) == nil)
            #expect(takeError(error)?.code == Int(errSecInteractionNotAllowed))
            let publicKey = try #require(SecKeyCopyPublicKey(key))
            #expect(SecKeyCopyExternalRepresentation(publicKey, &error) != nil)
        }
    }

    @Test("SecItemAdd stores an in-memory key, and a second add is errSecDuplicateItem")
    func addKey() throws {
        try withPINKeychain { _ in
            let key = try randomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom])
            let add: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecValueRef as String: key,
                kSecAttrApplicationTag as String: "added", kSecReturnPersistentRef as String: true,
            ]
            var reference: CFTypeRef?
            #expect(SecItemAdd(add as CFDictionary, &reference) == errSecSuccess)
            #expect(reference is Data)
            var again: CFTypeRef?
            #expect(SecItemAdd(add as CFDictionary, &again) == errSecDuplicateItem)
            #expect(again == nil)
            var found: CFTypeRef?
            let byReference: [String: Any] = [
                kSecClass as String: kSecClassKey,
                kSecValuePersistentRef as String: try #require(reference as? Data),
                kSecReturnRef as String: true,
            ]
            #expect(SecItemCopyMatching(byReference as CFDictionary, &found) == errSecSuccess)
            #expect(found as? SecKey == key)
            #expect(SecKeychainLock(nil) == errSecSuccess)
            let other = try randomKey([kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom])
            #expect(
                SecItemAdd([kSecValueRef as String: other] as CFDictionary, nil)
                    == errSecInteractionNotAllowed)
        }
    }
}

@Suite("Generic passwords through SecItem", .serialized)
struct GenericPasswordTests {
    private let item: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "com.example.backup",
        kSecAttrAccount as String: "alice",
    ]

    @Test("add, duplicate, find with kSecReturnData, update and delete a generic password")
    func lifecycle() throws {
        try withPINKeychain { _ in
            let add = item.merging([kSecValueData as String: Data("hunter2".utf8)]) { $1 }
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecDuplicateItem)
            var result: CFTypeRef?
            #expect(
                SecItemCopyMatching(
                    item.merging([kSecReturnData as String: true]) { $1 } as CFDictionary, &result)
                    == errSecSuccess)
            #expect(result as? Data == Data("hunter2".utf8))
            let both = item.merging([kSecReturnData as String: true, kSecReturnAttributes as String: true]) {
                $1
            }
            #expect(SecItemCopyMatching(both as CFDictionary, &result) == errSecSuccess)
            let dictionary = try #require(result as? [String: Any])
            #expect(dictionary[kSecAttrAccount as String] as? String == "alice")
            #expect(dictionary[kSecValueData as String] as? Data == Data("hunter2".utf8))
            // As on Apple platforms, a password's "reference" is its data.
            #expect(
                SecItemCopyMatching(
                    item.merging([kSecReturnRef as String: true]) { $1 } as CFDictionary, &result)
                    == errSecSuccess)
            #expect(result as? Data == Data("hunter2".utf8))
            let change = [kSecValueData as String: Data("correct horse".utf8)]
            #expect(SecItemUpdate(item as CFDictionary, change as CFDictionary) == errSecSuccess)
            #expect(
                SecItemCopyMatching(
                    item.merging([kSecReturnData as String: true]) { $1 } as CFDictionary, &result)
                    == errSecSuccess)
            #expect(result as? Data == Data("correct horse".utf8))
            #expect(SecItemDelete(item as CFDictionary) == errSecSuccess)
            #expect(SecItemDelete(item as CFDictionary) == errSecItemNotFound)
        }
    }

    @Test("a locked keychain hides generic passwords and refuses to add one")
    func locked() throws {
        try withPINKeychain { _ in
            #expect(
                SecItemAdd(
                    item.merging([kSecValueData as String: Data("pw".utf8)]) { $1 } as CFDictionary, nil)
                    == errSecSuccess)
            #expect(SecKeychainLock(nil) == errSecSuccess)
            var result: CFTypeRef?
            #expect(
                SecItemCopyMatching(
                    item.merging([kSecReturnData as String: true]) { $1 } as CFDictionary, &result)
                    == errSecInteractionNotAllowed)
            let other =
                [
                    kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "s",
                    kSecValueData as String: Data("x".utf8),
                ] as [String: Any]
            #expect(SecItemAdd(other as CFDictionary, nil) == errSecInteractionNotAllowed)
        }
    }
}

@Suite("Keys through the Security API and the PKCS#11 module", .serialized)
struct KeyCrossFaceTests {
    @Test(
        "a key made by SecKeyCreateRandomKey is listed by pkcs11-tool and signs through the module",
        arguments: ["rsa", "ec"])
    func swiftKeySignsThroughModule(type: String) throws {
        try withPINKeychain { directory in
            let label = "swift \(type) key"
            var error: Unmanaged<CFError>?
            let parameters: [String: Any] = [
                kSecAttrKeyType as String: type == "rsa"
                    ? kSecAttrKeyTypeRSA : kSecAttrKeyTypeECSECPrimeRandom,
                kSecAttrIsPermanent as String: true, kSecAttrLabel as String: label,
            ]
            let key = try #require(SecKeyCreateRandomKey(parameters as CFDictionary, &error))
            let listing = try pkcs11Tool(["-O"], keychainDirectory: directory)
            #expect(listing.status == 0, "\(listing.error)")
            #expect(listing.output.contains("Private Key Object"), "\(listing.output)")
            #expect(listing.output.contains("label:      \(label)"), "\(listing.output)")

            let data = Data("signed through PKCS#11".utf8)
            try data.write(to: URL(fileURLWithPath: directory + "/in.bin"))
            let mechanism = type == "rsa" ? "SHA256-RSA-PKCS" : "ECDSA-SHA256"
            let signed = try pkcs11Tool(
                [
                    "--sign", "--mechanism", mechanism, "--label", label, "--input-file",
                    directory + "/in.bin",
                    "--output-file", directory + "/sig.bin",
                ] + (type == "ec" ? ["--signature-format", "openssl"] : []), keychainDirectory: directory)
            #expect(signed.status == 0, "\(signed.error)")
            let signature = try Data(contentsOf: URL(fileURLWithPath: directory + "/sig.bin"))
            let algorithm: SecKeyAlgorithm =
                type == "rsa" ? .rsaSignatureMessagePKCS1v15SHA256 : .ecdsaSignatureMessageX962SHA256
            let publicKey = try #require(SecKeyCopyPublicKey(key))
            #expect(SecKeyVerifySignature(publicKey, algorithm, data as CFData, signature as CFData, &error))
        }
    }

    @Test("a key pair generated by pkcs11-tool is found by SecItemCopyMatching and signs in Swift")
    func moduleKeySignsInSwift() throws {
        try withPINKeychain { directory in
            let generated = try pkcs11Tool(
                ["--keypairgen", "--key-type", "EC:prime256v1", "--label", "from pkcs11", "--id", "0102"],
                keychainDirectory: directory)
            #expect(generated.status == 0, "\(generated.error)")
            var item: CFTypeRef?
            let query: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecAttrLabel as String: "from pkcs11",
                kSecAttrKeyClass as String: kSecAttrKeyClassPrivate, kSecReturnRef as String: true,
                kSecReturnAttributes as String: true,
            ]
            #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess)
            let found = try #require(item as? [String: Any])
            #expect(found[kSecAttrApplicationLabel as String] as? Data == Data([1, 2]))
            #expect(found[kSecAttrKeySizeInBits as String] as? Int == 256)
            let key = try #require(found[kSecValueRef as String] as? SecKey)
            var error: Unmanaged<CFError>?
            let data = Data("signed in Swift".utf8) as CFData
            let signature = try #require(
                SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, data, &error))
            let publicKey = try #require(SecKeyCopyPublicKey(key))
            #expect(
                SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, data, signature, &error))
            // The module's sensitive key keeps its secret from Swift too.
            #expect(SecKeyCopyExternalRepresentation(key, &error) == nil)
            #expect(takeError(error)?.code == Int(errSecInteractionNotAllowed))
        }
    }

    @Test(
        "a generic password from SecItemAdd is a private data object for pkcs11-tool, hidden unless logged in"
    )
    func passwordIsDataObject() throws {
        try withPINKeychain { directory in
            let add: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc.example",
                kSecAttrAccount as String: "bob", kSecValueData as String: Data("s3cret".utf8),
            ]
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)
            let listed = try pkcs11Tool(["-O", "--type", "data"], keychainDirectory: directory)
            #expect(listed.output.contains("Data object"), "\(listed.output)")
            #expect(listed.output.contains("svc.example"), "\(listed.output)")
            let anonymous = try pkcs11Tool(
                ["-O", "--type", "data"], keychainDirectory: directory, login: false)
            #expect(!anonymous.output.contains("svc.example"), "\(anonymous.output)")
        }
    }
}
