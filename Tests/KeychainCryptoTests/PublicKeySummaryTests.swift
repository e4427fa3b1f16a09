import Foundation
import Testing

@testable import KeychainCrypto

// A certificate's public-key algorithm and size read from the DER (RSA, named-curve EC) are
// what OpenSSL's decode of the key says, for every kind of key; other kinds are decoded.

@Suite("public key summary")
struct PublicKeySummaryTests {
    @Test(
        "the algorithm and bits read from the DER equal OpenSSL's decode of the key",
        arguments: [
            (["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"], true),
            (["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:3072"], true),
            (["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1025"], true),
            (["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"], true),
            (["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"], true),
            (["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-521"], true),
            (["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:secp256k1"], true),
            (["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:secp224k1"], true),
            (["-algorithm", "ED25519"], false),
            (["-algorithm", "ED448"], false),
            (["-algorithm", "RSA-PSS", "-pkeyopt", "rsa_keygen_bits:2048"], false),
        ])
    func readEqualsDecoded(_ keyArguments: [String], read: Bool) throws {
        try withTemporaryDirectory { directory in
            try OpenSSL.run(["genpkey"] + keyArguments + ["-out", "key.pem"], in: directory)
            try OpenSSL.run(
                ["pkey", "-in", "key.pem", "-pubout", "-outform", "DER", "-out", "spki.der"], in: directory)
            let spki = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file("spki.der"))))
            let decoded = PublicKeySummary.decoded(spki)
            #expect(decoded.bits > 0, "\(keyArguments): OpenSSL decodes the key")
            let summary = PublicKeySummary.of(spki)
            #expect(summary.algorithm == decoded.algorithm, "\(keyArguments)")
            #expect(summary.bits == decoded.bits, "\(keyArguments)")
            #expect((PublicKeySummary.read(spki) != nil) == read, "\(keyArguments): read from the DER")
        }
    }

    @Test("a truncated key info is not read but decoded, and OpenSSL's refusal is (\"unknown\", 0)")
    func damaged() throws {
        try withTemporaryDirectory { directory in
            try OpenSSL.run(
                ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "k.pem"],
                in: directory)
            try OpenSSL.run(
                ["pkey", "-in", "k.pem", "-pubout", "-outform", "DER", "-out", "s.der"], in: directory)
            let spki = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file("s.der"))))
            let truncated = Array(spki.dropLast(3))
            #expect(PublicKeySummary.read(truncated) == nil)
            #expect(PublicKeySummary.of(truncated) == ("unknown", 0))
        }
    }
}
