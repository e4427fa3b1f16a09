import Foundation
import Testing

// unlock, lock and status: a keychain unlocked for the login session (ARCHITECTURE.md §6.5). Every
// test runs its commands in a session keyring of its own (`keyctl session -`), so nothing
// reaches the keyrings of the machine's other processes, and two tests never share one.

extension Sandbox {
    /// Runs `script` (sh) in a new session keyring, with `$P11K` naming the built program.
    /// Each command's output is preceded by a line `== NAME`, for `section(_:of:)`.
    func inSession(_ script: String) throws -> Outcome {
        let keyctl = ["/usr/bin/keyctl", "/bin/keyctl"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
        guard let keyctl else {
            throw TestFailure(description: "keyctl is missing (scripts/setup.sh installs keyutils)")
        }
        return try run(
            keyctl, ["session", "-", "/bin/sh", "-c", script], environment: ["P11K": Built.program])
    }

    /// A token with both PINs set.
    func initializedToken() throws {
        let outcome = try p11keychain("init", "--so-pin", PIN.securityOfficer, "--pin", PIN.user)
        guard outcome.status == 0 else { throw TestFailure(description: "init failed: \(outcome.error)") }
    }
}

/// The lines a script printed after `== name` and before the next `==` line.
func section(_ name: String, of text: String) -> String {
    var lines: [Substring] = []
    var inside = false
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        if line.hasPrefix("== ") {
            inside = line == "== " + name
            continue
        }
        if inside { lines.append(line) }
    }
    if lines.last == "" { lines.removeLast() }
    return lines.joined(separator: "\n")
}

@Suite("Session unlock commands")
struct SessionCommandTests {
    @Test("status says locked, then unlocked until when after unlock --timeout, then locked after lock")
    func statusFollowsUnlockAndLock() throws {
        let sandbox = try Sandbox()
        try sandbox.initializedToken()
        let pinFile = try sandbox.write("pin", Array("\(PIN.user)\n".utf8))
        let outcome = try sandbox.inSession(
            """
            echo '== before'; "$P11K" status; echo "exit $?"
            echo '== unlock'; "$P11K" unlock --timeout 2h --pin-file \(pinFile); echo "exit $?"
            echo '== unlocked'; "$P11K" status; echo "exit $?"
            echo '== lock'; "$P11K" lock; echo "exit $?"
            echo '== after'; "$P11K" status; echo "exit $?"
            echo '== again'; "$P11K" lock; echo "exit $?"
            """)
        #expect(outcome.status == 0, "\(outcome.error)")
        let text = outcome.output
        #expect(
            section("before", of: text)
                == "token \"login\": locked (unlock it for this login session: p11keychain unlock)\nexit 1")
        let unlock = section("unlock", of: text)
        #expect(unlock.hasPrefix("unlocked token \"login\" for this login session until 20"), "\(unlock)")
        #expect(unlock.contains(" UTC (in 2h 0m 0s)") || unlock.contains(" UTC (in 1h 59m 59s)"), "\(unlock)")
        #expect(unlock.hasSuffix("exit 0"))
        let unlocked = section("unlocked", of: text)
        #expect(
            unlocked.hasPrefix("token \"login\": unlocked for this login session until 20"), "\(unlocked)")
        #expect(section("lock", of: text) == "locked token \"login\" for this login session\nexit 0")
        #expect(section("after", of: text).hasPrefix("token \"login\": locked"))
        #expect(
            section("again", of: text)
                == "token \"login\" was not unlocked for this login session; nothing to lock\nexit 0")
        // No PIN on any output.
        #expect(!text.contains(PIN.user) && !outcome.error.contains(PIN.user))
    }

    @Test("a wrong PIN does not unlock, is counted as a failed attempt, and says how many are left")
    func wrongPINDoesNotUnlock() throws {
        let sandbox = try Sandbox()
        try sandbox.initializedToken()
        let wrong = try sandbox.write("wrong", Array("9999\n".utf8))
        let outcome = try sandbox.inSession(
            """
            echo '== unlock'; "$P11K" unlock --pin-file \(wrong) 2>&1; echo "exit $?"
            echo '== status'; "$P11K" status; echo "exit $?"
            """)
        let unlock = section("unlock", of: outcome.output)
        #expect(
            unlock.contains("cannot unlock token \"login\": wrong PIN (9 attempts left before it locks)"),
            "\(unlock)")
        #expect(unlock.hasSuffix("exit 1"))
        #expect(section("status", of: outcome.output).hasPrefix("token \"login\": locked"))
        let info = try sandbox.p11keychain("token-info")
        #expect(
            info.output.contains("user PIN:       set; 1 failed attempt (it locks after 10)\n"),
            "\(info.output)")
    }

    @Test("in an unlocked session, commands that need the PIN ask for none")
    func commandsNeedNoPINInAnUnlockedSession() throws {
        let sandbox = try Sandbox()
        try sandbox.initializedToken()
        let pinFile = try sandbox.write("pin", Array("\(PIN.user)\n".utf8))
        let outcome = try sandbox.inSession(
            """
            echo '== locked'; "$P11K" find-generic-password -s svc 2>&1; echo "exit $?"
            "$P11K" unlock --pin-file \(pinFile) >/dev/null
            echo '== add'; "$P11K" add-generic-password -s svc -a me -w s3cret 2>&1; echo "exit $?"
            echo '== find'; "$P11K" find-generic-password -s svc -a me -w 2>&1; echo "exit $?"
            """)
        #expect(
            section("locked", of: outcome.output).contains("no PIN given and no terminal"),
            "\(outcome.output)")
        #expect(section("add", of: outcome.output).hasSuffix("exit 0"), "\(outcome.output)")
        // -w prints the password's bytes alone: no line break off a terminal.
        #expect(section("find", of: outcome.output) == "s3cretexit 0", "\(outcome.output)")
    }

    @Test("--pin-fd reads the PIN from an open descriptor")
    func pinFromDescriptor() throws {
        let sandbox = try Sandbox()
        try sandbox.initializedToken()
        let pinFile = try sandbox.write("pin", Array("\(PIN.user)\n".utf8))
        let outcome = try sandbox.inSession(
            """
            echo '== unlock'; "$P11K" unlock --pin-fd 3 3<\(pinFile); echo "exit $?"
            echo '== status'; "$P11K" status; echo "exit $?"
            """)
        #expect(
            section("unlock", of: outcome.output).hasSuffix("exit 0"), "\(outcome.output) \(outcome.error)")
        #expect(
            section("status", of: outcome.output).hasPrefix("token \"login\": unlocked"), "\(outcome.output)")
    }

    @Test(
        "unlock refuses a bad timeout as a usage error and a token without a user PIN with a hint",
        arguments: ["0", "-5", "10x", "367d", "99999999999999999999s", "h"])
    func badTimeout(_ value: String) throws {
        let sandbox = try Sandbox()
        try sandbox.initializedToken()
        let outcome = try sandbox.p11keychain("unlock", "--timeout", value, "--pin", PIN.user)
        #expect(outcome.status == 2, "\(outcome.error)")
        #expect(outcome.error.contains("--timeout takes 1 second to 366 days"), "\(outcome.error)")
    }

    @Test("unlock of a token without a user PIN says how to set one and stores nothing")
    func noUserPIN() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.p11keychain("init", "--so-pin", PIN.securityOfficer).status == 0)
        let outcome = try sandbox.inSession(
            """
            echo '== unlock'; "$P11K" unlock --pin \(PIN.user) 2>&1; echo "exit $?"
            echo '== status'; "$P11K" status; echo "exit $?"
            """)
        let unlock = section("unlock", of: outcome.output)
        #expect(
            unlock.contains("has no user PIN") && unlock.contains("p11keychain set-pin --reset"), "\(unlock)")
        #expect(unlock.hasSuffix("exit 1"))
        #expect(section("status", of: outcome.output).hasPrefix("token \"login\": locked"))
    }

    @Test("--pin-fd and --pin-file together are a usage error")
    func twoPINSources() throws {
        let sandbox = try Sandbox()
        try sandbox.initializedToken()
        let outcome = try sandbox.p11keychain("unlock", "--pin-fd", "0", "--pin-file", "/dev/null")
        #expect(outcome.status == 2)
        #expect(outcome.error.contains("--pin-fd and --pin-file both give the PIN"), "\(outcome.error)")
    }
}
