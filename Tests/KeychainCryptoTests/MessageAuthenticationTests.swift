import KeychainCrypto
import Testing

/// A MAC known answer: algorithm, key, message and MAC in hex.
struct MACVector: Sendable, CustomTestStringConvertible {
    let name: String
    let algorithm: MACAlgorithm
    let key: String
    let message: String
    let mac: String

    var testDescription: String { name }
}

private let hiThere = "4869205468657265"  // "Hi There"
private let jefe = "4a656665"  // "Jefe"
private let whatDoYaWant = "7768617420646f2079612077616e7420666f72206e6f7468696e673f"
private let key131 = String(repeating: "aa", count: 131)
/// "Test Using Larger Than Block-Size Key - Hash Key First"
private let case6Message =
    "54657374205573696e67204c6172676572205468616e20426c6f636b2d53697a"
    + "65204b6579202d2048617368204b6579204669727374"
private let cmacKey = "2b7e151628aed2a6abf7158809cf4f3c"

func runMAC(_ algorithm: MACAlgorithm, key: [UInt8], message: [UInt8], piece: Int? = nil) throws -> [UInt8] {
    let mac = try MessageAuthentication(algorithm, key: SecretBytes(key))
    var offset = 0
    repeat {
        let size = min(piece ?? message.count, message.count - offset)
        try message[offset..<offset + size].withUnsafeBytes { try mac.update($0) }
        offset += size
    } while offset < message.count
    return try mac.finish()
}

@Suite("MACs")
struct MessageAuthenticationTests {
    /// RFC 2202 §3 (HMAC-SHA1 cases 1, 2), RFC 4231 §4.2, 4.3, 4.7 (cases 1, 2, 6) for
    /// SHA-224/256/384/512, NIST SP 800-38B Appendix D.1 (AES-128 CMAC examples 1, 2, 4).
    static let vectors: [MACVector] = [
        MACVector(
            name: "HMAC-SHA1 RFC 2202 case 1", algorithm: .hmac(.sha1),
            key: String(repeating: "0b", count: 20),
            message: hiThere, mac: "b617318655057264e28bc0b6fb378c8ef146be00"),
        MACVector(
            name: "HMAC-SHA1 RFC 2202 case 2", algorithm: .hmac(.sha1), key: jefe, message: whatDoYaWant,
            mac: "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"),
        MACVector(
            name: "HMAC-SHA224 RFC 4231 case 1", algorithm: .hmac(.sha224),
            key: String(repeating: "0b", count: 20),
            message: hiThere, mac: "896fb1128abbdf196832107cd49df33f47b4b1169912ba4f53684b22"),
        MACVector(
            name: "HMAC-SHA256 RFC 4231 case 1", algorithm: .hmac(.sha256),
            key: String(repeating: "0b", count: 20),
            message: hiThere, mac: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        MACVector(
            name: "HMAC-SHA384 RFC 4231 case 1", algorithm: .hmac(.sha384),
            key: String(repeating: "0b", count: 20),
            message: hiThere,
            mac: "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59c"
                + "faea9ea9076ede7f4af152e8b2fa9cb6"),
        MACVector(
            name: "HMAC-SHA512 RFC 4231 case 1", algorithm: .hmac(.sha512),
            key: String(repeating: "0b", count: 20),
            message: hiThere,
            mac: "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cde"
                + "daa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"),
        MACVector(
            name: "HMAC-SHA224 RFC 4231 case 2", algorithm: .hmac(.sha224), key: jefe, message: whatDoYaWant,
            mac: "a30e01098bc6dbbf45690f3a7e9e6d0f8bbea2a39e6148008fd05e44"),
        MACVector(
            name: "HMAC-SHA256 RFC 4231 case 2", algorithm: .hmac(.sha256), key: jefe, message: whatDoYaWant,
            mac: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        MACVector(
            name: "HMAC-SHA384 RFC 4231 case 2", algorithm: .hmac(.sha384), key: jefe, message: whatDoYaWant,
            mac: "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e"
                + "8e2240ca5e69e2c78b3239ecfab21649"),
        MACVector(
            name: "HMAC-SHA512 RFC 4231 case 2", algorithm: .hmac(.sha512), key: jefe, message: whatDoYaWant,
            mac: "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554"
                + "9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"),
        MACVector(
            name: "HMAC-SHA224 RFC 4231 case 6", algorithm: .hmac(.sha224), key: key131,
            message: case6Message,
            mac: "95e9a0db962095adaebe9b2d6f0dbce2d499f112f2d2b7273fa6870e"),
        MACVector(
            name: "HMAC-SHA256 RFC 4231 case 6", algorithm: .hmac(.sha256), key: key131,
            message: case6Message,
            mac: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        MACVector(
            name: "HMAC-SHA384 RFC 4231 case 6", algorithm: .hmac(.sha384), key: key131,
            message: case6Message,
            mac: "4ece084485813e9088d2c63a041bc5b44f9ef1012a2b588f3cd11f05033ac4c6"
                + "0c2ef6ab4030fe8296248df163f44952"),
        MACVector(
            name: "HMAC-SHA512 RFC 4231 case 6", algorithm: .hmac(.sha512), key: key131,
            message: case6Message,
            mac: "80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f352"
                + "6b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598"),
        MACVector(
            name: "AES-128-CMAC SP 800-38B example 1 (empty)", algorithm: .cmac, key: cmacKey, message: "",
            mac: "bb1d6929e95937287fa37d129b756746"),
        MACVector(
            name: "AES-128-CMAC SP 800-38B example 2", algorithm: .cmac, key: cmacKey,
            message: "6bc1bee22e409f96e93d7e117393172a", mac: "070a16b46b4d4144f79bdd9dd04a287c"),
        MACVector(
            name: "AES-128-CMAC SP 800-38B example 4", algorithm: .cmac, key: cmacKey,
            message: "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
                + "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710",
            mac: "51f0bebf7e3b9d92fc49741779363cfe"),
    ]

    @Test(
        "known answers match the RFCs and SP 800-38B, single-part and in odd-sized pieces", arguments: vectors
    )
    func knownAnswer(vector: MACVector) throws {
        let key = try hexBytes(vector.key)
        let message = try hexBytes(vector.message)
        let expected = try hexBytes(vector.mac)
        #expect(try runMAC(vector.algorithm, key: key, message: message) == expected)
        for piece in [1, 7, 15, 17] {
            #expect(
                try runMAC(vector.algorithm, key: key, message: message, piece: piece) == expected, "\(piece)"
            )
        }
        #expect(
            try MessageAuthentication(vector.algorithm, key: SecretBytes(key)).macLength == expected.count)
    }

    @Test("an empty HMAC key and message give RFC 2104's answer, as openssl computes it")
    func emptyHMACKey() throws {
        // HMAC-SHA256 with an empty key of the empty message (also `openssl mac -digest SHA256
        // -macopt hexkey: HMAC` of an empty file).
        #expect(
            try runMAC(.hmac(.sha256), key: [], message: [])
                == (try hexBytes("b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")))
    }

    @Test("CMAC refuses keys that are not AES keys", arguments: [0, 8, 15, 17, 33])
    func cmacKeyLength(length: Int) {
        expectCryptoError(.invalidInput) {
            _ = try MessageAuthentication(.cmac, key: SecretBytes([UInt8](repeating: 1, count: length)))
        }
    }

    @Test("a MAC cannot be updated or finished again after it finished")
    func noReuse() throws {
        let mac = try MessageAuthentication(.hmac(.sha256), key: SecretBytes([1, 2, 3]))
        _ = try mac.finish()
        expectCryptoError(.failed) { _ = try mac.finish() }
        expectCryptoError(.failed) { try [UInt8]([1]).withUnsafeBytes { try mac.update($0) } }
    }

    @Test("a reset MAC computes the next message under the same key, also after it finished")
    func resetReusesKey() throws {
        for algorithm in [MACAlgorithm.hmac(.sha256), .cmac] {
            let key = [UInt8](repeating: 0x2b, count: 16)
            let mac = try MessageAuthentication(algorithm, key: SecretBytes(key))
            try [UInt8](repeating: 1, count: 30).withUnsafeBytes { try mac.update($0) }
            try mac.reset()
            try [UInt8]([1, 2, 3]).withUnsafeBytes { try mac.update($0) }
            #expect(try mac.finish() == runMAC(algorithm, key: key, message: [1, 2, 3]))
            try mac.reset()
            try [UInt8]([4]).withUnsafeBytes { try mac.update($0) }
            #expect(try mac.finish() == runMAC(algorithm, key: key, message: [4]))
        }
    }

    @Test("MAC comparison is equality, lengths included")
    func comparison() {
        #expect(MessageAuthentication.isEqual([1, 2, 3], [1, 2, 3]))
        #expect(!MessageAuthentication.isEqual([1, 2, 3], [1, 2, 4]))
        #expect(!MessageAuthentication.isEqual([1, 2, 3], [1, 2]))
        #expect(MessageAuthentication.isEqual([], []))
    }
}
