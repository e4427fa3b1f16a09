import CPKCS11
import Foundation
import Testing

// The victims and the attacker's tools of "a sensitive key never leaves the token"
// (PromiseKeyLeakTests.swift): keys with known values, made sensitive and unextractable, and
// keys the attacker made and holds the bytes of.

/// `count` random bytes: a fresh secret per row, so no scan finds a constant by accident.
func randomBytes(_ count: Int) -> [UInt8] {
    (0..<count).map { _ in UInt8.random(in: 0...255) }
}

/// The attributes of a victim's secret: a private token object, sensitive, unextractable.
let victimAttributes = [
    Attribute(CKA_TOKEN, bool: true), Attribute(CKA_PRIVATE, bool: true),
    Attribute(CKA_SENSITIVE, bool: true), Attribute(CKA_EXTRACTABLE, bool: false),
]

/// `victimAttributes` for the key templates of CoreRulesSupport, which say CKA_TOKEN already.
let victimKeyAttributes = Array(victimAttributes.dropFirst())

/// A key the attacker made and knows: it may wrap, unwrap, encrypt and decrypt.
let attackerAttributes = [
    Attribute(CKA_WRAP, bool: true), Attribute(CKA_UNWRAP, bool: true),
    Attribute(CKA_ENCRYPT, bool: true), Attribute(CKA_DECRYPT, bool: true),
    Attribute(CKA_SENSITIVE, bool: false), Attribute(CKA_EXTRACTABLE, bool: true),
]

/// CK_KEY_DERIVATION_STRING_DATA (pData, ulLen) in a box, laid out as C does on LP64.
func stringDataMechanism(_ type: UInt, data: [UInt8]) -> MechanismBox {
    let box = MechanismBox(type)
    let pointer = box.copy(data).baseAddress
    var words: [UInt] = [UInt(bitPattern: pointer), UInt(data.count)]
    let bytes = words.withUnsafeMutableBytes { Array($0) }
    let parameter = box.copy(bytes)
    box.mechanism.pParameter = parameter.baseAddress
    box.mechanism.ulParameterLen = CK_ULONG(bytes.count)
    return box
}

/// A mechanism whose parameter is one CK_ULONG (CKM_CONCATENATE_BASE_AND_KEY's handle,
/// CKM_EXTRACT_KEY_FROM_KEY's bit index).
func ulongMechanism(_ type: UInt, _ value: CK_ULONG) -> MechanismBox {
    let box = MechanismBox(type, parameter: encode(value))
    return box
}

/// CKM_AES_CBC_PAD or CKM_AES_CBC with a zero IV.
func cbcMechanism(_ type: UInt) -> MechanismBox {
    MechanismBox(type, parameter: [UInt8](repeating: 0, count: 16))
}

/// CKM_RSA_PKCS_OAEP with SHA-256 and MGF1-SHA-256, no label.
func oaepMechanism() -> MechanismBox {
    let box = MechanismBox(CKM_RSA_PKCS_OAEP)
    box.setParameter(
        CK_RSA_PKCS_OAEP_PARAMS(
            hashAlg: CK_MECHANISM_TYPE(CKM_SHA256), mgf: CK_ULONG(CKG_MGF1_SHA256),
            source: CK_ULONG(CKZ_DATA_SPECIFIED), pSourceData: nil, ulSourceDataLen: 0))
    return box
}

/// CKM_HKDF_DATA or CKM_HKDF_DERIVE with RFC 5869 test case A.1's salt and info (extract and
/// expand, SHA-256), or with neither step when `identity`.
func rfc5869Mechanism(_ type: UInt, identity: Bool = false) -> MechanismBox {
    let box = MechanismBox(type)
    let salt = box.copy(bytes(hex: "000102030405060708090a0b0c"))
    let info = box.copy(bytes(hex: "f0f1f2f3f4f5f6f7f8f9"))
    box.setParameter(
        CK_HKDF_PARAMS(
            bExtract: identity ? 0 : 1, bExpand: identity ? 0 : 1,
            prfHashMechanism: CK_MECHANISM_TYPE(CKM_SHA256), ulSaltType: CK_ULONG(CKF_HKDF_SALT_DATA),
            pSalt: salt.baseAddress?.assumingMemoryBound(to: UInt8.self), ulSaltLen: 13, hSaltKey: 0,
            pInfo: info.baseAddress?.assumingMemoryBound(to: UInt8.self), ulInfoLen: 10))
    return box
}

/// RFC 5869 test case A.1: its input key (22 × 0x0b) and the 42 bytes derived with
/// `rfc5869Mechanism`'s salt and info.
let hkdfInput = [UInt8](repeating: 0x0b, count: 22)
let hkdfOutput = bytes(
    hex: "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")

extension TestToken {
    /// A victim's sensitive, unextractable secret key with a known value.
    func victimSecret(
        _ value: [UInt8], type: UInt = UInt(CKK_AES), extra: [Attribute] = [], in session: CK_SESSION_HANDLE
    ) throws -> CK_OBJECT_HANDLE {
        try createSecretKey(value, type: type, extra: victimAttributes + extra, in: session)
    }

    /// The attacker's AES-256 key with a known value, for every cipher operation.
    func attackerKey(in session: CK_SESSION_HANDLE) throws -> CK_OBJECT_HANDLE {
        try createSecretKey(randomBytes(32), extra: attackerAttributes, in: session)
    }

    /// One C_GetAttributeValue of `type` into a buffer large enough for any key part (not a
    /// size query): its CK_RV and the bytes it wrote.
    func read(_ type: CK_ATTRIBUTE_TYPE, of object: CK_OBJECT_HANDLE, in session: CK_SESSION_HANDLE) throws
        -> (CK_RV, [UInt8])
    {
        var buffer = [UInt8](repeating: 0, count: 2048)
        let get = try m.C_GetAttributeValue
        var length: CK_ULONG = 0
        let rv = buffer.withUnsafeMutableBytes { raw in
            var entry = CK_ATTRIBUTE(type: type, pValue: raw.baseAddress, ulValueLen: CK_ULONG(raw.count))
            let rv = get(session, object, &entry, 1)
            length = entry.ulValueLen
            return rv
        }
        guard rv == CKR_OK, length != unavailableInformation, let count = Int(exactly: length),
            count <= buffer.count
        else { return (rv, []) }
        return (rv, Array(buffer.prefix(count)))
    }

    /// Wraps `key` under `wrappingKey` with `mechanism`; when that works, unwraps the blob
    /// again under `unwrappingKey` into a readable key and reads it, as the attacker would.
    func wrapAndRecover(
        _ key: CK_OBJECT_HANDLE, under wrappingKey: CK_OBJECT_HANDLE,
        unwrappingWith unwrappingKey: CK_OBJECT_HANDLE,
        mechanism: () -> MechanismBox, secret: [UInt8], in session: CK_SESSION_HANDLE
    ) throws -> AttackResult {
        let (rv, wrapped) = try wrap(mechanism(), wrappingKey: wrappingKey, key: key, in: session)
        guard rv == CKR_OK else { return AttackResult(rv: rv, secret: secret) }
        var obtained = wrapped
        let (unwrapped, copy) = try unwrap(
            mechanism(), unwrappingKey: unwrappingKey, wrapped, template: readableSecretKey(), in: session)
        if unwrapped == CKR_OK { obtained += try readableValue(of: copy, in: session) }
        // A cipher mechanism used to wrap: the attacker decrypts the blob with the same key.
        let (decrypted, plain) = try crypt(
            mechanism(), key: unwrappingKey, wrapped, encrypt: false, in: session)
        if decrypted == CKR_OK { obtained += plain }
        return AttackResult(rv: rv, secret: secret, obtained: obtained)
    }

    /// C_DeriveKey from `base` into an extractable, non-sensitive generic secret, read back.
    func deriveReadable(
        _ box: MechanismBox, from base: CK_OBJECT_HANDLE, length: Int?, secret: [UInt8],
        in session: CK_SESSION_HANDLE
    ) throws -> AttackResult {
        let (rv, key) = try derive(
            box, baseKey: base, template: readableSecretKey(length: length), in: session)
        guard rv == CKR_OK else { return AttackResult(rv: rv, secret: secret) }
        return AttackResult(rv: rv, secret: secret, obtained: try readableValue(of: key, in: session))
    }

    /// SHA-1 or SHA-256 of `data` through the module (C_DigestInit, C_Digest).
    func digest(_ data: [UInt8], mechanism type: UInt) throws -> [UInt8] {
        let session = try openSession(readWrite: false)
        defer { _ = try? m.C_CloseSession(session) }
        var mechanism = CK_MECHANISM(mechanism: CK_MECHANISM_TYPE(type), pParameter: nil, ulParameterLen: 0)
        try #require(try m.C_DigestInit(session, &mechanism) == CKR_OK)
        var input = data
        var output = [UInt8](repeating: 0, count: 64)
        var length = CK_ULONG(output.count)
        try #require(try m.C_Digest(session, &input, CK_ULONG(input.count), &output, &length) == CKR_OK)
        return Array(output.prefix(Int(length)))
    }

    /// Makes the SO's key of the copy-rule attack: an AES key that only wraps, CKA_TRUSTED and
    /// CKA_MODIFIABLE=FALSE, a public token object (the SO sees no private ones). Leaves the
    /// user logged in on `session` again.
    func trustedWrapOnlyKey(in session: CK_SESSION_HANDLE) throws -> CK_OBJECT_HANDLE {
        try #require(try m.C_Logout(session) == CKR_OK)
        let so = try login(session, as: CK_USER_TYPE(CKU_SO), pin: coreSOPIN)
        try #require(so == CKR_OK, "C_Login(CKU_SO) returned \(rvName(so))")
        let key = try createSecretKey(
            randomBytes(32),
            extra: [
                Attribute(CKA_TOKEN, bool: true), Attribute(CKA_PRIVATE, bool: false),
                Attribute(CKA_TRUSTED, bool: true), Attribute(CKA_WRAP, bool: true),
                Attribute(CKA_UNWRAP, bool: false), Attribute(CKA_ENCRYPT, bool: false),
                Attribute(CKA_DECRYPT, bool: false), Attribute(CKA_SIGN, bool: false),
                Attribute(CKA_VERIFY, bool: false), Attribute(CKA_MODIFIABLE, bool: false),
            ], in: session)
        try #require(try m.C_Logout(session) == CKR_OK)
        try logInUser(session)
        return key
    }

    /// A victim key that may leave only wrapped under a trusted key: extractable but sensitive,
    /// CKA_WRAP_WITH_TRUSTED.
    func wrapWithTrustedVictim(_ value: [UInt8], in session: CK_SESSION_HANDLE) throws -> CK_OBJECT_HANDLE {
        try createSecretKey(
            value,
            extra: [
                Attribute(CKA_TOKEN, bool: true), Attribute(CKA_SENSITIVE, bool: true),
                Attribute(CKA_EXTRACTABLE, bool: true), Attribute(CKA_WRAP_WITH_TRUSTED, bool: true),
            ], in: session)
    }

    /// RFC 3394 unwrapping done by hand with C_Decrypt(CKM_AES_ECB) under `key`: what an
    /// attacker holding a decrypting copy of a wrapping key does with an AES-KW blob. Nil when
    /// a decryption is refused.
    func invertAESKeyWrap(_ wrapped: [UInt8], with key: CK_OBJECT_HANDLE, in session: CK_SESSION_HANDLE)
        throws
        -> [UInt8]?
    {
        guard wrapped.count >= 24, wrapped.count % 8 == 0 else { return nil }
        let n = wrapped.count / 8 - 1
        var a = Array(wrapped[0..<8])
        var r = (1...n).map { Array(wrapped[($0 * 8)..<($0 * 8 + 8)]) }
        for j in stride(from: 5, through: 0, by: -1) {
            for i in stride(from: n, through: 1, by: -1) {
                let t = UInt64(n * j + i)
                var counter = withUnsafeBytes(of: t.bigEndian) { Array($0) }
                for index in 0..<8 { counter[index] ^= a[index] }
                let (rv, block) = try crypt(
                    MechanismBox(CKM_AES_ECB), key: key, counter + r[i - 1], encrypt: false, in: session)
                guard rv == CKR_OK, block.count == 16 else { return nil }
                a = Array(block[0..<8])
                r[i - 1] = Array(block[8..<16])
            }
        }
        return r.flatMap { $0 }
    }
}
