import CPKCS11
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension TestToken {
    /// C_GenerateKeyPair(CKM_RSA_PKCS_KEY_PAIR_GEN) of `bits` bits, usable for everything
    /// unless `sign` or `decrypt` turn the private key's use off.
    func generateRSA(
        bits: CK_ULONG, sign: Bool = true, decrypt: Bool = true, in session: CK_SESSION_HANDLE
    ) throws -> (CK_RV, KeyPair) {
        var mechanism = CK_MECHANISM(
            mechanism: CK_MECHANISM_TYPE(CKM_RSA_PKCS_KEY_PAIR_GEN), pParameter: nil, ulParameterLen: 0)
        var pair = KeyPair(publicKey: 0, privateKey: 0)
        let publicTemplate = [
            Attribute(CKA_MODULUS_BITS, ulong: bits), Attribute(CKA_VERIFY, bool: true),
            Attribute(CKA_ENCRYPT, bool: true),
        ]
        let privateTemplate = [
            Attribute(CKA_PRIVATE, bool: true), Attribute(CKA_SIGN, bool: sign),
            Attribute(CKA_DECRYPT, bool: decrypt),
        ]
        let generate = try m.C_GenerateKeyPair
        let rv = withTemplate(publicTemplate) { publicEntries, publicCount in
            withTemplate(privateTemplate) { privateEntries, privateCount in
                generate(
                    session, &mechanism, publicEntries, publicCount, privateEntries, privateCount,
                    &pair.publicKey, &pair.privateKey)
            }
        }
        return (rv, pair)
    }

    /// C_EncryptInit/C_Encrypt or C_DecryptInit/C_Decrypt with CKM_RSA_X_509, single-part.
    func rawRSA(
        _ session: CK_SESSION_HANDLE, encrypt: Bool, key: CK_OBJECT_HANDLE, _ input: [UInt8]
    ) throws -> (CK_RV, [UInt8]) {
        var mechanism = CK_MECHANISM(
            mechanism: CK_MECHANISM_TYPE(CKM_RSA_X_509), pParameter: nil, ulParameterLen: 0)
        let initRV =
            encrypt
            ? try m.C_EncryptInit(session, &mechanism, key) : try m.C_DecryptInit(session, &mechanism, key)
        guard initRV == CKR_OK else { return (initRV, []) }
        var data = input
        var output = [UInt8](repeating: 0, count: 1024)
        var length = CK_ULONG(output.count)
        let rv =
            encrypt
            ? try m.C_Encrypt(session, &data, CK_ULONG(data.count), &output, &length)
            : try m.C_Decrypt(session, &data, CK_ULONG(data.count), &output, &length)
        return (rv, Array(output.prefix(Int(clamping: length))))
    }

    /// `openssl arguments…` in this test's directory; the test fails if it does.
    @discardableResult
    func openssl(_ arguments: [String]) throws -> String {
        let result = try runCommand("/usr/bin/openssl", arguments, in: directory)
        try #require(
            result.status == 0, "openssl \(arguments.joined(separator: " ")): \(result.standardError)")
        return result.standardOutput
    }

    func write(_ bytes: [UInt8], to name: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + name))
    }

    func read(_ name: String) -> [UInt8] { readFile(directory + "/" + name) }
}

/// `input` with zeros in front to make `length` bytes.
private func leftPadded(_ input: [UInt8], to length: Int) -> [UInt8] {
    [UInt8](repeating: 0, count: max(length - input.count, 0)) + input
}

extension ModuleTests {
    @Suite("Raw RSA, CKM_RSA_X_509 (v2.40 §2.1.8)")
    struct RawRSA {
        @Test(
            "C_Sign with CKM_RSA_X_509 is the private operation on the zero-padded input: openssl's public operation gives it back, single- and multi-part agree"
        )
        func signature() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.rsa2048, in: session)
                let input = Array("raw RSA input, shorter than the modulus".utf8)
                #expect(try token.signInit(session, UInt(CKM_RSA_X_509), key: pair.privateKey) == CKR_OK)
                let (rv, signature, length) = try token.sign(session, input)
                #expect(rv == CKR_OK && length == 256)
                // Multi-part: the parts are collected and signed as one.
                #expect(try token.signInit(session, UInt(CKM_RSA_X_509), key: pair.privateKey) == CKR_OK)
                var first = Array(input.prefix(10))
                var rest = Array(input.dropFirst(10))
                #expect(try token.m.C_SignUpdate(session, &first, CK_ULONG(first.count)) == CKR_OK)
                #expect(try token.m.C_SignUpdate(session, &rest, CK_ULONG(rest.count)) == CKR_OK)
                var multiPart = [UInt8](repeating: 0, count: 256)
                var multiLength = CK_ULONG(256)
                #expect(try token.m.C_SignFinal(session, &multiPart, &multiLength) == CKR_OK)
                #expect(multiPart == signature)

                let info = try #require(
                    try token.attribute(CKA_PUBLIC_KEY_INFO, of: pair.publicKey, in: session))
                try token.write(info, to: "public.der")
                try token.write(signature, to: "signature")
                try token.openssl([
                    "pkeyutl", "-encrypt", "-pubin", "-inkey", "public.der", "-keyform", "DER", "-pkeyopt",
                    "rsa_padding_mode:none", "-in", "signature", "-out", "recovered",
                ])
                #expect(token.read("recovered") == leftPadded(input, to: 256))

                #expect(try token.verifyInit(session, UInt(CKM_RSA_X_509), key: pair.publicKey) == CKR_OK)
                var message = input
                var copy = signature
                #expect(
                    try token.m.C_Verify(session, &message, CK_ULONG(message.count), &copy, 256) == CKR_OK)
                copy[200] ^= 1
                #expect(try token.verifyInit(session, UInt(CKM_RSA_X_509), key: pair.publicKey) == CKR_OK)
                #expect(
                    try token.m.C_Verify(session, &message, CK_ULONG(message.count), &copy, 256)
                        == CKR_SIGNATURE_INVALID)
            }
        }

        @Test(
            "C_Encrypt with CKM_RSA_X_509 is openssl's rsa_padding_mode:none, and C_Decrypt gives back the whole padded m"
        )
        func encryption() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.rsa2048, in: session)
                let message = Array("raw".utf8)
                let (rv, ciphertext) = try token.rawRSA(session, encrypt: true, key: pair.publicKey, message)
                #expect(rv == CKR_OK && ciphertext.count == 256, "\(name(of: rv))")
                let info = try #require(
                    try token.attribute(CKA_PUBLIC_KEY_INFO, of: pair.publicKey, in: session))
                try token.write(info, to: "public.der")
                try token.write(leftPadded(message, to: 256), to: "padded")
                try token.openssl([
                    "pkeyutl", "-encrypt", "-pubin", "-inkey", "public.der", "-keyform", "DER", "-pkeyopt",
                    "rsa_padding_mode:none", "-in", "padded", "-out", "theirs",
                ])
                // Raw RSA has no randomness: openssl's ciphertext is the token's.
                #expect(token.read("theirs") == ciphertext)
                let (decryptRV, plaintext) = try token.rawRSA(
                    session, encrypt: false, key: pair.privateKey, ciphertext)
                #expect(decryptRV == CKR_OK, "\(name(of: decryptRV))")
                #expect(plaintext == leftPadded(message, to: 256))
            }
        }

        @Test("Raw RSA input longer than the modulus is CKR_DATA_LEN_RANGE")
        func tooLong() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.rsa2048, in: session)
                let long = [UInt8](repeating: 1, count: 257)
                #expect(try token.signInit(session, UInt(CKM_RSA_X_509), key: pair.privateKey) == CKR_OK)
                #expect(try token.sign(session, long).rv == CKR_DATA_LEN_RANGE)
                #expect(
                    try token.rawRSA(session, encrypt: true, key: pair.publicKey, long).0
                        == CKR_DATA_LEN_RANGE)
            }
        }
    }

    @Suite("RSA key sizes 1024 to 8192 bits and rsa-minimum-bits")
    struct RSAKeySizes {
        static let rsaMechanisms = [
            CKM_RSA_PKCS_KEY_PAIR_GEN, CKM_RSA_PKCS, CKM_RSA_X_509, CKM_RSA_PKCS_OAEP, CKM_RSA_PKCS_PSS,
            CKM_SHA256_RSA_PKCS, CKM_SHA512_RSA_PKCS_PSS,
        ]

        @Test("Every RSA mechanism reports 1024 to 8192 bits; a 1024-bit key is generated and signs")
        func range() throws {
            try withToken { token throws in
                for type in Self.rsaMechanisms {
                    var info = CK_MECHANISM_INFO()
                    #expect(try token.m.C_GetMechanismInfo(0, CK_MECHANISM_TYPE(type), &info) == CKR_OK)
                    #expect(
                        info.ulMinKeySize == 1024 && info.ulMaxKeySize == 8192,
                        "mechanism 0x\(String(type, radix: 16))")
                }
                let session = try token.loggedInSession()
                let (rv, pair) = try token.generateRSA(bits: 1024, in: session)
                try #require(rv == CKR_OK, "\(name(of: rv))")
                #expect(
                    decodeULong(try token.attribute(CKA_MODULUS_BITS, of: pair.publicKey, in: session))
                        == 1024)
                #expect(
                    try token.signInit(session, UInt(CKM_SHA256_RSA_PKCS), key: pair.privateKey) == CKR_OK)
                let (signRV, signature, _) = try token.sign(session, [1, 2, 3])
                #expect(signRV == CKR_OK && signature.count == 128)
                for bits: CK_ULONG in [1023, 8200] {
                    #expect(
                        try token.generateRSA(bits: bits, in: session).0 == CKR_KEY_SIZE_RANGE, "\(bits) bits"
                    )
                }
            }
        }

        @Test("An 8192-bit key pair is generated, signs, and openssl verifies the signature")
        func largest() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                var started = timespec()
                clock_gettime(CLOCK_MONOTONIC, &started)
                let (rv, pair) = try token.generateRSA(bits: 8192, in: session)
                var ended = timespec()
                clock_gettime(CLOCK_MONOTONIC, &ended)
                try #require(rv == CKR_OK, "\(name(of: rv))")
                // Generation time varies with the primes found; say what it was.
                print("8192-bit RSA generation through the module: \(ended.tv_sec - started.tv_sec) s")
                #expect(
                    decodeULong(try token.attribute(CKA_MODULUS_BITS, of: pair.publicKey, in: session))
                        == 8192)
                #expect(
                    try token.signInit(session, UInt(CKM_SHA256_RSA_PKCS), key: pair.privateKey) == CKR_OK)
                let message = Array("eight thousand bits".utf8)
                let (signRV, signature, _) = try token.sign(session, message, capacity: 1024)
                #expect(signRV == CKR_OK && signature.count == 1024)
                let info = try #require(
                    try token.attribute(CKA_PUBLIC_KEY_INFO, of: pair.publicKey, in: session))
                try token.write(info, to: "public.der")
                try token.write(message, to: "message")
                try token.write(signature, to: "signature")
                let output = try token.openssl([
                    "dgst", "-sha256", "-verify", "public.der", "-keyform", "DER", "-signature", "signature",
                    "message",
                ])
                #expect(output.contains("Verified OK"))
            }
        }

        @Test(
            "rsa-minimum-bits = 2048 raises every RSA mechanism's minimum and refuses 1024-bit generation and import"
        )
        func raisedMinimum() throws {
            try withToken { token throws in
                // A 1024-bit public key, made while the default allows it.
                let session = try token.loggedInSession()
                let (rv, pair) = try token.generateRSA(bits: 1024, in: session)
                try #require(rv == CKR_OK)
                let modulus = try #require(try token.attribute(CKA_MODULUS, of: pair.publicKey, in: session))
                let exponent = try #require(
                    try token.attribute(CKA_PUBLIC_EXPONENT, of: pair.publicKey, in: session))

                try token.configure("rsa-minimum-bits = 2048\n")
                _ = try token.m.C_Finalize(nil)
                try #require(try token.m.C_Initialize(nil) == CKR_OK)
                for type in Self.rsaMechanisms {
                    var info = CK_MECHANISM_INFO()
                    #expect(try token.m.C_GetMechanismInfo(0, CK_MECHANISM_TYPE(type), &info) == CKR_OK)
                    #expect(
                        info.ulMinKeySize == 2048 && info.ulMaxKeySize == 8192,
                        "mechanism 0x\(String(type, radix: 16))")
                }
                let again = try token.openSession()
                try token.logIn(again)
                #expect(try token.generateRSA(bits: 1024, in: again).0 == CKR_KEY_SIZE_RANGE)
                #expect(try token.generateRSA(bits: 2048, in: again).0 == CKR_OK)
                let (importRV, _) = try token.create(
                    [
                        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_PUBLIC_KEY)),
                        Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_RSA)),
                        Attribute(CKA_MODULUS, modulus), Attribute(CKA_PUBLIC_EXPONENT, exponent),
                    ], in: again)
                #expect(importRV == CKR_ATTRIBUTE_VALUE_INVALID, "\(name(of: importRV))")
            }
        }
    }

    @Suite("CKM_ECDSA_SHA224")
    struct ECDSASHA224 {
        /// r ‖ s as a DER ECDSA-Sig-Value, for openssl.
        static func der(_ raw: [UInt8]) -> [UInt8] {
            func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
                var value = Array(bytes.drop(while: { $0 == 0 }))
                if value.isEmpty || (value.first ?? 0) & 0x80 != 0 { value.insert(0, at: 0) }
                return [0x02, UInt8(value.count)] + value
            }
            let half = raw.count / 2
            let body = integer(raw.prefix(half)) + integer(raw.suffix(half))
            return [0x30, UInt8(body.count)] + body
        }

        @Test("CKM_ECDSA_SHA224 signs and verifies, and openssl dgst -sha224 verifies its signature")
        func agreesWithOpenSSL() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.p256, in: session)
                let message = Array("hashed with SHA-224".utf8)
                #expect(try token.signInit(session, UInt(CKM_ECDSA_SHA224), key: pair.privateKey) == CKR_OK)
                let (rv, signature, _) = try token.sign(session, message)
                #expect(rv == CKR_OK && signature.count == 64)
                #expect(try token.verifyInit(session, UInt(CKM_ECDSA_SHA224), key: pair.publicKey) == CKR_OK)
                var data = message
                var copy = signature
                #expect(try token.m.C_Verify(session, &data, CK_ULONG(data.count), &copy, 64) == CKR_OK)
                let info = try #require(
                    try token.attribute(CKA_PUBLIC_KEY_INFO, of: pair.publicKey, in: session))
                try token.write(info, to: "public.der")
                try token.write(message, to: "message")
                try token.write(Self.der(signature), to: "signature.der")
                let output = try token.openssl([
                    "dgst", "-sha224", "-verify", "public.der", "-keyform", "DER", "-signature",
                    "signature.der",
                    "message",
                ])
                #expect(output.contains("Verified OK"))
                // The same signature is not one over SHA-256 of the message.
                let wrong = try runCommand(
                    "/usr/bin/openssl",
                    [
                        "dgst", "-sha256", "-verify", "public.der", "-keyform", "DER", "-signature",
                        "signature.der",
                        "message",
                    ], in: token.directory)
                #expect(wrong.status != 0)
            }
        }
    }
}
