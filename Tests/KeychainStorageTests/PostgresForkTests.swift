import Foundation
import KeychainStorage
import Testing

/// A child of `fork()` never uses or ends its parent's PostgreSQL connection: it connects
/// anew, and dropping its copy of the store closes only its copy of the socket, without the
/// message that would end the parent's session (ARCHITECTURE.md §4.5).
@Suite("The PostgreSQL engine after fork()")
struct PostgresForkTests {
    /// Runs `child` in a forked child (its result is the exit status); the status, or nil when
    /// it did not end within 30 s (then it is killed).
    private func inChild(_ child: () -> Int32) -> Int32? {
        fflush(nil)
        let pid = fork()
        if pid == 0 { _exit(child()) }
        guard pid > 0 else { return nil }
        let deadline = Date().addingTimeInterval(30)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) != pid {
            if Date() > deadline {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                return nil
            }
            usleep(2_000)
        }
        // WIFEXITED / WEXITSTATUS are macros Swift does not import.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    @Test("a forked child writes through a connection of its own and leaves the parent's session working")
    func childConnectsAnewAndSparesTheParent() throws {
        try withTemporaryStore(on: .postgresql) { _, place in
            var store: ObjectStore? = try ObjectStore.open(
                place.location + " application_name=\(place.token)", token: place.token, create: false)
            // Only `store` holds it, so that the child's `store = nil` ends the child's copy.
            let before = try #require(store).insert(
                uniqueKey: nil, attributes: [StoredAttribute(3, bytes("parent"))])
            let sessions = try place.query(
                "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE application_name = '\(place.token)'"
            )
            let status = inChild {
                do {
                    _ = try store?.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("child"))])
                    // The child's copy goes: its connection ends, not the parent's.
                    store = nil
                    return 0
                } catch {
                    return 1
                }
            }
            #expect(status == 0, "the child's write")
            // The parent's first call after the child is done works on its own session.
            #expect(try #require(store).attributes(of: before) == [StoredAttribute(3, bytes("parent"))])
            #expect(
                try #require(store).find([StoredAttribute(3, bytes("child"))]).count == 1,
                "the child's object")
            let after = try place.query(
                "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE application_name = '\(place.token)'"
            )
            #expect(after == sessions, "the parent's session is the one it had")
        }
    }
}
