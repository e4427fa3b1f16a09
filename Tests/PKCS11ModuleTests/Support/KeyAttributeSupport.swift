import CPKCS11
import Foundation
import Testing

// What the tests of derived data, check values and CKA_ALLOWED_MECHANISMS share: HKDF parameters, templates
// and the calls that read a key's usages.

/// CKK_EC_MONTGOMERY and CKM_EC_MONTGOMERY_KEY_PAIR_GEN (v3.0), absent from p11-kit 0.24.
let montgomeryKeyType: CK_ULONG = 0x41
let montgomeryKeyPairGeneration: CK_MECHANISM_TYPE = 0x1056
/// id-X25519, id-X448.
let x25519OID: [UInt8] = [0x06, 0x03, 0x2B, 0x65, 0x6E]
let x448OID: [UInt8] = [0x06, 0x03, 0x2B, 0x65, 0x6F]

/// CKM_HKDF_DATA or CKM_HKDF_DERIVE with SHA-256, a fixed info and a data salt (or a salt key).
func hkdfMechanism(_ type: UInt, saltKey: CK_OBJECT_HANDLE? = nil) -> MechanismBox {
    let box = MechanismBox(type)
    let salt = box.copy(Array("the hkdf salt".utf8))
    let info = box.copy(Array("the hkdf info".utf8))
    box.setParameter(
        CK_HKDF_PARAMS(
            bExtract: 1, bExpand: 1, prfHashMechanism: CK_MECHANISM_TYPE(CKM_SHA256),
            ulSaltType: CK_ULONG(saltKey == nil ? CKF_HKDF_SALT_DATA : CKF_HKDF_SALT_KEY),
            pSalt: saltKey == nil ? salt.baseAddress?.assumingMemoryBound(to: UInt8.self) : nil,
            ulSaltLen: saltKey == nil ? 13 : 0, hSaltKey: saltKey ?? 0,
            pInfo: info.baseAddress?.assumingMemoryBound(to: UInt8.self), ulInfoLen: 13))
    return box
}

/// CKA_WRAP and CKA_UNWRAP on an AES key.
let wrapUsages = [Attribute(CKA_WRAP, bool: true), Attribute(CKA_UNWRAP, bool: true)]

/// A token data object of 32 derived bytes, with `extra`.
func derivedDataTemplate(_ extra: [Attribute] = []) -> [Attribute] {
    [
        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_DATA)), Attribute(CKA_TOKEN, bool: true),
        Attribute(CKA_VALUE_LEN, ulong: 32),
    ] + extra
}

/// A generic secret that may derive, as a token object, with `extra`.
func derivingKey(_ extra: [Attribute] = []) -> [Attribute] {
    [Attribute(CKA_DERIVE, bool: true), Attribute(CKA_TOKEN, bool: true)] + extra
}

extension TestToken {
    /// C_GenerateKeyPair with `mechanism` and the two templates as given.
    func generatePair(
        _ mechanism: CK_MECHANISM_TYPE, public publicTemplate: [Attribute],
        private privateTemplate: [Attribute],
        in session: CK_SESSION_HANDLE
    ) throws -> (CK_RV, KeyPair) {
        var mechanism = CK_MECHANISM(mechanism: mechanism, pParameter: nil, ulParameterLen: 0)
        var pair = KeyPair(publicKey: 0, privateKey: 0)
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

    /// The usage attributes of `key` that read TRUE.
    func usages(of key: CK_OBJECT_HANDLE, in session: CK_SESSION_HANDLE) throws -> Set<String> {
        let names: [(CK_ATTRIBUTE_TYPE, String)] = [
            (CKA_ENCRYPT, "encrypt"), (CKA_DECRYPT, "decrypt"), (CKA_SIGN, "sign"), (CKA_VERIFY, "verify"),
            (CKA_SIGN_RECOVER, "signRecover"), (CKA_VERIFY_RECOVER, "verifyRecover"), (CKA_WRAP, "wrap"),
            (CKA_UNWRAP, "unwrap"), (CKA_DERIVE, "derive"),
        ]
        return Set(
            try names.compactMap { type, name in try bool(type, of: key, in: session) == true ? name : nil })
    }
}
