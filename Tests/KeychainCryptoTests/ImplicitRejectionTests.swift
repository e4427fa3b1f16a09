import Testing

@testable import KeychainCrypto

/// CKM_RSA_PKCS decryption without a padding oracle: implicit rejection as
/// in draft-irtf-cfrg-rsa-guidance and OpenSSL 3.2+, checked against OpenSSL 4.0's own output.
@Suite struct ImplicitRejectionTests {
    /// An RSA-2048 PKCS#8 key made for these vectors (`openssl genpkey`).
    static let keyDER =
        "308204bd020100300d06092a864886f70d0101010500048204a7308204a30201000282010100e0b815e02121cd1aaa33"
        + "f8ad24c7fbbecd0207b545f3c3fff91346f737c129c62789c3352aeaad1de3cf3371b76417c9ba412fe61f71aa8ef86a"
        + "1aa605645f1c4d4b75d4ae045761985d573678277c2fe7b746a53b12c3cc26091cd44f02cb2ce10ac8567386fa08dba7"
        + "5d86acff4adbb3b2ff35b57c9d533c5977f28330f110ea37fe12ff0dc4aa63b724066ddafebbd61371879f294ff7238e"
        + "331dfc14075e5096da7584875b8ebfb76b867ffa40eea9f864e173f082b812d4c1db0f8208dc6dfd6307df8eae3ed0ef"
        + "9eede536a72f3367c692a73f57ebc630b17b56abbd91841b56610e6fdd25b35585c87903a996401eb4cba5c23bf5c5ad"
        + "cb6ecd4f1a6d0203010001028201000231ea1f1278590d3dc4a59e2ec43829243bc7457f0347d2af89b685e23b1aed7e"
        + "ff5f0e9d2d6a80546209055179f9cfcb0c603dd39f5f521e787bfdddb99df95af07f0a00ebfe38391bc6027331b78a64"
        + "3fbde67b8df2a75e8bbdab593882318b0779380dd08afcf804dc0f269002ab08b59998da46d29d6f60c20ebfa5044ee8"
        + "4d8995949b95d86dd4f39deb539c10d26e664e29ea2ed6689e67872d42e6c9e296972475886eab169ed56afb336bdb74"
        + "7bf8ff928a0176f5351e9bce1b1fca9442f65bd3ae9d23fe96d204e9865ecbd49252c9bce2693c4f3a1a5307d3d497a8"
        + "548e414f05e28031fc1439c851b9e778c444bbdf4e1f1666dee1ecb2a6d18102818100efdb3c85a6e61b038aa191c1f9"
        + "bb0b7b9249006266d8a1ed2ef82bf80352a0d0b40ba51b67258a3b74de088262507c90c2ca80b189908a0a20904349af"
        + "4386975266abfdb2f9005313a2f29140af9c67c2e90e890eac2f8ba501368290fedfe75d4f5e5d6d3349b22cd87ca308"
        + "9789a25e3d7bb2457c33edcb1f2d3538a8c30d02818100efd807e3a5f4fa7c2fc51125dabf5b91c31a2fcab1ebb73a8f"
        + "e21fa73a235bd745dbcffbc05c4f514aa6de51d9dc309044fcbce46733946e435c8165ba7b1b9c8d84a47147169423f3"
        + "04c9f2ad624b159e23395b05eb6030699368b1a440aa394b1a75c130c8cad5e171b26bc6e2a33732efe06f1cdccfe43b"
        + "667af8d9af5ce102818100cfeab1ba018532218dc8a4bb0b29b2b87984428b0a2ffb9dc8bb6411e77f76dbb356ecd6a6"
        + "410a64a3d7dc747998df81f4f8e939fccf887962e4eb0f32984c515c229830a135ebac18378621977b230f670bf387a7"
        + "6a67049c124318476c48d71c31b2d135d9e1a64bed958d15e396716353d4a822479a1425a16ee4d5aaa4f90281802449"
        + "1fb06e3c28e53ee8e6963e88f2d69398d3a02bd8c888c099ea460782aff35aab4dc4fdae3985c7f084f4072ccbe017bf"
        + "d0e81140f974d1161eb1804bfdba6aa2a5aa49a1fdd98e7babfdde035feeae550fe95874eac1884777f06034344ca4b3"
        + "251b8c40e487052b895dcae220e549fc868ce8e5f341c946d0d5f34117a10281803a41aefec2291fe80cd605cb83d135"
        + "6ce093646fc055867ee9dbd6c1856fae89e7a59741aebd2fd7fbdee35005453123dd03473d17f319a734096b9ee18326"
        + "ce40b851a2cd237264396124e1156768bd532aae2b3ea3168b2ee895e2a465c06de4e01bf6fe435238ed2ae9566caaf9"
        + "5c4f9f6666c334bbc293d3941edc9858b4"

    /// (name, ciphertext, expected plaintext, padding good?). Ciphertexts are raw RSA of a
    /// chosen encoded message; expected plaintexts are what OpenSSL 4.0's implicit rejection
    /// (pyca/cryptography's bundled OpenSSL) returns for them.
    static let cases: [(String, String, String, Bool)] = [
        (
            "good padding",
            "54b6d0702873fdb5bcea41ed963b378f6ce582c648292c31717d2b9831b30aab9ac18488785837825675c591f52849da"
                + "84dffadf0c68ce03dfca10e0a7d0e34e02c5527e7042de67d109c6c480343e48b7231d97571195fde7f95627f2e83a9d"
                + "02ca27b04b552e31e4f211b0dbe122fe22fda9bda5a387ccf9ab253eabf6f3fdfc39aa5285843b08167bdc2316f94d94"
                + "ecd91d40a039cee72b1e2bfc70808b2b9a7e8a3b39758bac51440c9349e708d94c6d9343858c0e021cf0d200db155b07"
                + "196e4188b4deee66165067505937fbd25c688fcab9f9a17f5a6430cff28d8f79e23c3aae6659b37c72942b43836d30f2"
                + "49fa6605b4ad8bf5a920801d03fef6bf",
            "7031316b6579636861696e",
            true
        ),
        (
            "a first octet other than zero",
            "7a2baadf20ad41e6652f39bf8c0aa48ea6782bc2d83bb9cf496f6cf5ad77248ffaaca75200c03f06e6403e884bf32b5e"
                + "d0130d7710e5f9d2f90d3b4381e4a460c998dfc2e13adea8a18adc936d25e591f1e7f1ead0a03c4e04b7632da0af1606"
                + "fd1352de15be70431d5af37240a80d0b0f5a3a76adcbe57e42dd44fdb76da646871576fbabf18f6ddfd4df8a0f438c46"
                + "967f3a429a0a672a15b19bd3b0c58f56e080383eae6a1ee30f62a22cd9ded8100266ad812a848108497259fcc93f1993"
                + "c230501744e40bc669c5f80062bbef44a3f9aefe3946eb6f4d1abddc4246d5187bc55822fca3c764e5caf4df40448dce"
                + "318dd5c246ec6a752e194f23a3d99a62",
            "f4352257a9a5a63fb30069c3e0042e5be845cfb951f5b8448e291ff0fa7ed2f67dee5bb95c7c425e9434df679ba4124b"
                + "c6fc70d4ecfc33c5337c25a098c268efb3228aab0ba9c966e60fbe57becc7af836d810f34417f1b09dc52ca14d3979f2"
                + "3a2b39d4afcc181dd5e3c4e931b2e96b8dbba07a0eefc85a66bc0ee24e634408749a9303b5a9b304beaf3d3e5d9e01b6"
                + "04f3be6be82b7c471e7f10f4bd89064b80cfc18d26572d27eeea178b36d786efae",
            false
        ),
        (
            "block type 1 instead of 2",
            "5dcc13dd82a97bbfae33d188115db17e47d98de2eafa4c94323d9ccea623166a0c79ad388b1356dfbcbfd4e0eea40c20"
                + "696e039295727eb5305a7b31ca8fef6f91b34cf5bc99b7e770b6a1aee487ed7e0c90152a9545d5baf86ffed4314946ef"
                + "2e34ad0f05d512c056fff7f16ef88621f51014304a15b1ea4970e365a23d68326e14dd4bf8c16cfdb509b4341fdadcda"
                + "13fe0f81ad0fde26c8757c8f1779a13a3fd850b530f0175241bc26ab64a910bdd58dc314fd15f8bc7eb3961a0f5cc623"
                + "a2e1b12b0d2567798198c0a3ad228f84ab25d30b0dfd24250526568a51f27f39d4dc497d34bef0b304591b7fe498081d"
                + "a88d3ecb38b3805c59e4e61046be30fe",
            "6abbbce38bdef8e7b81e5cff640845b5d0116f6e7122dead8700b93f98ca05dce5f987e1dc27f70d1e7e995bccb44cb9"
                + "0088b99ea19b77d16dc2a331ae45728cf1b47ad6d3638586df1ebb6cf138cd0fad302ca870789d5a3f11a19960dcda52"
                + "c961c73add73f50bc07c2d1b3eb0",
            false
        ),
        (
            "a padding string of 7 octets",
            "52c188833dce6578dd13de9e1436ed8faa09d03a6e7cf0b3515802e31452005f1a161389ffd8957d471e003735910918"
                + "eb58b1a08e3fd792def7ae03296e123d0ad814a1624eda1c7bf4479b9677f4100885e4811dea169827c1aa99075b1ebb"
                + "e33c113c54f8fe1d051daa487146e4bac2e8cf396afc49576198905a6adc6dd1205b7bb51bfd82d369f25a40dbc45cee"
                + "2087469e1013a50e9aa0261ba498c8a9a0179dfd11bc7673a25934b87ebbc140d4a831072f8184fefe9cc70ac749f5fa"
                + "7f576b0ec4f79414cf9dd73bea6d3c3c0ddc82cfc539be20e5478f507a94fc3a78b5a23a8007e4a3500caa166e8e8393"
                + "914a082c7760bc70c6ce72a7ddf5bac2",
            "7fe795c6b6278f8099692e3e5e7e2ce1971c0c0fd859c517acdb44d6821d7f6e4113fcdebc289783bb900a97ac445259"
                + "7c6eae7a4dd975da15a07fc58e5137134deb101cba44b7c215879ac48ec5638b0fc0b0f0f143bb1062bc8d4ebbe00be7"
                + "32b8163643eb9558f14d42a2b44e2b7fe3829bbde5751c2ad1604d4cf4b132232a4a9e2ab0a24ffd781f630c07d791e5"
                + "f559cd6f202da80036b229fbe49306b374b2736cfa29411c2678381a121c2df684a5cd620f6183365b5847bbdc101c6d"
                + "bd9e92b1354a1bbbb1444f88349faee49a3bd7081911e7a8a9045bfa0ed096ccde1b",
            false
        ),
        (
            "no zero separator",
            "356dd268c7ebeb064651464681033a52ff39873f4caff78c13d205c781e7a2e66fcab9e3b4bf2c74e1b93332c8528b76"
                + "da4d6e4d506506e73e7886f625b379b8a0e064434e5fbd5df90f46cb96b773d7d31f5bfbbae91164f815a40c2e92b78f"
                + "ac198647b366c4e16525a80bd20d2fa332d4b1d6524b58e2bafb4c53afb30e8f4e613bef81c3bfade496d586cf3f3924"
                + "85818541d1758d84117a0d19856f4805391ccfc6aed33b2ad7f7dfe2d1a5319ad98323033bf1bce5e78d84b449689003"
                + "1fda190c3c62f2e82515b4033213320e45786453baafa9b6c18e616d9d3065262211de4f3c5b15a5c6490dbc0268ee1f"
                + "b595cbb90a0e015b12782473be305597",
            "7f94014ae2b4ea2f501ec703829dfc03c84acf182627f94a0b50b9b520a2cd77af84d8f52beb9047f7c01c3b1383cab4"
                + "ab7f69dedc7139e991679f2ea4ebbe2ad6dd45b580fc60bc2061d42f96c957bb72d58a8c3c758e916614c62ccab472b8"
                + "e86e07922ec8cba8b765b66740375756e3818a15af9710ddbe9d56ef4c70c7a0a13c6ba84dfd58d5317f734f58a2",
            false
        ),
        (
            "an empty message",
            "2a826ab30890ecf8a2026f85f12cbef9be0777fe1d9e641d0674ca8891177cba0d648fb7dd2d4c10145d792fd97c52f4"
                + "c567216b79d4aeb989bc7c920386aab331b007afa8f4932322ec5574bd3a62164ef03960def410ffa554234bfc537fe0"
                + "8f1676fc9baf97996eba9aa646e47d238a3684a507cd8d273e2b0b4baa196f5d030327fda63c005cdf810f9480b06659"
                + "81dacb3355c17b4d67639452a6d7bf9116b69218e01b9d366e0688b24d4c9b9f6af9b5635fb96a90bf684042537e8738"
                + "45dc81fe976d75264bc81d2ff03601fca58440367d9ca8855b842b5f9534aee9246cfce4131a24060642a324529ab5db"
                + "723d952e88f9b348f80f59f55712e031",
            "",
            true
        ),
    ]

    static func bytes(_ hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            result.append(UInt8(hex[index..<next], radix: 16) ?? 0)
            index = next
        }
        return result
    }

    static let key: AsymmetricKey? = try? AsymmetricKey(privateKeyDER: bytes(keyDER))

    @Test(
        "PKCS#1 v1.5 decryption gives OpenSSL 3.2+'s message for every ciphertext, good padding or bad",
        arguments: 0..<cases.count)
    func knownAnswers(index: Int) throws {
        let key = try #require(Self.key)
        let (name, ciphertext, expected, _) = Self.cases[index]
        let plaintext = try key.decrypt(Self.bytes(ciphertext), padding: .pkcs1)
        #expect(plaintext == Self.bytes(expected), "\(name)")
    }

    @Test("a corrupted ciphertext decrypts without an error, to the same message every time")
    func corruptedCiphertextIsDeterministic() throws {
        let key = try AsymmetricKey.generate(.rsa(bits: 2048))
        let ciphertext = try key.encrypt(Array("the real message".utf8), padding: .pkcs1)
        #expect(try key.decrypt(ciphertext, padding: .pkcs1) == Array("the real message".utf8))
        var corrupted = ciphertext
        corrupted[100] ^= 0x01
        let first = try key.decrypt(corrupted, padding: .pkcs1)
        let second = try key.decrypt(corrupted, padding: .pkcs1)
        #expect(first == second)
        #expect(first != Array("the real message".utf8))
        var other = ciphertext
        other[101] ^= 0x01
        #expect(try key.decrypt(other, padding: .pkcs1) != first)
        // Another key gives another synthetic message for the same ciphertext. Its top byte
        // cleared, the ciphertext is below both moduli (each has its top bit set): one that is
        // not below the other key's modulus is a public error, not a rejection (this test
        // failed now and then on that).
        let otherKey = try AsymmetricKey.generate(.rsa(bits: 2048))
        var belowBoth = corrupted
        belowBoth[0] = 0
        #expect(try otherKey.decrypt(belowBoth, padding: .pkcs1) != key.decrypt(belowBoth, padding: .pkcs1))
    }

    @Test(
        "good ciphertexts of every length a 2048-bit key carries decrypt to their message",
        arguments: [0, 1, 100, 245])
    func goodCiphertextsDecrypt(length: Int) throws {
        let key = try #require(Self.key)
        let message = [UInt8](repeating: 0x5a, count: length)
        let ciphertext = try key.encrypt(message, padding: .pkcs1)
        #expect(try key.decrypt(ciphertext, padding: .pkcs1) == message)
    }

    @Test("only what is public is an error: a ciphertext longer than the modulus or not below it")
    func publicFailuresThrow() throws {
        let key = try #require(Self.key)
        #expect(throws: CryptoError.self) {
            try key.decrypt([UInt8](repeating: 1, count: 257), padding: .pkcs1)
        }
        #expect(throws: CryptoError.self) {
            try key.decrypt([UInt8](repeating: 0xff, count: 256), padding: .pkcs1)
        }
        #expect(throws: CryptoError.self) { try key.decrypt([], padding: .pkcs1) }
    }

    @Test("a ciphertext one byte short of the modulus is invalid input for every padding, never zero-padded")
    func shortCiphertext() throws {
        let key = try #require(Self.key)
        for padding in [EncryptionPadding.pkcs1, .raw, .oaep(hash: .sha256, mgf1: .sha256, label: [])] {
            for length in [255, 1] {
                expectCryptoError(.invalidInput, "\(padding), \(length) bytes") {
                    _ = try key.decrypt([UInt8](repeating: 1, count: length), padding: padding)
                }
            }
        }
    }

    @Test("the padding check's masks compute comparisons without branches")
    func masks() {
        typealias Mask = ImplicitRejection.Mask
        for (a, b) in [(0, 0), (1, 0), (0, 1), (10, 9), (9, 10), (UInt32.max, 0), (0, UInt32.max)]
            as [(UInt32, UInt32)]
        {
            #expect(Mask.less(a, b) == (a < b ? UInt32.max : 0))
            #expect(Mask.equal(a, b) == (a == b ? UInt32.max : 0))
            #expect(Mask.isZero(a) == (a == 0 ? UInt32.max : 0))
            #expect(Mask.select(Mask.less(a, b), a, b) == (a < b ? a : b))
        }
    }
}
