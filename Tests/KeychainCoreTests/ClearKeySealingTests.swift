import Foundation
import KeychainCore
import KeychainCrypto
import KeychainStorage
import Testing

/// Keys an older version stored in clear (CKA_PRIVATE=FALSE, no seal ID) are sealed at the
/// next login (no key byte in clear, whatever the store's past).
@Suite("Keys stored in clear by an older version")
struct ClearKeySealingTests {
    static let p256: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
    static let scalar: [UInt8] = Array(0x41...0x60)
    /// p11keychain's internal attribute types: the seal ID and the PKCS#8 key material.
    static let sealID: UInt64 = 0x8050_4B01
    static let keyMaterial: UInt64 = 0x8050_4B02

    @Test("are sealed at the next login, and still sign")
    func clearKeysAreSealedAtLogin() throws {
        try withToken { token, _ in
            try logInUser(token)
            let key = try token.createObject(
                [
                    .class: ulong(ObjectClass.privateKey.rawValue), .keyType: ulong(KeyType.ec.rawValue),
                    .token: yes, .private: [0], .ecParams: Self.p256, .value: Self.scalar,
                    .label: bytes("legacy"),
                ], context: Contexts.user)
            token.logOut()

            // Rewrite the object as an older version stored it: secret parts in clear, no seal ID.
            let store = try ObjectStore(path: token.configuration.path, create: false)
            let curve = try #require(EllipticCurve(parameters: Self.p256))
            let pkcs8 = try #require(
                try AsymmetricKey(components: .ecPrivate(curve, scalar: Self.scalar)).pkcs8)
            let rows = try #require(try store.attributes(of: key.rowID))
            var legacy = rows.filter { $0.type != Self.sealID }
            legacy = legacy.map { row in
                switch row.type {
                case AttributeType.value.rawValue: StoredAttribute(row.type, Self.scalar)
                case Self.keyMaterial: StoredAttribute(row.type, pkcs8)
                default: row
                }
            }
            let legacyID = try store.insert(uniqueKey: nil, attributes: legacy)
            #expect(try store.delete(key.rowID))
            try store.removeMetadata("sealed.clear-keys")
            #expect(try store.attributes(of: legacyID)?.contains { $0.value == Self.scalar } == true)

            let later = Token(configuration: token.configuration)
            try later.logIn(.user, pin: bytes("user-pin-0000"))
            let stored = try #require(try store.attributes(of: legacyID))
            #expect(stored.contains { $0.type == Self.sealID }, "the key has a seal ID now")
            #expect(!stored.contains { $0.value == Self.scalar }, "no secret part is left in clear")
            #expect(!stored.contains { $0.value == pkcs8 })
            let reference = ObjectReference(isSessionObject: false, rowID: legacyID)
            let signer = try later.useKey(reference, for: .sign, mechanism: nil, context: Contexts.user)
            let signature = try signer.key.sign(bytes("m"), scheme: .ecdsa(.sha256))
            let verifier = try AsymmetricKey(components: .ecPrivate(curve, scalar: Self.scalar))
            #expect(try verifier.verify(signature, message: bytes("m"), scheme: .ecdsa(.sha256)))
        }
    }
}
