import Foundation
import Keychain
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What a keychain keeps between calls for speed (the configuration, the objects a find just
/// read) never hides a change: another connection's write, a rewritten configuration file, a
/// new `$P11KEYCHAIN_DIR` are all seen by the next call.
@Suite("Kept reads and other writers")
struct CachedReadTests {
    @Test("a password another connection to the store changes or deletes is read as it is now")
    func passwordChangedElsewhere() throws {
        try withPINKeychain { keychain, directory in
            try keychain.addGenericPassword(Array("one".utf8), service: "svc", account: "acct")
            let query = GenericPasswordQuery(service: "svc", account: "acct")
            let item = try #require(try keychain.firstGenericPassword(matching: query))
            #expect(try keychain.password(for: item) == Array("one".utf8))
            #expect(try keychain.password(for: item) == Array("one".utf8))

            // Another path to the same file: a connection of its own, as another process has.
            let link = directory.path + "/other.sqlite3"
            #expect(symlink(directory.path + "/test.sqlite3", link) == 0)
            let other = try Keychain(path: link)
            try other.unlock(pin: TestPIN.user)
            defer { other.lock() }
            try other.updateGenericPasswords(
                matching: query, setting: GenericPasswordChanges(password: Array("two".utf8)))
            #expect(try keychain.password(for: item) == Array("two".utf8))

            #expect(try other.deleteGenericPasswords(matching: query) == 1)
            expectError(.itemNotFound) { _ = try keychain.password(for: item) }
            #expect(try keychain.genericPasswords(matching: query).isEmpty)
        }
    }

    @Test("a new P11KEYCHAIN_DIR is followed by the next keychain opened")
    func newDirectoryFollowed() throws {
        try withKeychainEnvironment { first in
            #expect(try Keychain().path.hasPrefix(first + "/"))
            #expect(try Keychain().path.hasPrefix(first + "/"))
            let second = try TemporaryDirectory()
            defer { second.remove() }
            setenv("P11KEYCHAIN_DIR", second.path, 1)
            #expect(try Keychain().path.hasPrefix(second.path + "/"))
            setenv("P11KEYCHAIN_DIR", first, 1)
            #expect(try Keychain().path.hasPrefix(first + "/"))
        }
    }

    @Test(
        "a configuration file rewritten in place, to the same size, is read again by the next keychain opened"
    )
    func configurationRewritten() throws {
        let files = try TemporaryDirectory()
        defer { files.remove() }
        let configuration = files.path + "/p11keychain.conf"
        func write(_ store: String) throws {
            // In place, as an editor that truncates and writes does: same inode, same size.
            let text = "[token login]\npath = \(files.path)/\(store).sqlite3\n"
            let fd = open(configuration, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
            #expect(fd >= 0)
            defer { close(fd) }
            #expect(Glibc.write(fd, text, text.utf8.count) == text.utf8.count)
        }
        try write("a")
        try withKeychainEnvironment(configuration: configuration) { _ in
            #expect(try Keychain().path == files.path + "/a.sqlite3")
            // Just written: read again on every open until it has been unchanged for a while.
            try write("b")
            #expect(try Keychain().path == files.path + "/b.sqlite3")
            // Unchanged for long enough to be kept, then rewritten: its stat changed.
            usleep(2_100_000)
            #expect(try Keychain().path == files.path + "/b.sqlite3")
            #expect(try Keychain().path == files.path + "/b.sqlite3")
            try write("c")
            #expect(try Keychain().path == files.path + "/c.sqlite3")
            // Removed: a configuration error naming the file, never the default store in its
            // place (a P11KEYCHAIN_CONF that names no file is a mistake to report).
            #expect(unlink(configuration) == 0)
            #expect(throws: KeychainError.self) { try Keychain() }
        }
    }

    @Test("a configuration file that stops parsing is reported by the next keychain opened")
    func configurationBroken() throws {
        let files = try TemporaryDirectory()
        defer { files.remove() }
        let configuration = files.path + "/p11keychain.conf"
        #expect(FileManager.default.createFile(atPath: configuration, contents: Data("debug = no\n".utf8)))
        try withKeychainEnvironment(configuration: configuration) { _ in
            usleep(2_100_000)  // unchanged long enough to be kept
            _ = try Keychain()
            _ = try Keychain()
            #expect(
                FileManager.default.createFile(
                    atPath: configuration, contents: Data("debug = perhaps\n".utf8)))
            expectError(.notAvailable, containing: configuration) { _ = try Keychain() }
            expectError(.notAvailable, containing: configuration) { _ = try Keychain() }
        }
    }
}
