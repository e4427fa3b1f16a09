import CPKCS11
import Foundation
import Testing

/// CKK_EC_MONTGOMERY and CKM_EC_MONTGOMERY_KEY_PAIR_GEN (v3.0 §2.3.7–2.3.8), which p11-kit
/// 0.24's header lacks.
private let ckkECMontgomery: CK_ULONG = 0x41
private let ckmECMontgomeryKeyPairGen: CK_MECHANISM_TYPE = 0x1056
/// RFC 8410 OIDs: id-X25519, id-X448, id-Ed448.
private let x25519Parameters: [UInt8] = [0x06, 0x03, 0x2B, 0x65, 0x6E]
private let x448Parameters: [UInt8] = [0x06, 0x03, 0x2B, 0x65, 0x6F]
private let ed448Parameters: [UInt8] = [0x06, 0x03, 0x2B, 0x65, 0x71]

/// The DER OCTET STRING around a short value (CKA_EC_POINT's form).
private func octetString(_ value: [UInt8]) -> [UInt8] { [0x04, UInt8(value.count)] + value }

extension TestToken {
    /// C_GenerateKeyPair with `mechanism` and CKA_EC_PARAMS `parameters`.
    fileprivate func generateOctetKeyPair(
        _ mechanism: CK_MECHANISM_TYPE, parameters: [UInt8], in session: CK_SESSION_HANDLE
    ) throws -> (CK_RV, KeyPair) {
        var mechanism = CK_MECHANISM(mechanism: mechanism, pParameter: nil, ulParameterLen: 0)
        var pair = KeyPair(publicKey: 0, privateKey: 0)
        // Each kind with the usages its type has: Edwards keys sign and
        // verify, Montgomery keys derive.
        let montgomery = mechanism.mechanism == ckmECMontgomeryKeyPairGen
        let publicTemplate =
            [Attribute(CKA_EC_PARAMS, parameters)] + (montgomery ? [] : [Attribute(CKA_VERIFY, bool: true)])
        let privateTemplate = [
            Attribute(CKA_PRIVATE, bool: true),
            montgomery ? Attribute(CKA_DERIVE, bool: true) : Attribute(CKA_SIGN, bool: true),
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

    /// C_Sign with CKM_EDDSA, with `parameters` as CK_EDDSA_PARAMS when given.
    fileprivate func signEdDSA(
        _ session: CK_SESSION_HANDLE, key: CK_OBJECT_HANDLE, _ message: [UInt8],
        parameters: EdDSAParameters? = nil
    ) throws -> (CK_RV, [UInt8]) {
        let initialize = try m.C_SignInit
        let rv: CK_RV
        if let parameters {
            var bytes = parameters.bytes
            rv = bytes.withUnsafeMutableBytes { buffer in
                var mechanism = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(CKM_EDDSA), pParameter: buffer.baseAddress,
                    ulParameterLen: CK_ULONG(buffer.count))
                return initialize(session, &mechanism, key)
            }
        } else {
            rv = try signInit(session, UInt(CKM_EDDSA), key: key)
        }
        guard rv == CKR_OK else { return (rv, []) }
        let (signRV, signature, _) = try sign(session, message)
        return (signRV, signature)
    }
}

/// CK_EDDSA_PARAMS (v3.0 §2.3.14: CK_BBOOL phFlag; CK_ULONG ulContextDataLen; CK_BYTE_PTR
/// pContextData), which p11-kit 0.24's header lacks, laid out as C does on LP64.
struct EdDSAParameters {
    var prehash: Bool
    var contextLength: CK_ULONG = 0
    var context: UnsafeMutableRawPointer? = nil

    var bytes: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 24)
        bytes[0] = prehash ? 1 : 0
        withUnsafeBytes(of: contextLength) { bytes.replaceSubrange(8..<16, with: $0) }
        withUnsafeBytes(of: context) { bytes.replaceSubrange(16..<24, with: $0) }
        return bytes
    }
}

extension ModuleTests {
    @Suite("Ed448, X25519 and X448 key pairs (v3.0 §2.3.5–2.3.8, §2.3.14)")
    struct OctetKeys {
        /// RFC 8032 §7.4 "-----1 octet".
        static let ed448Private =
            "c4eab05d357007c632f3dbb48489924d552b08fe0c353a0d4a1f00acda2c463afbea67c5e8d2877c5e3bc397a659949e"
            + "f8021e954e0a12274e"
        static let ed448Public =
            "43ba28f430cdff456ae531545f7ecd0ac834a55d9358c0372bfa0c6c6798c0866aea01eb00742802b8438ea4cb82169c"
            + "235160627b4c3a9480"
        static let ed448Signature =
            "26b8f91727bd62897af15e41eb43c377efb9c610d48f2335cb0bd0087810f4352541b143c4b981b7e18f62de8ccdf633"
            + "fc1bf037ab7cd779805e0dbcc0aae1cbcee1afb2e027df36bc04dcecbf154336c19f0af7e0a6472905e799f1953d2a"
            + "0ff3348ab21aa4adafd1d234441cf807c03a00"

        @Test(
            "An imported Ed448 key signs RFC 8032's vector byte for byte with CKM_EDDSA, and its public key verifies"
        )
        func ed448Vector() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let privateKey = try token.createObject(
                    [
                        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_PRIVATE_KEY)),
                        Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_EC_EDWARDS)),
                        Attribute(CKA_EC_PARAMS, ed448Parameters),
                        Attribute(CKA_VALUE, try hexBytes(Self.ed448Private)),
                        Attribute(CKA_SIGN, bool: true),
                    ], in: session)
                let publicKey = try token.createObject(
                    [
                        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_PUBLIC_KEY)),
                        Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(CKK_EC_EDWARDS)),
                        Attribute(CKA_EC_PARAMS, ed448Parameters),
                        Attribute(CKA_EC_POINT, octetString(try hexBytes(Self.ed448Public))),
                        Attribute(CKA_VERIFY, bool: true),
                    ], in: session)
                let (rv, signature) = try token.signEdDSA(session, key: privateKey, [0x03])
                #expect(rv == CKR_OK, "\(name(of: rv))")
                #expect(signature == (try hexBytes(Self.ed448Signature)))
                // CK_EDDSA_PARAMS with phFlag FALSE and no context is pure Ed448 too.
                let pure = EdDSAParameters(prehash: false)
                let (pureRV, pureSignature) = try token.signEdDSA(
                    session, key: privateKey, [0x03], parameters: pure)
                #expect(pureRV == CKR_OK && pureSignature == signature)
                #expect(try token.verifyInit(session, UInt(CKM_EDDSA), key: publicKey) == CKR_OK)
                var message: [UInt8] = [0x03]
                var copy = signature
                #expect(try token.m.C_Verify(session, &message, 1, &copy, CK_ULONG(copy.count)) == CKR_OK)
            }
        }

        @Test("A generated Ed448 key signs with 114-byte signatures that openssl pkeyutl verifies")
        func ed448AgreesWithOpenSSL() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let (rv, pair) = try token.generateOctetKeyPair(
                    CK_MECHANISM_TYPE(CKM_EC_EDWARDS_KEY_PAIR_GEN), parameters: ed448Parameters, in: session)
                try #require(rv == CKR_OK, "\(name(of: rv))")
                #expect(
                    decodeULong(try token.attribute(CKA_KEY_TYPE, of: pair.privateKey, in: session))
                        == CK_ULONG(CKK_EC_EDWARDS))
                #expect(
                    try token.attribute(CKA_EC_PARAMS, of: pair.publicKey, in: session) == ed448Parameters)
                #expect(try token.attribute(CKA_EC_POINT, of: pair.publicKey, in: session)?.count == 59)
                let message = Array("signed by the token, checked by openssl".utf8)
                let (signRV, signature) = try token.signEdDSA(session, key: pair.privateKey, message)
                try #require(signRV == CKR_OK, "\(name(of: signRV))")
                #expect(signature.count == 114)
                let info = try #require(
                    try token.attribute(CKA_PUBLIC_KEY_INFO, of: pair.publicKey, in: session))
                let directory = token.directory
                try Data(info).write(to: URL(fileURLWithPath: directory + "/ed448.pub.der"))
                try Data(message).write(to: URL(fileURLWithPath: directory + "/message"))
                try Data(signature).write(to: URL(fileURLWithPath: directory + "/signature"))
                let result = try runCommand(
                    "/usr/bin/openssl",
                    [
                        "pkeyutl", "-verify", "-pubin", "-inkey", "ed448.pub.der", "-keyform", "DER",
                        "-rawin", "-in",
                        "message", "-sigfile", "signature",
                    ], in: directory)
                #expect(result.status == 0, "\(result.standardError)")
                #expect(result.standardOutput.contains("Signature Verified Successfully"))
            }
        }

        @Test(
            "CKM_EDDSA with a prehash flag or a context string is CKR_MECHANISM_PARAM_INVALID (OpenSSL 3.0 has neither)"
        )
        func ed448ParametersRefused() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let (rv, pair) = try token.generateOctetKeyPair(
                    CK_MECHANISM_TYPE(CKM_EC_EDWARDS_KEY_PAIR_GEN),
                    parameters: [0x13, 0x0A] + Array("edwards448".utf8), in: session)
                try #require(rv == CKR_OK, "\(name(of: rv))")
                let prehash = EdDSAParameters(prehash: true)
                #expect(
                    try token.signEdDSA(session, key: pair.privateKey, [1], parameters: prehash).0
                        == CKR_MECHANISM_PARAM_INVALID)
                var context: [UInt8] = [1, 2, 3]
                try context.withUnsafeMutableBufferPointer { buffer throws in
                    let withContext = EdDSAParameters(
                        prehash: false, contextLength: 3, context: UnsafeMutableRawPointer(buffer.baseAddress)
                    )
                    #expect(
                        try token.signEdDSA(session, key: pair.privateKey, [1], parameters: withContext).0
                            == CKR_MECHANISM_PARAM_INVALID)
                }
            }
        }

        @Test("The Edwards and Montgomery mechanisms report key sizes 255 to 448 bits")
        func mechanismInfo() throws {
            try withToken { token throws in
                for (type, flag) in [
                    (CK_MECHANISM_TYPE(CKM_EC_EDWARDS_KEY_PAIR_GEN), CKF_GENERATE_KEY_PAIR),
                    (CK_MECHANISM_TYPE(CKM_EDDSA), CKF_SIGN),
                    (ckmECMontgomeryKeyPairGen, CKF_GENERATE_KEY_PAIR),
                ] {
                    var info = CK_MECHANISM_INFO()
                    #expect(try token.m.C_GetMechanismInfo(0, type, &info) == CKR_OK)
                    #expect(info.ulMinKeySize == 255 && info.ulMaxKeySize == 448)
                    #expect(info.flags & CK_FLAGS(flag) != 0)
                }
                var count: CK_ULONG = 0
                #expect(try token.m.C_GetMechanismList(0, nil, &count) == CKR_OK)
                var list = [CK_MECHANISM_TYPE](repeating: 0, count: Int(count))
                #expect(try token.m.C_GetMechanismList(0, &list, &count) == CKR_OK)
                #expect(list.contains(ckmECMontgomeryKeyPairGen))
            }
        }

        @Test(
            "X25519 and X448 key pairs are generated with the OID or the curve name, and refuse to sign: CKR_KEY_TYPE_INCONSISTENT",
            arguments: [
                x25519Parameters, x448Parameters, [0x13, 0x0A] + Array("curve25519".utf8),
                [0x13, 0x08] + Array("curve448".utf8),
            ])
        func montgomeryGeneration(parameters: [UInt8]) throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let (rv, pair) = try token.generateOctetKeyPair(
                    ckmECMontgomeryKeyPairGen, parameters: parameters, in: session)
                try #require(rv == CKR_OK, "\(name(of: rv))")
                for handle in [pair.publicKey, pair.privateKey] {
                    #expect(
                        decodeULong(try token.attribute(CKA_KEY_TYPE, of: handle, in: session))
                            == ckkECMontgomery)
                    #expect(
                        decodeULong(try token.attribute(CKA_KEY_GEN_MECHANISM, of: handle, in: session))
                            == ckmECMontgomeryKeyPairGen)
                }
                let point = try #require(try token.attribute(CKA_EC_POINT, of: pair.publicKey, in: session))
                let isX448 = parameters == x448Parameters || parameters.count == 10
                #expect(point.count == (isX448 ? 58 : 34) && point.first == 0x04)
                // CKA_ID pairs the halves; the private value is sensitive.
                #expect(
                    try token.attribute(CKA_ID, of: pair.publicKey, in: session)
                        == token.attribute(CKA_ID, of: pair.privateKey, in: session))
                for type in [CKM_EDDSA, CKM_ECDSA, CKM_ECDSA_SHA256] {
                    #expect(
                        try token.signInit(session, UInt(type), key: pair.privateKey)
                            == CKR_KEY_TYPE_INCONSISTENT)
                }
            }
        }

        @Test("X25519 keys are imported: the private value raw, the public point raw or DER-wrapped")
        func montgomeryImport() throws {
            // RFC 7748 §6.1 Alice.
            let privateValue = try hexBytes(
                "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
            let publicValue = try hexBytes("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a")
            try withToken { token throws in
                let session = try token.loggedInSession()
                let privateKey = try token.createObject(
                    [
                        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_PRIVATE_KEY)),
                        Attribute(CKA_KEY_TYPE, ulong: ckkECMontgomery),
                        Attribute(CKA_EC_PARAMS, x25519Parameters), Attribute(CKA_VALUE, privateValue),
                        Attribute(CKA_DERIVE, bool: true),
                    ], in: session)
                var publicKeys: [CK_OBJECT_HANDLE] = []
                for point in [publicValue, octetString(publicValue)] {
                    publicKeys.append(
                        try token.createObject(
                            [
                                Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_PUBLIC_KEY)),
                                Attribute(CKA_KEY_TYPE, ulong: ckkECMontgomery),
                                Attribute(CKA_EC_PARAMS, x25519Parameters),
                                Attribute(CKA_EC_POINT, point),
                            ], in: session))
                }
                let id = try token.attribute(CKA_ID, of: privateKey, in: session)
                for publicKey in publicKeys {
                    #expect(
                        try token.attribute(CKA_EC_POINT, of: publicKey, in: session)
                            == octetString(publicValue))
                    #expect(try token.attribute(CKA_ID, of: publicKey, in: session) == id)
                }
                #expect(
                    decodeULong(try token.attribute(CKA_KEY_TYPE, of: privateKey, in: session))
                        == ckkECMontgomery)
                // A value of the wrong length stores nothing.
                let (rv, _) = try token.create(
                    [
                        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_PUBLIC_KEY)),
                        Attribute(CKA_KEY_TYPE, ulong: ckkECMontgomery),
                        Attribute(CKA_EC_PARAMS, x25519Parameters),
                        Attribute(CKA_EC_POINT, Array(publicValue.dropLast())),
                    ], in: session)
                #expect(rv == CKR_ATTRIBUTE_VALUE_INVALID, "\(name(of: rv))")
            }
        }
    }
}
