import KeychainStorage
import Testing

@Suite("The directory of a store's path")
struct StoreDirectoryTests {
    /// What the directory was before, by components: every one but the last, joined again.
    static func byComponents(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
    }

    @Test(
        "is what precedes the last slash, as joining all components but the last gave",
        arguments: [
            "/home/u/.local/share/p11keychain/login.sqlite3", "login.sqlite3", "/login.sqlite3",
            "dir/store", "a//b", "dir/", "/", "", "./s", "../x/y", "/tmp/é ü/store",
        ])
    func directoryMatchesComponents(path: String) {
        #expect(StoreFile.directory(of: path) == StoreDirectoryTests.byComponents(path))
    }

    @Test("of an absolute path in a directory is that directory")
    func absolutePath() {
        #expect(StoreFile.directory(of: "/var/lib/p11keychain/system.sqlite3") == "/var/lib/p11keychain")
    }
}
