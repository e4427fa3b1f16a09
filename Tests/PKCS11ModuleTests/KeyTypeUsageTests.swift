import CPKCS11
import Foundation
import Testing

// An X25519 key read back with CKA_SIGN and CKA_DECRYPT TRUE though it can
// only derive; pkcs11-provider reads these attributes.

extension ModuleTests {
    @Suite("A key has only the usages its type can have")
    struct UsagesByKeyType {
        @Test(
            "Generated X25519 and X448 keys derive only, whatever their templates ask; a change or copy turning on another use is CKR_TEMPLATE_INCONSISTENT"
        )
        func montgomeryKeysDeriveOnly() throws {
            try withLoggedInToken { token, session in
                for oid in [x25519OID, x448OID] {
                    let (rv, pair) = try token.generatePair(
                        montgomeryKeyPairGeneration, public: [Attribute(CKA_EC_PARAMS, oid)], private: [],
                        in: session)
                    try #require(rv == CKR_OK, "\(name(of: rv))")
                    #expect(try token.usages(of: pair.privateKey, in: session) == ["derive"])
                    #expect(try token.usages(of: pair.publicKey, in: session) == [])
                    // What pkcs11-tool --keypairgen asks of every key: the key still only derives.
                    let (asked, askedPair) = try token.generatePair(
                        montgomeryKeyPairGeneration,
                        public: [
                            Attribute(CKA_EC_PARAMS, oid), Attribute(CKA_VERIFY, bool: true),
                            Attribute(CKA_ENCRYPT, bool: true), Attribute(CKA_WRAP, bool: true),
                        ],
                        private: [
                            Attribute(CKA_SIGN, bool: true), Attribute(CKA_DECRYPT, bool: true),
                            Attribute(CKA_UNWRAP, bool: true), Attribute(CKA_SIGN_RECOVER, bool: true),
                            Attribute(CKA_DERIVE, bool: true),
                        ], in: session)
                    try #require(asked == CKR_OK, "\(name(of: asked))")
                    #expect(try token.usages(of: askedPair.privateKey, in: session) == ["derive"])
                    #expect(try token.usages(of: askedPair.publicKey, in: session) == [])
                    // Nor can a change or a copy give the key a use its type lacks.
                    #expect(
                        try token.set([Attribute(CKA_SIGN, bool: true)], of: pair.privateKey, in: session)
                            == CKR_TEMPLATE_INCONSISTENT)
                    #expect(
                        try token.copy(
                            pair.privateKey, with: [Attribute(CKA_DECRYPT, bool: true)], in: session
                        ).0 == CKR_TEMPLATE_INCONSISTENT)
                }
            }
        }

        @Test("An imported X25519 key derives only, by default and whatever its template asks")
        func importedMontgomeryKeyDerivesOnly() throws {
            let privateValue = bytes(hex: "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
            let template = [
                Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_PRIVATE_KEY)),
                Attribute(CKA_KEY_TYPE, ulong: montgomeryKeyType),
                Attribute(CKA_EC_PARAMS, x25519OID), Attribute(CKA_VALUE, privateValue),
            ]
            try withLoggedInToken { token, session in
                let key = try token.createObject(template, in: session)
                #expect(try token.usages(of: key, in: session) == ["derive"])
                let asked = try token.createObject(
                    template + [Attribute(CKA_SIGN, bool: true), Attribute(CKA_DECRYPT, bool: true)],
                    in: session)
                #expect(try token.usages(of: asked, in: session) == ["derive"])
            }
        }

        @Test("Ed25519 keys sign and verify only; EC keys sign, verify and derive; RSA keys never derive")
        func edwardsECAndRSAUsages() throws {
            try withLoggedInToken { token, session in
                let ed = try token.generatePair(.ed25519, in: session)
                #expect(try token.usages(of: ed.privateKey, in: session) == ["sign"])
                #expect(try token.usages(of: ed.publicKey, in: session) == ["verify"])
                let ec = try token.generatePair(
                    .p256, privateExtra: [Attribute(CKA_DERIVE, bool: true)], in: session)
                #expect(try token.usages(of: ec.privateKey, in: session) == ["sign", "derive"])
                #expect(try token.usages(of: ec.publicKey, in: session) == ["verify"])
                // Asked of a new key, a use its type lacks is FALSE (pkcs11-tool asks CKA_DERIVE of
                // an Ed25519 key); turned on by a change, it is refused.
                let impossible: [(KeyKind, CK_ATTRIBUTE_TYPE)] = [
                    (.ed25519, CKA_DERIVE), (.ed25519, CKA_DECRYPT), (.ed25519, CKA_UNWRAP),
                    (.p256, CKA_DECRYPT), (.p256, CKA_UNWRAP), (.rsa2048, CKA_DERIVE),
                ]
                for (kind, usage) in impossible {
                    let pair = try token.generatePair(
                        kind, privateExtra: [Attribute(usage, bool: true)], in: session)
                    #expect(try token.bool(usage, of: pair.privateKey, in: session) == false, "\(kind)")
                    #expect(
                        try token.set([Attribute(usage, bool: true)], of: pair.privateKey, in: session)
                            == CKR_TEMPLATE_INCONSISTENT, "\(kind) 0x\(String(usage, radix: 16))")
                }
                let rsa = try token.generatePair(.rsa2048, in: session)
                #expect(try token.usages(of: rsa.privateKey, in: session) == ["sign", "decrypt"])
                #expect(try token.usages(of: rsa.publicKey, in: session) == ["verify", "encrypt"])
            }
        }
    }
}
