import CPKCS11
import Testing

extension ModuleTests {
    /// C_GetMechanismInfo's flags are what every `*Init` and single-call function consults: a
    /// mechanism is refused with CKR_MECHANISM_INVALID for a function its flags do not name,
    /// whatever key it is given. Walks every mechanism the module lists.
    @Suite("Each function refuses a mechanism whose flags do not name it")
    struct MechanismFlags {
        @Test("for every listed mechanism, each function missing from its flags is CKR_MECHANISM_INVALID")
        func everyMissingFlagIsRefused() throws {
            try withToken { token throws in
                let session = try token.loggedInSession()
                let rsa = try token.generateKeyPair(.rsa2048, in: session)
                let ec = try token.generateKeyPair(.p256, in: session)
                let edwards = try token.generateKeyPair(.ed25519, in: session)
                let every = [Attribute(CKA_TOKEN, bool: false)] + usages(true)
                let aes = try token.createSecretKey(
                    [UInt8](repeating: 1, count: 32), extra: every, in: session)
                let generic = try token.createSecretKey(
                    [UInt8](repeating: 2, count: 32), type: UInt(CKK_GENERIC_SECRET), extra: every,
                    in: session)
                /// A key of the mechanism's first key type, so that the refusal cannot be the key's.
                func key(for info: CK_MECHANISM_INFO, _ type: CK_MECHANISM_TYPE, isPrivate: Bool)
                    -> CK_OBJECT_HANDLE
                {
                    switch type {
                    case CK_MECHANISM_TYPE(CKM_EDDSA):
                        return isPrivate ? edwards.privateKey : edwards.publicKey
                    case _ where info.flags & CK_FLAGS(CKF_EC_NAMEDCURVE) != 0:
                        return isPrivate ? ec.privateKey : ec.publicKey
                    case _ where info.ulMaxKeySize >= 1024: return isPrivate ? rsa.privateKey : rsa.publicKey
                    case _ where info.ulMaxKeySize == 32: return aes
                    default: return generic
                    }
                }
                var count: CK_ULONG = 0
                #expect(try token.m.C_GetMechanismList(0, nil, &count) == CKR_OK)
                var types = [CK_MECHANISM_TYPE](repeating: 0, count: Int(count))
                #expect(try token.m.C_GetMechanismList(0, &types, &count) == CKR_OK)
                #expect(count > 50)
                var refusals = 0
                for type in types.prefix(Int(count)) {
                    var info = CK_MECHANISM_INFO()
                    try #require(try token.m.C_GetMechanismInfo(0, type, &info) == CKR_OK)
                    var mechanism = CK_MECHANISM(mechanism: type, pParameter: nil, ulParameterLen: 0)
                    let privateKey = key(for: info, type, isPrivate: true)
                    let publicKey = key(for: info, type, isPrivate: false)
                    var wrapped = [UInt8](repeating: 0, count: 512)
                    var wrappedLength = CK_ULONG(wrapped.count)
                    var made: CK_OBJECT_HANDLE = 0
                    var other: CK_OBJECT_HANDLE = 0
                    let calls: [(UInt, String, () throws -> CK_RV)] = [
                        (CKF_DIGEST, "C_DigestInit", { try token.m.C_DigestInit(session, &mechanism) }),
                        (CKF_SIGN, "C_SignInit", { try token.m.C_SignInit(session, &mechanism, privateKey) }),
                        (
                            CKF_VERIFY, "C_VerifyInit",
                            { try token.m.C_VerifyInit(session, &mechanism, publicKey) }
                        ),
                        (
                            CKF_ENCRYPT, "C_EncryptInit",
                            { try token.m.C_EncryptInit(session, &mechanism, publicKey) }
                        ),
                        (
                            CKF_DECRYPT, "C_DecryptInit",
                            { try token.m.C_DecryptInit(session, &mechanism, privateKey) }
                        ),
                        (
                            CKF_WRAP, "C_WrapKey",
                            {
                                try token.m.C_WrapKey(
                                    session, &mechanism, publicKey, generic, &wrapped, &wrappedLength)
                            }
                        ),
                        (
                            CKF_UNWRAP, "C_UnwrapKey",
                            {
                                try token.m.C_UnwrapKey(
                                    session, &mechanism, privateKey, &wrapped, 40, nil, 0, &made)
                            }
                        ),
                        (
                            CKF_DERIVE, "C_DeriveKey",
                            { try token.m.C_DeriveKey(session, &mechanism, privateKey, nil, 0, &made) }
                        ),
                        (
                            CKF_GENERATE, "C_GenerateKey",
                            { try token.m.C_GenerateKey(session, &mechanism, nil, 0, &made) }
                        ),
                        (
                            CKF_GENERATE_KEY_PAIR, "C_GenerateKeyPair",
                            {
                                try token.m.C_GenerateKeyPair(
                                    session, &mechanism, nil, 0, nil, 0, &made, &other)
                            }
                        ),
                    ]
                    for (flag, function, call) in calls where info.flags & CK_FLAGS(flag) == 0 {
                        let rv = try call()
                        #expect(rv == CKR_MECHANISM_INVALID, "\(function) with \(type): \(name(of: rv))")
                        refusals += 1
                    }
                }
                #expect(refusals > 400)
            }
        }
    }
}

/// Every usage attribute, TRUE or FALSE.
private func usages(_ value: Bool) -> [Attribute] {
    [CKA_ENCRYPT, CKA_DECRYPT, CKA_SIGN, CKA_VERIFY, CKA_WRAP, CKA_UNWRAP, CKA_DERIVE].map {
        Attribute($0, bool: value)
    }
}
