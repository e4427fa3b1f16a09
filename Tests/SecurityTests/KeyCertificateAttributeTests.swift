import Foundation
import Keychain
import Security
import Testing

#if canImport(Glibc)
    import Glibc
#endif

// Apple's common attributes on keys and certificates, seen through the other faces: the
// PKCS#11 module's vendor attributes (read with C_GetAttributeValue from the built .so) and
// the token's count of failed PINs given as kSecUseAuthenticationContext.

/// The vendor attributes of Apple's common item attributes (README, "Apple keychain
/// attributes on Linux").
private enum VendorAttribute {
    static let accessible: UInt = 0x8050_4B21
    static let accessGroup: UInt = 0x8050_4B22
    static let synchronizable: UInt = 0x8050_4B23
    static let creationDate: UInt = 0x8050_4B24
}

/// The few entry points of the built module a reader needs, found with dlsym as a host finds
/// them (the module exports every C_* symbol). CK_ULONG and handles are `UInt`; templates are
/// CK_ATTRIBUTE arrays laid out by `Template`.
private struct ModuleReader {
    typealias Initialize = @convention(c) (UnsafeMutableRawPointer?) -> UInt
    typealias GetSlotList =
        @convention(c) (UInt8, UnsafeMutablePointer<UInt>?, UnsafeMutablePointer<UInt>?) -> UInt
    typealias OpenSession =
        @convention(c) (
            UInt, UInt, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt>?
        )
        -> UInt
    typealias Login = @convention(c) (UInt, UInt, UnsafeMutablePointer<UInt8>?, UInt) -> UInt
    typealias FindObjectsInit = @convention(c) (UInt, UnsafeMutableRawPointer?, UInt) -> UInt
    typealias FindObjects =
        @convention(c) (UInt, UnsafeMutablePointer<UInt>?, UInt, UnsafeMutablePointer<UInt>?) -> UInt
    typealias Handle = @convention(c) (UInt) -> UInt
    typealias GetAttributeValue = @convention(c) (UInt, UInt, UnsafeMutableRawPointer?, UInt) -> UInt

    let initialize: Initialize
    let finalize: Initialize
    let getSlotList: GetSlotList
    let openSession: OpenSession
    let login: Login
    let findObjectsInit: FindObjectsInit
    let findObjects: FindObjects
    let findObjectsFinal: Handle
    let getAttributeValue: GetAttributeValue

    init() throws {
        guard let handle = dlopen(try modulePath(), RTLD_NOW | RTLD_LOCAL) else {
            throw FixtureError(message: "dlopen failed")
        }
        func symbol<T>(_ name: String, _: T.Type) throws -> T {
            guard let address = dlsym(handle, name) else { throw FixtureError(message: "no \(name)") }
            return unsafeBitCast(address, to: T.self)
        }
        initialize = try symbol("C_Initialize", Initialize.self)
        finalize = try symbol("C_Finalize", Initialize.self)
        getSlotList = try symbol("C_GetSlotList", GetSlotList.self)
        openSession = try symbol("C_OpenSession", OpenSession.self)
        login = try symbol("C_Login", Login.self)
        findObjectsInit = try symbol("C_FindObjectsInit", FindObjectsInit.self)
        findObjects = try symbol("C_FindObjects", FindObjects.self)
        findObjectsFinal = try symbol("C_FindObjectsFinal", Handle.self)
        getAttributeValue = try symbol("C_GetAttributeValue", GetAttributeValue.self)
    }

    /// The vendor attributes `types` of every object of class `objectClass`, read in a session
    /// logged in with the user PIN, the module initialised and finalised around it.
    func read(_ types: [UInt], ofClass objectClass: UInt) throws -> [[UInt: [UInt8]]] {
        try #require(initialize(nil) == 0)
        defer { _ = finalize(nil) }
        var slots = [UInt](repeating: 0, count: 4)
        var count = UInt(slots.count)
        try #require(getSlotList(0, &slots, &count) == 0 && count > 0)
        var session: UInt = 0
        // CKF_SERIAL_SESSION | CKF_RW_SESSION
        try #require(openSession(slots[0], 0x4 | 0x2, nil, nil, &session) == 0)
        var pin = Array(TestPIN.user.utf8)
        try #require(login(session, 1, &pin, UInt(pin.count)) == 0)  // CKU_USER
        var classValue = objectClass
        let found: [UInt] = try withUnsafeMutableBytes(of: &classValue) { value in
            let template = Template([(0, value.baseAddress, UInt(value.count))])  // CKA_CLASS
            defer { template.deallocate() }
            try #require(findObjectsInit(session, template.pointer, 1) == 0)
            var handles = [UInt](repeating: 0, count: 16)
            var returned: UInt = 0
            try #require(findObjects(session, &handles, UInt(handles.count), &returned) == 0)
            try #require(findObjectsFinal(session) == 0)
            return Array(handles.prefix(Int(returned)))
        }
        return try found.map { object in
            var values: [UInt: [UInt8]] = [:]
            for type in types {
                // The two-call convention: the length, then the value.
                let sizing = Template([(type, nil, 0)])
                defer { sizing.deallocate() }
                guard getAttributeValue(session, object, sizing.pointer, 1) == 0 else { continue }
                let length = sizing.length(0)
                var buffer = [UInt8](repeating: 0, count: Int(length))
                try buffer.withUnsafeMutableBytes { bytes in
                    let reading = Template([(type, bytes.baseAddress, length)])
                    defer { reading.deallocate() }
                    try #require(getAttributeValue(session, object, reading.pointer, 1) == 0)
                }
                values[type] = buffer
            }
            return values
        }
    }
}

/// A CK_ATTRIBUTE array in memory: { CK_ULONG type; void *pValue; CK_ULONG ulValueLen }.
private struct Template {
    static let stride = MemoryLayout<UInt>.size * 2 + MemoryLayout<UnsafeMutableRawPointer?>.size
    let pointer: UnsafeMutableRawPointer

    init(_ entries: [(UInt, UnsafeMutableRawPointer?, UInt)]) {
        pointer = .allocate(byteCount: Self.stride * max(entries.count, 1), alignment: 8)
        for (index, (type, value, length)) in entries.enumerated() {
            let base = index * Self.stride
            pointer.storeBytes(of: type, toByteOffset: base, as: UInt.self)
            pointer.storeBytes(of: value, toByteOffset: base + 8, as: UnsafeMutableRawPointer?.self)
            pointer.storeBytes(of: length, toByteOffset: base + 16, as: UInt.self)
        }
    }

    func length(_ index: Int) -> UInt {
        pointer.load(fromByteOffset: index * Self.stride + 16, as: UInt.self)
    }
    func deallocate() { pointer.deallocate() }
}

@Suite("Apple's attributes of keys and certificates across the faces", .serialized)
struct KeyCertificateAttributeTests {
    @Test(
        "a key and a certificate added through SecItemAdd show pdmn, agrp and sync as vendor attributes of the module"
    )
    func attributesRoundTripThroughPKCS11() throws {
        try withPINKeychain { _ in
            let key = try #require(
                SecKeyCreateRandomKey(
                    [
                        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                        kSecAttrKeySizeInBits as String: 256,
                    ]
                        as CFDictionary, nil))
            let shared: [String: Any] = [
                kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock,
                kSecAttrAccessGroup as String: "TEAMID.com.example.shared",
                kSecAttrSynchronizable as String: true,
            ]
            var addKey = shared
            addKey[kSecClass as String] = kSecClassKey
            addKey[kSecValueRef as String] = key
            #expect(SecItemAdd(addKey as CFDictionary, nil) == errSecSuccess)
            var addCertificate = shared
            addCertificate[kSecClass as String] = kSecClassCertificate
            addCertificate[kSecValueRef as String] = try Fixture.alice.certificate
            #expect(SecItemAdd(addCertificate as CFDictionary, nil) == errSecSuccess)

            let reader = try ModuleReader()
            let types = [
                VendorAttribute.accessible, VendorAttribute.accessGroup, VendorAttribute.synchronizable,
                VendorAttribute.creationDate,
            ]
            for objectClass: UInt in [3, 1] {  // CKO_PRIVATE_KEY, CKO_CERTIFICATE
                let objects = try reader.read(types, ofClass: objectClass)
                #expect(objects.count == 1, "class \(objectClass)")
                for values in objects {
                    #expect(values[VendorAttribute.accessible] == Array("ck".utf8))
                    #expect(values[VendorAttribute.accessGroup] == Array("TEAMID.com.example.shared".utf8))
                    #expect(values[VendorAttribute.synchronizable] == [1])
                    #expect(values[VendorAttribute.creationDate]?.count == 8)
                }
            }
        }
    }

    @Test(
        "a wrong PIN given as a key's kSecUseAuthenticationContext is counted by the token; the right one resets it"
    )
    func wrongContextPINIsCounted() throws {
        try withPINKeychain { _ in
            let access = try #require(
                SecAccessControlCreateWithFlags(
                    nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .userPresence, nil))
            let parameters: [String: Any] = [
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                kSecAttrKeySizeInBits as String: 256,
                kSecPrivateKeyAttrs as String: [
                    kSecAttrIsPermanent as String: true,
                    kSecAttrApplicationTag as String: Data("counted".utf8),
                    kSecAttrAccessControl as String: access,
                ],
            ]
            #expect(SecKeyCreateRandomKey(parameters as CFDictionary, nil) != nil)
            // Through PKCS#11: the flags as CKA_P11K_ACCESS_CONTROL, and CKA_ALWAYS_AUTHENTICATE.
            let objects = try ModuleReader().read([0x8050_4B26, 0x202], ofClass: 3)
            #expect(objects.count == 1)
            let userPresence = withUnsafeBytes(of: UInt(1)) { Array($0) }  // CK_ULONG 1: .userPresence
            #expect(objects.first?[0x8050_4B26] == userPresence)
            #expect(objects.first?[0x202] == [1])
            func key(context: Any) throws -> SecKey {
                let query: [String: Any] = [
                    kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("counted".utf8),
                    kSecUseAuthenticationContext as String: context, kSecReturnRef as String: true,
                ]
                var item: CFTypeRef?
                try #require(SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess)
                return try #require(item as? SecKey)
            }
            func signatureStatus(_ key: SecKey) -> Int {
                var error: Unmanaged<CFError>?
                let signature = SecKeyCreateSignature(
                    key, .ecdsaSignatureMessageX962SHA256, Data("m".utf8) as CFData, &error)
                return signature != nil ? 0 : takeError(error)?.code ?? 1
            }
            #expect(try Keychain().authenticationStatus.failedUnlockAttempts == 0)
            // A key found with a wrong PIN tries it once: using it again costs no second attempt.
            let wrong = try key(context: "0000")
            #expect(signatureStatus(wrong) == Int(errSecAuthFailed))
            #expect(signatureStatus(wrong) == Int(errSecAuthFailed))
            #expect(try Keychain().authenticationStatus.failedUnlockAttempts == 1)
            // The PIN as CFData, as an LAContext's credential would be bytes.
            #expect(signatureStatus(try key(context: Data(TestPIN.user.utf8))) == 0)
            #expect(try Keychain().authenticationStatus.failedUnlockAttempts == 0)
        }
    }

    @Test("a .userPresence key never leaves the keychain: no external representation, no extractable flag")
    func presenceKeyStaysInKeychain() throws {
        try withPINKeychain { _ in
            let access = try #require(
                SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, .userPresence, nil))
            var privateAttributes: [String: Any] = [
                kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: Data("inside".utf8),
                kSecAttrAccessControl as String: access,
            ]
            var parameters: [String: Any] = [
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                kSecAttrKeySizeInBits as String: 256,
                kSecPrivateKeyAttrs as String: privateAttributes,
            ]
            var error: Unmanaged<CFError>?
            let key = try #require(SecKeyCreateRandomKey(parameters as CFDictionary, &error))
            let attributes = try #require(SecKeyCopyAttributes(key) as? [String: Any])
            #expect(attributes[kSecAttrIsExtractable as String] as? Bool == false)
            #expect(attributes[kSecAttrIsSensitive as String] as? Bool == true)
            #expect(SecKeyCopyExternalRepresentation(key, &error) == nil)
            #expect(takeError(error) != nil)
            // Asking for both is a contradiction, refused before anything is stored.
            privateAttributes[kSecAttrIsExtractable as String] = true
            privateAttributes[kSecAttrApplicationTag as String] = Data("outside".utf8)
            parameters[kSecPrivateKeyAttrs as String] = privateAttributes
            error = nil
            #expect(SecKeyCreateRandomKey(parameters as CFDictionary, &error) == nil)
            #expect(takeError(error) != nil)
            let query: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: Data("outside".utf8),
            ]
            #expect(SecItemCopyMatching(query as CFDictionary, nil) == errSecItemNotFound)
        }
    }

    @Test(
        "a .userPresence EC key found without kSecUseAuthenticationContext neither decrypts ECIES nor runs ECDH"
    )
    func presenceCoversKeyExchange() throws {
        try withPINKeychain { _ in
            let access = try #require(
                SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, .userPresence, nil))
            let tag = Data("presence-ecdh".utf8)
            let parameters: [String: Any] = [
                kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                kSecAttrKeySizeInBits as String: 256,
                kSecPrivateKeyAttrs as String: [
                    kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: tag,
                    kSecAttrAccessControl as String: access,
                ],
            ]
            let created = try #require(SecKeyCreateRandomKey(parameters as CFDictionary, nil))
            let publicKey = try #require(SecKeyCopyPublicKey(created))
            var item: CFTypeRef?
            let query: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag,
                kSecReturnRef as String: true,
            ]
            try #require(SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess)
            let key = try #require(item as? SecKey)
            let algorithm = SecKeyAlgorithm.eciesEncryptionStandardX963SHA256AESGCM
            let ciphertext = try #require(
                SecKeyCreateEncryptedData(publicKey, algorithm, Data("secret".utf8) as CFData, nil))
            var error: Unmanaged<CFError>?
            #expect(SecKeyCreateDecryptedData(key, algorithm, ciphertext, &error) == nil)
            #expect(takeError(error)?.code == Int(errSecInteractionNotAllowed))
            let peer = try #require(
                SecKeyCreateRandomKey(
                    [
                        kSecAttrKeyType as String: kSecAttrKeyTypeECSECPrimeRandom,
                        kSecAttrKeySizeInBits as String: 256,
                    ] as CFDictionary, nil))
            error = nil
            #expect(
                SecKeyCopyKeyExchangeResult(
                    key, .ecdhKeyExchangeStandard, try #require(SecKeyCopyPublicKey(peer)),
                    [:] as CFDictionary,
                    &error) == nil)
            #expect(takeError(error)?.code == Int(errSecInteractionNotAllowed))
        }
    }

    @Test(
        "a key found with kSecUseAuthenticationContext decrypts (RSA, ECIES) and runs key exchanges with it")
    func contextServesEveryUse() throws {
        try withPINKeychain { _ in
            let access = try #require(
                SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, .userPresence, nil))
            for (type, size) in [(kSecAttrKeyTypeRSA, 2048), (kSecAttrKeyTypeECSECPrimeRandom, 256)] {
                let tag = Data("every-use-\(size)".utf8)
                let parameters: [String: Any] = [
                    kSecAttrKeyType as String: type, kSecAttrKeySizeInBits as String: size,
                    kSecPrivateKeyAttrs as String: [
                        kSecAttrIsPermanent as String: true, kSecAttrApplicationTag as String: tag,
                        kSecAttrAccessControl as String: access,
                    ],
                ]
                let created = try #require(SecKeyCreateRandomKey(parameters as CFDictionary, nil))
                let publicKey = try #require(SecKeyCopyPublicKey(created))
                func key(context: String?) throws -> SecKey {
                    var query: [String: Any] = [
                        kSecClass as String: kSecClassKey, kSecAttrApplicationTag as String: tag,
                        kSecReturnRef as String: true,
                    ]
                    if let context { query[kSecUseAuthenticationContext as String] = context }
                    var item: CFTypeRef?
                    try #require(SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess)
                    return try #require(item as? SecKey)
                }
                let algorithm: SecKeyAlgorithm =
                    size == 256 ? .eciesEncryptionStandardX963SHA256AESGCM : .rsaEncryptionOAEPSHA256
                let ciphertext = try #require(
                    SecKeyCreateEncryptedData(publicKey, algorithm, Data("secret".utf8) as CFData, nil))
                if size == 2048 {
                    // The core asks the PIN for each RSA decryption (CKA_ALWAYS_AUTHENTICATE).
                    for (context, expected) in [
                        (nil, errSecInteractionNotAllowed), ("0000", errSecAuthFailed),
                    ] {
                        var error: Unmanaged<CFError>?
                        #expect(
                            SecKeyCreateDecryptedData(
                                try key(context: context), algorithm, ciphertext, &error) == nil)
                        #expect(takeError(error)?.code == Int(expected))
                    }
                }
                let plaintext = SecKeyCreateDecryptedData(
                    try key(context: TestPIN.user), algorithm, ciphertext, nil)
                #expect(plaintext as Data? == Data("secret".utf8))
                guard size == 256 else { continue }
                let peer = try #require(
                    SecKeyCreateRandomKey(
                        [kSecAttrKeyType as String: type, kSecAttrKeySizeInBits as String: 256]
                            as CFDictionary, nil))
                let shared = SecKeyCopyKeyExchangeResult(
                    try key(context: TestPIN.user), .ecdhKeyExchangeStandard,
                    try #require(SecKeyCopyPublicKey(peer)),
                    [:] as CFDictionary, nil)
                let expected = SecKeyCopyKeyExchangeResult(
                    peer, .ecdhKeyExchangeStandard, publicKey, [:] as CFDictionary, nil)
                #expect(shared != nil && shared as Data? == expected as Data?)
            }
        }
    }
}
