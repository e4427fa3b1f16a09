import KeychainCore
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A kept key is dropped when the store's change counter file is deleted or replaced
///: a process that starts afterwards makes a new counter, and its writes
/// would never move the file the first process still has open.
@Suite("Kept keys and a change counter file deleted or replaced")
struct DeletedCounterTests {
    static let p256: [UInt8] = [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]

    @Test(
        "a key destroyed by a process that started after the counter was deleted or replaced is gone here too",
        arguments: ["deleted", "replaced"])
    func keyDestroyedAfterTheCounterWentAway(how: String) throws {
        try withToken { first, directory in
            try logInUser(first)
            let pair = try first.generateKeyPair(
                .ec(curveParameters: Self.p256),
                publicTemplate: [.token: yes, .verify: yes, .label: bytes("k")],
                privateTemplate: [.token: yes, .private: yes, .sign: yes, .label: bytes("k")],
                context: Contexts.user)
            // Kept: read twice with no write between.
            _ = try first.privateKey(pair.privateKey, context: Contexts.user)
            _ = try first.privateKey(pair.privateKey, context: Contexts.user)
            let counter = first.configuration.path + "-changes"
            if how == "deleted" {
                #expect(unlink(counter) == 0)
            } else {
                // A file with the same bytes renamed over it, as a tool restoring a backup does.
                let fd = open(counter, O_RDONLY)
                var record = [UInt8](repeating: 0, count: 16)
                #expect(read(fd, &record, 16) == 16)
                close(fd)
                let copy = directory.file("copy")
                let out = open(copy, O_CREAT | O_WRONLY, 0o600)
                #expect(write(out, record, 16) == 16)
                close(out)
                #expect(rename(copy, counter) == 0)
            }
            // Another process, started now.
            let second = Token(configuration: first.configuration)
            try second.logIn(.user, pin: bytes("user-pin-0000"))
            try second.destroyObject(pair.privateKey, context: Contexts.user)
            // A reader trusts its last look at the counter file for a millisecond and a tick of
            // the coarse clock (ChangeCounter.currencyInterval): past that, it must see the
            // file is gone. (The PBKDF2 of the login above once took longer than that alone.)
            usleep(20_000)
            expectKeychainError(.objectNotFound) {
                _ = try first.privateKey(pair.privateKey, context: Contexts.user)
            }
        }
    }
}
