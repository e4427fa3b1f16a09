import Foundation
import KeychainCore
import Testing

/// DER of OID 2.5.4.3 (id-at-commonName).
private let commonNameOID: [UInt8] = [0x06, 0x03, 0x55, 0x04, 0x03]

@Suite("Data objects")
struct DataObjectTests {
    @Test("a data object keeps what the template gives and gets the defaults of PKCS#11 v2.40 §4.5")
    func dataObjectDefaults() throws {
        try withToken { token, _ in
            let full = try token.createObject(
                dataTemplate(
                    label: "note", [.application: bytes("app"), .value: [0, 1, 2], .objectID: commonNameOID]),
                context: Contexts.readWrite)
            let attributes = try token.attributes(of: full, context: Contexts.readWrite)
            #expect(attributes.string(.label) == "note")
            #expect(attributes.string(.application) == "app")
            #expect(attributes[.value] == [0, 1, 2])
            #expect(attributes[.objectID] == commonNameOID)
            #expect(attributes.ulong(.class) == ObjectClass.data.rawValue)
            #expect(attributes.bool(.private) == false)
            #expect(attributes.bool(.modifiable) == true)

            let bare = try token.createObject(
                [.class: ulong(ObjectClass.data.rawValue), .token: yes], context: Contexts.readWrite)
            let defaults = try token.attributes(of: bare, context: Contexts.readWrite)
            #expect(defaults[.label] == [])
            #expect(defaults[.application] == [])
            #expect(defaults[.value] == [])
            #expect(defaults[.objectID] == [])
        }
    }

    @Test("identical data objects are all stored: only certificates have a unique key")
    func dataObjectsHaveNoUniqueKey() throws {
        try withToken { token, _ in
            let template = dataTemplate(label: "same", [.value: [1]])
            let first = try token.createObject(template, context: Contexts.readWrite)
            let second = try token.createObject(template, context: Contexts.readWrite)
            #expect(first != second)
            #expect(
                try token.findObjects([.label: bytes("same")], context: Contexts.readWrite) == [
                    first, second,
                ])
        }
    }

    @Test(
        "a data object refuses a malformed object identifier and certificate attributes",
        arguments: [
            Named(
                "an OID that is not DER",
                ([.objectID: [0x06, 0x01]], CoreError.Code.attributeValueInvalid)),
            Named("an OID as text", ([.objectID: bytes("2.5.4.3")], .attributeValueInvalid)),
            Named("a certificate's subject", ([.subject: [0x30, 0x00]], .attributeTypeInvalid)),
            Named("a certificate type", ([.certificateType: ulong(0)], .attributeTypeInvalid)),
        ] as [Named<(AttributeSet, CoreError.Code)>])
    func badDataTemplates(_ template: Named<(AttributeSet, CoreError.Code)>) throws {
        let (extra, code) = template.value
        try withToken { token, _ throws in
            expectKeychainError(code) {
                _ = try token.createObject(dataTemplate(label: "bad", extra), context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [])
        }
    }
}

@Suite("Session objects")
struct SessionObjectTests {
    @Test("an object with CKA_TOKEN false, or none, lives in the session store of this token")
    func sessionObjectsAreSeparate() throws {
        try withToken { token, directory in
            let explicit = try token.createObject(
                dataTemplate(label: "session", token: false), context: Contexts.readWrite)
            let implicit = try token.createObject(
                [.class: ulong(0), .label: bytes("session")], context: Contexts.readWrite)
            let stored = try token.createObject(dataTemplate(label: "session"), context: Contexts.readWrite)
            #expect(explicit.isSessionObject)
            #expect(implicit.isSessionObject)
            #expect(!stored.isSessionObject)
            #expect(try token.attributes(of: implicit, context: Contexts.readWrite).bool(.token) == false)
            #expect(
                try token.findObjects([.label: bytes("session")], context: Contexts.readWrite) == [
                    stored, explicit, implicit,
                ])
            #expect(try token.findObjects([.token: no], context: Contexts.readWrite) == [explicit, implicit])
            #expect(try token.findObjects([.token: yes], context: Contexts.readWrite) == [stored])
            let uid = try #require(
                try token.attributes(of: explicit, context: Contexts.readWrite).string(.uniqueID))
            #expect(uid.hasPrefix("s"), "session unique IDs have a prefix of their own: \(uid)")
            #expect(!uid.hasPrefix(token.serialNumber))

            // Another Token on the same store (another process, say) sees only the token object.
            let other = Token(configuration: token.configuration)
            #expect(try other.findObjects([:], context: Contexts.readWrite) == [stored])
        }
    }

    @Test("a session object may be made and destroyed in a read-only session")
    func sessionObjectsInReadOnlySession() throws {
        try withToken { token, _ in
            let reference = try token.createObject(
                dataTemplate(label: "ro", token: false), context: Contexts.readOnly)
            try token.updateObject(reference, with: [.label: bytes("changed")], context: Contexts.readOnly)
            try token.destroyObject(reference, context: Contexts.readOnly)
            #expect(try token.findObjects([:], context: Contexts.readOnly) == [])
        }
    }

    @Test("discarding a session's objects removes them and nothing else")
    func discardSessionObjects() throws {
        try withToken { token, _ in
            let kept = try token.createObject(
                dataTemplate(label: "kept", token: false), context: Contexts.readWrite)
            let discarded = try token.createObject(
                dataTemplate(label: "gone", token: false), context: Contexts.readWrite)
            let stored = try token.createObject(dataTemplate(label: "stored"), context: Contexts.readWrite)
            token.discardSessionObjects([discarded, stored])
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [stored, kept])
            expectKeychainError(.objectNotFound) {
                _ = try token.attributes(of: discarded, context: Contexts.readWrite)
            }
            token.discardSessionObjects([discarded])  // again: nothing happens
            // A Token with no session store of its own has nothing to discard.
            Token(configuration: token.configuration).discardSessionObjects([kept])
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [stored, kept])
        }
    }
}

@Suite("Finding objects")
struct FindTests {
    /// A CA, two certificates it issued, a data object and a session object.
    private static func populate(_ token: Token, _ directory: TemporaryDirectory) throws
        -> (certificates: [TestCertificate], references: [ObjectReference])
    {
        let ca = try TestCertificate.make("ca", subject: "/CN=Find CA", authority: true, in: directory)
        let alice = try TestCertificate.make(
            "alice", subject: "/CN=Alice", serial: "0x0A", signer: "ca", in: directory)
        let bob = try TestCertificate.make(
            "bob", subject: "/CN=Bob", serial: "0x0B", signer: "ca", in: directory)
        var references = try [ca, alice, bob].map {
            try token.createObject(certificateTemplate($0.der), context: Contexts.readWrite)
        }
        references.append(
            try token.createObject(dataTemplate(label: "Alice", [.value: [1]]), context: Contexts.readWrite))
        references.append(
            try token.createObject(dataTemplate(label: "Alice", token: false), context: Contexts.readWrite))
        return ([ca, alice, bob], references)
    }

    @Test("find matches every attribute of the template, token objects first")
    func findByAttributes() throws {
        try withToken { token, directory in
            let (certificates, objects) = try FindTests.populate(token, directory)
            let (ca, alice) = (certificates[0], certificates[1])
            let cases: [(String, AttributeSet, [Int])] = [
                ("an empty template", [:], [0, 1, 2, 3, 4]),
                ("a label", [.label: bytes("Alice")], [1, 3, 4]),
                ("a label and a class", [.label: bytes("Alice"), .class: ulong(1)], [1]),
                ("an ID", [.id: alice.keyHash], [1]),
                ("a subject", [.subject: alice.subject], [1]),
                ("an issuer", [.issuer: ca.subject], [0, 1, 2]),
                ("an issuer and serial", [.issuer: ca.subject, .serialNumber: alice.serialNumber], [1]),
                ("a serial alone", [.serialNumber: [0x02, 0x01, 0x0B]], [2]),
                ("a DER", [.value: alice.der], [1]),
                ("the certificate class", [.class: ulong(ObjectClass.certificate.rawValue)], [0, 1, 2]),
                ("the data class", [.class: ulong(ObjectClass.data.rawValue)], [3, 4]),
                ("a category", [.certificateCategory: ulong(CertificateCategory.authority.rawValue)], [0]),
                ("token objects", [.token: yes], [0, 1, 2, 3]),
                ("a label no object has", [.label: bytes("Carol")], []),
                ("contradicting terms", [.label: bytes("Alice"), .subject: ca.subject], []),
                ("an attribute no object has", [.url: bytes("x")], []),
            ]
            for (name, template, expected) in cases {
                #expect(
                    try token.findObjects(template, context: Contexts.readWrite)
                        == expected.map { objects[$0] }, "\(name)")
            }
        }
    }

    @Test("find by CKA_UNIQUE_ID returns that one object, or nothing")
    func findByUniqueID() throws {
        try withToken { token, directory in
            let (_, objects) = try FindTests.populate(token, directory)
            for object in objects {
                let uid = try #require(
                    try token.attributes(of: object, context: Contexts.readWrite)[.uniqueID])
                #expect(try token.findObjects([.uniqueID: uid], context: Contexts.readWrite) == [object])
                #expect(
                    try token.findObjects(
                        [.uniqueID: uid, .label: bytes("nobody")], context: Contexts.readWrite) == [])
            }
            for uid in [
                "", "garbage", "\(token.serialNumber):", "\(token.serialNumber):999", "0000000000000000:1",
                "s:1",
            ] {
                #expect(
                    try token.findObjects([.uniqueID: bytes(uid)], context: Contexts.readWrite) == [],
                    "\(uid)")
            }
        }
    }

    @Test("unique IDs are distinct and never reused after a destroy")
    func uniqueIDsAreNotReused() throws {
        try withToken { token, _ in
            let first = try token.createObject(dataTemplate(label: "a"), context: Contexts.readWrite)
            let firstUID = try token.attributes(of: first, context: Contexts.readWrite)[.uniqueID]
            try token.destroyObject(first, context: Contexts.readWrite)
            let second = try token.createObject(dataTemplate(label: "a"), context: Contexts.readWrite)
            #expect(second != first)
            #expect(try token.attributes(of: second, context: Contexts.readWrite)[.uniqueID] != firstUID)
            #expect(
                try token.findObjects([.uniqueID: try #require(firstUID)], context: Contexts.readWrite) == [])
        }
    }

    @Test("an object made through one Token is found at once through another on the same store")
    func changesAreSeenAcrossTokens() throws {
        try withToken { token, directory in
            let other = Token(configuration: token.configuration)
            #expect(try other.findObjects([:], context: Contexts.readWrite) == [])
            let certificate = try TestCertificate.make("cert", subject: "/CN=Shared", in: directory)
            let reference = try token.createObject(
                certificateTemplate(certificate.der), context: Contexts.readWrite)
            #expect(
                try other.findObjects([.label: bytes("Shared")], context: Contexts.readWrite) == [reference])
            try other.updateObject(reference, with: [.label: bytes("Renamed")], context: Contexts.readWrite)
            #expect(
                try token.attributes(of: reference, context: Contexts.readWrite).string(.label) == "Renamed")
            try other.destroyObject(reference, context: Contexts.readWrite)
            expectKeychainError(.objectNotFound) {
                _ = try token.attributes(of: reference, context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [])
        }
    }
}

@Suite("Private objects")
struct PrivateObjectTests {
    @Test("a private object cannot be made without a logged-in user")
    func privateNeedsLogin() throws {
        try withToken { token, _ throws in
            expectKeychainError(.userNotLoggedIn) {
                _ = try token.createObject(
                    dataTemplate(label: "secret", [.private: yes]), context: Contexts.readWrite)
            }
            expectKeychainError(.userNotLoggedIn) {
                _ = try token.createObject(
                    dataTemplate(label: "secret", token: false, [.private: yes]), context: Contexts.readWrite)
            }
            // A session that says a user is logged in is not enough: the token key is, and
            // a token with no user PIN has none to give.
            expectKeychainError(.userPINNotInitialized) {
                _ = try token.createObject(
                    dataTemplate(label: "secret", [.private: yes]), context: Contexts.user)
            }
            #expect(try token.findObjects([:], context: Contexts.user) == [])
        }
    }

    @Test("a private object is invisible until the user logs in")
    func privateIsInvisible() throws {
        try withToken { token, _ in
            try logInUser(token)
            let secret = try token.createObject(
                dataTemplate(label: "secret", [.private: yes, .value: bytes("value")]), context: Contexts.user
            )
            let public_ = try token.createObject(dataTemplate(label: "public"), context: Contexts.user)
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [public_])
            #expect(try token.findObjects([.label: bytes("secret")], context: Contexts.readWrite) == [])
            #expect(try token.findObjects([.private: yes], context: Contexts.readWrite) == [])
            expectKeychainError(.objectNotFound) {
                _ = try token.attributes(of: secret, context: Contexts.readWrite)
            }
            expectKeychainError(.objectNotFound) {
                try token.updateObject(secret, with: [.label: bytes("x")], context: Contexts.readWrite)
            }
            expectKeychainError(.objectNotFound) {
                try token.destroyObject(secret, context: Contexts.readWrite)
            }
            expectKeychainError(.objectNotFound) {
                _ = try token.copyObject(secret, with: [:], context: Contexts.readWrite)
            }

            #expect(try token.findObjects([:], context: Contexts.user) == [secret, public_])
            #expect(try token.findObjects([.private: yes], context: Contexts.user) == [secret])
            let attributes = try token.attributes(of: secret, context: Contexts.user)
            #expect(attributes.string(.label) == "secret")
            #expect(attributes.string(.value) == "value")
            #expect(Set(attributes.keys).isSubset(of: ObjectRuleTypes.data), "no internal attribute shows")

            // Once the user logs out, its token key is gone: the value cannot be opened.
            token.logOut()
            expectKeychainError(.objectNotFound) {
                _ = try token.attributes(of: secret, context: Contexts.user)
            }
        }
    }

    @Test("a private object's value changes and copies stay readable to the user")
    func privateUpdateAndCopy() throws {
        try withToken { token, _ in
            try logInUser(token)
            let secret = try token.createObject(
                dataTemplate(label: "secret", [.private: yes, .value: bytes("one")]), context: Contexts.user)
            try token.updateObject(secret, with: [.value: bytes("two")], context: Contexts.user)
            #expect(try token.attributes(of: secret, context: Contexts.user).string(.value) == "two")
            let copy = try token.copyObject(secret, with: [.label: bytes("copy")], context: Contexts.user)
            #expect(try token.attributes(of: copy, context: Contexts.user).string(.value) == "two")
            let session = try token.copyObject(secret, with: [.token: no], context: Contexts.user)
            #expect(try token.attributes(of: session, context: Contexts.user).string(.value) == "two")
        }
    }

    @Test("a private object's value is never written to the store in clear (ARCHITECTURE.md §3.6)")
    func privateValueIsSealed() throws {
        try withToken { token, directory in
            try logInUser(token)
            let secret = bytes("SECRET-0123456789-abcdefghij")
            let visible = bytes("VISIBLE-0123456789-abcdefghij")
            _ = try token.createObject(
                dataTemplate(label: "secret", [.private: yes, .value: secret]), context: Contexts.user)
            let stored = try token.createObject(
                dataTemplate(label: "stored", [.private: yes, .value: bytes("x")]), context: Contexts.user)
            try token.updateObject(stored, with: [.value: secret], context: Contexts.user)
            _ = try token.createObject(
                dataTemplate(label: "public", [.value: visible]), context: Contexts.user)
            var files: [UInt8] = []
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path)
            where name.hasPrefix("token.sqlite3") {
                files += try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file(name))))
            }
            #expect(files.contains(visible), "the check sees what is written in clear")
            #expect(!files.contains(secret))
        }
    }
}

/// The attribute types a caller may see on a data object.
enum ObjectRuleTypes {
    static let data: Set<AttributeType> = [
        .class, .token, .private, .modifiable, .copyable, .destroyable, .label, .uniqueID, .application,
        .objectID, .value, .creationDate, .modificationDate,
    ]
}

@Suite("Access rules")
struct AccessRuleTests {
    /// PKCS#11 v2.40 §6.7.1 and table 6, for a session with no user logged in:
    /// (read/write session, token object, private object, write-protected token) → error.
    static let table: [(Bool, Bool, Bool, Bool, CoreError.Code?)] = [
        (false, false, false, false, nil),
        (false, false, false, true, nil),
        (false, false, true, false, .userNotLoggedIn),
        (false, false, true, true, .userNotLoggedIn),
        (false, true, false, false, .sessionReadOnly),
        (false, true, false, true, .tokenWriteProtected),
        (false, true, true, false, .sessionReadOnly),
        (false, true, true, true, .tokenWriteProtected),
        (true, false, false, false, nil),
        (true, false, false, true, nil),
        (true, false, true, false, .userNotLoggedIn),
        (true, false, true, true, .userNotLoggedIn),
        (true, true, false, false, nil),
        (true, true, false, true, .tokenWriteProtected),
        (true, true, true, false, .userNotLoggedIn),
        (true, true, true, true, .tokenWriteProtected),
    ]

    @Test("checkWrite follows the table of session state and object kind", arguments: table)
    func checkWrite(
        readWrite: Bool, tokenObject: Bool, privateObject: Bool, writeProtected: Bool,
        expected: CoreError.Code?
    ) {
        let context = AccessContext(readWrite: readWrite)
        do throws(CoreError) {
            try context.checkWrite(
                tokenObject: tokenObject, privateObject: privateObject, writeProtected: writeProtected)
            #expect(expected == nil)
        } catch {
            #expect(error.code == expected)
        }
    }

    @Test("a logged-in user may write private objects wherever public ones may be written", arguments: table)
    func loggedInUser(
        readWrite: Bool, tokenObject: Bool, privateObject: Bool, writeProtected: Bool,
        expected: CoreError.Code?
    ) {
        func outcome(_ context: AccessContext, _ privateObject: Bool) -> CoreError.Code? {
            do throws(CoreError) {
                try context.checkWrite(
                    tokenObject: tokenObject, privateObject: privateObject, writeProtected: writeProtected)
                return nil
            } catch {
                return error.code
            }
        }
        let user = AccessContext(readWrite: readWrite, userLoggedIn: true)
        #expect(outcome(user, privateObject) == outcome(AccessContext(readWrite: readWrite), false))
    }

    @Test(
        "only a logged-in user sees private objects",
        arguments: [
            (false, false, true), (false, true, false), (true, false, true), (true, true, true),
        ])
    func canSee(userLoggedIn: Bool, privateObject: Bool, visible: Bool) {
        let context = AccessContext(readWrite: false, userLoggedIn: userLoggedIn)
        #expect(context.canSee(privateObject: privateObject) == visible)
    }
}

@Suite("Changing, copying and destroying objects")
struct ObjectChangeTests {
    /// A token holding one certificate.
    private static func withCertificate(
        _ extra: AttributeSet = [:],
        _ body: (Token, ObjectReference, TestCertificate, TemporaryDirectory) throws -> Void
    ) throws {
        try withToken { token, directory in
            let certificate = try TestCertificate.make("cert", subject: "/CN=Changing", in: directory)
            let reference = try token.createObject(
                certificateTemplate(certificate.der, extra), context: Contexts.readWrite)
            try body(token, reference, certificate, directory)
        }
    }

    @Test("a label, an ID and a category may be changed, and finds follow")
    func modifiableAttributes() throws {
        try ObjectChangeTests.withCertificate { token, reference, certificate, _ in
            try token.updateObject(
                reference,
                with: [
                    .label: bytes("Renamed"), .id: [9], .certificateCategory: ulong(1),
                    .url: bytes("https://x"),
                ],
                context: Contexts.readWrite)
            let attributes = try token.attributes(of: reference, context: Contexts.readWrite)
            #expect(attributes.string(.label) == "Renamed")
            #expect(attributes[.id] == [9])
            #expect(attributes.ulong(.certificateCategory) == 1)
            #expect(attributes.string(.url) == "https://x")
            #expect(attributes[.value] == certificate.der)
            #expect(try token.findObjects([.label: bytes("Changing")], context: Contexts.readWrite) == [])
            #expect(
                try token.findObjects([.label: bytes("Renamed")], context: Contexts.readWrite) == [reference])
            #expect(try token.findObjects([.id: certificate.keyHash], context: Contexts.readWrite) == [])
            #expect(try token.findObjects([.id: [9]], context: Contexts.readWrite) == [reference])
        }
    }

    @Test(
        "what the DER determines, and what only creation sets, cannot be changed",
        arguments: [
            AttributeType.value, .class, .certificateType, .subject, .issuer, .serialNumber, .startDate,
            .publicKeyInfo, .checkValue, .hashOfSubjectPublicKey, .token, .private, .modifiable, .destroyable,
            .trusted, .uniqueID, .nameHashAlgorithm,
        ])
    func readOnlyAttributes(_ type: AttributeType) throws {
        try ObjectChangeTests.withCertificate { token, reference, _, _ in
            let before = try token.attributes(of: reference, context: Contexts.readWrite)
            var value = before[type] ?? []
            if value.count == 1 {
                value = [value[0] ^ 1]
            } else if value.count == 8, type == .startDate {
                value = bytes("19991231")
            } else if value.count == 8 {
                value[0] ^= 1
            } else {
                value.append(0)
            }
            // Another attribute in the same template that alone would be fine: all or nothing.
            expectKeychainError(.attributeReadOnly) {
                try token.updateObject(
                    reference, with: [type: value, .label: bytes("partial")], context: Contexts.readWrite)
            }
            #expect(try token.attributes(of: reference, context: Contexts.readWrite) == before)
        }
    }

    @Test("CKA_COPYABLE may be turned off but not back on")
    func copyableOnlyTurnsOff() throws {
        try ObjectChangeTests.withCertificate { token, reference, _, _ in
            try token.updateObject(reference, with: [.copyable: no], context: Contexts.readWrite)
            #expect(try token.attributes(of: reference, context: Contexts.readWrite).bool(.copyable) == false)
            expectKeychainError(.attributeReadOnly) {
                try token.updateObject(reference, with: [.copyable: yes], context: Contexts.readWrite)
            }
        }
    }

    @Test(
        "an update with a wrong-size value or a foreign attribute is refused and changes nothing",
        arguments: [
            Named(
                "a CK_ULONG of one byte",
                ([.certificateCategory: [1]], CoreError.Code.attributeValueInvalid)),
            Named("an attribute of another class", ([.keyType: ulong(0)], .attributeTypeInvalid)),
            Named("a data object attribute", ([.application: bytes("x")], .attributeTypeInvalid)),
        ] as [Named<(AttributeSet, CoreError.Code)>])
    func badUpdates(_ update: Named<(AttributeSet, CoreError.Code)>) throws {
        let (template, code) = update.value
        try ObjectChangeTests.withCertificate { token, reference, _, _ in
            let before = try token.attributes(of: reference, context: Contexts.readWrite)
            expectKeychainError(code) {
                try token.updateObject(
                    reference, with: template.merging([.label: bytes("partial")]) { $1 },
                    context: Contexts.readWrite)
            }
            #expect(try token.attributes(of: reference, context: Contexts.readWrite) == before)
        }
    }

    @Test("an object with CKA_MODIFIABLE false cannot be changed at all")
    func unmodifiableObject() throws {
        try ObjectChangeTests.withCertificate([.modifiable: no]) { token, reference, _, _ throws in
            expectKeychainError(.actionProhibited, containing: "not modifiable") {
                try token.updateObject(reference, with: [.label: bytes("x")], context: Contexts.readWrite)
            }
            #expect(
                try token.attributes(of: reference, context: Contexts.readWrite).string(.label) == "Changing")
        }
    }

    @Test("a token object cannot be changed or destroyed in a read-only session")
    func readOnlySession() throws {
        try ObjectChangeTests.withCertificate { token, reference, _, _ throws in
            expectKeychainError(.sessionReadOnly) {
                try token.updateObject(reference, with: [.label: bytes("x")], context: Contexts.readOnly)
            }
            expectKeychainError(.sessionReadOnly) {
                try token.destroyObject(reference, context: Contexts.readOnly)
            }
            expectKeychainError(.sessionReadOnly) {
                _ = try token.createObject(dataTemplate(label: "x"), context: Contexts.readOnly)
            }
            #expect(try token.findObjects([:], context: Contexts.readOnly) == [reference])
        }
    }

    @Test("a data object's value may be changed")
    func dataValueIsModifiable() throws {
        try withToken { token, _ in
            let reference = try token.createObject(
                dataTemplate(label: "d", [.value: [1]]), context: Contexts.readWrite)
            try token.updateObject(
                reference, with: [.value: [2, 2], .application: bytes("app")], context: Contexts.readWrite)
            let attributes = try token.attributes(of: reference, context: Contexts.readWrite)
            #expect(attributes[.value] == [2, 2])
            #expect(attributes.string(.application) == "app")
        }
    }

    @Test("a copy is a new object with the changes asked for; the original is untouched")
    func copyDataObject() throws {
        try withToken { token, _ in
            let original = try token.createObject(
                dataTemplate(label: "original", [.value: [1]]), context: Contexts.readWrite)
            let before = try token.attributes(of: original, context: Contexts.readWrite)
            let copy = try token.copyObject(
                original, with: [.label: bytes("copy"), .destroyable: no], context: Contexts.readWrite)
            #expect(copy != original)
            #expect(try token.attributes(of: original, context: Contexts.readWrite) == before)
            let attributes = try token.attributes(of: copy, context: Contexts.readWrite)
            #expect(attributes.string(.label) == "copy")
            #expect(attributes[.value] == [1])
            #expect(attributes.bool(.destroyable) == false)
            #expect(attributes[.uniqueID] != before[.uniqueID])

            let session = try token.copyObject(original, with: [.token: no], context: Contexts.readWrite)
            #expect(session.isSessionObject)
            #expect(
                try token.findObjects([.label: bytes("original")], context: Contexts.readWrite) == [
                    original, session,
                ])
        }
    }

    @Test("copying a certificate into the same store is a duplicate; into the session store it is not")
    func copyCertificate() throws {
        try ObjectChangeTests.withCertificate { token, reference, certificate, _ in
            expectKeychainError(.duplicateItem) {
                _ = try token.copyObject(
                    reference, with: [.label: bytes("copy")], context: Contexts.readWrite)
            }
            let session = try token.copyObject(reference, with: [.token: no], context: Contexts.readWrite)
            #expect(session.isSessionObject)
            #expect(try token.attributes(of: session, context: Contexts.readWrite)[.value] == certificate.der)
            #expect(try token.findObjects([.token: yes], context: Contexts.readWrite) == [reference])
        }
    }

    @Test(
        "a copy refuses what a copy may not change",
        arguments: [
            Named("a certificate's DER", ([.value: [0x30, 0x00]], CoreError.Code.attributeReadOnly)),
            Named("its subject", ([.subject: [0x30, 0x00]], .attributeReadOnly)),
            Named("its unique ID", ([.uniqueID: bytes("x:1")], .attributeReadOnly)),
            Named("an attribute of another class", ([.keyType: ulong(0)], .attributeTypeInvalid)),
            Named("a private copy without login", ([.private: yes, .token: no], .userNotLoggedIn)),
        ] as [Named<(AttributeSet, CoreError.Code)>])
    func badCopies(_ copy: Named<(AttributeSet, CoreError.Code)>) throws {
        let (template, code) = copy.value
        try ObjectChangeTests.withCertificate { token, reference, _, _ throws in
            expectKeychainError(code) {
                _ = try token.copyObject(reference, with: template, context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.user) == [reference])
        }
    }

    @Test("an object with CKA_COPYABLE false cannot be copied")
    func uncopyableObject() throws {
        try withToken { token, _ in
            let original = try token.createObject(
                dataTemplate(label: "o", [.copyable: no]), context: Contexts.readWrite)
            expectKeychainError(.actionProhibited, containing: "not copyable") {
                _ = try token.copyObject(original, with: [:], context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [original])
        }
    }

    @Test(
        "CKA_MODIFIABLE and CKA_DESTROYABLE cannot be turned back on by a copy",
        arguments: [
            AttributeType.modifiable, .destroyable,
        ])
    func copyCannotTurnFlagsBackOn(_ type: AttributeType) throws {
        try withToken { token, _ in
            let original = try token.createObject(
                dataTemplate(label: "o", [type: no]), context: Contexts.readWrite)
            expectKeychainError(.attributeReadOnly) {
                _ = try token.copyObject(original, with: [type: yes], context: Contexts.readWrite)
            }
            let copy = try token.copyObject(original, with: [type: no], context: Contexts.readWrite)
            #expect(try token.attributes(of: copy, context: Contexts.readWrite).bool(type) == false)
        }
    }

    @Test("a destroyed object is gone; destroying it again is an error")
    func destroy() throws {
        try ObjectChangeTests.withCertificate { token, reference, certificate, _ in
            try token.destroyObject(reference, context: Contexts.readWrite)
            expectKeychainError(.objectNotFound) {
                _ = try token.attributes(of: reference, context: Contexts.readWrite)
            }
            expectKeychainError(.objectNotFound) {
                try token.destroyObject(reference, context: Contexts.readWrite)
            }
            expectKeychainError(.objectNotFound) {
                try token.updateObject(reference, with: [.label: bytes("x")], context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [])
            // Its issuer and serial are free again.
            _ = try token.createObject(certificateTemplate(certificate.der), context: Contexts.readWrite)
        }
    }

    @Test("an object with CKA_DESTROYABLE false cannot be destroyed")
    func undestroyableObject() throws {
        try ObjectChangeTests.withCertificate([.destroyable: no]) { token, reference, _, _ throws in
            expectKeychainError(.actionProhibited, containing: "not destroyable") {
                try token.destroyObject(reference, context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [reference])
        }
    }
}
