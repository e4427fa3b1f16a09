import KeychainCore
import KeychainCrypto
import Testing

/// The registry is the token's one list of mechanisms: every entry must be complete enough for
/// every reader (C_GetMechanismList/Info, the key-use check, the trace, the command line).
@Suite("The mechanism registry")
struct MechanismRegistryTests {
    static let functions: [MechanismFunctions] = [
        .encrypt, .decrypt, .digest, .sign, .verify, .generate, .generateKeyPair, .wrap, .unwrap, .derive,
    ]

    @Test("each mechanism is listed once, by a name from the PKCS#11 headers, and does something")
    func entriesAreComplete() {
        let types = MechanismRegistry.all.map(\.type)
        #expect(Set(types).count == types.count)
        for mechanism in MechanismRegistry.all {
            #expect(mechanism.name.hasPrefix("CKM_") && !mechanism.name.contains("0x"), "\(mechanism.type)")
            #expect(!mechanism.functions.isEmpty, "\(mechanism.name)")
            #expect(MechanismRegistry.mechanism(mechanism.type) == mechanism)
            if mechanism.functions == .digest {
                #expect(mechanism.keyTypes.isEmpty && mechanism.keySizes == nil, "\(mechanism.name)")
            } else {
                #expect(!mechanism.keyTypes.isEmpty, "\(mechanism.name) takes no key type")
                #expect((mechanism.keySizes?.lowerBound ?? 0) >= 1, "\(mechanism.name) has no key sizes")
            }
        }
    }

    @Test("each entry's name agrees with what the registry says it is")
    func namesAgreeWithFamilies() {
        let hashNames: [DigestAlgorithm: [String]] = [
            .sha1: ["SHA_1", "SHA1"], .sha224: ["SHA224"], .sha256: ["SHA256"], .sha384: ["SHA384"],
            .sha512: ["SHA512"],
        ]
        for mechanism in MechanismRegistry.all {
            let name = mechanism.name
            if let digest = mechanism.digest {
                #expect(hashNames[digest, default: []].contains { name.contains($0) }, "\(name)")
            }
            let expected: [String]
            switch mechanism.family {
            case .digest: expected = ["CKM_SHA"]
            case .keyGeneration: expected = ["_KEY_GEN"]
            case .keyPairGeneration: expected = ["_KEY_PAIR_GEN"]
            case .rsaPKCS1: expected = ["RSA_PKCS"]
            case .rsaPSS: expected = ["RSA_PKCS_PSS"]
            case .rsaRaw: expected = ["CKM_RSA_X_509"]
            case .rsaOAEP: expected = ["CKM_RSA_PKCS_OAEP"]
            case .ecdsa: expected = ["CKM_ECDSA"]
            case .eddsa: expected = ["CKM_EDDSA"]
            case .mac(let general): expected = general ? ["MAC_GENERAL"] : ["_HMAC", "_CMAC"]
            case .aesECB: expected = ["CKM_AES_ECB"]
            case .aesCBC: expected = ["CKM_AES_CBC"]
            case .aesCBCPad: expected = ["CKM_AES_CBC_PAD"]
            case .aesCTR: expected = ["CKM_AES_CTR"]
            case .aesGCM: expected = ["CKM_AES_GCM"]
            case .aesKeyWrap(let padded):
                expected = padded ? ["KEY_WRAP_PAD", "KEY_WRAP_KWP"] : ["CKM_AES_KEY_WRAP"]
            case .ecdh(let cofactor): expected = cofactor ? ["ECDH1_COFACTOR"] : ["CKM_ECDH1_DERIVE"]
            case .hkdf(let data): expected = data ? ["CKM_HKDF_DATA"] : ["CKM_HKDF_DERIVE"]
            }
            #expect(expected.contains { name.contains($0) }, "\(name) is not \(mechanism.family)")
            if case .mac(false) = mechanism.family { #expect(!name.hasSuffix("_GENERAL"), "\(name)") }
        }
    }

    @Test("require grants exactly the functions a mechanism's flags name")
    func requireFollowsTheFlags() throws {
        for mechanism in MechanismRegistry.all {
            for function in Self.functions {
                if mechanism.functions.contains(function) {
                    #expect(try MechanismRegistry.require(mechanism.type, for: function) == mechanism)
                } else {
                    expectKeychainError(.mechanismInvalid) {
                        _ = try MechanismRegistry.require(mechanism.type, for: function)
                    }
                }
            }
        }
    }

    @Test("a mechanism the token does not implement is refused for every function")
    func unknownMechanisms() {
        for type: UInt64 in [0x0002, 0x0210, 0x1083, 0x8000_1234, UInt64.max] {
            #expect(MechanismRegistry.mechanism(type) == nil)
            expectKeychainError(.mechanismInvalid) { _ = try MechanismRegistry.require(type, for: .sign) }
        }
    }

    @Test("the key-use entry point refuses a mechanism for a use its flags do not name")
    func keyUseConsultsTheRegistry() throws {
        try withToken { token, _ in
            try logInUser(token)
            let key = try token.createObject(
                [
                    .class: ulong(4), .keyType: ulong(0x1F), .value: [UInt8](repeating: 7, count: 16),
                    .encrypt: [1], .decrypt: [1], .wrap: [1], .unwrap: [1],
                ], context: Contexts.user)
            // CKM_AES_CBC encrypts but does not wrap; CKM_AES_KEY_WRAP wraps but does not encrypt.
            _ = try token.useSecretKey(
                key, for: .encrypt, keyTypes: [.aes], mechanism: 0x1082, context: Contexts.user)
            _ = try token.useSecretKey(
                key, for: .wrap, keyTypes: [.aes], mechanism: 0x2109, context: Contexts.user)
            expectKeychainError(.mechanismInvalid) {
                _ = try token.useSecretKey(
                    key, for: .wrap, keyTypes: [.aes], mechanism: 0x1082, context: Contexts.user)
            }
            expectKeychainError(.mechanismInvalid) {
                _ = try token.useSecretKey(
                    key, for: .encrypt, keyTypes: [.aes], mechanism: 0x2109, context: Contexts.user)
            }
        }
    }
}
