import Foundation
import Testing

@testable import KeychainCrypto

/// Key agreement (`AsymmetricKey.sharedSecret`): the primitive under C_DeriveKey with
/// CKM_ECDH1_DERIVE and Apple's key exchange, checked against the RFC 7748 and NIST vectors
/// and against `openssl pkeyutl -derive`.
@Suite struct KeyAgreementTests {
    /// RFC 7748 §6.1 (X25519) and §6.2 (X448): Alice's and Bob's keys and their secret.
    static let rfc7748: [Named<(KeyAlgorithm, [String])>] = [
        Named(
            "X25519 (RFC 7748 §6.1)",
            (
                .x25519,
                [
                    "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
                    "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a",
                    "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb",
                    "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f",
                    "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742",
                ]
            )),
        Named(
            "X448 (RFC 7748 §6.2)",
            (
                .x448,
                [
                    "9a8f4925d1519f5775cf46b04b5800d4ee9ee8bae8bc5565d498c28dd9c9baf5"
                        + "74a9419744897391006382a6f127ab1d9ac2d8c0a598726b",
                    "9b08f7cc31b7e3e67d22d5aea121074a273bd2b83de09c63faa73d2c22c5d9bb"
                        + "c836647241d953d40c5b12da88120d53177f80e532c41fa0",
                    "1c306a7ac2a0e2e0990b294470cba339e6453772b075811d8fad0d1d6927c120"
                        + "bb5ee8972b0d3e21374c9c921b09d1b0366f10b65173992d",
                    "3eb7a829b0cd20f5bcfc0b599b6feccf6da4627107bdb0d4f345b43027d8b972"
                        + "fc3e34fb4232a13ca706dcb57aec3dae07bdc1c67bf33609",
                    "07fff4181ac6cc95ec1c16a94a0f74d12da232ce40a77552281d282bb60c0b56"
                        + "fd2464c335543936521c24403085d59a449a5037514a879d",
                ]
            )),
    ]

    @Test(
        "X25519 and X448 give RFC 7748's public keys and shared secret, in both directions",
        arguments: rfc7748)
    func montgomeryVectors(vector: Named<(KeyAlgorithm, [String])>) throws {
        let (algorithm, values) = vector.value
        let bytes = try values.map { try hexBytes($0) }
        let alice = try AsymmetricKey(rawPrivateKey: bytes[0], algorithm: algorithm)
        let bob = try AsymmetricKey(rawPrivateKey: bytes[2], algorithm: algorithm)
        #expect(alice.algorithm == algorithm)
        #expect(alice.publicPoint == bytes[1])
        #expect(bob.publicPoint == bytes[3])
        #expect(try alice.sharedSecret(withPeerPublicValue: bytes[3]).copyBytes() == bytes[4])
        #expect(try bob.sharedSecret(withPeerPublicValue: bytes[1]).copyBytes() == bytes[4])
        // The cofactor flag changes nothing for X25519/X448: RFC 7748 clears the cofactor.
        #expect(try alice.sharedSecret(withPeerPublicValue: bytes[3], cofactor: true).copyBytes() == bytes[4])
    }

    /// NIST CAVS KAS ECC CDH primitive test vectors (SP 800-56A), P-256, COUNT = 0.
    static let cavsPeerX = "700c48f77f56584c5cc632ca65640db91b6bacce3a4df6b42ce7cc838833d287"
    static let cavsPeerY = "db71e509e3fd9b060ddb20ba5c51dcc5948d46fbf640dfe0441782cab85fa4ac"
    static let cavsPrivate = "7d7dc5f71eb29ddaf80d6214632eeae03d9058af1fb6d22ed80badb62bc1a534"
    static let cavsPublic =
        "04ead218590119e8876b29146ff89ca61770c4edbbf97d38ce385ed281d8a6b230"
        + "28af61281fd35e2fa7002523acc85a429cb06ee6648325389f59edfce1405141"
    static let cavsSecret = "46fc62106420ff012e54a434fbdd2d25ccc5852060561e68040dd7778997bd7b"

    @Test("ECDH on P-256 gives the NIST CAVS shared secret, plain and with the cofactor")
    func ecdhVector() throws {
        let key = try AsymmetricKey(components: .ecPrivate(.p256, scalar: try hexBytes(Self.cavsPrivate)))
        #expect(key.publicPoint == (try hexBytes(Self.cavsPublic)))
        let peer = [0x04] + (try hexBytes(Self.cavsPeerX)) + (try hexBytes(Self.cavsPeerY))
        let expected = try hexBytes(Self.cavsSecret)
        #expect(try key.sharedSecret(withPeerPublicValue: peer).copyBytes() == expected)
        #expect(try key.sharedSecret(withPeerPublicValue: peer, cofactor: true).copyBytes() == expected)
    }

    @Test("a compressed peer point gives the same secret as the uncompressed one")
    func compressedPeerPoint() throws {
        let key = try AsymmetricKey(components: .ecPrivate(.p256, scalar: try hexBytes(Self.cavsPrivate)))
        let y = try hexBytes(Self.cavsPeerY)
        // SEC 1 §2.3.3: 02 for an even y, 03 for an odd one.
        let compressed = [(y.last ?? 0) & 1 == 0 ? 0x02 : 0x03] + (try hexBytes(Self.cavsPeerX))
        #expect(
            try key.sharedSecret(withPeerPublicValue: compressed).copyBytes()
                == (try hexBytes(Self.cavsSecret)))
    }

    static let curves: [KeyAlgorithm] = [.ec(.p256), .ec(.p384), .ec(.p521), .x25519, .x448]

    @Test("the shared secret agrees with openssl pkeyutl -derive, both ways round", arguments: curves)
    func agreesWithOpenSSL(algorithm: KeyAlgorithm) throws {
        try withTemporaryDirectory { directory in
            let key = try AsymmetricKey.generate(algorithm)
            try Data(key.pkcs8 ?? []).write(to: URL(fileURLWithPath: directory.file("ours.der")))
            try Data(key.subjectPublicKeyInfo).write(to: URL(fileURLWithPath: directory.file("ours.pub.der")))
            let generate: [String] =
                switch algorithm {
                case .ec(let curve): ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:\(curve.rawValue)"]
                case .x25519: ["-algorithm", "X25519"]
                default: ["-algorithm", "X448"]
                }
            try OpenSSL.run(
                ["genpkey"] + generate + ["-outform", "DER", "-out", "theirs.der"], in: directory)
            try OpenSSL.run(
                [
                    "pkey", "-inform", "DER", "-in", "theirs.der", "-pubout", "-outform", "DER", "-out",
                    "theirs.pub.der",
                ],
                in: directory)
            try OpenSSL.run(
                [
                    "pkeyutl", "-derive", "-inkey", "theirs.der", "-keyform", "DER", "-peerkey",
                    "ours.pub.der",
                    "-peerform", "DER", "-out", "theirs.secret",
                ], in: directory)
            try OpenSSL.run(
                [
                    "pkeyutl", "-derive", "-inkey", "ours.der", "-keyform", "DER", "-peerkey",
                    "theirs.pub.der",
                    "-peerform", "DER", "-out", "ours.secret",
                ], in: directory)
            let theirPublic = try AsymmetricKey(
                subjectPublicKeyInfo: [UInt8](
                    Data(contentsOf: URL(fileURLWithPath: directory.file("theirs.pub.der")))))
            let secret = try key.sharedSecret(withPeerPublicValue: theirPublic.publicPoint ?? []).copyBytes()
            let openSSLSecret = try [UInt8](
                Data(contentsOf: URL(fileURLWithPath: directory.file("theirs.secret"))))
            let openSSLWithOurKey = try [UInt8](
                Data(contentsOf: URL(fileURLWithPath: directory.file("ours.secret"))))
            #expect(!secret.isEmpty)
            #expect(secret == openSSLSecret)
            #expect(secret == openSSLWithOurKey)
        }
    }

    /// A P-256 key for the refusals below.
    private func p256Key() throws -> AsymmetricKey {
        try AsymmetricKey(components: .ecPrivate(.p256, scalar: try hexBytes(Self.cavsPrivate)))
    }

    private func expectInvalidInput(_ body: () throws(CryptoError) -> SecretBytes, _ comment: Comment) {
        do {
            let secret = try body()
            Issue.record("a secret of \(secret.count) bytes was derived: \(comment)")
        } catch {
            #expect(error.code == .invalidInput, comment)
        }
    }

    @Test("a peer point that is not on the key's curve is refused")
    func offCurvePoint() throws {
        let key = try p256Key()
        var peer = [0x04] + (try hexBytes(Self.cavsPeerX)) + (try hexBytes(Self.cavsPeerY))
        peer[64] ^= 0x01
        expectInvalidInput(
            { () throws(CryptoError) in try key.sharedSecret(withPeerPublicValue: peer) }, "off curve")
        // The point at infinity's encoding, and a compressed x with no point above it.
        expectInvalidInput(
            { () throws(CryptoError) in try key.sharedSecret(withPeerPublicValue: [0x00]) }, "infinity")
        let noPoint = [0x02] + [UInt8](repeating: 0xFF, count: 32)
        expectInvalidInput(
            { () throws(CryptoError) in try key.sharedSecret(withPeerPublicValue: noPoint) },
            "x beyond the field")
    }

    @Test("a point of another curve is refused, whatever the key's curve")
    func wrongCurvePoint() throws {
        let p256 = try p256Key()
        let p384Point = try AsymmetricKey.generate(.ec(.p384)).publicPoint ?? []
        expectInvalidInput(
            { () throws(CryptoError) in try p256.sharedSecret(withPeerPublicValue: p384Point) },
            "P-384 point, P-256 key")
        let p521 = try AsymmetricKey.generate(.ec(.p521))
        let p256Point = p256.publicPoint ?? []
        expectInvalidInput(
            { () throws(CryptoError) in try p521.sharedSecret(withPeerPublicValue: p256Point) },
            "P-256 point, P-521 key")
        let x25519 = try AsymmetricKey.generate(.x25519)
        let x448Value = try AsymmetricKey.generate(.x448).publicPoint ?? []
        expectInvalidInput(
            { () throws(CryptoError) in try x25519.sharedSecret(withPeerPublicValue: x448Value) },
            "X448 value, X25519 key")
        expectInvalidInput(
            { () throws(CryptoError) in try x25519.sharedSecret(withPeerPublicValue: p256Point) },
            "EC point, X25519 key")
    }

    @Test("a peer value of the wrong length is refused", arguments: [0, 1, 31, 33, 55, 57, 64, 66])
    func wrongLength(count: Int) throws {
        let x25519 = try AsymmetricKey.generate(.x25519)
        let x448 = try AsymmetricKey.generate(.x448)
        let p256 = try p256Key()
        let value = [UInt8](repeating: 0x04, count: count)
        expectInvalidInput(
            { () throws(CryptoError) in try x25519.sharedSecret(withPeerPublicValue: value) }, "X25519")
        expectInvalidInput(
            { () throws(CryptoError) in try x448.sharedSecret(withPeerPublicValue: value) }, "X448")
        expectInvalidInput(
            { () throws(CryptoError) in try p256.sharedSecret(withPeerPublicValue: value) }, "P-256")
    }

    @Test("a low-order X25519 or X448 value, whose secret would be all zeros, is refused")
    func lowOrderValue() throws {
        // u = 0 and u = 1 are of small order on both curves (RFC 7748 §6.1's check).
        for (algorithm, length) in [(KeyAlgorithm.x25519, 32), (.x448, 56)] {
            let key = try AsymmetricKey.generate(algorithm)
            for value in [
                [UInt8](repeating: 0, count: length), [1] + [UInt8](repeating: 0, count: length - 1),
            ] {
                expectInvalidInput(
                    { () throws(CryptoError) in try key.sharedSecret(withPeerPublicValue: value) },
                    "\(algorithm)")
            }
        }
    }

    @Test("keys that do no key agreement, and public keys, derive nothing")
    func keysThatCannotAgree() throws {
        let peer = try p256Key().publicPoint ?? []
        for algorithm in [KeyAlgorithm.rsa(bits: 2048), .ed25519, .ed448] {
            let key = try AsymmetricKey.generate(algorithm)
            #expect(throws: CryptoError.self, "\(algorithm)") {
                try key.sharedSecret(withPeerPublicValue: peer)
            }
        }
        let publicOnly = try p256Key().publicKey()
        expectInvalidInput(
            { () throws(CryptoError) in try publicOnly.sharedSecret(withPeerPublicValue: peer) }, "public key"
        )
    }

    @Test(
        "unwrapECPoint removes a DER OCTET STRING and leaves a raw value as it is",
        arguments: curves + [.ed25519, .ed448])
    func unwrapECPoint(algorithm: KeyAlgorithm) throws {
        let point = try AsymmetricKey.generate(algorithm).publicPoint ?? []
        #expect(!point.isEmpty)
        #expect(AsymmetricKey.unwrapECPoint(point) == point)
        #expect(AsymmetricKey.unwrapECPoint(DEROctetString.encode(point)) == point)
    }

    @Test("a raw value that happens to read as an OCTET STRING of a wrong length stays raw")
    func unwrapKeepsLookalikes() {
        // 04 1E + 30 bytes: a DER OCTET STRING of 30 bytes, and a valid-length X25519 value.
        let x25519 = [0x04, 0x1E] + [UInt8](repeating: 0x55, count: 30)
        #expect(AsymmetricKey.unwrapECPoint(x25519) == x25519)
        // 04 3F + 63 bytes: a raw uncompressed P-256 point's length.
        let p256 = [0x04, 0x3F] + [UInt8](repeating: 0x55, count: 63)
        #expect(AsymmetricKey.unwrapECPoint(p256) == p256)
    }
}
