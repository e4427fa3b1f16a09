import Foundation
import Security
import Testing

// A key's CKA_ALLOWED_MECHANISMS reads the same through both faces: the Swift API signs with
// the registry mechanism its algorithm amounts to, so a key limited to CKM_ECDSA_SHA256 signs
// through C_Sign and SecKeyCreateSignature(.ecdsaSignatureMessageX962SHA256) alike, and
// through nothing else.

@Suite("A key's allowed mechanisms hold on both faces", .serialized)
struct AllowedMechanismSignatureTests {
    @Test(
        "a key allowed only CKM_ECDSA_SHA256 signs through C_Sign and SecKeyCreateSignature alike, and through no other mechanism"
    )
    func ecdsaSHA256Only() throws {
        try withPINKeychain { directory in
            let made = try pkcs11Tool(
                [
                    "--keypairgen", "--key-type", "EC:prime256v1", "--label", "sha256 only", "--usage-sign",
                    "--allowed-mechanisms", "ECDSA-SHA256",
                ], keychainDirectory: directory)
            #expect(made.status == 0, "\(made.error)")
            let input = directory + "/message"
            try Data("the message".utf8).write(to: URL(fileURLWithPath: input))

            // The PKCS#11 face: C_SignInit + C_Sign with CKM_ECDSA_SHA256 only.
            func p11Sign(_ mechanism: String) throws -> ProgramResult {
                try pkcs11Tool(
                    [
                        "--sign", "--mechanism", mechanism, "--label", "sha256 only", "--input-file", input,
                        "--output-file", directory + "/signature-" + mechanism,
                    ], keychainDirectory: directory)
            }
            let signed = try p11Sign("ECDSA-SHA256")
            #expect(signed.status == 0, "\(signed.error)")
            for refused in ["ECDSA", "ECDSA-SHA384", "ECDSA-SHA1"] {
                let result = try p11Sign(refused)
                #expect(result.status != 0, "\(refused) signed")
                #expect(result.error.contains("CKR_MECHANISM_INVALID"), "\(refused): \(result.error)")
            }

            // The Swift face: the same key, through the same rule.
            var item: CFTypeRef?
            let query: [String: Any] = [
                kSecClass as String: kSecClassKey, kSecAttrKeyClass as String: kSecAttrKeyClassPrivate,
                kSecAttrLabel as String: "sha256 only", kSecReturnRef as String: true,
            ]
            #expect(SecItemCopyMatching(query as CFDictionary, &item) == errSecSuccess)
            let key = try #require(item as? SecKey)
            let publicKey = try #require(SecKeyCopyPublicKey(key))
            let message = Data("the message".utf8) as CFData
            var error: Unmanaged<CFError>?
            let signature = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message, &error)
            #expect(error == nil, "\(String(describing: error?.takeRetainedValue()))")
            let made256 = try #require(signature)
            #expect(SecKeyVerifySignature(publicKey, .ecdsaSignatureMessageX962SHA256, message, made256, nil))

            let digest = Data(repeating: 0xA5, count: 32) as CFData
            let digest48 = Data(repeating: 0xA5, count: 48) as CFData
            let refused: [(SecKeyAlgorithm, CFData)] = [
                (.ecdsaSignatureDigestX962SHA256, digest), (.ecdsaSignatureDigestX962, digest),
                (.ecdsaSignatureMessageX962SHA384, message), (.ecdsaSignatureMessageX962SHA1, message),
                (.ecdsaSignatureDigestX962SHA384, digest48),
            ]
            for (algorithm, data) in refused {
                var refusal: Unmanaged<CFError>?
                #expect(SecKeyCreateSignature(key, algorithm, data, &refusal) == nil, "\(algorithm.rawValue)")
                #expect(refusal?.takeRetainedValue() != nil, "\(algorithm.rawValue)")
            }
        }
    }
}
