import Foundation
import KeychainCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Opening a token's store")
struct TokenStoreTests {
    @Test("the store and its missing directories are created on first use, private to the owner")
    func storeIsCreatedOnFirstUse() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("a/b/token.sqlite3")
            let token = Token(configuration: TokenConfiguration(name: "t", path: path))
            #expect(access(path, F_OK) != 0, "nothing happens before the first use")
            #expect(token.isPresent)
            #expect(!token.isWriteProtected)
            var status = stat()
            #expect(stat(path, &status) == 0)
            #expect(status.st_mode & 0o777 == 0o600)
            #expect(stat(directory.file("a/b"), &status) == 0)
            #expect(status.st_mode & 0o777 == 0o700)
            #expect(stat(directory.file("a"), &status) == 0)
            #expect(status.st_mode & 0o777 == 0o700)
        }
    }

    @Test("the serial number is 16 hex digits, kept in the store, and differs between stores")
    func serialNumberIsStable() throws {
        try withTemporaryDirectory { directory in
            let first = TokenConfiguration(name: "t", path: directory.file("one.sqlite3"))
            let serial = Token(configuration: first).serialNumber
            #expect(serial.count == 16)
            #expect(serial.allSatisfy { $0.isHexDigit })
            #expect(Token(configuration: first).serialNumber == serial, "the same on every open")
            let renamed = TokenConfiguration(name: "other name", path: first.path)
            #expect(
                Token(configuration: renamed).serialNumber == serial, "it belongs to the store, not the name")
            let second = Token(
                configuration: TokenConfiguration(name: "t", path: directory.file("two.sqlite3")))
            #expect(second.serialNumber != serial)
        }
    }

    /// Store paths that cannot be created.
    static let uncreatable: [Named<String>] = [
        Named("a directory under /proc", "/proc/p11keychain-test-\(getpid())/token.sqlite3"),
        Named("a directory under /dev/null", "/dev/null/token.sqlite3"),
    ]

    @Test(
        "a store that cannot be created makes the token not present, with the path in the message",
        arguments: uncreatable)
    func uncreatableStore(_ path: Named<String>) throws {
        let token = Token(configuration: TokenConfiguration(name: "t", path: path.value))
        expectKeychainError(.tokenNotPresent, containing: path.value) { try token.open() }
        #expect(!token.isPresent)
        #expect(token.isWriteProtected, "nothing can be written where nothing can be opened")
        #expect(token.serialNumber == "")
        expectKeychainError(.tokenNotPresent) { _ = try token.findObjects([:], context: Contexts.readWrite) }
        expectKeychainError(.tokenNotPresent) {
            _ = try token.createObject(dataTemplate(label: "x"), context: Contexts.readWrite)
        }
        // Session objects need no store on disk.
        let session = try token.createObject(
            dataTemplate(label: "s", token: false), context: Contexts.readWrite)
        #expect(session.isSessionObject)
    }

    @Test("a regular file where the store's directory should be makes the token not present")
    func fileInTheWay() throws {
        try withTemporaryDirectory { directory in
            #expect(FileManager.default.createFile(atPath: directory.file("file"), contents: Data("x".utf8)))
            let path = directory.file("file/token.sqlite3")
            let token = Token(configuration: TokenConfiguration(name: "t", path: path))
            expectKeychainError(.tokenNotPresent, containing: path) { try token.open() }
        }
    }

    @Test("a file that is not a store is reported as corrupt storage, and left as it was")
    func garbageStore() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory.file("token.sqlite3")
            let garbage = Data(repeating: 0x41, count: 4096)
            #expect(FileManager.default.createFile(atPath: path, contents: garbage))
            let token = Token(configuration: TokenConfiguration(name: "t", path: path))
            expectKeychainError(.storageCorrupt, containing: path) { try token.open() }
            #expect(!token.isPresent)
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)
        }
    }

    @Test("a failure to open is not remembered: the next call tries again")
    func openIsRetried() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("later/token.sqlite3")
            #expect(FileManager.default.createFile(atPath: directory.file("later"), contents: Data()))
            let token = Token(configuration: TokenConfiguration(name: "t", path: path))
            expectKeychainError(.tokenNotPresent) { try token.open() }
            try FileManager.default.removeItem(atPath: directory.file("later"))
            try token.open()
            #expect(token.isPresent)
        }
    }
}

@Suite("Read-only tokens")
struct ReadOnlyTokenTests {
    /// A store holding one certificate, made through a writable token.
    private static func withStore(_ body: (String, ObjectReference, TemporaryDirectory) throws -> Void) throws
    {
        try withTemporaryDirectory { directory in
            let path = directory.file("token.sqlite3")
            let certificate = try TestCertificate.make("cert", subject: "/CN=Read Only", in: directory)
            let reference = try Token(configuration: TokenConfiguration(name: "t", path: path))
                .createObject(certificateTemplate(certificate.der), context: Contexts.readWrite)
            try body(path, reference, directory)
        }
    }

    /// What a write-protected token allows and refuses.
    private static func expectWriteProtected(_ token: Token, _ stored: ObjectReference) throws {
        #expect(token.isWriteProtected)
        #expect(token.isPresent)
        #expect(try token.findObjects([:], context: Contexts.readWrite) == [stored])
        #expect(try token.attributes(of: stored, context: Contexts.readWrite).string(.label) == "Read Only")
        expectKeychainError(.tokenWriteProtected) {
            _ = try token.createObject(dataTemplate(label: "x"), context: Contexts.readWrite)
        }
        expectKeychainError(.tokenWriteProtected) {
            _ = try token.createObjects([dataTemplate(label: "x")], context: Contexts.readWrite)
        }
        expectKeychainError(.tokenWriteProtected) {
            try token.updateObject(stored, with: [.label: bytes("x")], context: Contexts.readWrite)
        }
        expectKeychainError(.tokenWriteProtected) {
            try token.destroyObject(stored, context: Contexts.readWrite)
        }
        expectKeychainError(.tokenWriteProtected) {
            _ = try token.copyObject(stored, with: [.label: bytes("copy")], context: Contexts.readWrite)
        }
        // Session objects are the process's own: a write-protected token still has them.
        let session = try token.createObject(
            dataTemplate(label: "session", token: false), context: Contexts.readWrite)
        #expect(try token.findObjects([.label: bytes("session")], context: Contexts.readWrite) == [session])
        let batch = try token.createObjects(
            [dataTemplate(label: "batch", token: false)], context: Contexts.readWrite)
        #expect(try token.findObjects([:], context: Contexts.readWrite) == [stored, session] + batch)
    }

    @Test("a token configured read-only serves its store for reading and refuses every write")
    func configuredReadOnly() throws {
        try ReadOnlyTokenTests.withStore { path, stored, _ in
            let token = Token(configuration: TokenConfiguration(name: "t", path: path, readOnly: true))
            let serial = Token(configuration: TokenConfiguration(name: "t", path: path)).serialNumber
            #expect(token.serialNumber == serial)
            try ReadOnlyTokenTests.expectWriteProtected(token, stored)
            #expect(
                try Token(configuration: token.configuration).findObjects([:], context: Contexts.readWrite)
                    == [stored])
        }
    }

    @Test("a token configured read-only does not create a missing store")
    func configuredReadOnlyMissingStore() throws {
        try withTemporaryDirectory { directory in
            let path = directory.file("missing/token.sqlite3")
            let token = Token(configuration: TokenConfiguration(name: "t", path: path, readOnly: true))
            expectKeychainError(.tokenNotPresent, containing: path) { try token.open() }
            #expect(access(directory.file("missing"), F_OK) != 0, "not even its directory")
        }
    }

    @Test("a store the process cannot write is served write-protected, not refused, and left intact")
    func unwritableStore() throws {
        try ReadOnlyTokenTests.withStore { path, stored, directory in
            let before = try Data(contentsOf: URL(fileURLWithPath: path))
            try withWriteProtected([path, directory.path]) {
                try ReadOnlyTokenTests.expectWriteProtected(
                    Token(configuration: TokenConfiguration(name: "t", path: path)), stored)
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        }
    }
}
