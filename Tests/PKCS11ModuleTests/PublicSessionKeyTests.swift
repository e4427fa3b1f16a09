import CPKCS11
import Foundation
import Testing

// Public session keys (CKA_TOKEN=FALSE, CKA_PRIVATE=FALSE) are made and used
// in a public session with no login, as OpenSSL 3's pkcs11-provider imports PEM keys and HKDF
// input; they are sealed under this process's session key, and a copy into the token (after
// login) or out of it still works.

private let publicSession = [flag(CKA_TOKEN, false), flag(CKA_PRIVATE, false)]
private let sessionMessage = Array("a public session key needs no login".utf8)

/// A P-256 private key template from a random scalar, with `flags` in place of its CKA_TOKEN.
private func ecKeyTemplate(label: String, _ flags: [Attribute]) -> [Attribute] {
    ecPrivateKeyTemplate(scalar: randomP256Scalar(), label: label).filter { $0.type != CKA_TOKEN } + flags
}

extension TestToken {
    /// A P-256 public key session object for the private key `privateKey` (its CKA_EC_POINT
    /// from the private key's CKA_PUBLIC_KEY_INFO, whose last 65 bytes are the point).
    fileprivate func publicHalf(of privateKey: CK_OBJECT_HANDLE, in session: CK_SESSION_HANDLE) throws
        -> CK_OBJECT_HANDLE
    {
        let info = try #require(try attribute(CKA_PUBLIC_KEY_INFO, of: privateKey, in: session))
        try #require(info.count > 65)
        return try createObject(
            [
                Attribute(CKA_CLASS, ulong: CKO_PUBLIC_KEY), Attribute(CKA_KEY_TYPE, ulong: CKK_EC),
                Attribute(CKA_EC_PARAMS, KeyKind.p256Parameters),
                Attribute(CKA_EC_POINT, [0x04, 0x41] + info.suffix(65)), flag(CKA_VERIFY, true),
            ] + publicSession, in: session)
    }

    /// Signs with `privateKey` and verifies with `publicKey`: CKR_OK when both work.
    fileprivate func signAndVerify(
        _ privateKey: CK_OBJECT_HANDLE, _ publicKey: CK_OBJECT_HANDLE, in session: CK_SESSION_HANDLE
    ) throws -> CK_RV {
        let (rv, signature) = try sign(sessionMessage, with: privateKey, .p256, in: session)
        guard rv == CKR_OK else { return rv }
        return try verify(signature, over: sessionMessage, with: publicKey, .p256, in: session)
    }

    /// Encrypts a block with `key` (CKM_AES_ECB) and decrypts it again: CKR_OK when the block
    /// comes back.
    fileprivate func roundTrip(_ key: CK_OBJECT_HANDLE, in session: CK_SESSION_HANDLE) throws -> CK_RV {
        let block = [UInt8](repeating: 0x42, count: 16)
        let (encrypted, ciphertext) = try crypt(
            MechanismBox(CKM_AES_ECB), key: key, block, encrypt: true, in: session)
        guard encrypted == CKR_OK else { return encrypted }
        let (decrypted, plaintext) = try crypt(
            MechanismBox(CKM_AES_ECB), key: key, ciphertext, encrypt: false, in: session)
        guard decrypted == CKR_OK else { return decrypted }
        return plaintext == block ? CKR_OK : CKR_GENERAL_ERROR
    }
}

extension ModuleTests {
    @Suite("Public session keys need no login")
    struct PublicSessionKeys {
        @Test(
            "not logged in, R/O and R/W sessions create, generate and derive public session keys and use them",
            arguments: [false, true])
        func publicSessionKeysWithoutLogin(readWrite: Bool) throws {
            try withToken { token in
                try token.setPINs()
                let session = try token.openSession(readWrite: readWrite)
                // An EC private key from known values (a PEM import): signs, and verifies.
                let (created, ecKey) = try token.create(
                    ecKeyTemplate(label: "pem", publicSession), in: session)
                try #require(created == CKR_OK, "C_CreateObject(EC private key) returned \(rvName(created))")
                let ecPublic = try token.publicHalf(of: ecKey, in: session)
                #expect(try token.signAndVerify(ecKey, ecPublic, in: session) == CKR_OK)
                #expect(try token.probe(CKA_VALUE, of: ecKey, in: session).0 == CKR_ATTRIBUTE_SENSITIVE)

                // An AES key from known values: encrypts and decrypts.
                let aes = try token.createSecretKey(
                    [UInt8](repeating: 0x11, count: 32),
                    extra: publicSession + [flag(CKA_ENCRYPT, true), flag(CKA_DECRYPT, true)], in: session)
                #expect(try token.roundTrip(aes, in: session) == CKR_OK)

                // A generic secret as HKDF input (RFC 5869 A.1).
                let ikm = try token.createSecretKey(
                    [UInt8](repeating: 0x0b, count: 22), type: UInt(CKK_GENERIC_SECRET),
                    extra: publicSession + [flag(CKA_DERIVE, true)], in: session)
                let box = MechanismBox(CKM_HKDF_DERIVE)
                let salt = box.copy(bytes(hex: "000102030405060708090a0b0c"))
                let info = box.copy(bytes(hex: "f0f1f2f3f4f5f6f7f8f9"))
                box.setParameter(
                    CK_HKDF_PARAMS(
                        bExtract: 1, bExpand: 1, prfHashMechanism: CK_MECHANISM_TYPE(CKM_SHA256),
                        ulSaltType: CK_ULONG(CKF_HKDF_SALT_DATA),
                        pSalt: salt.baseAddress?.assumingMemoryBound(to: UInt8.self), ulSaltLen: 13,
                        hSaltKey: 0,
                        pInfo: info.baseAddress?.assumingMemoryBound(to: UInt8.self), ulInfoLen: 10))
                let (derived, okm) = try token.derive(
                    box, baseKey: ikm, template: readableSecretKey(length: 42) + publicSession, in: session)
                try #require(derived == CKR_OK, "C_DeriveKey(CKM_HKDF_DERIVE) returned \(rvName(derived))")
                #expect(
                    try token.attribute(CKA_VALUE, of: okm, in: session)
                        == bytes(
                            hex:
                                "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
                        ))

                // A generated key pair and a generated AES key.
                let (generated, pair) = try token.generate(
                    .p256, publicExtra: publicSession, privateExtra: publicSession, in: session)
                try #require(generated == CKR_OK, "C_GenerateKeyPair returned \(rvName(generated))")
                #expect(try token.signAndVerify(pair.privateKey, pair.publicKey, in: session) == CKR_OK)
                let (made, generatedAES) = try token.generateSecretKey(
                    [
                        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY)),
                        Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_AES)),
                        Attribute(CKA_VALUE_LEN, ulong: 32),
                        flag(CKA_ENCRYPT, true), flag(CKA_DECRYPT, true),
                    ] + publicSession, in: session)
                try #require(made == CKR_OK, "C_GenerateKey returned \(rvName(made))")
                #expect(try token.roundTrip(generatedAES, in: session) == CKR_OK)

                // Private session objects and public token keys still need a login.
                let (privateKey, _) = try token.create(
                    ecKeyTemplate(label: "private", [flag(CKA_TOKEN, false), flag(CKA_PRIVATE, true)]),
                    in: session)
                #expect(privateKey == CKR_USER_NOT_LOGGED_IN, "got \(rvName(privateKey))")
                let (tokenKey, _) = try token.create(
                    ecKeyTemplate(label: "token", [flag(CKA_TOKEN, true), flag(CKA_PRIVATE, false)]),
                    in: session)
                #expect(
                    tokenKey == (readWrite ? CKR_USER_NOT_LOGGED_IN : CKR_SESSION_READ_ONLY),
                    "got \(rvName(tokenKey))")
            }
        }

        @Test(
            "a public session key copied into the token after login, and a token key copied out, still work")
        func copiesBetweenSessionAndTokenWork() throws {
            try withToken { token in
                try token.setPINs()
                let session = try token.openSession()
                let ecKey = try token.createObject(
                    ecKeyTemplate(label: "session", publicSession), in: session)
                let ecPublic = try token.publicHalf(of: ecKey, in: session)
                let aes = try token.createSecretKey(
                    [UInt8](repeating: 0x22, count: 16),
                    extra: publicSession + [flag(CKA_ENCRYPT, true), flag(CKA_DECRYPT, true)], in: session)
                // Into the token: it needs the token key, so a login.
                #expect(
                    try token.copy(ecKey, with: [flag(CKA_TOKEN, true)], in: session).0
                        == CKR_USER_NOT_LOGGED_IN)
                try token.logInUser(session)
                for privateFlag in [false, true] {
                    let (rv, tokenEC) = try token.copy(
                        ecKey, with: [flag(CKA_TOKEN, true), flag(CKA_PRIVATE, privateFlag)], in: session)
                    try #require(rv == CKR_OK, "C_CopyObject(EC key to token) returned \(rvName(rv))")
                    #expect(try token.signAndVerify(tokenEC, ecPublic, in: session) == CKR_OK)
                    let (copied, tokenAES) = try token.copy(
                        aes, with: [flag(CKA_TOKEN, true), flag(CKA_PRIVATE, privateFlag)], in: session)
                    try #require(
                        copied == CKR_OK, "C_CopyObject(AES key to token) returned \(rvName(copied))")
                    #expect(try token.roundTrip(tokenAES, in: session) == CKR_OK)
                    // And out again, into a public session object.
                    let (back, sessionEC) = try token.copy(
                        tokenEC, with: [flag(CKA_TOKEN, false), flag(CKA_PRIVATE, false)], in: session)
                    try #require(back == CKR_OK, "C_CopyObject(EC key to session) returned \(rvName(back))")
                    let (backAES, sessionAES) = try token.copy(
                        tokenAES, with: [flag(CKA_TOKEN, false), flag(CKA_PRIVATE, false)], in: session)
                    try #require(
                        backAES == CKR_OK, "C_CopyObject(AES key to session) returned \(rvName(backAES))")
                    // After logout the public session copies still work; the token ones are sealed.
                    try #require(try token.m.C_Logout(session) == CKR_OK)
                    #expect(try token.signAndVerify(sessionEC, ecPublic, in: session) == CKR_OK)
                    #expect(try token.roundTrip(sessionAES, in: session) == CKR_OK)
                    try token.logInUser(session)
                }
            }
        }
    }
}
