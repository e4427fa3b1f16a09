import Testing

@testable import KeychainCore

/// The Swift faces' algorithms name their mechanisms through the registry, not by code: each
/// must land on the registry entry PKCS#11 calls by that name.
@Suite("The Swift faces' algorithms and their mechanisms")
struct AlgorithmMechanismTests {
    static let hashes: [(HashAlgorithm, String)] = [
        (.sha1, "SHA1"), (.sha224, "SHA224"), (.sha256, "SHA256"), (.sha384, "SHA384"), (.sha512, "SHA512"),
    ]

    @Test("each signature algorithm names the registry mechanism C_Sign would use")
    func signatureAlgorithmsNameTheirMechanisms() {
        var expected: [(SignatureAlgorithm, String)] = [
            (.rsaPKCS1v15Raw, "CKM_RSA_PKCS"), (.ecdsaDigest(nil), "CKM_ECDSA"), (.ed25519, "CKM_EDDSA"),
        ]
        for (hash, name) in Self.hashes {
            expected += [
                (.rsaPKCS1v15(hash), "CKM_\(name)_RSA_PKCS"), (.rsaPKCS1v15Digest(hash), "CKM_RSA_PKCS"),
                (.rsaPSS(hash), "CKM_\(name)_RSA_PKCS_PSS"), (.rsaPSSDigest(hash), "CKM_RSA_PKCS_PSS"),
                (.ecdsa(hash), "CKM_ECDSA_\(name)"),
                (.ecdsaDigest(hash), "CKM_ECDSA"),
            ]
        }
        for (algorithm, name) in expected {
            let type = algorithm.mechanism.type
            #expect(MechanismRegistry.mechanism(type)?.name == name, "\(algorithm)")
        }
    }

    @Test("each RSA encryption algorithm names CKM_RSA_PKCS or CKM_RSA_PKCS_OAEP with its hash")
    func encryptionAlgorithmsNameTheirMechanisms() {
        #expect(
            MechanismRegistry.mechanism(RSAEncryptionAlgorithm.rsaPKCS1.mechanism.type)?.name
                == "CKM_RSA_PKCS")
        for (hash, name) in Self.hashes {
            let (type, parameters) = RSAEncryptionAlgorithm.rsaOAEP(hash).mechanism
            #expect(MechanismRegistry.mechanism(type)?.name == "CKM_RSA_PKCS_OAEP")
            guard case .oaep(let hashType, _, _, _) = parameters else {
                Issue.record("OAEP with \(name) has no OAEP parameter")
                continue
            }
            let hashName = MechanismRegistry.mechanism(hashType)?.name.filter { $0 != "_" }
            #expect(hashName == "CKM\(name)")
        }
    }

    @Test("key agreement names CKM_ECDH1_DERIVE, or CKM_ECDH1_COFACTOR_DERIVE with the cofactor")
    func keyAgreementNamesItsMechanism() {
        #expect(
            MechanismRegistry.mechanism(DerivationParameters.ecdhMechanism(cofactor: false))?.name
                == "CKM_ECDH1_DERIVE")
        #expect(
            MechanismRegistry.mechanism(DerivationParameters.ecdhMechanism(cofactor: true))?.name
                == "CKM_ECDH1_COFACTOR_DERIVE")
    }

    @Test("key wrap names CKM_AES_KEY_WRAP, and with padding RFC 5649's CKM_AES_KEY_WRAP_KWP")
    func keyWrapNamesItsMechanisms() {
        #expect(MechanismRegistry.mechanism(AESKeyWrapMode.aesKeyWrap.mechanism)?.name == "CKM_AES_KEY_WRAP")
        #expect(
            MechanismRegistry.mechanism(AESKeyWrapMode.aesKeyWrapPadded.mechanism)?.name
                == "CKM_AES_KEY_WRAP_KWP")
    }

    @Test("key pair generation names each key type's CKM_*_KEY_PAIR_GEN")
    func keyPairGenerationNamesItsMechanisms() {
        let expected: [(UInt64, String)] = [
            (Token.rsaKeyPairMechanism, "CKM_RSA_PKCS_KEY_PAIR_GEN"),
            (Token.ecKeyPairMechanism, "CKM_ECDSA_KEY_PAIR_GEN"),
            (Token.edwardsKeyPairMechanism, "CKM_EC_EDWARDS_KEY_PAIR_GEN"),
            (Token.montgomeryKeyPairMechanism, "CKM_EC_MONTGOMERY_KEY_PAIR_GEN"),
        ]
        for (type, name) in expected { #expect(MechanismRegistry.mechanism(type)?.name == name) }
    }

    @Test("a family and hash the registry lacks names no mechanism")
    func anUnknownPairNamesNothing() {
        #expect(
            MechanismRegistry.mechanism(
                MechanismRegistry.type(of: .eddsa, digest: HashAlgorithm.sha256.crypto)) == nil)
    }
}
