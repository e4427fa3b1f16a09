import Foundation
import KeychainCore
import KeychainCrypto
import Testing

/// X25519/X448 (CKK_EC_MONTGOMERY, v3.0 §2.3.7) and Ed448 (CKK_EC_EDWARDS, §2.3.5) key pairs in
/// the core: generated through `Token.generateKeyPair`, imported through `createObject`,
/// stored like every key pair (PKCS#8 sealed, CKA_PUBLIC_KEY_INFO, CKA_ID), never in clear.
@Suite struct OctetStringKeyTests {
    static let montgomery: UInt64 = 0x41
    static let edwards: UInt64 = 0x40

    /// (name, mechanism, CKA_EC_PARAMS, expected algorithm, CKK_*)
    static let kinds: [Named<(UInt64, [UInt8], KeyAlgorithm, UInt64)>] = [
        Named("X25519 by OID", (0x1056, [0x06, 0x03, 0x2B, 0x65, 0x6E], .x25519, montgomery)),
        Named("X448 by OID", (0x1056, [0x06, 0x03, 0x2B, 0x65, 0x6F], .x448, montgomery)),
        Named("X25519 by name", (0x1056, [0x13, 0x0A] + Array("curve25519".utf8), .x25519, montgomery)),
        Named("X448 by name", (0x1056, [0x13, 0x08] + Array("curve448".utf8), .x448, montgomery)),
        Named("Ed448 by OID", (0x1055, [0x06, 0x03, 0x2B, 0x65, 0x71], .ed448, edwards)),
        Named("Ed448 by name", (0x1055, [0x13, 0x0A] + Array("edwards448".utf8), .ed448, edwards)),
    ]

    /// The bytes of every file of the store (the database, its WAL and journal).
    private func storeBytes(_ directory: TemporaryDirectory) throws -> [UInt8] {
        var files: [UInt8] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path)
        where name.hasPrefix("token.sqlite3") {
            files += try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file(name))))
        }
        return files
    }

    @Test("a generated key pair has the curve's attributes, its private value sealed", arguments: kinds)
    func generation(kind: Named<(UInt64, [UInt8], KeyAlgorithm, UInt64)>) throws {
        let (mechanism, parameters, algorithm, keyType) = kind.value
        try withToken { token, directory in
            try logInUser(token)
            let pair = try KeyPairKind(
                mechanism: mechanism, publicTemplate: [.token: yes, .ecParams: parameters],
                privateTemplate: [.token: yes, .label: bytes("octet key")])
            let references = try token.generateKeyPair(
                pair, publicTemplate: [.token: yes, .ecParams: parameters],
                // Montgomery keys derive, Edwards keys cannot.
                privateTemplate: [.token: yes, .label: bytes("octet key")]
                    .merging(keyType == KeyType.ecMontgomery.rawValue ? [.derive: yes] : [:]) { $1 },
                context: Contexts.user)
            let key = try token.privateKey(references.privateKey, context: Contexts.user).key
            #expect(key.algorithm == algorithm)
            let publicAttributes = try token.attributes(of: references.publicKey, context: Contexts.user)
            let privateAttributes = try token.attributes(of: references.privateKey, context: Contexts.user)
            for attributes in [publicAttributes, privateAttributes] {
                #expect(attributes.ulong(.keyType) == keyType)
                #expect(attributes[.ecParams] == algorithm.curveParameters)
                #expect(attributes[.publicKeyInfo] == key.subjectPublicKeyInfo)
                #expect(attributes[.id] == key.publicKeyHash)
                #expect(attributes.ulong(.keyGenMechanism) == mechanism)
                #expect(attributes[.local] == [1])
            }
            #expect(publicAttributes[.ecPoint] == DEROctetString.encode(key.publicPoint ?? []))
            let raw = try #require(key.rawPrivateKey)
            #expect(!(try storeBytes(directory)).contains(raw), "the private value is sealed")
            #expect(!(try storeBytes(directory)).contains(key.pkcs8 ?? [1]), "the PKCS#8 form is sealed")
        }
    }

    @Test("two generated X25519 key pairs agree on a secret through their stored halves")
    func storedKeysAgree() throws {
        try withToken { token, _ in
            try logInUser(token)
            let kind = try KeyPairKind(
                mechanism: 0x1056, publicTemplate: [.ecParams: [0x06, 0x03, 0x2B, 0x65, 0x6E]],
                privateTemplate: [:])
            let first = try token.generateKeyPair(
                kind, publicTemplate: [:], privateTemplate: [:], context: Contexts.user)
            let second = try token.generateKeyPair(
                kind, publicTemplate: [:], privateTemplate: [:], context: Contexts.user)
            let a = try token.privateKey(first.privateKey, context: Contexts.user).key
            let b = try token.privateKey(second.privateKey, context: Contexts.user).key
            let bPublic = try token.publicKey(second.publicKey, context: Contexts.user).key
            let secret = try a.sharedSecret(withPeerPublicValue: bPublic.publicPoint ?? [])
            #expect(secret.count == 32)
            #expect(secret.isEqual(to: try b.sharedSecret(withPeerPublicValue: a.publicPoint ?? [])))
        }
    }

    @Test("generation refuses a curve of the other family, an unknown one, or none")
    func generationRefusals() throws {
        expectKeychainError(.curveNotSupported) {
            _ = try KeyPairKind(
                mechanism: 0x1056, publicTemplate: [.ecParams: [0x06, 0x03, 0x2B, 0x65, 0x71]],
                privateTemplate: [:])
        }
        expectKeychainError(.curveNotSupported) {
            _ = try KeyPairKind(
                mechanism: 0x1055, publicTemplate: [.ecParams: [0x06, 0x03, 0x2B, 0x65, 0x6E]],
                privateTemplate: [:])
        }
        expectKeychainError(.curveNotSupported) {
            _ = try KeyPairKind(
                mechanism: 0x1056, publicTemplate: [.ecParams: EllipticCurve.p256.parameters],
                privateTemplate: [:])
        }
        expectKeychainError(.templateIncomplete) {
            _ = try KeyPairKind(mechanism: 0x1056, publicTemplate: [:], privateTemplate: [:])
        }
    }

    /// RFC 7748 §6.1 Alice, RFC 8032 §7.4 "1 octet".
    static let imports: [Named<(KeyAlgorithm, UInt64, String, String)>] = [
        Named(
            "X25519",
            (
                .x25519, montgomery, "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
                "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
            )),
        Named(
            "Ed448",
            (
                .ed448, edwards,
                "c4eab05d357007c632f3dbb48489924d552b08fe0c353a0d4a1f00acda2c463afbea67c5e8d2877c5e3bc397a659949e"
                    + "f8021e954e0a12274e",
                "43ba28f430cdff456ae531545f7ecd0ac834a55d9358c0372bfa0c6c6798c0866aea01eb00742802b8438ea4cb82169c"
                    + "235160627b4c3a9480"
            )),
    ]

    @Test(
        "an imported private and public key are stored with derived attributes, the private value sealed",
        arguments: imports)
    func importing(vector: Named<(KeyAlgorithm, UInt64, String, String)>) throws {
        let (algorithm, keyType, privateHex, publicHex) = vector.value
        let privateValue = try hexBytes(privateHex)
        let publicValue = try hexBytes(publicHex)
        let parameters = try #require(algorithm.curveParameters)
        try withToken { token, directory in
            try logInUser(token)
            let privateKey = try token.createObject(
                [
                    .class: ulong(ObjectClass.privateKey.rawValue), .keyType: ulong(keyType), .token: yes,
                    .ecParams: parameters, .value: privateValue, .label: bytes("imported"),
                ], context: Contexts.user)
            // CKA_EC_POINT raw here, in a DER OCTET STRING below: both are accepted.
            let rawPublic = try token.createObject(
                [
                    .class: ulong(ObjectClass.publicKey.rawValue), .keyType: ulong(keyType), .token: yes,
                    .ecParams: parameters, .ecPoint: publicValue,
                ], context: Contexts.user)
            let wrappedPublic = try token.createObject(
                [
                    .class: ulong(ObjectClass.publicKey.rawValue), .keyType: ulong(keyType), .token: yes,
                    .ecParams: parameters, .ecPoint: DEROctetString.encode(publicValue),
                ], context: Contexts.user)
            let key = try token.privateKey(privateKey, context: Contexts.user).key
            #expect(key.algorithm == algorithm)
            #expect(key.publicPoint == publicValue)
            let stored = try token.attributes(of: privateKey, context: Contexts.user)
            #expect(stored[.id] == key.publicKeyHash)
            #expect(stored[.publicKeyInfo] == key.subjectPublicKeyInfo)
            #expect(stored[.local] == [0])
            for reference in [rawPublic, wrappedPublic] {
                let attributes = try token.attributes(of: reference, context: Contexts.user)
                #expect(attributes[.ecPoint] == DEROctetString.encode(publicValue))
                #expect(attributes[.id] == key.publicKeyHash, "pairs up with its private key")
            }
            #expect(!(try storeBytes(directory)).contains(privateValue), "the private value is sealed")
        }
    }

    @Test("an import whose value has the wrong length, or whose curve is of the other family, stores nothing")
    func importRefusals() throws {
        try withToken { token, _ in
            try logInUser(token)
            let x25519 = try #require(KeyAlgorithm.x25519.curveParameters)
            let ed448 = try #require(KeyAlgorithm.ed448.curveParameters)
            let templates: [AttributeSet] = [
                [
                    .class: ulong(ObjectClass.privateKey.rawValue), .keyType: ulong(Self.montgomery),
                    .ecParams: x25519, .value: [UInt8](repeating: 7, count: 31),
                ],
                [
                    .class: ulong(ObjectClass.publicKey.rawValue), .keyType: ulong(Self.montgomery),
                    .ecParams: x25519, .ecPoint: [UInt8](repeating: 7, count: 33),
                ],
                [
                    .class: ulong(ObjectClass.publicKey.rawValue), .keyType: ulong(Self.montgomery),
                    .ecParams: ed448, .ecPoint: [UInt8](repeating: 7, count: 57),
                ],
                [
                    .class: ulong(ObjectClass.privateKey.rawValue), .keyType: ulong(Self.edwards),
                    .ecParams: x25519, .value: [UInt8](repeating: 7, count: 32),
                ],
            ]
            for template in templates {
                expectKeychainError(.attributeValueInvalid) {
                    _ = try token.createObject(template, context: Contexts.user)
                }
            }
            #expect(try token.findObjects([:], context: Contexts.user).isEmpty)
        }
    }
}
