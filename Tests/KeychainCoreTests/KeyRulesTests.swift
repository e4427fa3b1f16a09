import Foundation
import KeychainCore
import KeychainCrypto
import Testing

/// The core's one set of key rules: the same checks for create, generate, copy and
/// update; copies that work; secrets sealed whatever CKA_PRIVATE says; one key-use check.
@Suite("Key rules held once in the core")
struct KeyRulesTests {
    static let p256: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
    static let no: [UInt8] = [0]

    private func generate(
        _ token: Token, publicTemplate: AttributeSet = [:], privateTemplate: AttributeSet = [:],
        context: AccessContext = Contexts.user
    ) throws -> KeyPairReferences {
        try token.generateKeyPair(
            .ec(curveParameters: Self.p256), publicTemplate: [.token: yes].merging(publicTemplate) { $1 },
            privateTemplate: [.token: yes, .private: yes].merging(privateTemplate) { $1 }, context: context)
    }

    @Test("a copy may make a key stricter, never looser, and sets nothing the token keeps")
    func copyObeysTheOneWayRules() throws {
        try withToken { token, _ in
            try logInUser(token)
            let pair = try generate(token)
            for template: AttributeSet in [
                [.sensitive: Self.no], [.extractable: yes], [.alwaysSensitive: Self.no],
                [.neverExtractable: Self.no], [.local: Self.no], [.keyGenMechanism: ulong(0)],
                [.value: [1, 2, 3]], [.alwaysAuthenticate: Self.no],
            ] {
                expectKeychainError(.attributeReadOnly) {
                    _ = try token.copyObject(pair.privateKey, with: template, context: Contexts.user)
                }
            }
            let copy = try token.copyObject(pair.privateKey, with: [.token: Self.no], context: Contexts.user)
            let attributes = try token.attributes(of: copy, context: Contexts.user)
            #expect(attributes[.value] == nil, "a sensitive copy does not reveal its scalar")
            #expect(attributes.bool(.alwaysSensitive) == true && attributes.bool(.neverExtractable) == true)
            #expect(Token.sensitiveTypes(of: attributes).contains(.value))
        }
    }

    @Test("an update moves one-way attributes one way only and keeps the key's history")
    func updateObeysTheOneWayRules() throws {
        try withToken { token, _ in
            try logInUser(token)
            let pair = try generate(token, privateTemplate: [.sensitive: Self.no, .extractable: yes])
            var attributes = try token.attributes(of: pair.privateKey, context: Contexts.user)
            #expect(attributes.bool(.alwaysSensitive) == false && attributes.bool(.neverExtractable) == false)
            #expect(attributes[.value]?.count == 32, "an extractable, non-sensitive key reveals its scalar")
            try token.updateObject(
                pair.privateKey, with: [.sensitive: yes, .extractable: Self.no], context: Contexts.user)
            attributes = try token.attributes(of: pair.privateKey, context: Contexts.user)
            #expect(attributes.bool(.alwaysSensitive) == false, "once revealable, never always sensitive")
            #expect(attributes.bool(.neverExtractable) == false)
            #expect(attributes[.value] == nil)
            expectKeychainError(.attributeReadOnly) {
                try token.updateObject(pair.privateKey, with: [.sensitive: Self.no], context: Contexts.user)
            }
            expectKeychainError(.attributeReadOnly) {
                try token.updateObject(pair.privateKey, with: [.extractable: yes], context: Contexts.user)
            }
            expectKeychainError(.attributeReadOnly) {
                try token.updateObject(pair.privateKey, with: [.alwaysSensitive: yes], context: Contexts.user)
            }
        }
    }

    @Test("a copied key signs like the original, from the token store and the session store")
    func copiedKeySigns() throws {
        try withToken { token, _ in
            try logInUser(token)
            let pair = try generate(token)
            let copies = [
                try token.copyObject(pair.privateKey, with: [.label: bytes("copy")], context: Contexts.user),
                try token.copyObject(pair.privateKey, with: [.token: Self.no], context: Contexts.user),
            ]
            let verifier = try token.useKey(
                pair.publicKey, for: .verify, mechanism: nil, context: Contexts.user
            ).key
            try token.destroyObject(pair.privateKey, context: Contexts.user)
            let message = bytes("signed by a copy")
            for copy in copies {
                let signer = try token.useKey(
                    copy, for: .sign, keyType: .ec, mechanism: nil, context: Contexts.user)
                let signature = try signer.key.sign(message, scheme: .ecdsa(.sha256))
                #expect(try verifier.verify(signature, message: message, scheme: .ecdsa(.sha256)))
            }
        }
    }

    /// A P-256 private scalar easy to find in raw bytes.
    static let scalar: [UInt8] = Array(0x21...0x40)

    @Test("a key that is not private is still sealed at rest, found without a login, used only with one")
    func keysAreSealedWhateverCKAPrivateSays() throws {
        try withToken { token, directory in
            try logInUser(token)
            let imported = try token.createObject(
                [
                    .class: ulong(ObjectClass.privateKey.rawValue), .keyType: ulong(KeyType.ec.rawValue),
                    .token: yes, .private: Self.no, .ecParams: Self.p256, .value: Self.scalar,
                    .label: bytes("public key object"),
                ], context: Contexts.user)
            _ = try token.copyObject(imported, with: [.label: bytes("its copy")], context: Contexts.user)
            _ = try generate(token, privateTemplate: [.private: Self.no])
            var files: [UInt8] = []
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path)
            where name.hasPrefix("token.sqlite3") {
                files += try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file(name))))
            }
            #expect(files.contains(bytes("public key object")), "the scan sees what is in clear")
            #expect(!files.contains(Self.scalar))
            token.logOut()
            let found = try token.findObjects(
                [.label: bytes("public key object")], context: Contexts.readWrite)
            #expect(found == [imported])
            #expect(try token.attributes(of: imported, context: Contexts.readWrite)[.value] == nil)
            expectKeychainError(.userNotLoggedIn) {
                _ = try token.useKey(imported, for: .sign, mechanism: nil, context: Contexts.readWrite)
            }
            try token.logIn(.user, pin: bytes("user-pin-0000"))
            _ = try token.useKey(imported, for: .sign, mechanism: nil, context: Contexts.user).key.sign(
                [1], scheme: .ecdsa(.sha256))
        }
    }

    @Test("without a token key a key is refused, saying what to do, and nothing is stored")
    func noTokenKeyNoKey() throws {
        try withToken { token, _ in
            expectKeychainError(.userPINNotInitialized) {
                _ = try generate(token, privateTemplate: [.private: Self.no], context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [])
            try logInUser(token)
            token.logOut()
            expectKeychainError(.userNotLoggedIn) {
                _ = try generate(token, privateTemplate: [.private: Self.no], context: Contexts.readWrite)
            }
            #expect(try token.findObjects([:], context: Contexts.readWrite) == [])
        }
    }

    @Test("the key-use check refuses a forbidden use and a key of another type")
    func useKeyChecksUsageAndType() throws {
        try withToken { token, _ in
            try logInUser(token)
            let pair = try generate(
                token, publicTemplate: [.verify: Self.no], privateTemplate: [.sign: Self.no, .derive: yes])
            expectKeychainError(.keyFunctionNotPermitted) {
                _ = try token.useKey(pair.privateKey, for: .sign, mechanism: nil, context: Contexts.user)
            }
            expectKeychainError(.keyFunctionNotPermitted) {
                _ = try token.useKey(pair.publicKey, for: .verify, mechanism: nil, context: Contexts.user)
            }
            expectKeychainError(.keyTypeInconsistent) {
                _ = try token.useKey(
                    pair.privateKey, for: .decrypt, keyType: .rsa, mechanism: nil, context: Contexts.user)
            }
            // An EC key cannot decrypt; it derives, with no PIN for each use.
            expectKeychainError(.keyFunctionNotPermitted) {
                _ = try token.useKey(pair.privateKey, for: .decrypt, mechanism: nil, context: Contexts.user)
            }
            #expect(
                try token.useKey(pair.privateKey, for: .derive, mechanism: nil, context: Contexts.user)
                    .needsPINForEachUse
                    == false)
        }
    }
}

/// PIN guesses and logins across connections: a `Token` per thread stands for a process.
@Suite("PIN attempts counted before the guess", .serialized)
struct PINAttemptTests {
    @Test("30 guessers at once lock the PIN after exactly 10 failures, and the right PIN then fails")
    func parallelGuessesStopAtTheLimit() throws {
        try withToken { token, _ in
            try logInUser(token)
            token.logOut()
            let results = Results()
            let group = DispatchGroup()
            for index in 0..<30 {
                group.enter()
                let guesser = Token(configuration: token.configuration)
                Thread {
                    do {
                        try guesser.logIn(.user, pin: bytes("wrong-\(index)"))
                        results.add(nil)
                    } catch let error as CoreError {
                        results.add(error.code)
                    } catch {
                        results.add(.storageFailure)
                    }
                    group.leave()
                }.start()
            }
            group.wait()
            #expect(results.count(.pinIncorrect) == 10)
            #expect(results.count(.pinLocked) == 20)
            #expect(try token.authenticationState().isUserPINLocked)
            expectKeychainError(.pinLocked) { try token.logIn(.user, pin: bytes("user-pin-0000")) }
        }
    }

    @Test("an SO and a user login on two threads never both succeed")
    func securityOfficerAndUserExcludeEachOther() throws {
        try withToken { token, _ in
            try logInUser(token)
            token.logOut()
            for _ in 0..<8 {
                let results = Results()
                let group = DispatchGroup()
                for (user, pin) in [(UserType.securityOfficer, "so-pin-0000"), (.user, "user-pin-0000")] {
                    group.enter()
                    Thread {
                        do {
                            try token.logIn(user, pin: bytes(pin))
                            results.add(nil)
                        } catch let error as CoreError {
                            results.add(error.code)
                        } catch {
                            results.add(.storageFailure)
                        }
                        group.leave()
                    }.start()
                }
                group.wait()
                #expect(results.count(nil) == 1)
                #expect(results.count(.userAnotherAlreadyLoggedIn) == 1)
                token.logOut()
            }
        }
    }

    @Test("another connection's re-initialisation ends this login; nothing unreadable is written")
    func reinitialisationElsewhereEndsTheLogin() throws {
        try withToken { token, _ in
            try logInUser(token)
            let other = Token(configuration: token.configuration)
            try other.initialize(securityOfficerPIN: bytes("so-pin-0000"), label: "again")
            try other.logIn(.securityOfficer, pin: bytes("so-pin-0000"))
            try other.initializeUserPIN(bytes("new-user-pin"))
            other.logOut()
            expectKeychainError(.userNotLoggedIn) {
                _ = try token.createObject(
                    dataTemplate(label: "secret", [.private: yes, .value: bytes("v")]), context: Contexts.user
                )
            }
            #expect(token.loggedInUser == nil)
            try token.logIn(.user, pin: bytes("new-user-pin"))
            let secret = try token.createObject(
                dataTemplate(label: "secret", [.private: yes, .value: bytes("v")]), context: Contexts.user)
            try other.logIn(.user, pin: bytes("new-user-pin"))
            #expect(try other.attributes(of: secret, context: Contexts.user)[.value] == bytes("v"))
        }
    }
}

/// Results gathered from several threads.
private final class Results: @unchecked Sendable {
    // @unchecked: `codes` is touched only with `lock` held.
    private let lock = NSLock()
    private var codes: [CoreError.Code?] = []

    func add(_ code: CoreError.Code?) { lock.withLock { codes.append(code) } }
    func count(_ code: CoreError.Code?) -> Int { lock.withLock { codes.filter { $0 == code }.count } }
}
