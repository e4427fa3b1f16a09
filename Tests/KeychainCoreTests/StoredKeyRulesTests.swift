import Foundation
import KeychainCore
import KeychainCrypto
import KeychainStorage
import Testing

/// Keys an older version stored read under today's rules: every
/// key answers CKA_ALLOWED_MECHANISMS, an X25519 key does not read CKA_SIGN or CKA_DECRYPT
/// TRUE, and a short secret key shows no check value.
@Suite("Keys stored by an older version read under today's rules")
struct StoredKeyRulesTests {
    static let x25519: [UInt8] = [0x06, 0x03, 0x2B, 0x65, 0x6E]

    /// Replaces `key`'s rows as an older version wrote them (`rewrite`) and returns the new
    /// object's reference.
    private func rewrite(
        _ key: ObjectReference, in token: Token, _ rewrite: ([StoredAttribute]) -> [StoredAttribute]
    ) throws -> ObjectReference {
        let store = try ObjectStore(path: token.configuration.path, create: false)
        let rows = try #require(try store.attributes(of: key.rowID))
        let id = try store.insert(uniqueKey: nil, attributes: rewrite(rows))
        #expect(try store.delete(key.rowID))
        return ObjectReference(isSessionObject: false, rowID: id)
    }

    @Test("an X25519 key stored with CKA_SIGN and CKA_DECRYPT and no CKA_ALLOWED_MECHANISMS")
    func oldMontgomeryKey() throws {
        try withToken { token, _ in
            try logInUser(token)
            let key = try token.createObject(
                [
                    .class: ulong(ObjectClass.privateKey.rawValue),
                    .keyType: ulong(KeyType.ecMontgomery.rawValue), .token: yes, .ecParams: Self.x25519,
                    .value: Array(0x41...0x60),
                ], context: Contexts.user)
            let old = try rewrite(key, in: token) { rows in
                rows.filter { $0.type != AttributeType.allowedMechanisms.rawValue }.map { row in
                    [AttributeType.sign.rawValue, AttributeType.decrypt.rawValue].contains(row.type)
                        ? StoredAttribute(row.type, yes) : row
                }
            }
            let read = try token.read(
                [.sign, .decrypt, .derive, .allowedMechanisms], of: old, context: Contexts.user)
            #expect(read == [.value(no), .value(no), .value(yes), .value([])])
        }
    }

    @Test("a 3-byte secret key stored with its check value")
    func oldShortSecretKey() throws {
        try withToken { token, _ in
            try logInUser(token)
            let value: [UInt8] = [0x01, 0x02, 0x03]
            let key = try token.createObject(
                [
                    .class: ulong(ObjectClass.secretKey.rawValue),
                    .keyType: ulong(KeyType.genericSecret.rawValue), .token: yes, .value: value,
                ], context: Contexts.user)
            #expect(try token.read([.checkValue], of: key, context: Contexts.user) == [.value([])])
            let checkValue = SecretKeyCheckValue.sha1(SecretBytes(value))
            let old = try rewrite(key, in: token) { rows in
                rows.filter { $0.type != AttributeType.allowedMechanisms.rawValue }.map { row in
                    row.type == AttributeType.checkValue.rawValue
                        ? StoredAttribute(row.type, checkValue) : row
                }
            }
            #expect(
                try token.read([.checkValue, .allowedMechanisms], of: old, context: Contexts.user)
                    == [.value([]), .value([])])
        }
    }
}
