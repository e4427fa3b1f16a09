import CPKCS11
import Foundation
import Testing

// Wrapping, unwrapping and derivation through the module: RFC 3394 and RFC 5649
// known answers, the wrap rules of the core, ECDH between two token keys, HKDF against
// RFC 5869, and raw scans that find no key byte in the store.

private let kek = bytes(hex: "000102030405060708090A0B0C0D0E0F")
private let keyData = bytes(hex: "00112233445566778899AABBCCDDEEFF")

/// CKA_WRAP and CKA_UNWRAP on an AES key.
private let wrapping = [Attribute(CKA_WRAP, bool: true), Attribute(CKA_UNWRAP, bool: true)]

extension ModuleTests {
    @Suite("Keys are wrapped and unwrapped only as the rules allow")
    struct Wrapping {
        @Test("AES key wrap: RFC 3394 §4.1, and the unwrapped key is the original")
        func aesKeyWrap() throws {
            try withLoggedInToken { token, session in
                let wrappingKey = try token.createSecretKey(kek, extra: wrapping, in: session)
                let key = try token.createSecretKey(
                    keyData, extra: [Attribute(CKA_EXTRACTABLE, bool: true)], in: session)
                let (rv, wrapped) = try token.wrap(
                    MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: wrappingKey, key: key, in: session)
                #expect(rv == CKR_OK)
                #expect(wrapped == bytes(hex: "1FA68B0A8112B447AEF34BD8FB5A7B829D3E862371D2CFE5"))
                let (unwrapped, copy) = try token.unwrap(
                    MechanismBox(CKM_AES_KEY_WRAP), unwrappingKey: wrappingKey, wrapped,
                    template: readableSecretKey(type: UInt(CKK_AES)), in: session)
                #expect(unwrapped == CKR_OK)
                #expect(try token.attribute(CKA_VALUE, of: copy, in: session) == keyData)
                // It was outside the token: never always-sensitive or never-extractable (v2.40 §5.13).
                #expect(try token.bool(CKA_ALWAYS_SENSITIVE, of: copy, in: session) == false)
                #expect(try token.bool(CKA_NEVER_EXTRACTABLE, of: copy, in: session) == false)
                #expect(try token.bool(CKA_LOCAL, of: copy, in: session) == false)
            }
        }

        @Test("AES key wrap with padding: RFC 5649 §6, under KWP and PAD")
        func aesKeyWrapPadded() throws {
            try withLoggedInToken { token, session in
                let wrappingKey = try token.createSecretKey(
                    bytes(hex: "5840df6e29b02af1ab493b705bf16ea1ae8338f4dcc176a8"), extra: wrapping,
                    in: session)
                let secret = bytes(hex: "c37b7e6492584340bed12207808941155068f738")
                let key = try token.createSecretKey(
                    secret, type: UInt(CKK_GENERIC_SECRET), extra: [Attribute(CKA_EXTRACTABLE, bool: true)],
                    in: session)
                for type in [CKM_AES_KEY_WRAP_KWP, CKM_AES_KEY_WRAP_PAD] {
                    let (rv, wrapped) = try token.wrap(
                        MechanismBox(type), wrappingKey: wrappingKey, key: key, in: session)
                    #expect(rv == CKR_OK)
                    #expect(
                        wrapped
                            == bytes(hex: "138bdeaa9b8fa7fc61f97742e72248ee5ae6ae5360d1ae6a5f54f373fa543b6a"))
                    let (unwrapped, copy) = try token.unwrap(
                        MechanismBox(type), unwrappingKey: wrappingKey, wrapped,
                        template: readableSecretKey(), in: session)
                    #expect(unwrapped == CKR_OK)
                    #expect(try token.attribute(CKA_VALUE, of: copy, in: session) == secret)
                }
            }
        }

        @Test(
            "A key that is not extractable, or a wrapping key without CKA_WRAP, is refused; garbage does not unwrap"
        )
        func refusals() throws {
            try withLoggedInToken { token, session in
                let wrappingKey = try token.createSecretKey(kek, extra: wrapping, in: session)
                let locked = try token.createSecretKey(keyData, in: session)
                #expect(
                    try token.wrap(
                        MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: wrappingKey, key: locked, in: session
                    ).0 == CKR_KEY_UNEXTRACTABLE)
                let key = try token.createSecretKey(
                    keyData, extra: [Attribute(CKA_EXTRACTABLE, bool: true)], in: session)
                let plain = try token.createSecretKey(kek, in: session)
                #expect(
                    try token.wrap(MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: plain, key: key, in: session)
                        .0 == CKR_KEY_FUNCTION_NOT_PERMITTED)
                #expect(
                    try token.wrap(MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: 0xdead, key: key, in: session)
                        .0 == CKR_WRAPPING_KEY_HANDLE_INVALID)
                let trustedOnly = try token.createSecretKey(
                    keyData,
                    extra: [
                        Attribute(CKA_EXTRACTABLE, bool: true), Attribute(CKA_WRAP_WITH_TRUSTED, bool: true),
                    ], in: session)
                #expect(
                    try token.wrap(
                        MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: wrappingKey, key: trustedOnly,
                        in: session
                    ).0 == CKR_KEY_NOT_WRAPPABLE)
                let garbage = [UInt8](repeating: 0x5A, count: 24)
                #expect(
                    try token.unwrap(
                        MechanismBox(CKM_AES_KEY_WRAP), unwrappingKey: wrappingKey, garbage,
                        template: readableSecretKey(type: UInt(CKK_AES)), in: session
                    ).0 == CKR_WRAPPED_KEY_INVALID)
                #expect(
                    try token.unwrap(
                        MechanismBox(CKM_AES_KEY_WRAP), unwrappingKey: wrappingKey, [1, 2, 3],
                        template: readableSecretKey(type: UInt(CKK_AES)), in: session
                    ).0 == CKR_WRAPPED_KEY_LEN_RANGE)
                // An unwrapping template may not give the value.
                let wrapped = try token.wrap(
                    MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: wrappingKey, key: key, in: session
                ).1
                #expect(
                    try token.unwrap(
                        MechanismBox(CKM_AES_KEY_WRAP), unwrappingKey: wrappingKey, wrapped,
                        template: readableSecretKey(type: UInt(CKK_AES)) + [Attribute(CKA_VALUE, keyData)],
                        in: session
                    ).0 == CKR_ATTRIBUTE_READ_ONLY)
            }
        }

        @Test("CKA_WRAP_TEMPLATE limits what a key wraps; CKA_UNWRAP_TEMPLATE is imposed on what it unwraps")
        func keyTemplates() throws {
            try withLoggedInToken { token, session in
                let owner = MechanismBox(0)
                let wrapTemplate = attributeArray([Attribute(CKA_LABEL, string: "exportable")], owner: owner)
                let unwrapTemplate = attributeArray(
                    [Attribute(CKA_SENSITIVE, bool: true), Attribute(CKA_LABEL, string: "restored")],
                    owner: owner)
                let wrappingKey = try token.createSecretKey(
                    kek,
                    extra: wrapping + [
                        Attribute(CKA_WRAP_TEMPLATE, wrapTemplate),
                        Attribute(CKA_UNWRAP_TEMPLATE, unwrapTemplate),
                    ], in: session)
                // The template reads back as a CK_ATTRIBUTE array: its length, then its entries.
                let (rv, length) = try token.probe(CKA_WRAP_TEMPLATE, of: wrappingKey, in: session)
                #expect(rv == CKR_OK)
                #expect(length == CK_ULONG(MemoryLayout<CK_ATTRIBUTE>.size))
                var label = [UInt8](repeating: 0, count: 32)
                let readBack = try label.withUnsafeMutableBytes { buffer in
                    var inner = CK_ATTRIBUTE(type: 0, pValue: buffer.baseAddress, ulValueLen: 32)
                    return try withUnsafeMutableBytes(of: &inner) { innerBytes in
                        var outer = CK_ATTRIBUTE(
                            type: CK_ATTRIBUTE_TYPE(CKA_WRAP_TEMPLATE), pValue: innerBytes.baseAddress,
                            ulValueLen: CK_ULONG(innerBytes.count))
                        let rv = try token.m.C_GetAttributeValue(session, wrappingKey, &outer, 1)
                        return (rv, innerBytes.load(as: CK_ATTRIBUTE.self))
                    }
                }
                #expect(readBack.0 == CKR_OK)
                #expect(readBack.1.type == CK_ATTRIBUTE_TYPE(CKA_LABEL))
                #expect(Array(label.prefix(Int(readBack.1.ulValueLen))) == Array("exportable".utf8))
                let matching = try token.createSecretKey(
                    keyData,
                    extra: [
                        Attribute(CKA_EXTRACTABLE, bool: true), Attribute(CKA_LABEL, string: "exportable"),
                    ],
                    in: session)
                let other = try token.createSecretKey(
                    keyData,
                    extra: [Attribute(CKA_EXTRACTABLE, bool: true), Attribute(CKA_LABEL, string: "kept")],
                    in: session)
                #expect(
                    try token.wrap(
                        MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: wrappingKey, key: other, in: session
                    ).0 == CKR_KEY_NOT_WRAPPABLE)
                let (wrapped, bytes) = try token.wrap(
                    MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: wrappingKey, key: matching, in: session)
                #expect(wrapped == CKR_OK)
                let aes = [
                    Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY)),
                    Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_AES)),
                ]
                #expect(
                    try token.unwrap(
                        MechanismBox(CKM_AES_KEY_WRAP), unwrappingKey: wrappingKey, bytes,
                        template: aes + [Attribute(CKA_SENSITIVE, bool: false)], in: session
                    ).0 == CKR_TEMPLATE_INCONSISTENT)
                let (unwrapped, key) = try token.unwrap(
                    MechanismBox(CKM_AES_KEY_WRAP), unwrappingKey: wrappingKey, bytes, template: aes,
                    in: session)
                #expect(unwrapped == CKR_OK)
                #expect(try token.bool(CKA_SENSITIVE, of: key, in: session) == true)
                #expect(try token.string(CKA_LABEL, of: key, in: session) == "restored")
            }
        }

        @Test("RSA-OAEP wraps an AES key to a token RSA key and unwraps it with the private key")
        func rsaOAEP() throws {
            try withLoggedInToken { token, session in
                let pair = try token.generateKeyPair(.rsa2048, in: session)
                #expect(
                    try token.set([Attribute(CKA_WRAP, bool: true)], of: pair.publicKey, in: session)
                        == CKR_OK)
                #expect(
                    try token.set([Attribute(CKA_UNWRAP, bool: true)], of: pair.privateKey, in: session)
                        == CKR_OK)
                let key = try token.createSecretKey(
                    keyData, extra: [Attribute(CKA_EXTRACTABLE, bool: true)], in: session)
                let box = MechanismBox(CKM_RSA_PKCS_OAEP)
                box.setParameter(
                    CK_RSA_PKCS_OAEP_PARAMS(
                        hashAlg: CK_MECHANISM_TYPE(CKM_SHA256), mgf: CK_ULONG(CKG_MGF1_SHA256),
                        source: CK_ULONG(CKZ_DATA_SPECIFIED), pSourceData: nil, ulSourceDataLen: 0))
                let (rv, wrapped) = try token.wrap(box, wrappingKey: pair.publicKey, key: key, in: session)
                #expect(rv == CKR_OK)
                #expect(wrapped.count == 256)
                let (unwrapped, copy) = try token.unwrap(
                    box, unwrappingKey: pair.privateKey, wrapped,
                    template: readableSecretKey(type: UInt(CKK_AES)), in: session)
                #expect(unwrapped == CKR_OK)
                #expect(try token.attribute(CKA_VALUE, of: copy, in: session) == keyData)

                // A private key whose access control needs the PIN for each use cannot unwrap:
                // C_UnwrapKey is one call, with no context-specific login before it.
                let guarded = try token.generateKeyPair(
                    .rsa2048,
                    privateAttributes: [
                        Attribute(CKA_UNWRAP, bool: true),
                        Attribute(
                            CK_ATTRIBUTE_TYPE(CKA_P11K_ACCESS_CONTROL),
                            ulong: CK_ULONG(P11K_ACCESS_CONTROL_USER_PRESENCE)),
                    ], in: session)
                #expect(
                    try token.set([Attribute(CKA_WRAP, bool: true)], of: guarded.publicKey, in: session)
                        == CKR_OK)
                let (guardedWrap, guardedWrapped) = try token.wrap(
                    box, wrappingKey: guarded.publicKey, key: key, in: session)
                #expect(guardedWrap == CKR_OK)
                let (refused, _) = try token.unwrap(
                    box, unwrappingKey: guarded.privateKey, guardedWrapped,
                    template: readableSecretKey(type: UInt(CKK_AES)), in: session)
                #expect(refused == CKR_KEY_FUNCTION_NOT_PERMITTED)
            }
        }
    }

    @Suite("Private keys travel as PKCS#8 under AES-KWP")
    struct PrivateKeyWrapping {
        @Test("An extractable P-256 key wrapped and unwrapped signs what its public key verifies")
        func privateKeyRoundTrip() throws {
            try withLoggedInToken { token, session in
                let wrappingKey = try token.createSecretKey(kek, extra: wrapping, in: session)
                let pair = try token.generateKeyPair(.p256, in: session)
                let (locked, _) = try token.wrap(
                    MechanismBox(CKM_AES_KEY_WRAP_KWP), wrappingKey: wrappingKey, key: pair.privateKey,
                    in: session)
                #expect(locked == CKR_KEY_UNEXTRACTABLE)
                #expect(
                    try token.set([Attribute(CKA_EXTRACTABLE, bool: true)], of: pair.privateKey, in: session)
                        == CKR_ATTRIBUTE_READ_ONLY)
                let open = try token.generatePair(
                    .p256, privateExtra: [Attribute(CKA_EXTRACTABLE, bool: true)], in: session)
                let (rv, wrapped) = try token.wrap(
                    MechanismBox(CKM_AES_KEY_WRAP_KWP), wrappingKey: wrappingKey, key: open.privateKey,
                    in: session)
                #expect(rv == CKR_OK)
                let template = [
                    Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_PRIVATE_KEY)),
                    Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_EC)),
                    Attribute(CKA_SIGN, bool: true),
                ]
                let (unwrapped, copy) = try token.unwrap(
                    MechanismBox(CKM_AES_KEY_WRAP_KWP), unwrappingKey: wrappingKey, wrapped,
                    template: template, in: session)
                #expect(unwrapped == CKR_OK)
                let (signed, signature) = try token.sign([1, 2, 3], with: copy, .p256, in: session)
                #expect(signed == CKR_OK)
                #expect(
                    try token.verify(signature, over: [1, 2, 3], with: open.publicKey, .p256, in: session)
                        == CKR_OK)
                #expect(try token.bool(CKA_NEVER_EXTRACTABLE, of: copy, in: session) == false)
                // The wrong key type for the bytes is refused, and nothing is stored.
                let wrongType = [
                    Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_PRIVATE_KEY)),
                    Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_RSA)),
                ]
                #expect(
                    try token.unwrap(
                        MechanismBox(CKM_AES_KEY_WRAP_KWP), unwrappingKey: wrappingKey, wrapped,
                        template: wrongType, in: session
                    ).0 == CKR_TEMPLATE_INCONSISTENT)
            }
        }
    }

    @Suite("Keys are derived from token keys")
    struct Derivation {
        /// Derives from `base` with the peer's EC point, CKD_NULL or an X9.63 KDF.
        static func ecdh(
            _ token: TestToken, base: CK_OBJECT_HANDLE, peerPoint: [UInt8], kdf: UInt = UInt(CKD_NULL),
            sharedData: [UInt8] = [],
            template: [Attribute], in session: CK_SESSION_HANDLE
        ) throws -> (CK_RV, CK_OBJECT_HANDLE) {
            let box = MechanismBox(CKM_ECDH1_DERIVE)
            let point = box.copy(peerPoint)
            let shared = sharedData.isEmpty ? nil : box.copy(sharedData)
            box.setParameter(
                CK_ECDH1_DERIVE_PARAMS(
                    kdf: CK_ULONG(kdf), ulSharedDataLen: CK_ULONG(sharedData.count),
                    pSharedData: shared?.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    ulPublicDataLen: CK_ULONG(peerPoint.count),
                    pPublicData: point.baseAddress?.assumingMemoryBound(to: UInt8.self)))
            return try token.derive(box, baseKey: base, template: template, in: session)
        }

        /// The raw EC point of a token public key (CKA_EC_POINT without its DER OCTET STRING).
        static func point(_ token: TestToken, of key: CK_OBJECT_HANDLE, in session: CK_SESSION_HANDLE) throws
            -> [UInt8]
        {
            let wrapped = try #require(try token.attribute(CKA_EC_POINT, of: key, in: session))
            return Array(wrapped.dropFirst(2))
        }

        @Test("ECDH between two token P-256 keys agrees both ways, raw and through the SHA-256 KDF")
        func ecdhAgrees() throws {
            try withLoggedInToken { token, session in
                let alice = try token.generateKeyPair(.p256, in: session)
                let bob = try token.generateKeyPair(.p256, in: session)
                for pair in [alice, bob] {
                    #expect(
                        try token.set([Attribute(CKA_DERIVE, bool: true)], of: pair.privateKey, in: session)
                            == CKR_OK)
                }
                let alicePoint = try Self.point(token, of: alice.publicKey, in: session)
                let bobPoint = try Self.point(token, of: bob.publicKey, in: session)
                let ab = try Self.ecdh(
                    token, base: alice.privateKey, peerPoint: bobPoint, template: readableSecretKey(),
                    in: session)
                let ba = try Self.ecdh(
                    token, base: bob.privateKey, peerPoint: alicePoint, template: readableSecretKey(),
                    in: session)
                #expect(ab.0 == CKR_OK)
                #expect(ba.0 == CKR_OK)
                let secret = try token.attribute(CKA_VALUE, of: ab.1, in: session)
                #expect(secret?.count == 32)
                #expect(secret == (try token.attribute(CKA_VALUE, of: ba.1, in: session)))
                // The DER-wrapped point is taken too; an X9.63 KDF gives what both sides get.
                let wrappedPoint = [0x04, UInt8(bobPoint.count)] + bobPoint
                let kdf1 = try Self.ecdh(
                    token, base: alice.privateKey, peerPoint: wrappedPoint, kdf: UInt(CKD_SHA256_KDF),
                    sharedData: [1, 2, 3], template: readableSecretKey(type: UInt(CKK_AES), length: 16),
                    in: session)
                let kdf2 = try Self.ecdh(
                    token, base: bob.privateKey, peerPoint: alicePoint, kdf: UInt(CKD_SHA256_KDF),
                    sharedData: [1, 2, 3], template: readableSecretKey(type: UInt(CKK_AES), length: 16),
                    in: session)
                #expect(kdf1.0 == CKR_OK)
                #expect(
                    try token.attribute(CKA_VALUE, of: kdf1.1, in: session)
                        == (try token.attribute(CKA_VALUE, of: kdf2.1, in: session)))
                // A derived key follows its base key's history: the base is always sensitive,
                // the derived one was made readable.
                #expect(try token.bool(CKA_ALWAYS_SENSITIVE, of: ab.1, in: session) == false)
            }
        }

        @Test("ECDH refuses a point off the curve, a key without CKA_DERIVE, and shared data with CKD_NULL")
        func ecdhRefusals() throws {
            try withLoggedInToken { token, session in
                let alice = try token.generateKeyPair(.p256, in: session)
                let bob = try token.generateKeyPair(.p256, in: session)
                var bobPoint = try Self.point(token, of: bob.publicKey, in: session)
                #expect(
                    try Self.ecdh(
                        token, base: alice.privateKey, peerPoint: bobPoint, template: readableSecretKey(),
                        in: session
                    ).0 == CKR_KEY_FUNCTION_NOT_PERMITTED)
                #expect(
                    try token.set([Attribute(CKA_DERIVE, bool: true)], of: alice.privateKey, in: session)
                        == CKR_OK)
                bobPoint[bobPoint.count - 1] ^= 1
                #expect(
                    try Self.ecdh(
                        token, base: alice.privateKey, peerPoint: bobPoint, template: readableSecretKey(),
                        in: session
                    ).0 == CKR_DOMAIN_PARAMS_INVALID)
                bobPoint[bobPoint.count - 1] ^= 1
                #expect(
                    try Self.ecdh(
                        token, base: alice.privateKey, peerPoint: bobPoint, sharedData: [1],
                        template: readableSecretKey(), in: session
                    ).0 == CKR_MECHANISM_PARAM_INVALID)
                // An AES key of 16 bytes from a 32-byte secret needs CKA_VALUE_LEN; 33 is too many.
                #expect(
                    try Self.ecdh(
                        token, base: alice.privateKey, peerPoint: bobPoint,
                        template: readableSecretKey(type: UInt(CKK_AES), length: 33), in: session
                    ).0 == CKR_TEMPLATE_INCONSISTENT)
                #expect(
                    try Self.ecdh(
                        token, base: alice.privateKey, peerPoint: bobPoint,
                        template: readableSecretKey(type: UInt(CKK_AES), length: 16), in: session
                    ).0 == CKR_OK)
            }
        }

        @Test(
            "ECDH from a key whose access control needs presence is refused: C_DeriveKey cannot take the PIN"
        )
        func ecdhNeedsThePINOfAnAccessControlledKey() throws {
            try withLoggedInToken { token, session in
                let guarded = try token.generateKeyPair(
                    .p256,
                    privateAttributes: [
                        Attribute(CKA_DERIVE, bool: true),
                        Attribute(
                            CK_ATTRIBUTE_TYPE(CKA_P11K_ACCESS_CONTROL),
                            ulong: CK_ULONG(P11K_ACCESS_CONTROL_USER_PRESENCE)),
                    ], in: session)
                let plain = try token.generateKeyPair(
                    .p256, privateAttributes: [Attribute(CKA_DERIVE, bool: true)], in: session)
                let peerPoint = try Self.point(token, of: plain.publicKey, in: session)
                #expect(
                    try Self.ecdh(
                        token, base: guarded.privateKey, peerPoint: peerPoint, template: readableSecretKey(),
                        in: session
                    ).0 == CKR_KEY_FUNCTION_NOT_PERMITTED)
                #expect(
                    try Self.ecdh(
                        token, base: plain.privateKey, peerPoint: peerPoint, template: readableSecretKey(),
                        in: session
                    ).0 == CKR_OK)
            }
        }

        @Test("HKDF: RFC 5869 A.1 as a key, and as a data object with CKM_HKDF_DATA")
        func hkdf() throws {
            try withLoggedInToken { token, session in
                let ikm = [UInt8](repeating: 0x0b, count: 22)
                let base = try token.createSecretKey(
                    ikm, type: UInt(CKK_GENERIC_SECRET), extra: [Attribute(CKA_DERIVE, bool: true)],
                    in: session)
                let expected = bytes(
                    hex:
                        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
                )
                for type in [CKM_HKDF_DERIVE, CKM_HKDF_DATA] {
                    let box = MechanismBox(type)
                    let salt = box.copy(bytes(hex: "000102030405060708090a0b0c"))
                    let info = box.copy(bytes(hex: "f0f1f2f3f4f5f6f7f8f9"))
                    box.setParameter(
                        CK_HKDF_PARAMS(
                            bExtract: 1, bExpand: 1, prfHashMechanism: CK_MECHANISM_TYPE(CKM_SHA256),
                            ulSaltType: CK_ULONG(CKF_HKDF_SALT_DATA),
                            pSalt: salt.baseAddress?.assumingMemoryBound(to: UInt8.self), ulSaltLen: 13,
                            hSaltKey: 0,
                            pInfo: info.baseAddress?.assumingMemoryBound(to: UInt8.self), ulInfoLen: 10))
                    let template =
                        type == CKM_HKDF_DATA
                        ? [
                            Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_DATA)),
                            Attribute(CKA_VALUE_LEN, ulong: 42),
                        ]
                        : readableSecretKey(length: 42)
                    let (rv, key) = try token.derive(box, baseKey: base, template: template, in: session)
                    #expect(rv == CKR_OK)
                    #expect(try token.attribute(CKA_VALUE, of: key, in: session) == expected)
                }
                // Neither extract nor expand is a bad parameter.
                let box = MechanismBox(CKM_HKDF_DERIVE)
                box.setParameter(
                    CK_HKDF_PARAMS(
                        bExtract: 0, bExpand: 0, prfHashMechanism: CK_MECHANISM_TYPE(CKM_SHA256),
                        ulSaltType: CK_ULONG(CKF_HKDF_SALT_NULL), pSalt: nil, ulSaltLen: 0, hSaltKey: 0,
                        pInfo: nil, ulInfoLen: 0))
                #expect(
                    try token.derive(box, baseKey: base, template: readableSecretKey(length: 32), in: session)
                        .0 == CKR_MECHANISM_PARAM_INVALID)
            }
        }
    }

    @Suite("No secret key byte is in the store in clear")
    struct SecretKeysAtRest {
        @Test(
            "After import, generation, unwrap, derivation and copy of token keys, a raw scan finds none of their bytes"
        )
        func rawScan() throws {
            try withLoggedInToken { token, session in
                let onToken = [Attribute(CKA_TOKEN, bool: true)]
                let imported = (0..<32).map { UInt8(0xA0 &+ $0) }
                let key = try token.createSecretKey(
                    imported,
                    extra: onToken + [
                        Attribute(CKA_EXTRACTABLE, bool: true), Attribute(CKA_SENSITIVE, bool: false),
                    ] + wrapping, in: session)
                let generated = try token.generateSecretKey(
                    [Attribute(CKA_VALUE_LEN, ulong: 32)] + onToken + extractable, in: session)
                let generatedValue = try #require(
                    try token.attribute(CKA_VALUE, of: generated.1, in: session))
                let wrapped = try token.wrap(
                    MechanismBox(CKM_AES_KEY_WRAP), wrappingKey: key, key: generated.1, in: session)
                let unwrapped = try token.unwrap(
                    MechanismBox(CKM_AES_KEY_WRAP), unwrappingKey: key, wrapped.1,
                    template: readableSecretKey(type: UInt(CKK_AES)) + onToken, in: session)
                #expect(unwrapped.0 == CKR_OK)
                let base = try token.createSecretKey(
                    (0..<40).map { UInt8(0x30 &+ $0) }, type: UInt(CKK_GENERIC_SECRET),
                    extra: onToken + [Attribute(CKA_DERIVE, bool: true)], in: session)
                let box = MechanismBox(CKM_HKDF_DERIVE)
                box.setParameter(
                    CK_HKDF_PARAMS(
                        bExtract: 1, bExpand: 1, prfHashMechanism: CK_MECHANISM_TYPE(CKM_SHA256),
                        ulSaltType: CK_ULONG(CKF_HKDF_SALT_NULL), pSalt: nil, ulSaltLen: 0, hSaltKey: 0,
                        pInfo: nil, ulInfoLen: 0))
                let derived = try token.derive(
                    box, baseKey: base, template: readableSecretKey(length: 32) + onToken, in: session)
                #expect(derived.0 == CKR_OK)
                let derivedValue = try #require(try token.attribute(CKA_VALUE, of: derived.1, in: session))
                let copy = try token.copy(key, with: onToken, in: session)
                #expect(copy.0 == CKR_OK)
                _ = try token.m.C_CloseSession(session)
                for (what, secret) in [
                    ("imported", imported), ("generated", generatedValue), ("derived", derivedValue),
                    ("derivation base", (0..<40).map { UInt8(0x30 &+ $0) }),
                ] {
                    #expect(
                        token.storeFiles(containing: secret).isEmpty,
                        "the \(what) key is in the store in clear")
                }
                #expect(!token.storeFiles().isEmpty)
            }
        }
    }
}
