import Foundation
import Testing

@testable import KeychainCrypto

/// Ed448 (RFC 8032 §5.2) keys and signatures, and the raw octet keys of Ed448, X25519 and X448.
@Suite struct Ed448Tests {
    /// RFC 8032 §7.4: "-----Blank" and "-----1 octet".
    static let vectors: [Named<[String]>] = [
        Named(
            "RFC 8032 §7.4 blank",
            [
                "6c82a562cb808d10d632be89c8513ebf6c929f34ddfa8c9f63c9960ef6e348a3528c8a3fcc2f044e39a3fc5b94492f8f"
                    + "032e7549a20098f95b",
                "5fd7449b59b461fd2ce787ec616ad46a1da1342485a70e1f8a0ea75d80e96778edf124769b46c7061bd6783df1e50f"
                    + "6cd1fa1abeafe8256180",
                "",
                "533a37f6bbe457251f023c0d88f976ae2dfb504a843e34d2074fd823d41a591f2b233f034f628281f2fd7a22ddd47d78"
                    + "28c59bd0a21bfd3980ff0d2028d4b18a9df63e006c5d1c2d345b925d8dc00b4104852db99ac5c7cdda8530a113a0f4"
                    + "dbb61149f05a7363268c71d95808ff2e652600",
            ]),
        Named(
            "RFC 8032 §7.4 1 octet",
            [
                "c4eab05d357007c632f3dbb48489924d552b08fe0c353a0d4a1f00acda2c463afbea67c5e8d2877c5e3bc397a659949e"
                    + "f8021e954e0a12274e",
                "43ba28f430cdff456ae531545f7ecd0ac834a55d9358c0372bfa0c6c6798c0866aea01eb00742802b8438ea4cb82169c"
                    + "235160627b4c3a9480",
                "03",
                "26b8f91727bd62897af15e41eb43c377efb9c610d48f2335cb0bd0087810f4352541b143c4b981b7e18f62de8ccdf633"
                    + "fc1bf037ab7cd779805e0dbcc0aae1cbcee1afb2e027df36bc04dcecbf154336c19f0af7e0a6472905e799f1953d2a"
                    + "0ff3348ab21aa4adafd1d234441cf807c03a00",
            ]),
    ]

    @Test(
        "an imported Ed448 key makes RFC 8032's signature byte for byte, and its public key verifies it",
        arguments: vectors)
    func rfc8032Vectors(vector: Named<[String]>) throws {
        let bytes = try vector.value.map { try hexBytes($0) }
        let key = try AsymmetricKey(components: .ed448Private(bytes[0]))
        #expect(key.algorithm == .ed448)
        #expect(key.publicPoint == bytes[1])
        let signature = try key.sign(bytes[2], scheme: .ed448)
        #expect(signature == bytes[3])
        let publicKey = try AsymmetricKey(components: .ed448Public(bytes[1]))
        #expect(try publicKey.verify(bytes[3], message: bytes[2], scheme: .ed448))
        var tampered = bytes[3]
        tampered[0] ^= 1
        #expect(try !publicKey.verify(tampered, message: bytes[2], scheme: .ed448))
    }

    @Test("an Ed448 signature verifies with openssl pkeyutl, and openssl's with ours")
    func agreesWithOpenSSL() throws {
        try withTemporaryDirectory { directory in
            let key = try AsymmetricKey.generate(.ed448)
            let message = Array("a message for Ed448".utf8)
            let signature = try key.sign(message, scheme: .ed448)
            #expect(signature.count == 114)
            try Data(key.subjectPublicKeyInfo).write(to: URL(fileURLWithPath: directory.file("public.der")))
            try Data(key.pkcs8 ?? []).write(to: URL(fileURLWithPath: directory.file("private.der")))
            try Data(message).write(to: URL(fileURLWithPath: directory.file("message")))
            try Data(signature).write(to: URL(fileURLWithPath: directory.file("signature")))
            let output = try OpenSSL.run(
                [
                    "pkeyutl", "-verify", "-pubin", "-inkey", "public.der", "-keyform", "DER", "-rawin",
                    "-in",
                    "message", "-sigfile", "signature",
                ], in: directory)
            #expect(output.contains("Signature Verified Successfully"))
            try OpenSSL.run(
                [
                    "pkeyutl", "-sign", "-inkey", "private.der", "-keyform", "DER", "-rawin", "-in",
                    "message",
                    "-out", "theirs",
                ], in: directory)
            let theirs = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file("theirs"))))
            // Ed448 is deterministic: the same key and message give the same signature.
            #expect(theirs == signature)
        }
    }

    @Test("an Ed448 key does not make Ed25519 signatures, nor an Ed25519 key Ed448 ones")
    func schemesMatchTheirKeys() throws {
        let ed448 = try AsymmetricKey.generate(.ed448)
        let ed25519 = try AsymmetricKey.generate(.ed25519)
        #expect(throws: CryptoError.self) { try ed448.sign([1, 2, 3], scheme: .ed25519) }
        #expect(throws: CryptoError.self) { try ed25519.sign([1, 2, 3], scheme: .ed448) }
        #expect(throws: CryptoError.self) { try SigningContext(key: ed448, scheme: .ed448) }
    }

    @Test("the octet-string curves are named by their RFC 8410 OID or the v3.0 PrintableString")
    func curveParameters() throws {
        let expected: [(KeyAlgorithm, UInt8, String)] = [
            (.x25519, 0x6E, "curve25519"), (.x448, 0x6F, "curve448"), (.ed25519, 0x70, "edwards25519"),
            (.ed448, 0x71, "edwards448"),
        ]
        for (algorithm, last, name) in expected {
            // id-X25519 1.3.101.110 … id-Ed448 1.3.101.113.
            #expect(algorithm.curveParameters == [0x06, 0x03, 0x2B, 0x65, last])
            #expect(KeyAlgorithm(octetStringParameters: [0x06, 0x03, 0x2B, 0x65, last]) == algorithm)
            let printable = [0x13, UInt8(name.utf8.count)] + Array(name.utf8)
            #expect(KeyAlgorithm(octetStringParameters: printable) == algorithm)
        }
        #expect(KeyAlgorithm(octetStringParameters: EllipticCurve.p256.parameters) == nil)
        #expect(KeyAlgorithm(octetStringParameters: [0x13, 0x05] + Array("ed448".utf8)) == nil)
    }

    @Test("raw octet keys of the wrong length are refused", arguments: KeyAlgorithm.octetStringAlgorithms)
    func rawKeyLengths(algorithm: KeyAlgorithm) throws {
        let key = try AsymmetricKey.generate(algorithm)
        let raw = key.rawPrivateKey ?? []
        let point = key.publicPoint ?? []
        #expect(!raw.isEmpty && !point.isEmpty)
        #expect(try AsymmetricKey(rawPrivateKey: raw, algorithm: algorithm).publicPoint == point)
        #expect(try AsymmetricKey(rawPublicKey: point, algorithm: algorithm).algorithm == algorithm)
        #expect(throws: CryptoError.self) {
            try AsymmetricKey(rawPrivateKey: raw + [0], algorithm: algorithm)
        }
        #expect(throws: CryptoError.self) {
            try AsymmetricKey(rawPublicKey: Array(point.dropLast()), algorithm: algorithm)
        }
        // The PKCS#8 and SubjectPublicKeyInfo forms read back as the same key.
        let reread = try AsymmetricKey(privateKeyDER: key.pkcs8 ?? [])
        #expect(reread.algorithm == algorithm && reread.publicPoint == point)
        #expect(try AsymmetricKey(subjectPublicKeyInfo: key.subjectPublicKeyInfo).publicPoint == point)
    }
}
