import Foundation
import Testing

@testable import KeychainCrypto

/// Apple's ECIES (`ECIES`), the construction under `SecKeyCreateEncryptedData` with the
/// `eciesEncryption…AESGCM` algorithms: Apple's own known ciphertexts, the wire format, and the
/// refusals of malformed or changed messages.
@Suite struct ECIESTests {
    /// One known ciphertext of Apple's regression test `si-44-seckey-ies.m`
    /// (`test_known_ciphertext`, apple-oss-distributions/Security,
    /// OSX/shared_regressions/si-44-seckey-ies.m): a private key in Apple's external
    /// representation (04 ‖ X ‖ Y ‖ K, base64) and the message `SecKeyCreateEncryptedData` made
    /// for it with `eciesEncryptionCofactorX963<digest>AESGCM` from the 16 bytes
    /// "KNOWN PLAINTEXT\0" (the C array's terminating NUL included).
    struct AppleVector: Sendable, CustomTestStringConvertible {
        let name: String
        let curve: EllipticCurve
        let digest: DigestAlgorithm
        let key: String
        let message: String

        init(_ name: String, _ curve: EllipticCurve, _ digest: DigestAlgorithm, key: String, message: String)
        {
            self.name = name
            self.curve = curve
            self.digest = digest
            self.key = key
            self.message = message
        }

        var testDescription: String { name }

        /// The private key, from its scalar K (the last third of the representation).
        func privateKey() throws -> AsymmetricKey {
            let bytes = [UInt8](Data(base64Encoded: key) ?? Data())
            let width = (curve.bits + 7) / 8
            #expect(bytes.count == 1 + 3 * width)
            return try AsymmetricKey(components: .ecPrivate(curve, scalar: Array(bytes.suffix(width))))
        }

        var messageBytes: [UInt8] { [UInt8](Data(base64Encoded: message) ?? Data()) }
    }

    static let knownPlaintext = Array("KNOWN PLAINTEXT".utf8) + [0]

    static let appleVectors: [AppleVector] = [
        AppleVector(
            "P-256 SHA1", .p256, .sha1,
            key:
                "BOAqiwAFzjxO7xaYE/6+ywCRap/xxiBCxuUj4A0kzSQtu+0BJ0R71djlM+wtYPwff3+g7e52a8cQSioBciTrMjWCTZuTbhHq"
                + "sMOdqsmKN/pLEwK9uI3FA6grFbSODA1u0g==",
            message:
                "BIqvCZdbwbSmS4+hB8vbDdIDJxaUGBmcaOPoRpaTY8MWofTlcqc/OGB0AjbuzpJ7cqODphJ+B6LlsrK0SPogUyj7zT01PA9g"
                + "wWau/BXb8/1JQa7zTeIJ1vsF7gSrTcMWxA=="),
        AppleVector(
            "P-256 SHA224", .p256, .sha224,
            key:
                "BPYROmZkeW3Zc9Qc8TzTZ27YO9+IGHjj78DNmZ3gwNjZtEW+knhI3Z3G/UNwaI3jCgezA3ZyPgIfizUTOqe4fYRIwy867Zn8"
                + "BHpSxjzEG7Sk3zu/CgA7ObNVJQ6dJWu4PQ==",
            message:
                "BCiu9fyMXqWXojfd0XWynB9CQwUSNedfdn1AC7OlrZaqH9IyUrgcyajdFaRCksBWt6lmUQx4Ypv48mOqvBcPXpX1TAr4NHkH"
                + "K4cWXbBzaxesrYn3zOlUhZYvzB5WnWTorg=="),
        AppleVector(
            "P-256 SHA256", .p256, .sha256,
            key:
                "BINzTFiGIp6G4fpmFCP/KHot+ek+PUYvYp69iT8lHdJNwRbJir1Zr4i73A0vdKoKMn3jdp/8oQ5WnSE+PsFruYahsHI2tFyh"
                + "PjGYEhUmFrwaA/2WQynh77dAqSiKhg0l3w==",
            message:
                "BE7IWFWccaIl7n7Kffg5Q+vkJMJFVsHP8C5C/APzW6gjUQynJGRoG4Vw4UEsFTi/yfUQYTSV7Vv18CXE/3IecGAILuLpcDaS"
                + "xSwzFqrwmqCcSqSRbYSat+8HuaKq19Cq4A=="),
        AppleVector(
            "P-256 SHA384", .p256, .sha384,
            key:
                "BE73i2R6RS7M83M2JGD+JKCR1Z8AST87PFRNLLIfIXoKhH6BFsVgUmuOhz+o450teB4rig57yn9nzDkBRTTn+QAp3g6zGzIE"
                + "1CBuxSSWVcJNiUD8APCb6kJj7Y/95ekTHg==",
            message:
                "BKl/2vl0v3BqnLYTMvjszf2hB48GwIrSqqBQU01p/RsAPk3zPb1QG1nq0/bL5mFyIbsQUq8jhAvx8YbXDG47e6qv44Q2nalZ"
                + "qvry55daTUyVvrHvZ+xM6qceFzLFUHYGLw=="),
        AppleVector(
            "P-256 SHA512", .p256, .sha512,
            key:
                "BMnc5IlDIZJKns6G8ALvQqnaprPuhMkNy04G7rZmOD5w7O2OlViw+aDZr667+xIoQ/zqpMBLIA8ujun6mMQdgx2Wvtj3LPhv"
                + "fbnHQnuTM60RDfA2BQ+Xj4WCQ4KzcaUElw==",
            message:
                "BP997mVpTGiPFJp+2CKm2cWgAg/bUToX9UcJlGuasGxFdDqb6a3WZ0HYyujiwxihdSUOEcAdExU3RJdWTfFHDeXDAB7Qdf4W"
                + "djiWfyPO29kSWAWbJnHaC9JKC4UdTjTPBA=="),
        AppleVector(
            "P-521 SHA1", .p521, .sha1,
            key:
                "BAD3+GLa92qTtnxZjAYCnkX+LqlwrDKD+jMvq8JYYNFk3rYBT7QKs8ddleTb1ScK732C/NtNTS6yBuqh1/GLLIH0+QCE4D+B"
                + "3tk+gpgx7yc0Yy+RMTxPpdfX8h4holqwo81TlvLaYpriEmD+8fSFNJuOzc30COFJhpEa70aRkBOtXJbd0AFbq3fvwbC1epWV"
                + "eTq5d73ZEuiFv5CJ6NIxBsdBFy0RvFm0I+hgqUXyk4gILgsNP6WdWQc1SFqHh6PvbmXO5f6Jzw==",
            message:
                "BABKMqx3GstC3HtOo2FyOJ1TP0/v+CxRcKawwESkC2SQ7bvhkJGClfPpO57ZIUBULNzY04d+ZmrZ6JX9mp/qB2DtSAA9WGEm"
                + "/dAawdzOrwwPbD55fi/BaUhP7HF/2x/5ST4WyU5oFTGc3c2vvTnHLLEKKUk13d9ybl8inWPWlNZolb5NNna7MrzX45H8IcRl"
                + "jg6xWntSVqzeglzB4BkRrmjqVbeJ"),
        AppleVector(
            "P-521 SHA224", .p521, .sha224,
            key:
                "BAAKStHnPj7CcT+M0wIAsCR89AzaD5h5Mvn8fMPgdqyWZjPuHOL1QaInfSytINx/w88AXLmdEVZucY/R1QB8Gj+5KQFvVYcx"
                + "FH6rfyHiel00khFdiV0hiNKDQIgGOj3EtkMW2SBnawj2E9ku3m6AhR6p9XcnrwiORhqujH5VQsohJkWMCABNScNDTe19wGsk"
                + "uup11oTKnDNIucSrpggRJsldGymnyV4O74vFsl+8Kq3kfxpVKClU39tqAtC9hxduBRolHwfscg==",
            message:
                "BAEPiWaky7NoDWFoNRot4xVsxxWP64hbwLM9xyIvYDWyQjXRXHaP4weUYV0n8Cw5aUzvDyON4ik9ouRlLId0SX8SYQCGvopj"
                + "iBWyA9ieu0LKLxYvMYJCrZUshXmmpHdB25gVZ8vv9sZyE5ggA0IXVl7IxMJTLirbIcfO8EvMPAao/3z0rAx09Yht2iITOoNu"
                + "pE/gSbg/UY3ijuhccFd0bBaLlj9u"),
        AppleVector(
            "P-521 SHA256", .p521, .sha256,
            key:
                "BAHaS9E1bgFRlYB555Or19pwj9wOdMP1ETONjgS8MQ4NiOmkOaus4HMcqpiTfCruIAIjBJ0jfuM8j2TdTR8GdPEg3QHHXOav"
                + "+tPlhfj8y+E/6dNAz0jLHO16wjcGjpq0MJcDMlHS7SKPh8j/GD2KwNya9LefD+VAM62yqRuaFFJihpBV5QHbLDN1AIjqhQO0"
                + "nm2fRgW0Hff7EcFJXNHkl7ULby2sViPZx1+qN+LcAt4BoZVayiQVxIWX+p2l6nesBcChF+2Fvw==",
            message:
                "BAFJqyEg7XOScWdtbgVTvmzsYbunFKhiDMJINwPp5tq0QSOiSkh7Cz91+SkUrlCN7Um6bPJmpRjksd9ThR2GlWiiPACFnhhc"
                + "LmSlLkS1vG3H6kutOJLISBvru05qzXqhDAoda4lDh6jrqppAGUkOgk6lwSJq9w023fmxCxpPtth41Vfq7U2hxik8N81Zdeqi"
                + "YALerJdXhGVmv8YVaZis2hdzGHLc"),
        AppleVector(
            "P-521 SHA384", .p521, .sha384,
            key:
                "BAHR8zVCUzKJi3yc7QJCpxIdsVUJ+N2tB9P0CnMWZ9gVt6bO+UCrGsS6pon0f+nERY+RlPfTyTlrBBGp24a2wWhs2wFaZf2N"
                + "g1eKcRFaXPgJozAdz+vOGy1UVK3PxhDkhusdDGyDu6d72UNAicyESa6OCl+f9uicZA5ANaDb0djGr2o67AHQNb41IMcZ+CQK"
                + "W7XdoMBHT+tLCSZCw+7ZQ1mnHD9NaJbnaxI0qgI03RxXKFj4mqNKjxxzugl9rUfFF0HYJ1KANA==",
            message:
                "BAFQj+wieG249oNkP5kzC0xTdgtQkd0tTwNmVxYarD05WIjWeaE9VgyfqPVHNyntNA7fEfpLjWy6d5WQGBdFwXxxiAHAqDXe"
                + "NyNLL0MSzKPmyQNy4TAGjUmGXt/Nq2LafQgKSiWLagSvyaICgk7BBa2z9NvVr4ZcvpreUDzLTrl/+J1WRfR9/78vM3uLfFyT"
                + "EJwKg6MH3fQRr8RWxcza9AQXspbD"),
        AppleVector(
            "P-521 SHA512", .p521, .sha512,
            key:
                "BAD56NOl02CAXGSBYKT9JMmMQNtYkaRjw/DP29GWe8X70zTNzTBRgQQzqtCmT2c10VRNxzR5bCAM47fR8HyK4OsV4wEes8ID"
                + "R68JQC7+epF7cdx+m+EGhaHlB2N99MCEZx9NQni6/5LBMItVY7LSQUskKjqslG90vlIZZxn87EzbJ9MvHgFFgeZeUj9SXcbC"
                + "u6/+ysgXAtldaGyFwXwzI6CrN84Pd72TR/6me1GZjm8pamJ0p507ntdISB5SBFcAQpNieDYxbg==",
            message:
                "BAABJeJ2D+Yy0aA1/FKoUF4eBR5kr3JnM8iXDEjIZ47EWixF1nde4ehg7iZpbihxv/rDl7jdJYOW9LqXdqoF/2JO7gCrNSbq"
                + "SkveG6UdsgfalnAd/tAYvz26Ct6vQiGSJJLvHcnss8thgQrOVQaf/NAoxgxIM0dxUmJE3B2EJxb5sKedzCje0XttQQWvEW1t"
                + "3Ni606AVAhZ3Psiud23qf/qgtJxK"),
    ]

    @Test(
        "Apple's known ECIES ciphertexts decrypt to Apple's known plaintext (AES-128 on P-256, AES-256 on P-521)",
        arguments: appleVectors)
    func appleKnownCiphertext(vector: AppleVector) throws {
        let scheme = ECIES(digest: vector.digest, variableIV: false, cofactor: true)
        let plaintext = try scheme.decrypt(vector.messageBytes, with: try vector.privateKey())
        #expect(plaintext == ECIESTests.knownPlaintext)
        // The standard form computes the same secret on these cofactor-1 curves.
        let standard = ECIES(digest: vector.digest, variableIV: false, cofactor: false)
        #expect(try standard.decrypt(vector.messageBytes, with: try vector.privateKey()) == plaintext)
    }

    @Test(
        "An Apple ciphertext opened with the VariableIV form of its algorithm fails its tag and releases nothing"
    )
    func appleCiphertextUnderTheOtherIVRule() throws {
        let vector = ECIESTests.appleVectors[2]
        let key = try vector.privateKey()
        let scheme = ECIES(digest: vector.digest, variableIV: true, cofactor: true)
        do {
            _ = try scheme.decrypt(vector.messageBytes, with: key)
            Issue.record("the message decrypted under the other IV rule")
        } catch {
            #expect(error.code == .authenticationFailed)
        }
    }

    static let schemes: [ECIES] = DigestAlgorithm.allCases.flatMap { digest in
        [false, true].flatMap { variableIV in
            [false, true].map { ECIES(digest: digest, variableIV: variableIV, cofactor: $0) }
        }
    }

    @Test(
        "A message is the ephemeral point, the ciphertext as long as the plaintext, and a 16-byte tag, and decrypts",
        arguments: EllipticCurve.allCases)
    func wireFormat(curve: EllipticCurve) throws {
        let recipient = try AsymmetricKey.generate(.ec(curve))
        let plaintext = Array("the message".utf8)
        for scheme in ECIESTests.schemes {
            let message = try scheme.encrypt(plaintext, to: try recipient.publicKey())
            #expect(message.count == ECIES.pointLength(of: curve) + plaintext.count + 16)
            #expect(message.first == 0x04)
            #expect(try scheme.decrypt(message, with: recipient) == plaintext)
            // A fresh ephemeral key each time: the same plaintext never gives the same message.
            #expect(try scheme.encrypt(plaintext, to: try recipient.publicKey()) != message)
        }
    }

    @Test("The AES key is 16 bytes up to 256-bit curves and 32 beyond, as Apple's")
    func keyLengthRule() {
        #expect(ECIES.keyLength(for: .p256) == 16)
        #expect(ECIES.keyLength(for: .p384) == 32)
        #expect(ECIES.keyLength(for: .p521) == 32)
    }

    @Test("An empty plaintext makes a message of the point and the tag, which decrypts to nothing")
    func emptyPlaintext() throws {
        let recipient = try AsymmetricKey.generate(.ec(.p256))
        let scheme = ECIES(digest: .sha256, variableIV: true, cofactor: false)
        let message = try scheme.encrypt([], to: recipient)
        #expect(message.count == ECIES.minimumLength(for: .p256))
        #expect(try scheme.decrypt(message, with: recipient) == [])
    }

    @Test("A changed byte anywhere in a message (point, ciphertext, tag) makes it fail, with no plaintext")
    func tampering() throws {
        let recipient = try AsymmetricKey.generate(.ec(.p256))
        let scheme = ECIES(digest: .sha256, variableIV: true, cofactor: true)
        let message = try scheme.encrypt(Array("attack at dawn, not before".utf8), to: recipient)
        for index in [1, 40, 65, 70, message.count - 8, message.count - 1] {
            var changed = message
            changed[index] ^= 0x01
            #expect(throws: CryptoError.self, "byte \(index)") {
                try scheme.decrypt(changed, with: recipient)
            }
        }
        var tag = message
        tag[tag.count - 1] ^= 0x80
        do {
            _ = try scheme.decrypt(tag, with: recipient)
            Issue.record("a changed tag decrypted")
        } catch {
            #expect(error.code == .authenticationFailed)
        }
    }

    @Test(
        "Truncated messages, and messages not starting with an uncompressed point, are refused as malformed")
    func malformed() throws {
        let recipient = try AsymmetricKey.generate(.ec(.p384))
        let scheme = ECIES(digest: .sha384, variableIV: true, cofactor: false)
        let message = try scheme.encrypt(Array("x".utf8), to: recipient)
        for length in [0, 1, 97, ECIES.minimumLength(for: .p384) - 1] {
            do {
                _ = try scheme.decrypt(Array(message.prefix(length)), with: recipient)
                Issue.record("a \(length)-byte message decrypted")
            } catch {
                #expect(error.code == .invalidInput)
            }
        }
        var compressed = message
        compressed[0] = 0x02
        #expect(throws: CryptoError.self) { try scheme.decrypt(compressed, with: recipient) }
    }

    @Test("A message for another key, or from another curve's key, does not decrypt")
    func wrongRecipient() throws {
        let scheme = ECIES(digest: .sha256, variableIV: false, cofactor: false)
        let message = try scheme.encrypt(Array("for alice".utf8), to: try AsymmetricKey.generate(.ec(.p256)))
        #expect(throws: CryptoError.self) {
            try scheme.decrypt(message, with: try AsymmetricKey.generate(.ec(.p256)))
        }
        #expect(throws: CryptoError.self) {
            try scheme.decrypt(message, with: try AsymmetricKey.generate(.ec(.p384)))
        }
    }

    @Test("RSA and Ed25519 keys neither encrypt nor decrypt ECIES")
    func otherKeyTypes() throws {
        let scheme = ECIES(digest: .sha256, variableIV: true, cofactor: false)
        for kind in [KeyAlgorithm.rsa(bits: 2048), .ed25519] {
            let key = try AsymmetricKey.generate(kind)
            do {
                _ = try scheme.encrypt([1, 2, 3], to: key)
                Issue.record("\(kind) encrypted")
            } catch {
                #expect(error.code == .unsupported)
            }
            #expect(throws: CryptoError.self) {
                try scheme.decrypt([UInt8](repeating: 4, count: 200), with: key)
            }
        }
    }
}
