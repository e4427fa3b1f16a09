import CPKCS11
import Foundation
import Testing

/// "The store file never holds a key byte in clear" (README "PINs and private objects",
/// "Secret keys"; ARCHITECTURE.md §3.6 sealing by attribute type): every path that writes a key or a
/// secret into a token object, attacked by a reader of the store's files. A row writes a
/// secret it knows and returns it; the test scans every file of the store while the module
/// has it open (the -wal file) and after C_Finalize.
struct AtRestPath: Sendable, CustomTestStringConvertible {
    var path: String
    var write: @Sendable (TestToken, CK_SESSION_HANDLE) throws -> [UInt8]

    var testDescription: String { path }

    init(_ path: String, _ write: @escaping @Sendable (TestToken, CK_SESSION_HANDLE) throws -> [UInt8]) {
        self.path = path
        self.write = write
    }
}

enum AtRestPaths {
    static let onToken = [flag(CKA_TOKEN, true)]

    /// Reads CKA_VALUE of `key`, which must be readable: what the row then looks for.
    static func value(of key: CK_OBJECT_HANDLE, _ token: TestToken, _ session: CK_SESSION_HANDLE) throws
        -> [UInt8]
    {
        let value = try token.readableValue(of: key, in: session)
        try #require(!value.isEmpty, "the row's key is not readable")
        return value
    }

    static let all: [AtRestPath] = [
        AtRestPath("C_CreateObject of a private AES key") { token, session in
            let secret = randomBytes(32)
            _ = try token.createSecretKey(secret, extra: onToken, in: session)
            return secret
        },
        AtRestPath("C_CreateObject of an AES key with CKA_PRIVATE=FALSE") { token, session in
            let secret = randomBytes(32)
            _ = try token.createSecretKey(secret, extra: onToken + [flag(CKA_PRIVATE, false)], in: session)
            return secret
        },
        AtRestPath("C_CreateObject of a P-256 private key with CKA_PRIVATE=FALSE") { token, session in
            let scalar = randomP256Scalar()
            _ = try token.createObject(
                ecPrivateKeyTemplate(scalar: scalar, label: "at rest", extra: [flag(CKA_PRIVATE, false)]),
                in: session)
            return scalar
        },
        AtRestPath("C_CreateObject of an RSA private key with CKA_PRIVATE=FALSE") { token, session in
            let parts = try RSAParts.shared.get()
            _ = try token.createObject(
                parts.privateKeyTemplate(label: "at rest", extra: [flag(CKA_PRIVATE, false)]), in: session)
            return parts.privateExponent
        },
        AtRestPath("C_CreateObject of a private data object (a password)") { token, session in
            let secret = randomBytes(24)
            _ = try token.createObject(
                [
                    Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_DATA)), flag(CKA_PRIVATE, true),
                    Attribute(CKA_VALUE, secret),
                ] + onToken, in: session)
            return secret
        },
        AtRestPath("C_SetAttributeValue(CKA_VALUE) of a private data object") { token, session in
            let secret = randomBytes(24)
            let data = try token.createObject(
                [
                    Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_DATA)), flag(CKA_PRIVATE, true),
                    Attribute(CKA_VALUE, randomBytes(24)),
                ] + onToken, in: session)
            try #require(try token.set([Attribute(CKA_VALUE, secret)], of: data, in: session) == CKR_OK)
            return secret
        },
        AtRestPath("C_GenerateKey of an extractable AES key") { token, session in
            let (rv, key) = try token.generateSecretKey(
                [Attribute(CKA_VALUE_LEN, ulong: 32)] + onToken + extractable, in: session)
            try #require(rv == CKR_OK)
            return try value(of: key, token, session)
        },
        AtRestPath("C_GenerateKeyPair of an extractable P-256 key") { token, session in
            let pair = try token.generatePair(.p256, privateExtra: extractable, in: session)
            return try value(of: pair.privateKey, token, session)
        },
        AtRestPath("C_CopyObject of an extractable AES key to the token") { token, session in
            let secret = randomBytes(32)
            let key = try token.createSecretKey(secret, extra: extractable, in: session)
            try #require(try token.copy(key, with: onToken, in: session).0 == CKR_OK)
            return secret
        },
        AtRestPath("C_UnwrapKey(CKM_AES_KEY_WRAP) into a token key") { token, session in
            let secret = randomBytes(32)
            let key = try token.createSecretKey(secret, extra: extractable, in: session)
            let kek = try token.attackerKey(in: session)
            let (wrapped, blob) = try token.wrap(
                MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: kek, key: key, in: session)
            try #require(wrapped == CKR_OK)
            let (rv, _) = try token.unwrap(
                MechanismBox(CKM_AES_KEY_WRAP), unwrappingKey: kek, blob,
                template: readableSecretKey(type: UInt(CKK_AES)) + onToken, in: session)
            try #require(rv == CKR_OK)
            return secret
        },
        AtRestPath("C_UnwrapKey(CKM_AES_KEY_WRAP_KWP) of a PKCS#8 P-256 key into a token key") {
            token, session in
            let scalar = randomP256Scalar()
            let key = try token.createObject(
                overriding(
                    ecPrivateKeyTemplate(scalar: scalar, label: "wrapped"),
                    with: [flag(CKA_TOKEN, false)] + extractable),
                in: session)
            let kek = try token.attackerKey(in: session)
            let (wrapped, blob) = try token.wrap(
                MechanismBox(CKM_AES_KEY_WRAP_KWP), wrappingKey: kek, key: key, in: session)
            try #require(wrapped == CKR_OK)
            let (rv, _) = try token.unwrap(
                MechanismBox(CKM_AES_KEY_WRAP_KWP), unwrappingKey: kek, blob,
                template: [
                    Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_PRIVATE_KEY)),
                    Attribute(CKA_KEY_TYPE, ulong: CKK_EC),
                    flag(CKA_PRIVATE, false),
                ] + onToken, in: session)
            try #require(rv == CKR_OK)
            return scalar
        },
        AtRestPath("C_DeriveKey(CKM_HKDF_DERIVE) into a token key") { token, session in
            let base = try token.createSecretKey(
                hkdfInput, type: UInt(CKK_GENERIC_SECRET), extra: [flag(CKA_DERIVE, true)], in: session)
            let (rv, _) = try token.derive(
                rfc5869Mechanism(UInt(CKM_HKDF_DERIVE)), baseKey: base,
                template: readableSecretKey(length: 42) + onToken,
                in: session)
            try #require(rv == CKR_OK)
            return hkdfOutput
        },
        AtRestPath(
            "C_DeriveKey(CKM_HKDF_DATA) into a token data object with CKA_PRIVATE=FALSE"
        ) {
            token, session in
            let base = try token.createSecretKey(
                hkdfInput, type: UInt(CKK_GENERIC_SECRET), extra: [flag(CKA_DERIVE, true)], in: session)
            let template = [
                Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_DATA)), Attribute(CKA_VALUE_LEN, ulong: 42),
                flag(CKA_PRIVATE, false),
            ]
            let (rv, _) = try token.derive(
                rfc5869Mechanism(UInt(CKM_HKDF_DATA)), baseKey: base, template: template + onToken,
                in: session)
            try #require(
                rv == CKR_OK || rv == CKR_TEMPLATE_INCONSISTENT || rv == CKR_ATTRIBUTE_VALUE_INVALID,
                "C_DeriveKey(CKM_HKDF_DATA) returned \(rvName(rv))")
            return hkdfOutput
        },
        AtRestPath("C_DeriveKey(CKM_ECDH1_DERIVE) into a token key") { token, session in
            let pair = try token.generatePair(.p256, privateExtra: [flag(CKA_DERIVE, true)], in: session)
            let box = MechanismBox(CKM_ECDH1_DERIVE)
            let peer = try #require(try token.attribute(CKA_EC_POINT, of: pair.publicKey, in: session))
                .dropFirst(2)
            let point = box.copy(Array(peer))
            box.setParameter(
                CK_ECDH1_DERIVE_PARAMS(
                    kdf: CK_ULONG(CKD_NULL), ulSharedDataLen: 0, pSharedData: nil,
                    ulPublicDataLen: CK_ULONG(peer.count),
                    pPublicData: point.baseAddress?.assumingMemoryBound(to: UInt8.self)))
            let (rv, key) = try token.derive(
                box, baseKey: pair.privateKey, template: readableSecretKey(length: 32) + onToken, in: session)
            try #require(rv == CKR_OK, "ECDH returned \(rvName(rv))")
            return try value(of: key, token, session)
        },
    ]
}

extension ModuleTests.PromiseTests {
    @Test(
        "No key byte is in the store's files in clear, whatever path wrote it, open or closed",
        arguments: AtRestPaths.all)
    func noKeyByteAtRest(path: AtRestPath) throws {
        try withPromiseToken { token, session in
            let secret = try path.write(token, session)
            try #require(!secret.isEmpty)
            #expect(
                token.storeFiles(containing: secret).isEmpty, "\(path.path): in clear while the store is open"
            )
            _ = try token.m.C_CloseSession(session)
            try #require(try token.m.C_Finalize(nil) == CKR_OK)
            #expect(token.storeFiles(containing: secret).isEmpty, "\(path.path): in clear after C_Finalize")
            #expect(!token.storeFiles().isEmpty)
        }
    }
}
