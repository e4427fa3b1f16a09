import CPKCS11
import Testing

/// Counts and lengths a careless or hostile host may pass: just past Int.max, 2^64 − 1, and
/// Int.max itself (which converts, but names far more memory than any buffer has).
let hostileLengths: [CK_ULONG] = [1 << 63, CK_ULONG.max, CK_ULONG(Int.max), (1 << 63) + 1]

extension ModuleTests {
    @Suite("Bad input: counts and lengths near 2^63 and 2^64")
    struct HostileNumbers {
        @Test("C_FindObjects with a huge ulMaxObjectCount after a partial read returns the rest")
        func findObjectsHugeCount() throws {
            try withToken { token throws in
                let session = try token.openSession()
                for index in 0..<3 {
                    _ = try token.createObject(dataTemplate(label: "item \(index)", value: [1]), in: session)
                }
                for maximum in hostileLengths {
                    let initialize = try token.m.C_FindObjectsInit
                    #expect(withTemplate([]) { initialize(session, $0, $1) } == CKR_OK)
                    var handles = [CK_OBJECT_HANDLE](repeating: 0, count: 4)
                    var count: CK_ULONG = 0
                    #expect(try token.m.C_FindObjects(session, &handles, 1, &count) == CKR_OK)
                    #expect(count == 1)
                    let rv = try token.m.C_FindObjects(session, &handles, maximum, &count)
                    #expect(rv == CKR_OK, "ulMaxObjectCount \(maximum): \(name(of: rv))")
                    #expect(count == 2)
                    #expect(try token.m.C_FindObjects(session, &handles, maximum, &count) == CKR_OK)
                    #expect(count == 0)
                    #expect(try token.m.C_FindObjectsFinal(session) == CKR_OK)
                }
            }
        }

        @Test("C_GetAttributeValue with a count near 2^64 returns CKR_ARGUMENTS_BAD")
        func getAttributeValueHugeCount() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createObject(dataTemplate(label: "x", value: [1]), in: session)
                for count in hostileLengths {
                    var entries = [
                        CK_ATTRIBUTE(type: CK_ATTRIBUTE_TYPE(CKA_LABEL), pValue: nil, ulValueLen: 0)
                    ]
                    let rv = try token.m.C_GetAttributeValue(session, object, &entries, count)
                    #expect(rv == CKR_ARGUMENTS_BAD, "ulCount \(count): \(name(of: rv))")
                }
            }
        }

        @Test("C_CreateObject, C_FindObjectsInit and C_SetAttributeValue refuse a count near 2^64")
        func templateHugeCount() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let object = try token.createObject(dataTemplate(label: "x", value: [1]), in: session)
                for count in hostileLengths {
                    var handle: CK_OBJECT_HANDLE = 0
                    try withTemplate(dataTemplate(label: "y", value: [2])) { entries, _ in
                        let calls: [(String, CK_RV)] = [
                            ("C_CreateObject", try token.m.C_CreateObject(session, entries, count, &handle)),
                            ("C_FindObjectsInit", try token.m.C_FindObjectsInit(session, entries, count)),
                            (
                                "C_SetAttributeValue",
                                try token.m.C_SetAttributeValue(session, object, entries, count)
                            ),
                        ]
                        for (function, rv) in calls {
                            #expect(
                                rv == CKR_ARGUMENTS_BAD, "\(function) with count \(count): \(name(of: rv))")
                        }
                    }
                }
                #expect(try token.find([], in: session) == [object])
            }
        }

        @Test("An attribute length near 2^64 in a template returns CKR_ATTRIBUTE_VALUE_INVALID")
        func attributeHugeLength() throws {
            try withToken { token throws in
                let session = try token.openSession()
                for length in hostileLengths {
                    var label: [UInt8] = [0x61]
                    let rv = try label.withUnsafeMutableBytes { buffer in
                        var entries = [
                            CK_ATTRIBUTE(type: CK_ATTRIBUTE_TYPE(CKA_CLASS), pValue: nil, ulValueLen: 0),
                            CK_ATTRIBUTE(
                                type: CK_ATTRIBUTE_TYPE(CKA_LABEL), pValue: buffer.baseAddress,
                                ulValueLen: length),
                        ]
                        var handle: CK_OBJECT_HANDLE = 0
                        return try token.m.C_CreateObject(session, &entries, 2, &handle)
                    }
                    #expect(rv == CKR_ATTRIBUTE_VALUE_INVALID, "length \(length): \(name(of: rv))")
                }
            }
        }

        @Test("C_Digest and C_DigestUpdate with a data length near 2^64 return CKR_DATA_LEN_RANGE")
        func digestHugeLength() throws {
            try withToken { token throws in
                let session = try token.openSession()
                var data: [UInt8] = [1, 2, 3]
                var output = [UInt8](repeating: 0, count: 64)
                for length in hostileLengths {
                    #expect(try token.digestInit(session) == CKR_OK)
                    var outputLength: CK_ULONG = 64
                    let rv = try token.m.C_Digest(session, &data, length, &output, &outputLength)
                    #expect(rv == CKR_DATA_LEN_RANGE, "C_Digest of \(length) bytes: \(name(of: rv))")
                    #expect(try token.digestInit(session) == CKR_OK)
                    let update = try token.m.C_DigestUpdate(session, &data, length)
                    #expect(
                        update == CKR_DATA_LEN_RANGE, "C_DigestUpdate of \(length) bytes: \(name(of: update))"
                    )
                    // Both failures ended the operation (v2.40 §5.10).
                    #expect(try token.m.C_DigestUpdate(session, &data, 3) == CKR_OPERATION_NOT_INITIALIZED)
                }
            }
        }

        @Test("C_GenerateRandom and C_SeedRandom with a length near 2^64 return CKR_ARGUMENTS_BAD")
        func randomHugeLength() throws {
            try withToken { token throws in
                let session = try token.openSession()
                var buffer = [UInt8](repeating: 0, count: 16)
                for length in hostileLengths {
                    #expect(try token.m.C_GenerateRandom(session, &buffer, length) == CKR_ARGUMENTS_BAD)
                    #expect(try token.m.C_SeedRandom(session, &buffer, length) == CKR_ARGUMENTS_BAD)
                }
            }
        }

        @Test("C_Login, C_InitPIN and C_SetPIN with a PIN length near 2^64 return CKR_PIN_LEN_RANGE")
        func pinHugeLength() throws {
            try withToken { token throws in
                let session = try token.openSession()
                var pin = Array("1234".utf8)
                var newPIN = Array("5678".utf8)
                for length in hostileLengths {
                    #expect(
                        try token.m.C_Login(session, CK_USER_TYPE(CKU_USER), &pin, length)
                            == CKR_PIN_LEN_RANGE)
                    #expect(try token.m.C_SetPIN(session, &pin, length, &newPIN, 4) == CKR_PIN_LEN_RANGE)
                    #expect(try token.m.C_InitPIN(session, &pin, length) == CKR_PIN_LEN_RANGE)
                }
            }
        }

        @Test("C_Sign, C_SignUpdate, C_Verify and C_VerifyUpdate with lengths near 2^64 return a CK_RV")
        func signHugeLength() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.p256, in: session)
                var data = [UInt8](repeating: 7, count: 32)
                var signature = [UInt8](repeating: 0, count: 64)
                for type in [CKM_ECDSA, CKM_ECDSA_SHA256] {
                    for length in hostileLengths {
                        #expect(try token.signInit(session, type, key: pair.privateKey) == CKR_OK)
                        var signatureLength: CK_ULONG = 64
                        let sign = try token.m.C_Sign(session, &data, length, &signature, &signatureLength)
                        #expect(sign == CKR_DATA_LEN_RANGE, "C_Sign of \(length) bytes: \(name(of: sign))")
                        #expect(try token.signInit(session, type, key: pair.privateKey) == CKR_OK)
                        let update = try token.m.C_SignUpdate(session, &data, length)
                        #expect(
                            update == CKR_DATA_LEN_RANGE,
                            "C_SignUpdate of \(length) bytes: \(name(of: update))")

                        #expect(try token.verifyInit(session, type, key: pair.publicKey) == CKR_OK)
                        let verify = try token.m.C_Verify(session, &data, length, &signature, 64)
                        #expect(
                            verify == CKR_DATA_LEN_RANGE, "C_Verify of \(length) bytes: \(name(of: verify))")
                        #expect(try token.verifyInit(session, type, key: pair.publicKey) == CKR_OK)
                        let badSignature = try token.m.C_Verify(session, &data, 32, &signature, length)
                        #expect(badSignature == CKR_SIGNATURE_LEN_RANGE, "signature length \(length)")
                        #expect(try token.verifyInit(session, type, key: pair.publicKey) == CKR_OK)
                        let verifyUpdate = try token.m.C_VerifyUpdate(session, &data, length)
                        #expect(verifyUpdate == CKR_DATA_LEN_RANGE, "C_VerifyUpdate of \(length) bytes")
                    }
                }
                // Every failure ended its operation: a new one starts and works.
                #expect(try token.signInit(session, CKM_ECDSA_SHA256, key: pair.privateKey) == CKR_OK)
                #expect(try token.sign(session, data).rv == CKR_OK)
            }
        }

        @Test(
            "C_Encrypt, C_EncryptUpdate, C_Decrypt and C_DecryptUpdate with lengths near 2^64 return a CK_RV")
        func cipherHugeLength() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.rsa2048, in: session)
                var data = [UInt8](repeating: 7, count: 256)
                var output = [UInt8](repeating: 0, count: 256)
                for length in hostileLengths {
                    var outputLength: CK_ULONG = 256
                    #expect(try token.cipherInit(session, encrypt: true, key: pair.publicKey) == CKR_OK)
                    let encrypt = try token.m.C_Encrypt(session, &data, length, &output, &outputLength)
                    #expect(
                        encrypt == CKR_DATA_LEN_RANGE, "C_Encrypt of \(length) bytes: \(name(of: encrypt))")
                    #expect(try token.cipherInit(session, encrypt: true, key: pair.publicKey) == CKR_OK)
                    let update = try token.m.C_EncryptUpdate(session, &data, length, &output, &outputLength)
                    #expect(
                        update == CKR_DATA_LEN_RANGE,
                        "C_EncryptUpdate of \(length) bytes: \(name(of: update))")
                    #expect(try token.cipherInit(session, encrypt: false, key: pair.privateKey) == CKR_OK)
                    let decrypt = try token.m.C_Decrypt(session, &data, length, &output, &outputLength)
                    #expect(
                        decrypt == CKR_ENCRYPTED_DATA_LEN_RANGE,
                        "C_Decrypt of \(length): \(name(of: decrypt))")
                    #expect(try token.cipherInit(session, encrypt: false, key: pair.privateKey) == CKR_OK)
                    let decryptUpdate = try token.m.C_DecryptUpdate(
                        session, &data, length, &output, &outputLength)
                    #expect(
                        decryptUpdate == CKR_ENCRYPTED_DATA_LEN_RANGE, "C_DecryptUpdate of \(length) bytes")
                }
            }
        }

        @Test("Mechanism parameter lengths near 2^64 return CKR_MECHANISM_PARAM_INVALID")
        func mechanismParameterHugeLength() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.rsa2048, in: session)
                for length in hostileLengths {
                    var pss = CK_RSA_PKCS_PSS_PARAMS(
                        hashAlg: CK_MECHANISM_TYPE(CKM_SHA256), mgf: CK_RSA_PKCS_MGF_TYPE(CKG_MGF1_SHA256),
                        sLen: length)
                    let sign = try withUnsafeMutableBytes(of: &pss) { parameter in
                        var mechanism = CK_MECHANISM(
                            mechanism: CK_MECHANISM_TYPE(CKM_SHA256_RSA_PKCS_PSS),
                            pParameter: parameter.baseAddress,
                            ulParameterLen: CK_ULONG(parameter.count))
                        return try token.m.C_SignInit(session, &mechanism, pair.privateKey)
                    }
                    #expect(sign == CKR_MECHANISM_PARAM_INVALID, "PSS sLen \(length): \(name(of: sign))")
                    var label: [UInt8] = [1]
                    let encrypt = try label.withUnsafeMutableBytes { labelBytes in
                        var oaep = CK_RSA_PKCS_OAEP_PARAMS(
                            hashAlg: CK_MECHANISM_TYPE(CKM_SHA256),
                            mgf: CK_RSA_PKCS_MGF_TYPE(CKG_MGF1_SHA256),
                            source: CK_RSA_PKCS_OAEP_SOURCE_TYPE(CKZ_DATA_SPECIFIED),
                            pSourceData: labelBytes.baseAddress,
                            ulSourceDataLen: length)
                        return try withUnsafeMutableBytes(of: &oaep) { parameter in
                            var mechanism = CK_MECHANISM(
                                mechanism: CK_MECHANISM_TYPE(CKM_RSA_PKCS_OAEP),
                                pParameter: parameter.baseAddress,
                                ulParameterLen: CK_ULONG(parameter.count))
                            return try token.m.C_EncryptInit(session, &mechanism, pair.publicKey)
                        }
                    }
                    #expect(
                        encrypt == CKR_MECHANISM_PARAM_INVALID,
                        "OAEP label length \(length): \(name(of: encrypt))")
                    let plain = try label.withUnsafeMutableBytes { bytes in
                        var mechanism = CK_MECHANISM(
                            mechanism: CK_MECHANISM_TYPE(CKM_SHA256_RSA_PKCS), pParameter: bytes.baseAddress,
                            ulParameterLen: length)
                        return try token.m.C_SignInit(session, &mechanism, pair.privateKey)
                    }
                    #expect(
                        plain == CKR_MECHANISM_PARAM_INVALID, "parameter length \(length): \(name(of: plain))"
                    )
                }
            }
        }

        @Test("A CK_EDDSA_PARAMS at an odd address is read, and pure Ed25519 signs and verifies")
        func misalignedEdDSAParameters() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let pair = try token.generateKeyPair(.ed25519, in: session)
                // CK_EDDSA_PARAMS (v3.0 §2.3.14): phFlag, ulContextDataLen, pContextData; all zero
                // asks for pure Ed25519. Laid out one byte past an aligned address.
                let size = 3 * MemoryLayout<CK_ULONG>.size
                let storage = UnsafeMutableRawPointer.allocate(byteCount: size + 1, alignment: 16)
                defer { storage.deallocate() }
                storage.initializeMemory(as: UInt8.self, repeating: 0, count: size + 1)
                let parameter = storage + 1
                var message = Array("misaligned".utf8)
                for (function, key) in [("C_SignInit", pair.privateKey), ("C_VerifyInit", pair.publicKey)] {
                    var mechanism = CK_MECHANISM(
                        mechanism: CK_MECHANISM_TYPE(CKM_EDDSA), pParameter: parameter,
                        ulParameterLen: CK_ULONG(size))
                    let rv =
                        function == "C_SignInit"
                        ? try token.m.C_SignInit(session, &mechanism, key)
                        : try token.m.C_VerifyInit(session, &mechanism, key)
                    #expect(rv == CKR_OK, "\(function): \(name(of: rv))")
                }
                let signed = try token.sign(session, message)
                #expect(signed.rv == CKR_OK && signed.length == 64)
                var signature = signed.signature
                #expect(
                    try token.m.C_Verify(session, &message, CK_ULONG(message.count), &signature, 64) == CKR_OK
                )
                // A context length at the misaligned offset is seen and refused.
                parameter.storeBytes(of: 5, toByteOffset: MemoryLayout<CK_ULONG>.size, as: UInt8.self)
                var mechanism = CK_MECHANISM(
                    mechanism: CK_MECHANISM_TYPE(CKM_EDDSA), pParameter: parameter,
                    ulParameterLen: CK_ULONG(size))
                #expect(
                    try token.m.C_SignInit(session, &mechanism, pair.privateKey)
                        == CKR_MECHANISM_PARAM_INVALID)
            }
        }
    }
}
