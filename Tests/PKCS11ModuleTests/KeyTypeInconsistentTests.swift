import CPKCS11
import Testing

// A key of the wrong kind for a mechanism (another key type, or another
// class of key: a public key to sign, a secret key for RSA, an RSA key for AES) is
// CKR_KEY_TYPE_INCONSISTENT (CKR_WRAPPING_/UNWRAPPING_KEY_TYPE_INCONSISTENT for the wrapping
// functions), decided in one place in the core; a handle that names no key stays
// CKR_KEY_HANDLE_INVALID.

/// The keys of the table: every kind, each allowed every use its kind may have.
private struct Keys {
    let rsa: KeyPair
    let ec: KeyPair
    let ed25519: KeyPair
    let aes: CK_OBJECT_HANDLE
    let generic: CK_OBJECT_HANDLE
    let certificate: CK_OBJECT_HANDLE
    let ecPoint: [UInt8]
}

extension TestToken {
    fileprivate func pair(
        _ mechanismType: UInt, public publicTemplate: [Attribute], private privateTemplate: [Attribute],
        in session: CK_SESSION_HANDLE
    ) throws -> KeyPair {
        var mechanism = CK_MECHANISM(
            mechanism: CK_MECHANISM_TYPE(mechanismType), pParameter: nil, ulParameterLen: 0)
        var pair = KeyPair(publicKey: 0, privateKey: 0)
        let generate = try m.C_GenerateKeyPair
        let rv = withTemplate(publicTemplate) { publicEntries, publicCount in
            withTemplate(privateTemplate + [Attribute(CKA_PRIVATE, bool: true)]) {
                privateEntries, privateCount in
                generate(
                    session, &mechanism, publicEntries, publicCount, privateEntries, privateCount,
                    &pair.publicKey, &pair.privateKey)
            }
        }
        try #require(
            rv == CKR_OK, "C_GenerateKeyPair(0x\(String(mechanismType, radix: 16))): \(name(of: rv))")
        return pair
    }

    fileprivate func keys(in session: CK_SESSION_HANDLE) throws -> Keys {
        let rsa = try pair(
            UInt(CKM_RSA_PKCS_KEY_PAIR_GEN),
            public: [
                Attribute(CKA_MODULUS_BITS, ulong: 2048), Attribute(CKA_VERIFY, bool: true),
                Attribute(CKA_ENCRYPT, bool: true), Attribute(CKA_WRAP, bool: true),
            ],
            private: [
                Attribute(CKA_SIGN, bool: true), Attribute(CKA_DECRYPT, bool: true),
                Attribute(CKA_UNWRAP, bool: true), Attribute(CKA_DERIVE, bool: true),
            ], in: session)
        let ec = try pair(
            UInt(CKM_EC_KEY_PAIR_GEN),
            public: [Attribute(CKA_EC_PARAMS, p256Parameters), Attribute(CKA_VERIFY, bool: true)],
            private: [Attribute(CKA_SIGN, bool: true), Attribute(CKA_DERIVE, bool: true)], in: session)
        let ed25519 = try pair(
            UInt(CKM_EC_EDWARDS_KEY_PAIR_GEN),
            public: [Attribute(CKA_EC_PARAMS, ed25519Parameters), Attribute(CKA_VERIFY, bool: true)],
            private: [Attribute(CKA_SIGN, bool: true)], in: session)
        let every = [CKA_ENCRYPT, CKA_DECRYPT, CKA_SIGN, CKA_VERIFY, CKA_WRAP, CKA_UNWRAP, CKA_DERIVE].map {
            Attribute($0, bool: true)
        }
        let aes = try createSecretKey(
            [UInt8](repeating: 0x11, count: 16), extra: every + [Attribute(CKA_EXTRACTABLE, bool: true)],
            in: session)
        let generic = try createSecretKey(
            [UInt8](repeating: 0x22, count: 32), type: UInt(CKK_GENERIC_SECRET),
            extra: [
                Attribute(CKA_SIGN, bool: true), Attribute(CKA_VERIFY, bool: true),
                Attribute(CKA_DERIVE, bool: true),
            ],
            in: session)
        let certificate = try createCertificate(try Fixtures.alice.get(), in: session)
        let point = try #require(try attribute(CKA_EC_POINT, of: ec.publicKey, in: session))
        return Keys(
            rsa: rsa, ec: ec, ed25519: ed25519, aes: aes, generic: generic, certificate: certificate,
            ecPoint: point)
    }
}

/// One row: the call, with its mechanism, on the key it names.
private struct Row {
    let label: String
    let expected: CK_RV
    let run: (TestToken, CK_SESSION_HANDLE, Keys) throws -> CK_RV
}

private func initRow(
    _ function: String, _ type: UInt, parameter: [UInt8]? = nil, _ keyName: String,
    _ key: @escaping (Keys) -> CK_OBJECT_HANDLE, expected: CK_RV = CK_RV(CKR_KEY_TYPE_INCONSISTENT)
) -> Row {
    Row(label: "\(function)(0x\(String(type, radix: 16))) with \(keyName)", expected: expected) {
        token, session, keys in
        let box = MechanismBox(type, parameter: parameter)
        let m = token.m
        switch function {
        case "C_SignInit": return try m.C_SignInit(session, &box.mechanism, key(keys))
        case "C_VerifyInit": return try m.C_VerifyInit(session, &box.mechanism, key(keys))
        case "C_EncryptInit": return try m.C_EncryptInit(session, &box.mechanism, key(keys))
        default: return try m.C_DecryptInit(session, &box.mechanism, key(keys))
        }
    }
}

/// CKM_RSA_PKCS_OAEP with SHA-1 and no label.
private func oaep() -> MechanismBox {
    let box = MechanismBox(CKM_RSA_PKCS_OAEP)
    box.setParameter(
        CK_RSA_PKCS_OAEP_PARAMS(
            hashAlg: CK_MECHANISM_TYPE(CKM_SHA_1), mgf: CK_RSA_PKCS_MGF_TYPE(CKG_MGF1_SHA1),
            source: CK_RSA_PKCS_OAEP_SOURCE_TYPE(CKZ_DATA_SPECIFIED), pSourceData: nil, ulSourceDataLen: 0))
    return box
}

private func wrapRow(
    _ label: String, _ box: @escaping () -> MechanismBox, _ wrappingKey: @escaping (Keys) -> CK_OBJECT_HANDLE,
    expected: CK_RV = CK_RV(CKR_WRAPPING_KEY_TYPE_INCONSISTENT)
) -> Row {
    Row(label: "C_WrapKey(\(label))", expected: expected) { token, session, keys in
        let mechanism = box()
        var length: CK_ULONG = 0
        return try token.m.C_WrapKey(session, &mechanism.mechanism, wrappingKey(keys), keys.aes, nil, &length)
    }
}

private func unwrapRow(
    _ label: String, _ box: @escaping () -> MechanismBox, wrappedLength: Int,
    _ unwrappingKey: @escaping (Keys) -> CK_OBJECT_HANDLE
) -> Row {
    Row(label: "C_UnwrapKey(\(label))", expected: CK_RV(CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT)) {
        token, session, keys in
        try token.unwrap(
            box(), unwrappingKey: unwrappingKey(keys), [UInt8](repeating: 0x33, count: wrappedLength),
            template: readableSecretKey(type: UInt(CKK_AES)), in: session
        ).0
    }
}

private func deriveRow(_ label: String, ecdh: Bool, _ base: @escaping (Keys) -> CK_OBJECT_HANDLE) -> Row {
    Row(label: "C_DeriveKey(\(label))", expected: CK_RV(CKR_KEY_TYPE_INCONSISTENT)) { token, session, keys in
        let box: MechanismBox
        if ecdh {
            box = MechanismBox(CKM_ECDH1_DERIVE)
            let point = box.copy(keys.ecPoint).baseAddress?.assumingMemoryBound(to: UInt8.self)
            box.setParameter(
                CK_ECDH1_DERIVE_PARAMS(
                    kdf: CK_ULONG(CKD_NULL), ulSharedDataLen: 0, pSharedData: nil,
                    ulPublicDataLen: CK_ULONG(keys.ecPoint.count), pPublicData: point))
        } else {
            box = MechanismBox(CKM_HKDF_DERIVE)
            box.setParameter(
                CK_HKDF_PARAMS(
                    bExtract: 1, bExpand: 1, prfHashMechanism: CK_MECHANISM_TYPE(CKM_SHA256),
                    ulSaltType: CK_ULONG(CKF_HKDF_SALT_NULL), pSalt: nil, ulSaltLen: 0, hSaltKey: 0,
                    pInfo: nil,
                    ulInfoLen: 0))
        }
        return try token.derive(
            box, baseKey: base(keys), template: readableSecretKey(length: 16), in: session
        ).0
    }
}

/// The table: each row a call that must refuse its key.
private func rows() -> [Row] {
    [
        initRow("C_SignInit", UInt(CKM_SHA256_RSA_PKCS), "an AES key", \.aes),
        initRow("C_SignInit", UInt(CKM_SHA256_RSA_PKCS), "a P-256 private key", \.ec.privateKey),
        initRow("C_SignInit", UInt(CKM_ECDSA), "an RSA private key", \.rsa.privateKey),
        initRow("C_SignInit", UInt(CKM_ECDSA), "a P-256 public key", \.ec.publicKey),
        initRow("C_SignInit", UInt(CKM_EDDSA), "a P-256 private key", \.ec.privateKey),
        initRow("C_SignInit", UInt(CKM_SHA256_HMAC), "an RSA private key", \.rsa.privateKey),
        initRow("C_SignInit", UInt(CKM_AES_CMAC), "a generic secret", \.generic),
        initRow("C_VerifyInit", UInt(CKM_ECDSA), "an AES key", \.aes),
        initRow("C_VerifyInit", UInt(CKM_SHA256_HMAC), "a P-256 public key", \.ec.publicKey),
        initRow("C_VerifyInit", UInt(CKM_EDDSA), "an RSA public key", \.rsa.publicKey),
        initRow(
            "C_EncryptInit", UInt(CKM_AES_CBC_PAD), parameter: [UInt8](repeating: 0, count: 16),
            "an RSA public key", \.rsa.publicKey),
        initRow("C_DecryptInit", UInt(CKM_AES_ECB), "an RSA private key", \.rsa.privateKey),
        initRow("C_EncryptInit", UInt(CKM_RSA_PKCS), "an AES key", \.aes),
        initRow("C_DecryptInit", UInt(CKM_RSA_PKCS), "a P-256 private key", \.ec.privateKey),
        initRow("C_DecryptInit", UInt(CKM_RSA_PKCS), "an RSA public key", \.rsa.publicKey),
        initRow("C_DecryptInit", UInt(CKM_RSA_X_509), "an Ed25519 private key", \.ed25519.privateKey),
        wrapRow(
            "CKM_AES_KEY_WRAP under an RSA public key", { MechanismBox(CKM_AES_KEY_WRAP) }, \.rsa.publicKey),
        wrapRow(
            "CKM_AES_KEY_WRAP_PAD under a generic secret", { MechanismBox(CKM_AES_KEY_WRAP_PAD) }, \.generic),
        wrapRow("CKM_RSA_PKCS_OAEP under an AES key", oaep, \.aes),
        unwrapRow(
            "CKM_AES_KEY_WRAP under an RSA private key", { MechanismBox(CKM_AES_KEY_WRAP) },
            wrappedLength: 24,
            \.rsa.privateKey),
        unwrapRow("CKM_RSA_PKCS_OAEP under an AES key", oaep, wrappedLength: 256, \.aes),
        deriveRow("CKM_ECDH1_DERIVE from an RSA private key", ecdh: true, \.rsa.privateKey),
        deriveRow("CKM_ECDH1_DERIVE from an AES key", ecdh: true, \.aes),
        deriveRow("CKM_HKDF_DERIVE from a P-256 private key", ecdh: false, \.ec.privateKey),
        deriveRow("CKM_HKDF_DERIVE from an AES key", ecdh: false, \.aes),
        // A handle that names no key at all is no key handle.
        initRow(
            "C_SignInit", UInt(CKM_ECDSA), "a certificate", \.certificate,
            expected: CK_RV(CKR_KEY_HANDLE_INVALID)
        ),
        wrapRow(
            "CKM_AES_KEY_WRAP under a certificate", { MechanismBox(CKM_AES_KEY_WRAP) }, \.certificate,
            expected: CK_RV(CKR_WRAPPING_KEY_HANDLE_INVALID)),
    ]
}

extension ModuleTests {
    @Suite("A key of the wrong type for a mechanism is CKR_KEY_TYPE_INCONSISTENT")
    struct KeyTypeInconsistent {
        @Test(
            "Every *Init, C_WrapKey, C_UnwrapKey and C_DeriveKey answers a key of another type or class with the *_KEY_TYPE_INCONSISTENT code"
        )
        func table() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let keys = try token.keys(in: session)
                for row in rows() {
                    let rv = try row.run(token, session, keys)
                    #expect(
                        rv == row.expected,
                        "\(row.label): \(name(of: rv)), expected \(name(of: row.expected))")
                }
            }
        }
    }
}
