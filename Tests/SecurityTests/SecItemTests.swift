import Foundation
import Keychain
import Security
import Testing

// Every rule of ARCHITECTURE.md §7 and each bad input it must refuse, through the Apple-compatible API on
// the default keychain (a fresh P11KEYCHAIN_DIR per test).

private var certificateClass: [String: Any] { [kSecClass as String: kSecClassCertificate] }

/// `base` with more keys.
private func query(_ extra: [String: Any], base: [String: Any] = certificateClass) -> [String: Any] {
    base.merging(extra) { _, new in new }
}

@Suite("SecItemCopyMatching", .serialized)
struct CopyMatchingTests {
    @Test("returns one item by default, the first added, not an array")
    func defaultsToOneResult() throws {
        try withDefaultKeychain { _ in
            let added = [try add(.alice, label: "team"), try add(.bob, label: "team")]
            #expect(added == [errSecSuccess, errSecSuccess])
            var item: CFTypeRef?
            let status = SecItemCopyMatching(
                query([kSecAttrLabel as String: "team", kSecReturnRef as String: true]) as CFDictionary, &item
            )
            #expect(status == errSecSuccess)
            #expect(!(item is NSArray))
            let alice = try Fixture.alice.certificate
            #expect(item as? SecCertificate == alice)
        }
    }

    @Test("a limit other than one returns an array, even of one item")
    func otherLimitsReturnArrays() throws {
        try withDefaultKeychain { _ in
            try add(.alice)
            for limit in [kSecMatchLimitAll as Any, 5, NSNumber(value: 2)] {
                var item: CFTypeRef?
                let status = SecItemCopyMatching(
                    query([kSecMatchLimit as String: limit, kSecReturnRef as String: true]) as CFDictionary,
                    &item)
                #expect(status == errSecSuccess)
                let certificates = item as? [SecCertificate]
                #expect(certificates == [try Fixture.alice.certificate], "limit \(limit)")
            }
            // A numeric limit of one is the same as kSecMatchLimitOne.
            var item: CFTypeRef?
            #expect(
                SecItemCopyMatching(
                    query([kSecMatchLimit as String: 1, kSecReturnRef as String: true]) as CFDictionary, &item
                )
                    == errSecSuccess)
            #expect(item is SecCertificate)
        }
    }

    @Test("no match is errSecItemNotFound, never an empty array")
    func noMatchIsItemNotFound() throws {
        try withDefaultKeychain { _ in
            try add(.alice)
            for limit in [kSecMatchLimitOne, kSecMatchLimitAll] {
                var item: CFTypeRef? = "stale" as NSString
                let status = SecItemCopyMatching(
                    query([
                        kSecAttrLabel as String: "nobody", kSecMatchLimit as String: limit,
                        kSecReturnRef as String: true,
                    ]) as CFDictionary, &item)
                #expect(status == errSecItemNotFound)
                #expect(item == nil)
            }
            // An empty keychain too.
            #expect(SecItemDelete(certificateClass as CFDictionary) == errSecSuccess)
            var item: CFTypeRef?
            #expect(
                SecItemCopyMatching(
                    query([kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnData as String: true])
                        as CFDictionary, &item)
                    == errSecItemNotFound)
        }
    }

    @Test("several kSecReturn keys return one dictionary per item")
    func severalReturnKeysGiveDictionaries() throws {
        try withDefaultKeychain { _ in
            try add(.alice)
            try add(.bob)
            let returns: [String: Any] = [
                kSecReturnRef as String: true, kSecReturnData as String: true,
                kSecReturnAttributes as String: true, kSecReturnPersistentRef as String: true,
            ]
            var item: CFTypeRef?
            #expect(
                SecItemCopyMatching(
                    query(returns.merging([kSecMatchLimit as String: kSecMatchLimitAll]) { $1 })
                        as CFDictionary, &item)
                    == errSecSuccess)
            let dictionaries = try #require(item as? [[String: Any]])
            #expect(dictionaries.count == 2)
            let bob = try Fixture.bob.certificate
            #expect(dictionaries[1][kSecValueRef as String] as? SecCertificate == bob)
            #expect(dictionaries[1][kSecValueData as String] as? Data == Fixture.bob.der)
            #expect(dictionaries[1][kSecAttrLabel as String] as? String == "Bob Example")
            #expect((dictionaries[1][kSecValuePersistentRef as String] as? Data)?.isEmpty == false)

            // Limit one: the dictionary itself.
            var one: CFTypeRef?
            #expect(SecItemCopyMatching(query(returns) as CFDictionary, &one) == errSecSuccess)
            let dictionary = try #require(one as? [String: Any])
            #expect(dictionary[kSecValueRef as String] as? SecCertificate == (try Fixture.alice.certificate))
        }
    }

    @Test("each return key alone returns that form")
    func singleReturnForms() throws {
        try withDefaultKeychain { _ in
            try add(.alice, label: "Alice")
            var data: CFTypeRef?
            #expect(
                SecItemCopyMatching(query([kSecReturnData as String: true]) as CFDictionary, &data)
                    == errSecSuccess)
            #expect(data as? Data == Fixture.alice.der)
            #expect(CFGetTypeID(data) == CFDataGetTypeID())

            var reference: CFTypeRef?
            #expect(
                SecItemCopyMatching(
                    query([kSecReturnPersistentRef as String: true]) as CFDictionary, &reference)
                    == errSecSuccess)
            let persistent = try #require(reference as? Data)
            var found: CFTypeRef?
            #expect(
                SecItemCopyMatching(
                    [
                        kSecClass as String: kSecClassCertificate,
                        kSecValuePersistentRef as String: persistent, kSecReturnRef as String: true,
                    ] as CFDictionary,
                    &found) == errSecSuccess)
            #expect(found as? SecCertificate == (try Fixture.alice.certificate))
            #expect(CFGetTypeID(found) == SecCertificateGetTypeID())
        }
    }

    @Test("kSecReturnAttributes maps the PKCS#11 attributes to Apple's keys")
    func attributesAreMapped() throws {
        try withDefaultKeychain { _ in
            try add(.alice)
            var item: CFTypeRef?
            #expect(
                SecItemCopyMatching(query([kSecReturnAttributes as String: true]) as CFDictionary, &item)
                    == errSecSuccess)
            let attributes = try #require(item as? [String: Any])
            let alice = try Fixture.alice.certificate
            #expect(attributes[kSecClass as String] as? String == kSecClassCertificate as String)
            #expect(attributes[kSecAttrLabel as String] as? String == "Alice Example")
            #expect(
                attributes[kSecAttrSerialNumber as String] as? Data == Data([0x00, 0x80, 0xA1, 0xB2, 0xC3]))
            #expect(
                attributes[kSecAttrSerialNumber as String] as? Data
                    == SecCertificateCopySerialNumberData(alice, nil) as Data?)
            #expect(attributes[kSecAttrIssuer as String] as? Data == (try Fixture.ca.subjectDER))
            #expect(attributes[kSecAttrSubject as String] as? Data == (try Fixture.alice.subjectDER))
            #expect((attributes[kSecAttrPublicKeyHash as String] as? Data)?.count == 20)
            #expect((attributes[kSecAttrSubjectKeyID as String] as? Data)?.count == 20)
            #expect(attributes[kSecAttrCertificateType as String] as? Int == 3, "X.509 v3")
            #expect(attributes[kSecAttrCertificateEncoding as String] as? Int == 3)
        }
    }

    @Test("with no kSecReturn key the call only tells whether something matches")
    func noReturnKeys() throws {
        try withDefaultKeychain { _ in
            try add(.alice)
            var item: CFTypeRef?
            #expect(SecItemCopyMatching(certificateClass as CFDictionary, &item) == errSecSuccess)
            #expect(item == nil)
            #expect(SecItemCopyMatching(certificateClass as CFDictionary, nil) == errSecSuccess)
            #expect(
                SecItemCopyMatching(query([kSecAttrLabel as String: "x"]) as CFDictionary, nil)
                    == errSecItemNotFound)
        }
    }

    @Test("asking for a result with a NULL result pointer is errSecParam")
    func nullResultPointer() throws {
        try withDefaultKeychain { _ in
            try add(.alice)
            for key in [kSecReturnRef, kSecReturnData, kSecReturnAttributes, kSecReturnPersistentRef] {
                #expect(SecItemCopyMatching(query([key as String: true]) as CFDictionary, nil) == errSecParam)
            }
        }
    }

    @Test(
        "every attribute and search key finds exactly its certificates",
        arguments: [
            "serial content", "issuer DER", "issuer and serial", "subject DER", "normalized subject",
            "normalized issuer", "public-key hash", "subject key ID", "certificate type 3",
            "certificate type 1", "encoding", "subject contains", "subject contains, case differs",
            "subject contains ignoring case", "valid now", "valid in 1970",
            "valid now as kCFNull", "value ref", "value data", "label",
        ])
    func searchKeys(_ name: String) throws {
        try withDefaultKeychain { _ in
            for fixture in [Fixture.ca, .alice, .bob, .printable] { try add(fixture) }
            let alice = try Fixture.alice.certificate
            let printable = try Fixture.printable.certificate
            let all: [Fixture] = [.ca, .alice, .bob, .printable]
            let (keys, expected): ([String: Any], [Fixture]) =
                switch name {
                case "serial content":
                    ([kSecAttrSerialNumber as String: Data([0x00, 0x80, 0xA1, 0xB2, 0xC3])], [.alice])
                case "issuer DER":
                    ([kSecAttrIssuer as String: try Fixture.ca.subjectDER], [.ca, .alice, .bob])
                case "issuer and serial":
                    (
                        [
                            kSecAttrIssuer as String: try Fixture.ca.subjectDER,
                            kSecAttrSerialNumber as String: Data([2]),
                        ], [.bob]
                    )
                case "subject DER": ([kSecAttrSubject as String: try Fixture.alice.subjectDER], [.alice])
                case "normalized subject":
                    (
                        [
                            kSecAttrSubject as String: SecCertificateCopyNormalizedSubjectSequence(printable)
                                as Any
                        ], [.printable]
                    )
                case "normalized issuer":
                    (
                        [kSecAttrIssuer as String: SecCertificateCopyNormalizedIssuerSequence(alice) as Any],
                        [.ca, .alice, .bob]
                    )
                case "public-key hash":
                    ([kSecAttrPublicKeyHash as String: try Fixture.bob.publicKeyHash], [.bob])
                case "subject key ID":
                    ([kSecAttrSubjectKeyID as String: try Fixture.alice.subjectKeyID], [.alice])
                case "certificate type 3": ([kSecAttrCertificateType as String: 3], [.ca, .alice])
                case "certificate type 1": ([kSecAttrCertificateType as String: 1], [.bob, .printable])
                case "encoding": ([kSecAttrCertificateEncoding as String: 3], all)
                case "subject contains":
                    ([kSecMatchSubjectContains as String: "Example"], [.alice, .bob, .printable])
                // Apple's default: case-sensitive.
                case "subject contains, case differs": ([kSecMatchSubjectContains as String: "EXAMPLE"], [])
                case "subject contains ignoring case":
                    (
                        [
                            kSecMatchSubjectContains as String: "EXAMPLE",
                            kSecMatchCaseInsensitive as String: true,
                        ],
                        [.alice, .bob, .printable]
                    )
                case "valid now": ([kSecMatchValidOnDate as String: Date()], all)
                case "valid in 1970": ([kSecMatchValidOnDate as String: Date(timeIntervalSince1970: 0)], [])
                case "valid now as kCFNull": ([kSecMatchValidOnDate as String: NSNull()], all)
                case "value ref": ([kSecValueRef as String: alice], [.alice])
                case "value data": ([kSecValueData as String: Fixture.bob.der], [.bob])
                case "label": ([kSecAttrLabel as String: "Printable Example"], [.printable])
                default: ([:], [])
                }
            var item: CFTypeRef?
            let status = SecItemCopyMatching(
                query(
                    keys.merging([kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnRef as String: true])
                    { $1 })
                    as CFDictionary, &item)
            if expected.isEmpty {
                #expect(status == errSecItemNotFound)
            } else {
                #expect(status == errSecSuccess)
                let found = item as? [SecCertificate] ?? []
                #expect(found == (try expected.map { try $0.certificate }))
            }
        }
    }
}

@Suite("SecItemAdd", .serialized)
struct AddTests {
    @Test("a certificate given as kSecValueData is stored like one given as kSecValueRef")
    func addByData() throws {
        try withDefaultKeychain { _ in
            let status = SecItemAdd(
                query([kSecValueData as String: Fixture.bob.der, kSecAttrLabel as String: "by data"])
                    as CFDictionary, nil)
            #expect(status == errSecSuccess)
            #expect(storedLabels() == ["by data"])
        }
    }

    @Test("kSecClass may be left out when kSecValueRef implies it")
    func classImpliedByValueRef() throws {
        try withDefaultKeychain { _ in
            let alice = try Fixture.alice.certificate
            #expect(SecItemAdd([kSecValueRef as String: alice] as CFDictionary, nil) == errSecSuccess)
            #expect(storedLabels() == ["Alice Example"])
        }
    }

    @Test("kSecReturn keys return the new item; kSecAttrPublicKeyHash sets its CKA_ID")
    func addReturnsTheItem() throws {
        try withDefaultKeychain { _ in
            var result: CFTypeRef?
            let status = SecItemAdd(
                query([
                    kSecValueRef as String: try Fixture.alice.certificate,
                    kSecAttrPublicKeyHash as String: Data([1, 2, 3]),
                    kSecReturnAttributes as String: true, kSecReturnRef as String: true,
                ]) as CFDictionary, &result)
            #expect(status == errSecSuccess)
            let dictionary = try #require(result as? [String: Any])
            #expect(dictionary[kSecAttrPublicKeyHash as String] as? Data == Data([1, 2, 3]))
            #expect(dictionary[kSecValueRef as String] as? SecCertificate == (try Fixture.alice.certificate))
        }
    }

    @Test("a duplicate is errSecDuplicateItem and the first item stays as it was")
    func duplicate() throws {
        try withDefaultKeychain { _ in
            let statuses = [try add(.alice, label: "first"), try add(.alice, label: "second")]
            #expect(statuses == [errSecSuccess, errSecDuplicateItem])
            #expect(
                SecItemAdd(query([kSecValueData as String: Fixture.alice.der]) as CFDictionary, nil)
                    == errSecDuplicateItem)
            #expect(storedLabels() == ["first"])
        }
    }

    @Test("bytes that are not a DER certificate are refused and nothing is stored")
    func badDER() throws {
        try withDefaultKeychain { _ in
            #expect(SecCertificateCreateWithData(nil, Data([0x30, 0x03, 0x02, 0x01, 0x01]) as CFData) == nil)
            #expect(SecCertificateCreateWithData(nil, Data() as CFData) == nil)
            #expect(SecCertificateCreateWithData(nil, Data(Fixture.alice.der.dropLast()) as CFData) == nil)
            let pem = try Data(contentsOf: URL(fileURLWithPath: Fixture.alice.pemPath))
            #expect(SecCertificateCreateWithData(nil, pem as CFData) == nil, "PEM is not DER")
            #expect(
                SecItemAdd(query([kSecValueData as String: Data("junk".utf8)]) as CFDictionary, nil)
                    == errSecDecode)
            #expect(storedLabels().isEmpty)
        }
    }

    @Test("asking for a result with a NULL result pointer is errSecParam and nothing is stored")
    func nullResultPointer() throws {
        try withDefaultKeychain { _ in
            let status = SecItemAdd(
                query([kSecValueRef as String: try Fixture.alice.certificate, kSecReturnRef as String: true])
                    as CFDictionary, nil)
            #expect(status == errSecParam)
            #expect(storedLabels().isEmpty)
        }
    }
}

@Suite("SecItemUpdate and SecItemDelete", .serialized)
struct UpdateDeleteTests {
    @Test("SecItemUpdate changes every match by default")
    func updateAllMatches() throws {
        try withDefaultKeychain { _ in
            try add(.alice, label: "team")
            try add(.bob, label: "team")
            try add(.ca)
            let status = SecItemUpdate(
                query([kSecAttrLabel as String: "team"]) as CFDictionary,
                [kSecAttrLabel as String: "renamed", kSecAttrPublicKeyHash as String: Data([7])]
                    as CFDictionary)
            #expect(status == errSecSuccess)
            #expect(storedLabels() == ["renamed", "renamed", "p11keychain Test CA"])
            var item: CFTypeRef?
            #expect(
                SecItemCopyMatching(
                    query([
                        kSecAttrPublicKeyHash as String: Data([7]),
                        kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnRef as String: true,
                    ])
                        as CFDictionary, &item) == errSecSuccess)
            #expect((item as? [SecCertificate])?.count == 2)
        }
    }

    @Test("SecItemUpdate with no match is errSecItemNotFound")
    func updateNoMatch() throws {
        try withDefaultKeychain { _ in
            try add(.alice)
            #expect(
                SecItemUpdate(
                    query([kSecAttrLabel as String: "nobody"]) as CFDictionary,
                    [kSecAttrLabel as String: "x"] as CFDictionary)
                    == errSecItemNotFound)
        }
    }

    @Test(
        "SecItemUpdate refuses what it cannot do, and changes nothing",
        arguments: [
            "return key", "limit one", "numeric limit", "search key", "subject change", "value change",
            "unknown change key", "class change", "wrong type change",
        ])
    func updateRefuses(_ name: String) throws {
        try withDefaultKeychain { _ in
            try add(.alice, label: "before")
            let match = query([kSecAttrLabel as String: "before"])
            let rename: [String: Any] = [kSecAttrLabel as String: "after"]
            let (search, changes): ([String: Any], [String: Any]) =
                switch name {
                case "return key": (query([kSecReturnRef as String: true], base: match), rename)
                case "limit one": (query([kSecMatchLimit as String: kSecMatchLimitOne], base: match), rename)
                case "numeric limit": (query([kSecMatchLimit as String: 1], base: match), rename)
                case "search key": (query([kSecMatchSubjectContains as String: "Alice"], base: match), rename)
                case "subject change": (match, [kSecAttrSubject as String: try Fixture.bob.subjectDER])
                case "value change": (match, [kSecValueData as String: Fixture.bob.der])
                case "unknown change key": (match, rename.merging(["nonsense": 1]) { $1 })
                case "class change": (match, rename.merging([kSecClass as String: kSecClassKey]) { $1 })
                case "wrong type change": (match, [kSecAttrLabel as String: 42])
                default: (match, rename)
                }
            #expect(SecItemUpdate(search as CFDictionary, changes as CFDictionary) == errSecParam)
            #expect(storedLabels() == ["before"])
        }
    }

    @Test("SecItemDelete removes every match by default and nothing else")
    func deleteAllMatches() throws {
        try withDefaultKeychain { _ in
            try add(.alice, label: "team")
            try add(.ca)
            try add(.bob, label: "team")
            #expect(SecItemDelete(query([kSecAttrLabel as String: "team"]) as CFDictionary) == errSecSuccess)
            #expect(storedLabels() == ["p11keychain Test CA"])
            #expect(
                SecItemDelete(query([kSecAttrLabel as String: "team"]) as CFDictionary) == errSecItemNotFound)
            #expect(
                SecItemDelete([kSecValueRef as String: try Fixture.ca.certificate] as CFDictionary)
                    == errSecSuccess)
            #expect(storedLabels().isEmpty)
        }
    }

    @Test(
        "SecItemDelete refuses return keys, limits other than all and search keys, and deletes nothing",
        arguments: [
            "return key", "limit one", "subject contains", "valid on date",
        ])
    func deleteRefuses(_ name: String) throws {
        try withDefaultKeychain { _ in
            try add(.alice)
            let extra: [String: Any] =
                switch name {
                case "return key": [kSecReturnData as String: true]
                case "limit one": [kSecMatchLimit as String: kSecMatchLimitOne]
                case "subject contains": [kSecMatchSubjectContains as String: "Alice"]
                default: [kSecMatchValidOnDate as String: Date()]
                }
            #expect(SecItemDelete(query(extra) as CFDictionary) == errSecParam)
            #expect(storedLabels() == ["Alice Example"])
            #expect(
                SecItemDelete(query([kSecMatchLimit as String: kSecMatchLimitAll]) as CFDictionary)
                    == errSecSuccess)
        }
    }
}

@Suite("Bad dictionaries", .serialized)
struct BadDictionaryTests {
    /// Runs all four calls with `dictionary` and expects `status` from each, nothing stored
    /// and nothing changed.
    func expectEveryCall(
        _ dictionary: [String: Any], _ status: OSStatus, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        try withDefaultKeychain { _ in
            try add(.bob)
            var item: CFTypeRef?
            #expect(
                SecItemAdd(dictionary as CFDictionary, nil) == status, "SecItemAdd",
                sourceLocation: sourceLocation)
            #expect(
                SecItemCopyMatching(dictionary as CFDictionary, &item) == status, "SecItemCopyMatching",
                sourceLocation: sourceLocation)
            #expect(item == nil, sourceLocation: sourceLocation)
            #expect(
                SecItemUpdate(
                    dictionary as CFDictionary, [kSecAttrLabel as String: "changed"] as CFDictionary)
                    == status,
                "SecItemUpdate", sourceLocation: sourceLocation)
            #expect(
                SecItemDelete(dictionary as CFDictionary) == status, "SecItemDelete",
                sourceLocation: sourceLocation)
            #expect(storedLabels() == ["Bob Example"], sourceLocation: sourceLocation)
        }
    }

    @Test("a missing kSecClass is errSecParam for every call")
    func missingClass() throws {
        try expectEveryCall(
            [kSecAttrLabel as String: "Bob Example", kSecValueData as String: Fixture.alice.der], errSecParam)
    }

    @Test("an unknown key is errSecParam for every call")
    func unknownKey() throws {
        try expectEveryCall(
            query([kSecValueData as String: Fixture.alice.der, "acct": "someone"]), errSecParam)
    }

    @Test(
        "an unknown class is errSecNoSuchClass; an internet password key on a generic password is errSecParam"
    )
    func classes() throws {
        try expectEveryCall([kSecClass as String: "nonsense"], errSecNoSuchClass)
        try expectEveryCall(
            [kSecClass as String: kSecClassGenericPassword, kSecAttrServer as String: "x"], errSecParam)
        try expectEveryCall([kSecClass as String: 42], errSecParam)
    }

    @Test(
        "a value of the wrong type is errSecParam and nothing is stored or changed",
        arguments: [
            "label number", "subject string", "serial array", "return string", "limit word", "limit zero",
            "limit negative", "limit boolean", "value ref data", "valid date string", "type string",
            "contains number", "persistent ref string", "optional none",
        ])
    func wrongValueTypes(_ name: String) throws {
        let bad: [String: Any] =
            switch name {
            case "label number": [kSecAttrLabel as String: 42]
            case "subject string": [kSecAttrSubject as String: "CN=Bob"]
            case "serial array": [kSecAttrSerialNumber as String: [UInt8]([2])]
            case "return string": [kSecReturnRef as String: "yes"]
            case "limit word": [kSecMatchLimit as String: "lots"]
            case "limit zero": [kSecMatchLimit as String: 0]
            case "limit negative": [kSecMatchLimit as String: -3]
            case "limit boolean": [kSecMatchLimit as String: true]
            case "value ref data": [kSecValueRef as String: Fixture.alice.der]
            case "valid date string": [kSecMatchValidOnDate as String: "today"]
            case "type string": [kSecAttrCertificateType as String: "3"]
            case "contains number": [kSecMatchSubjectContains as String: 1]
            case "persistent ref string": [kSecValuePersistentRef as String: "ref"]
            default: [kSecAttrLabel as String: Optional<String>.none as Any]
            }
        try withDefaultKeychain { _ in
            try add(.bob)
            var item: CFTypeRef?
            #expect(SecItemCopyMatching(query(bad) as CFDictionary, &item) == errSecParam)
            #expect(SecItemDelete(query(bad) as CFDictionary) == errSecParam)
            #expect(
                SecItemAdd(
                    query(bad.merging([kSecValueData as String: Fixture.alice.der]) { $1 }) as CFDictionary,
                    nil)
                    == errSecParam)
            #expect(storedLabels() == ["Bob Example"])
        }
    }

    @Test(
        "contradictory keys are errSecParam and nothing is stored",
        arguments: [
            "ref and data differ", "limit in add", "search key in add", "subject disagrees",
            "serial disagrees",
            "persistent ref in add", "no certificate in add",
        ])
    func contradictions(_ name: String) throws {
        try withDefaultKeychain { _ in
            let alice = try Fixture.alice.certificate
            let attributes: [String: Any] =
                switch name {
                case "ref and data differ":
                    [kSecValueRef as String: alice, kSecValueData as String: Fixture.bob.der]
                case "limit in add":
                    [kSecValueRef as String: alice, kSecMatchLimit as String: kSecMatchLimitOne]
                case "search key in add":
                    [kSecValueRef as String: alice, kSecMatchSubjectContains as String: "Alice"]
                case "subject disagrees":
                    [kSecValueRef as String: alice, kSecAttrSubject as String: try Fixture.bob.subjectDER]
                case "serial disagrees":
                    [kSecValueRef as String: alice, kSecAttrSerialNumber as String: Data([1])]
                case "persistent ref in add":
                    [kSecValueRef as String: alice, kSecValuePersistentRef as String: Data([1])]
                default: [kSecAttrLabel as String: "nothing to add"]
                }
            #expect(SecItemAdd(query(attributes) as CFDictionary, nil) == errSecParam)
            #expect(storedLabels().isEmpty)
            // CopyMatching with two different certificates as values.
            var item: CFTypeRef?
            #expect(
                SecItemCopyMatching(
                    query([kSecValueRef as String: alice, kSecValueData as String: Fixture.bob.der])
                        as CFDictionary, &item)
                    == errSecParam)
        }
    }
}

@Suite("Where the keychain is", .serialized)
struct KeychainLocationTests {
    @Test("a store that cannot be opened is errSecNoSuchKeychain with a message naming the path")
    func unopenableStore() throws {
        try withDefaultKeychain { directory in
            // A regular file where the store's directory should be.
            let blocker = directory + "/not-a-directory"
            #expect(FileManager.default.createFile(atPath: blocker, contents: Data("x".utf8)))
            setenv("P11KEYCHAIN_DIR", blocker, 1)
            let status = try add(.alice)
            #expect(status == errSecNoSuchKeychain)
            let message = SecCopyErrorDiagnostic(status) as String?
            #expect(message?.contains(blocker + "/login.sqlite3") == true, "\(message ?? "nil")")
            var item: CFTypeRef?
            #expect(
                SecItemCopyMatching(query([kSecReturnRef as String: true]) as CFDictionary, &item)
                    == errSecNoSuchKeychain)
        }
    }

    @Test("an invalid configuration file is errSecNotAvailable with its file and line")
    func invalidConfiguration() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = directory + "/p11keychain.conf"
        #expect(
            FileManager.default.createFile(atPath: configuration, contents: Data("\n\nnonsense = 1\n".utf8)))
        try withDefaultKeychain(configuration: configuration) { _ in
            let status = try add(.alice)
            #expect(status == errSecNotAvailable)
            let message = SecCopyErrorDiagnostic(status) as String? ?? ""
            #expect(message.contains(configuration + ":3"), "\(message)")
        }
    }

    @Test("the default keychain is the login store under P11KEYCHAIN_DIR, read on every call")
    func followsTheEnvironment() throws {
        try withDefaultKeychain { first in
            try add(.alice)
            #expect(FileManager.default.fileExists(atPath: first + "/login.sqlite3"))
            try withDefaultKeychainNested { second in
                #expect(storedLabels().isEmpty, "a new P11KEYCHAIN_DIR is a new keychain")
                try add(.bob)
                #expect(FileManager.default.fileExists(atPath: second + "/login.sqlite3"))
            }
            #expect(storedLabels() == ["Alice Example"])
        }
    }

    /// Points P11KEYCHAIN_DIR at another fresh directory while the lock is already held.
    private func withDefaultKeychainNested(_ body: (String) throws -> Void) throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let saved = String(cString: getenv("P11KEYCHAIN_DIR"))
        defer { setenv("P11KEYCHAIN_DIR", saved, 1) }
        setenv("P11KEYCHAIN_DIR", directory, 1)
        try body(directory)
    }

    @Test("a keychain configured read-only refuses changes with errSecReadOnly and keeps its items")
    func readOnlyKeychain() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = directory + "/p11keychain.conf"
        try withDefaultKeychain { home in
            try add(.alice)
            let text = "[token login]\npath = \(home)/login.sqlite3\nread-only = yes\n"
            #expect(FileManager.default.createFile(atPath: configuration, contents: Data(text.utf8)))
            setenv("P11KEYCHAIN_CONF", configuration, 1)
            let status = try add(.bob)
            #expect(status == errSecReadOnly)
            #expect((SecCopyErrorDiagnostic(status) as String?)?.contains("write-protected") == true)
            #expect(SecItemDelete(certificateClass as CFDictionary) == errSecReadOnly)
            #expect(
                SecItemUpdate(
                    certificateClass as CFDictionary, [kSecAttrLabel as String: "x"] as CFDictionary)
                    == errSecReadOnly)
            #expect(storedLabels() == ["Alice Example"])
        }
    }

    @Test("a named token of the configuration can be the login token's store")
    func configurationMovesTheLoginToken() throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = directory + "/p11keychain.conf"
        let text = "[token login]\npath = \(directory)/moved.sqlite3\n"
        #expect(FileManager.default.createFile(atPath: configuration, contents: Data(text.utf8)))
        try withDefaultKeychain(configuration: configuration) { _ in
            let status = try add(.alice)
            #expect(status == errSecSuccess)
            #expect(FileManager.default.fileExists(atPath: directory + "/moved.sqlite3"))
        }
    }
}

@Suite("SecCertificate")
struct CertificateTests {
    @Test("the accessors return what the DER says")
    func accessors() throws {
        let alice = try Fixture.alice.certificate
        #expect(SecCertificateCopyData(alice) as Data == Fixture.alice.der)
        #expect(SecCertificateCopySubjectSummary(alice) == "Alice Example")
        var commonName: CFString?
        #expect(SecCertificateCopyCommonName(alice, &commonName) == errSecSuccess)
        #expect(commonName == "Alice Example")
        var emails: CFArray?
        #expect(SecCertificateCopyEmailAddresses(alice, &emails) == errSecSuccess)
        #expect(emails as? [String] == ["alice@example.org", "alice.alt@example.org"])
        #expect(
            SecCertificateCopySerialNumberData(alice, nil) as Data? == Data([0x00, 0x80, 0xA1, 0xB2, 0xC3]))
        #expect(SecCertificateCopyNormalizedIssuerSequence(alice) as Data? == (try Fixture.ca.subjectDER))
        #expect(CFGetTypeID(alice) == SecCertificateGetTypeID())
        #expect(CFGetTypeID(alice) != CFDataGetTypeID())
        #expect(alice == (try Fixture.alice.certificate))
        #expect(alice.description.contains("Alice Example"))
    }

    @Test("a certificate without a common name: errSecInternal, as Apple's")
    func noCommonName() throws {
        let certificate = try Fixture.nocn.certificate
        var commonName: CFString? = "stale"
        #expect(SecCertificateCopyCommonName(certificate, &commonName) == errSecInternal)
        #expect(commonName == nil)
        #expect(SecCertificateCopySubjectSummary(certificate) == "No Common Name Org")
        var emails: CFArray?
        #expect(SecCertificateCopyEmailAddresses(certificate, &emails) == errSecSuccess)
        #expect((emails as? [String])?.isEmpty == true)
    }

    @Test("normalized names upper-case PrintableStrings and collapse blanks")
    func normalizedNames() throws {
        let printable = try Fixture.printable.certificate
        let normalized = try #require(SecCertificateCopyNormalizedSubjectSequence(printable)) as Data
        #expect(String(decoding: normalized, as: UTF8.self).contains("ACME PRINTABLE CORP"))
        #expect(normalized != (try Fixture.printable.subjectDER))
    }

    @Test("every result code has a message")
    func messages() {
        let codes = [
            errSecSuccess, errSecUnimplemented, errSecDiskFull, errSecIO, errSecParam, errSecAllocate,
            errSecNotAvailable, errSecReadOnly, errSecAuthFailed, errSecNoSuchKeychain, errSecInvalidKeychain,
            errSecDuplicateItem, errSecItemNotFound, errSecInvalidItemRef, errSecNoSuchClass,
            errSecInteractionNotAllowed, errSecReadOnlyAttr, errSecDecode, errSecInternal,
        ]
        #expect(
            codes == [
                0, -4, -34, -36, -50, -108, -25291, -25292, -25293, -25294, -25295, -25299, -25300, -25304,
                -25306, -25308, -25309, -26275, -26276,
            ])
        for code in codes {
            #expect((SecCopyErrorMessageString(code, nil) as String?)?.isEmpty == false)
        }
        #expect(SecCopyErrorMessageString(-1, nil) == "OSStatus -1")
    }
}

extension Fixture {
    /// The typed certificate, for the values the Security API has no accessor for.
    private var parsed: Certificate {
        get throws { try Certificate(derEncoded: der) }
    }

    var subjectDER: Data {
        get throws { Data(try parsed.subjectDER) }
    }

    var publicKeyHash: Data {
        get throws { Data(try parsed.publicKeyHash) }
    }

    var subjectKeyID: Data {
        get throws { Data(try parsed.subjectKeyIdentifier ?? []) }
    }
}
