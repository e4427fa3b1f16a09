import CPKCS11
import Foundation
import Testing

/// Bytes from hexadecimal text (spaces ignored), for the known-answer vectors.
func bytes(hex text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count - 1, by: 2).compactMap {
        UInt8(String(digits[$0...$0 + 1]), radix: 16)
    }
}

/// A mechanism with a parameter the test owns: the bytes live as long as the box.
final class MechanismBox {
    var mechanism: CK_MECHANISM
    private var buffers: [UnsafeMutableRawBufferPointer] = []

    init(_ type: UInt, parameter: [UInt8]? = nil) {
        mechanism = CK_MECHANISM(mechanism: CK_MECHANISM_TYPE(type), pParameter: nil, ulParameterLen: 0)
        if let parameter {
            let buffer = copy(parameter)
            mechanism.pParameter = buffer.baseAddress
            mechanism.ulParameterLen = CK_ULONG(parameter.count)
        }
    }

    /// A copy of `bytes` that lives as long as the box (its address goes into parameters).
    func copy(_ bytes: [UInt8]) -> UnsafeMutableRawBufferPointer {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
        buffer.copyBytes(from: bytes)
        buffers.append(buffer)
        return buffer
    }

    /// `value`'s bytes as the parameter.
    func setParameter<T>(_ value: T) {
        let bytes = withUnsafeBytes(of: value) { Array($0) }
        let buffer = copy(bytes)
        mechanism.pParameter = buffer.baseAddress
        mechanism.ulParameterLen = CK_ULONG(bytes.count)
    }

    deinit { for buffer in buffers { buffer.deallocate() } }

    /// CKM_AES_GCM with CK_GCM_PARAMS (v3.0 layout, or v2.40's without ulIvBits).
    static func gcm(iv: [UInt8], aad: [UInt8], tagBits: Int, legacyLayout: Bool = false) -> MechanismBox {
        let box = MechanismBox(CKM_AES_GCM)
        let ivPointer = box.copy(iv).baseAddress
        let aadPointer = aad.isEmpty ? nil : box.copy(aad).baseAddress
        if legacyLayout {
            var words: [UInt] = [
                UInt(bitPattern: ivPointer), UInt(iv.count), UInt(bitPattern: aadPointer), UInt(aad.count),
                UInt(tagBits),
            ]
            let bytes = words.withUnsafeMutableBytes { Array($0) }
            let buffer = box.copy(bytes)
            box.mechanism.pParameter = buffer.baseAddress
            box.mechanism.ulParameterLen = CK_ULONG(bytes.count)
        } else {
            box.setParameter(
                CK_GCM_PARAMS(
                    pIv: ivPointer?.assumingMemoryBound(to: UInt8.self), ulIvLen: CK_ULONG(iv.count),
                    ulIvBits: CK_ULONG(iv.count * 8), pAAD: aadPointer?.assumingMemoryBound(to: UInt8.self),
                    ulAADLen: CK_ULONG(aad.count), ulTagBits: CK_ULONG(tagBits)))
        }
        return box
    }
}

extension TestToken {
    /// Creates a secret key session object with a known value; `extra` overrides defaults.
    func createSecretKey(
        _ value: [UInt8], type: UInt = UInt(CKK_AES), extra: [Attribute] = [], in session: CK_SESSION_HANDLE
    ) throws -> CK_OBJECT_HANDLE {
        var template = [
            Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY)),
            Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(type)),
            Attribute(CKA_VALUE, value),
        ]
        for attribute in extra {
            template.removeAll { $0.type == attribute.type }
            template.append(attribute)
        }
        return try createObject(template, in: session)
    }

    /// C_GenerateKey: its CK_RV and the key.
    func generateSecretKey(
        _ template: [Attribute], mechanism mechanismType: UInt = UInt(CKM_AES_KEY_GEN),
        in session: CK_SESSION_HANDLE
    ) throws -> (CK_RV, CK_OBJECT_HANDLE) {
        var mechanism = CK_MECHANISM(
            mechanism: CK_MECHANISM_TYPE(mechanismType), pParameter: nil, ulParameterLen: 0)
        var key: CK_OBJECT_HANDLE = 0
        let generate = try m.C_GenerateKey
        let rv = withTemplate(template) { generate(session, &mechanism, $0, $1, &key) }
        return (rv, key)
    }

    /// Encrypts or decrypts `data` in one call (`parts` nil) or in parts of the given sizes
    /// (then C_*Final): the first CK_RV that is not CKR_OK, and the output.
    func crypt(
        _ box: MechanismBox, key: CK_OBJECT_HANDLE, _ data: [UInt8], encrypt: Bool, parts: [Int]? = nil,
        in session: CK_SESSION_HANDLE
    ) throws -> (CK_RV, [UInt8]) {
        let rv =
            try encrypt
            ? m.C_EncryptInit(session, &box.mechanism, key) : m.C_DecryptInit(session, &box.mechanism, key)
        guard rv == CKR_OK else { return (rv, []) }
        let one = try encrypt ? m.C_Encrypt : m.C_Decrypt
        let update = try encrypt ? m.C_EncryptUpdate : m.C_DecryptUpdate
        let final = try encrypt ? m.C_EncryptFinal : m.C_DecryptFinal
        var output: [UInt8] = []
        func call(_ body: (UnsafeMutablePointer<UInt8>, UnsafeMutablePointer<CK_ULONG>) -> CK_RV) -> CK_RV {
            var buffer = [UInt8](repeating: 0, count: data.count + 64)
            var length = CK_ULONG(buffer.count)
            let rv = body(&buffer, &length)
            if rv == CKR_OK { output += buffer.prefix(Int(length)) }
            return rv
        }
        guard let parts else {
            var input = data
            return (call { one(session, &input, CK_ULONG(input.count), $0, $1) }, output)
        }
        var offset = 0
        for size in parts + [data.count] where offset < data.count {
            var part = Array(data[offset..<min(data.count, offset + size)])
            offset += part.count
            let rv = call { update(session, &part, CK_ULONG(part.count), $0, $1) }
            guard rv == CKR_OK else { return (rv, output) }
        }
        return (call { final(session, $0, $1) }, output)
    }

    /// The MAC of `data` with a MAC mechanism, in one call or in parts.
    func mac(
        _ box: MechanismBox, key: CK_OBJECT_HANDLE, _ data: [UInt8], parts: [Int]? = nil,
        in session: CK_SESSION_HANDLE
    ) throws -> (CK_RV, [UInt8]) {
        let rv = try m.C_SignInit(session, &box.mechanism, key)
        guard rv == CKR_OK else { return (rv, []) }
        var output = [UInt8](repeating: 0, count: 64)
        var length = CK_ULONG(output.count)
        guard let parts else {
            var input = data
            let rv = try m.C_Sign(session, &input, CK_ULONG(input.count), &output, &length)
            return (rv, Array(output.prefix(Int(length))))
        }
        var offset = 0
        for size in parts + [data.count] where offset < data.count {
            var part = Array(data[offset..<min(data.count, offset + size)])
            offset += part.count
            let rv = try m.C_SignUpdate(session, &part, CK_ULONG(part.count))
            guard rv == CKR_OK else { return (rv, []) }
        }
        let final = try m.C_SignFinal(session, &output, &length)
        return (final, Array(output.prefix(Int(length))))
    }

    /// C_VerifyInit + C_Verify of a MAC.
    func verifyMAC(
        _ box: MechanismBox, key: CK_OBJECT_HANDLE, _ data: [UInt8], _ mac: [UInt8],
        in session: CK_SESSION_HANDLE
    ) throws -> CK_RV {
        let rv = try m.C_VerifyInit(session, &box.mechanism, key)
        guard rv == CKR_OK else { return rv }
        var input = data
        var signature = mac
        return try m.C_Verify(session, &input, CK_ULONG(input.count), &signature, CK_ULONG(signature.count))
    }

    /// C_WrapKey: its CK_RV and the wrapped bytes.
    func wrap(
        _ box: MechanismBox, wrappingKey: CK_OBJECT_HANDLE, key: CK_OBJECT_HANDLE,
        in session: CK_SESSION_HANDLE
    ) throws -> (CK_RV, [UInt8]) {
        var length: CK_ULONG = 0
        let sized = try m.C_WrapKey(session, &box.mechanism, wrappingKey, key, nil, &length)
        guard sized == CKR_OK else { return (sized, []) }
        var output = [UInt8](repeating: 0, count: Int(length))
        let rv = try m.C_WrapKey(session, &box.mechanism, wrappingKey, key, &output, &length)
        return (rv, Array(output.prefix(Int(length))))
    }

    /// C_UnwrapKey: its CK_RV and the new key.
    func unwrap(
        _ box: MechanismBox, unwrappingKey: CK_OBJECT_HANDLE, _ wrapped: [UInt8], template: [Attribute],
        in session: CK_SESSION_HANDLE
    ) throws -> (CK_RV, CK_OBJECT_HANDLE) {
        var bytes = wrapped
        var key: CK_OBJECT_HANDLE = 0
        let unwrapKey = try m.C_UnwrapKey
        let rv = withTemplate(template) {
            unwrapKey(session, &box.mechanism, unwrappingKey, &bytes, CK_ULONG(bytes.count), $0, $1, &key)
        }
        return (rv, key)
    }

    /// C_DeriveKey: its CK_RV and the new key.
    func derive(
        _ box: MechanismBox, baseKey: CK_OBJECT_HANDLE, template: [Attribute], in session: CK_SESSION_HANDLE
    ) throws -> (CK_RV, CK_OBJECT_HANDLE) {
        var key: CK_OBJECT_HANDLE = 0
        let deriveKey = try m.C_DeriveKey
        let rv = withTemplate(template) { deriveKey(session, &box.mechanism, baseKey, $0, $1, &key) }
        return (rv, key)
    }
}

/// A template for a derived or unwrapped secret key whose value the test may read back.
func readableSecretKey(type: UInt = UInt(CKK_GENERIC_SECRET), length: Int? = nil) -> [Attribute] {
    var template = [
        Attribute(CKA_CLASS, ulong: CK_ULONG(CKO_SECRET_KEY)), Attribute(CKA_KEY_TYPE, ulong: CK_ULONG(type)),
        Attribute(CKA_SENSITIVE, bool: false), Attribute(CKA_EXTRACTABLE, bool: true),
    ]
    if let length { template.append(Attribute(CKA_VALUE_LEN, ulong: CK_ULONG(length))) }
    return template
}

/// An AES key template that may be read back and wrapped.
let extractable = [Attribute(CKA_SENSITIVE, bool: false), Attribute(CKA_EXTRACTABLE, bool: true)]

/// The bytes of a CK_ATTRIBUTE array for an attribute-array attribute (CKA_WRAP_TEMPLATE…):
/// the inner values live in `owner`.
func attributeArray(_ attributes: [Attribute], owner: MechanismBox) -> [UInt8] {
    var entries = attributes.map { attribute in
        CK_ATTRIBUTE(
            type: attribute.type, pValue: owner.copy(attribute.value ?? []).baseAddress,
            ulValueLen: attribute.length)
    }
    return entries.withUnsafeMutableBytes { Array($0) }
}
