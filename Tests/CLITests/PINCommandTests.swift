import Foundation
import Testing

// init, set-pin, token-info, the PINS column of list-tokens, and how every command that
// unlocks the keychain gets its PIN: --pin, --pin-file, P11KEYCHAIN_PIN, the terminal.

@Suite("PINs and init")
struct PINCommandTests {
    @Test("the first init sets the SO PIN, label and user PIN and keeps the certificates")
    func firstInit() throws {
        let sandbox = try Sandbox()
        #expect(try sandbox.p11keychain("add-certificates", Fixture.alice.path).status == 0)
        let before = try sandbox.p11keychain("list-tokens")
        #expect(before.output.contains("login  read-write  1        none  "))
        let outcome = try sandbox.p11keychain(
            "init", "--label", "My Token", "--so-pin", PIN.securityOfficer, "--pin", PIN.user)
        #expect(outcome.status == 0, "\(outcome.error)")
        #expect(outcome.output.contains("initialized token \"login\""))
        #expect(outcome.output.contains("its items are kept"))
        #expect(outcome.output.contains("user PIN set"))
        #expect(!outcome.output.contains(PIN.securityOfficer) && !outcome.output.contains(PIN.user))
        #expect(try sandbox.p11keychain("find-certificate", "-l", "Alice Example").status == 0)
        #expect(
            try sandbox.p11keychain("list-tokens").output.contains("login  read-write  1        SO+user  "))
        let info = try sandbox.p11keychain("token-info")
        #expect(info.status == 0)
        #expect(info.output.contains("label:          My Token\n"))
        #expect(info.output.contains("SO PIN:         set\n"))
        #expect(info.output.contains("user PIN:       set\n"))
        #expect(info.output.contains("public objects: 1\n"))
    }

    @Test("init without a user PIN leaves the token without one, and says how to set it")
    func initWithoutUserPIN() throws {
        let sandbox = try Sandbox()
        let outcome = try sandbox.p11keychain("init", "--so-pin", PIN.securityOfficer)
        #expect(outcome.status == 0, "\(outcome.error)")
        #expect(outcome.output.contains("set-pin --reset"))
        #expect(try sandbox.p11keychain("list-tokens").output.contains(" SO  "))
        #expect(try sandbox.p11keychain("token-info").output.contains("user PIN:       not set"))
        let noPIN = try sandbox.p11keychain("generate-key", "--type", "ec", "-l", "K", "--pin", PIN.user)
        #expect(noPIN.failed(with: 1), "\(noPIN.error)")
        #expect(noPIN.error.contains("has no user PIN") && noPIN.error.contains("set-pin --reset"))
    }

    @Test(
        "a second init needs --force and the SO PIN; a wrong one keeps every item, the right one erases them")
    func secondInit() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        #expect(try sandbox.p11keychain("add-certificates", Fixture.bob.path).status == 0)
        #expect(
            try sandbox.p11keychain("add-generic-password", "-s", "svc", "-a", "me", "-w", "s3cret").status
                == 0)
        let unforced = try sandbox.p11keychain("init", "--so-pin", PIN.securityOfficer)
        #expect(unforced.failed(with: 1), "\(unforced.error)")
        #expect(unforced.error.contains("--force") && unforced.error.contains("nothing was changed"))
        let wrong = try sandbox.p11keychain("init", "--force", "--so-pin", "87654321")
        #expect(wrong.failed(with: 1), "\(wrong.error)")
        #expect(wrong.error.contains("wrong security officer PIN") && wrong.error.contains("9 attempts left"))
        #expect(!wrong.error.contains("87654321"))
        #expect(try sandbox.p11keychain("find-certificate", "-l", "Bob Example").status == 0, "kept")
        #expect(try sandbox.p11keychain("find-generic-password", "-s", "svc", "-w").output == "s3cret")
        sandbox.environment["P11KEYCHAIN_PIN"] = nil
        let erased = try sandbox.p11keychain(
            "init", "--force", "--so-pin", PIN.securityOfficer, "--label", "Fresh")
        #expect(erased.status == 0, "\(erased.error)")
        #expect(erased.output.contains("every item was erased"))
        #expect(try sandbox.p11keychain("find-certificate").failed(with: 1), "the certificate is gone")
        let info = try sandbox.p11keychain("token-info").output
        #expect(info.contains("label:          Fresh\n") && info.contains("user PIN:       not set"))
        #expect(info.contains("public objects: 0\n"))
    }

    @Test("a wrong PIN is one line with the attempts left; ten lock the PIN until set-pin --reset")
    func wrongAndLockedPIN() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        #expect(
            try sandbox.p11keychain("add-generic-password", "-s", "svc", "-a", "me", "-w", "pw").status == 0)
        for attempt in 1...10 {
            let wrong = try sandbox.p11keychain("find-key", "--pin", "9999")
            #expect(wrong.failed(with: 1), "\(wrong.error)")
            #expect(!wrong.error.contains("9999"), "the PIN is never printed")
            if attempt < 10 {
                let left = 10 - attempt
                #expect(
                    wrong.error.contains("wrong PIN (\(left) attempt\(left == 1 ? "" : "s") left"),
                    "\(wrong.error)")
            } else {
                #expect(wrong.error.contains("now locked") && wrong.error.contains("set-pin --reset"))
            }
        }
        // Locked: even the right PIN is refused, before it is checked.
        let locked = try sandbox.p11keychain("find-generic-password", "-s", "svc")
        #expect(locked.failed(with: 1), "\(locked.error)")
        #expect(locked.error.contains("is locked after 10 failed attempts"))
        #expect(locked.error.contains("p11keychain set-pin --reset"))
        #expect(try sandbox.p11keychain("list-tokens").output.contains(" SO+user(locked) "))
        #expect(try sandbox.p11keychain("token-info").output.contains("user PIN:       locked after 10"))
        let reset = try sandbox.p11keychain(
            "set-pin", "--reset", "--so-pin", PIN.securityOfficer, "--new-pin", "4321")
        #expect(reset.status == 0, "\(reset.error)")
        #expect(reset.output == "set a new user PIN for token \"login\"\n")
        let found = try sandbox.p11keychain("find-generic-password", "-s", "svc", "-w", "--pin", "4321")
        #expect(found.status == 0, "\(found.error)")
        #expect(found.output == "pw", "items survive a reset")
    }

    @Test("the PIN comes from --pin, --pin-file (its first line) or P11KEYCHAIN_PIN")
    func pinSources() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        sandbox.environment["P11KEYCHAIN_PIN"] = nil
        #expect(
            try sandbox.p11keychain(
                "add-generic-password", "-s", "a", "-a", "b", "-w", "c", "--pin", PIN.user
            ).status == 0)
        let file = try sandbox.write("pin.txt", Array("\(PIN.user)\r\nsecond line\n".utf8))
        let fromFile = try sandbox.p11keychain("find-generic-password", "-s", "a", "-w", "--pin-file", file)
        #expect(fromFile.status == 0, "\(fromFile.error)")
        #expect(fromFile.output == "c")
        let fromEnvironment = try sandbox.p11keychain(
            "find-generic-password", "-s", "a", "-w", environment: ["P11KEYCHAIN_PIN": PIN.user])
        #expect(fromEnvironment.status == 0, "\(fromEnvironment.error)")
        #expect(fromEnvironment.output == "c")
        let fromStandardInput = try sandbox.p11keychain(
            "find-generic-password", "-s", "a", "-w", "--pin-file", "-", input: PIN.user + "\n")
        #expect(fromStandardInput.output == "c", "\(fromStandardInput.error)")
    }

    @Test("no PIN and no terminal is exit status 1 with a hint; bad PIN input is refused before it counts")
    func missingAndBadPINs() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        sandbox.environment["P11KEYCHAIN_PIN"] = nil
        for command in [
            ["find-key"], ["generate-key", "--type", "ec", "-l", "K"], ["find-identity"],
            ["add-generic-password", "-s", "s", "-a", "a", "-w", "w"], ["find-generic-password", "-s", "s"],
            ["delete-generic-password", "-s", "s"], ["delete-key", "-l", "K"],
            ["set-pin", "--new-pin", "5678"],
        ] {
            let outcome = try sandbox.run(Built.program, command)
            #expect(outcome.failed(with: 1), "\(command): \(outcome.error)")
            #expect(outcome.error.contains("no PIN given and no terminal"), "\(command): \(outcome.error)")
            #expect(outcome.error.contains("--pin-file FILE, P11KEYCHAIN_PIN or --pin PIN"), "\(command)")
        }
        let noSOPIN = try sandbox.p11keychain("set-pin", "--reset", "--new-pin", "5678")
        #expect(noSOPIN.failed(with: 1))
        #expect(noSOPIN.error.contains("P11KEYCHAIN_SO_PIN"))
        let short = try sandbox.p11keychain("find-key", "--pin", "12")
        #expect(short.failed(with: 1))
        #expect(short.error.contains("4 to 255 bytes"))
        let both = try sandbox.p11keychain("find-key", "--pin", "1234", "--pin-file", "/dev/null")
        #expect(both.failed(with: 2))
        #expect(both.error.contains("give one"))
        let missingFile = try sandbox.p11keychain("find-key", "--pin-file", sandbox.path + "/none")
        #expect(missingFile.failed(with: 1))
        #expect(missingFile.error.contains("cannot read"))
        // None of these counted as a failed attempt.
        #expect(try sandbox.p11keychain("token-info").output.contains("user PIN:       set\n"))
    }

    @Test("set-pin changes the user PIN and the SO PIN; the old ones stop working")
    func setPIN() throws {
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        sandbox.environment["P11KEYCHAIN_PIN"] = nil
        let changed = try sandbox.p11keychain("set-pin", "--pin", PIN.user, "--new-pin", "5678")
        #expect(changed.status == 0, "\(changed.error)")
        #expect(changed.output == "changed the user PIN of token \"login\"\n")
        #expect(try sandbox.p11keychain("find-key", "--pin", PIN.user).failed(with: 1))
        let newFile = try sandbox.write("new-so-pin", Array("abcdefgh\n".utf8))
        let so = try sandbox.p11keychain(
            "set-pin", "--so", "--so-pin", PIN.securityOfficer, "--new-pin-file", newFile)
        #expect(so.status == 0, "\(so.error)")
        #expect(so.output == "changed the SO PIN of token \"login\"\n")
        let oldSO = try sandbox.p11keychain(
            "set-pin", "--reset", "--so-pin", PIN.securityOfficer, "--new-pin", "1111")
        #expect(oldSO.failed(with: 1))
        #expect(oldSO.error.contains("wrong security officer PIN"))
        let wrongOld = try sandbox.p11keychain("set-pin", "--pin", "0000", "--new-pin", "1111")
        #expect(wrongOld.failed(with: 1))
        #expect(wrongOld.error.contains("wrong PIN"))
        #expect(
            try sandbox.p11keychain("set-pin", "--pin", "5678", "--new-pin", "12").failed(with: 1),
            "a new PIN of the wrong length")
        // Usage errors: contradictory modes, the other user's PIN.
        for arguments in [
            ["set-pin", "--so", "--reset"], ["set-pin", "--so", "--pin", "1234"],
            ["set-pin", "--so-pin", "12345678"],
        ] {
            #expect(try sandbox.run(Built.program, arguments).failed(with: 2), "\(arguments)")
        }
    }

    @Test("set-pin and init before the token has an SO PIN say to run init")
    func beforeInit() throws {
        let sandbox = try Sandbox()
        let reset = try sandbox.p11keychain(
            "set-pin", "--reset", "--so-pin", PIN.securityOfficer, "--new-pin", "1234")
        #expect(reset.failed(with: 1))
        #expect(reset.error.contains("p11keychain init"))
        let change = try sandbox.p11keychain("set-pin", "--pin", "1234", "--new-pin", "5678")
        #expect(change.failed(with: 1))
        #expect(change.error.contains("has no user PIN") && change.error.contains("p11keychain init"))
        let label = try sandbox.p11keychain("init", "--label", String(repeating: "x", count: 33))
        #expect(label.failed(with: 2))
        #expect(try sandbox.p11keychain("token-info").output.contains("SO PIN:         not set"))
    }

    @Test("on a terminal the PIN is asked without echo")
    func promptWithoutEcho() throws {
        guard Sandbox.hasScript else { return }
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        sandbox.environment["P11KEYCHAIN_PIN"] = nil
        #expect(
            try sandbox.p11keychain(
                "add-generic-password", "-s", "svc", "-a", "me", "-w", "pw", "--pin", PIN.user
            ).status == 0)
        let outcome = try sandbox.onTerminal(
            "'\(Built.program)' find-generic-password -s svc",
            answering: [("PIN for token \"login\": ", PIN.user + "\n")])
        #expect(outcome.status == 0, "\(outcome.output)")
        #expect(outcome.output.contains("PIN for token \"login\": "))
        #expect(outcome.output.contains("account: me"))
        #expect(!outcome.output.contains(PIN.user), "the PIN typed is not shown: \(outcome.output)")
    }

    @Test("Ctrl-C at the PIN prompt ends the program and leaves the terminal's echo on")
    func interruptRestoresEcho() throws {
        guard Sandbox.hasScript else { return }
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        sandbox.environment["P11KEYCHAIN_PIN"] = nil
        // The shell traps SIGINT (so it lives on to report); the program gets the default
        // action. stty shows the terminal's echo setting afterwards.
        let check = try sandbox.write(
            "interrupt.sh",
            Array(
                """
                trap : INT
                '\(Built.program)' find-key
                echo status=$?
                if stty -a | tr ' ' '\\n' | grep -qx -- -echo; then echo echo-is-off; else echo echo-is-on; fi

                """.utf8))
        let outcome = try sandbox.run(
            "/bin/sh",
            ["-c", "(sleep 1; printf '\\003'; sleep 1) | timeout 60 script -qec 'sh \(check)' /dev/null"])
        #expect(outcome.output.contains("PIN for token"), "\(outcome.output)")
        #expect(outcome.output.contains("status=130"), "killed by SIGINT: \(outcome.output)")
        #expect(outcome.output.contains("echo-is-on"), "\(outcome.output)")
    }

    @Test("init on a terminal asks before it erases; anything but yes changes nothing")
    func initConfirmation() throws {
        guard Sandbox.hasScript else { return }
        let sandbox = try Sandbox()
        try sandbox.initializeToken()
        #expect(try sandbox.p11keychain("add-certificates", Fixture.ca.path).status == 0)
        let refused = try sandbox.onTerminal(
            "'\(Built.program)' init", answering: [("Type yes to go on: ", "no\n")])
        #expect(refused.status == 1, "\(refused.output)")
        #expect(refused.output.contains("erases every certificate, key and password"))
        #expect(refused.output.contains("not confirmed; nothing was changed"))
        #expect(try sandbox.p11keychain("find-certificate").status == 0)
        sandbox.environment["P11KEYCHAIN_PIN"] = nil
        let confirmed = try sandbox.onTerminal(
            "'\(Built.program)' init",
            answering: [
                ("Type yes to go on: ", "yes\n"),
                ("SO PIN for token \"login\": ", PIN.securityOfficer + "\n"),
                ("(Enter for none): ", "\n"),
            ])
        #expect(confirmed.status == 0, "\(confirmed.output)")
        #expect(confirmed.output.contains("SO PIN for token \"login\": "))
        #expect(confirmed.output.contains("New user PIN for token \"login\" (Enter for none): "))
        #expect(confirmed.output.contains("every item was erased"))
        #expect(!confirmed.output.contains(PIN.securityOfficer))
        #expect(try sandbox.p11keychain("find-certificate").failed(with: 1))
    }
}
