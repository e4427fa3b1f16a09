import Foundation
import Keychain

/// The token's PINs (ARCHITECTURE.md §5, §6.2): `init` sets the security officer's PIN and label (and
/// erases the token when it had them), `set-pin` changes or resets a PIN, `token-info`
/// shows where they stand.
enum PINCommands {
    static let all = [initialize, setPIN, tokenInfo]

    // MARK: init

    static let initialize = Command(
        name: "init",
        synopsis:
            "[--label LABEL] [--so-pin PIN | --so-pin-file FILE] [--pin PIN | --pin-file FILE] [--force]",
        summary: "Set the token's SO PIN, label and user PIN; again: erase the token",
        options: [
            Option(
                long: "label", value: "LABEL",
                help: "the token label PKCS#11 applications show (default: the current one, else its name)"),
            PINs.securityOfficerPIN, PINs.securityOfficerPINFile, PINs.pin, PINs.pinFile,
            Option(long: "force", help: "erase an initialized token without asking"),
        ],
        notes: [
            """
            The first init of a token sets its security officer (SO) PIN and label and keeps
            every item. Each later init must be given that SO PIN and ERASES THE TOKEN: every
            certificate, key and password, and the user PIN. It asks for confirmation on a
            terminal; elsewhere it refuses unless --force is given.
            """,
            """
            The SO PIN comes from --so-pin, --so-pin-file or $P11KEYCHAIN_SO_PIN, else it is
            asked on the terminal (twice, when it is new). The user PIN, which keys and
            passwords need, is set too when --pin, --pin-file or $P11KEYCHAIN_PIN gives it;
            on a terminal it is asked (Enter for none). PINs have 4 to 255 bytes.
            """,
        ],
        run: { invocation throws(Failure) in try initializeToken(invocation) })

    private static func initializeToken(_ invocation: Invocation) throws(Failure) {
        let newLabel = invocation.value("label")
        if let newLabel {
            guard !newLabel.isEmpty, newLabel.utf8.count <= 32 else {
                throw .usage("a token label has 1 to 32 bytes (PKCS#11 shows no more)")
            }
        }
        let keychain = try invocation.openKeychain(creating: true)
        let token = Format.quoted(keychain.name)
        let status = try Authentication.status(of: keychain)
        let erasing = status.hasSecurityOfficerPIN
        if erasing, status.isSecurityOfficerPINLocked {
            throw .failed(
                "the SO PIN of token \(token) is locked after too many failed attempts, so the token cannot "
                    + "be initialized again (its items stay usable with the user PIN)")
        }
        if erasing, !invocation.flag("force") {
            guard Terminal.isInteractive else {
                throw .failed(
                    "token \(token) is initialized already, and initializing it again erases every item "
                        + "(give --force to do so; nothing was changed)")
            }
            let answer = try Terminal.readLine(
                prompt: "Initializing token \(token) again erases every certificate, key and password in it. "
                    + "Type yes to go on: ")
            guard answer == "yes" else { throw .failed("not confirmed; nothing was changed") }
        }
        let securityOfficer =
            erasing
            ? PINs.securityOfficer(token: keychain.name)
            : PINs.securityOfficer(
                token: keychain.name, prompt: "New SO PIN for token \(token): ")
        let securityOfficerPIN = try securityOfficer.required(invocation, confirming: !erasing)
        try PINs.checkLength(securityOfficerPIN, "SO PIN")
        // The user PIN is read before anything changes, so that a mistake there changes nothing.
        var userPIN = try PINs.user(token: keychain.name).given(invocation)
        if userPIN == nil, Terminal.isInteractive {
            let asked = Secret(
                name: "user PIN", prompt: "New user PIN for token \(token) (Enter for none): ")
            let answer = try asked.ask(confirming: true)
            userPIN = answer.isEmpty ? nil : answer
        }
        if let userPIN { try PINs.checkLength(userPIN, "user PIN") }
        let label = newLabel ?? status.label ?? keychain.name
        do {
            try keychain.initialize(securityOfficerPIN: securityOfficerPIN, label: label)
        } catch {
            var failure = Failure(
                authentication: error, keychain: keychain, doing: "cannot initialize token \(token)",
                securityOfficer: true)
            failure.message += "; nothing was changed"
            throw failure
        }
        var text =
            erasing
            ? "initialized token \(token) again: every item was erased; label \(Format.quoted(label))\n"
            : "initialized token \(token): SO PIN and label \(Format.quoted(label)) set; its items are kept\n"
        if let userPIN {
            do {
                try keychain.setUserPIN(userPIN, securityOfficerPIN: securityOfficerPIN)
            } catch {
                Console.print(text)
                throw Failure(
                    authentication: error, keychain: keychain,
                    doing: "the token is initialized, but its user PIN cannot be set", securityOfficer: true)
            }
            text += "user PIN set\n"
        } else {
            text += "no user PIN yet: keys and passwords need one (set it: p11keychain set-pin --reset)\n"
        }
        Console.print(text)
    }

    // MARK: set-pin

    static let setPIN = Command(
        name: "set-pin", aliases: ["set-keychain-password"],
        synopsis: "[--so | --reset] [--pin PIN | --pin-file FILE] [--so-pin PIN | --so-pin-file FILE] "
            + "[--new-pin PIN | --new-pin-file FILE]",
        summary: "Change the user PIN, the SO PIN (--so), or reset the user PIN (--reset)",
        options: [
            Option(long: "so", help: "change the security officer's PIN instead of the user's"),
            Option(
                long: "reset",
                help: "set a new user PIN with the SO PIN: a first one, a forgotten or a locked one"),
            PINs.pin.spelled("o"), PINs.pinFile, PINs.securityOfficerPIN, PINs.securityOfficerPINFile,
            PINs.newPIN.spelled("p"), PINs.newPINFile,
        ],
        notes: [
            """
            Without --so or --reset: the current user PIN (--pin, --pin-file,
            $P11KEYCHAIN_PIN or the terminal) and the new one. With --so: the current SO PIN
            (--so-pin, --so-pin-file, $P11KEYCHAIN_SO_PIN or the terminal) and the new one.
            With --reset: the SO PIN and the new user PIN; this also unlocks a user PIN
            locked by too many failed attempts, and keeps every item.
            """,
            """
            The new PIN comes from --new-pin or --new-pin-file, else it is asked twice on the
            terminal. PINs have 4 to 255 bytes. A wrong current PIN is counted as a failed
            attempt and changes nothing.
            """,
        ],
        run: { invocation throws(Failure) in try changePIN(invocation) })

    private static func changePIN(_ invocation: Invocation) throws(Failure) {
        let securityOfficer = invocation.flag("so")
        let reset = invocation.flag("reset")
        if securityOfficer, reset { throw .usage("--so and --reset exclude each other") }
        let needsSecurityOfficer = securityOfficer || reset
        let unwanted =
            needsSecurityOfficer
            ? [PINs.pin, PINs.pinFile] : [PINs.securityOfficerPIN, PINs.securityOfficerPINFile]
        if let given = unwanted.first(where: { invocation.value($0.key) != nil }) {
            throw .usage(
                needsSecurityOfficer
                    ? "\(given.name) gives the user PIN, which set-pin \(reset ? "--reset" : "--so") does not need"
                    : "\(given.name) gives the SO PIN: change the SO PIN with --so, reset the user PIN with --reset"
            )
        }
        let keychain = try invocation.openKeychain()
        let token = Format.quoted(keychain.name)
        let status = try Authentication.status(of: keychain)
        if needsSecurityOfficer {
            guard status.hasSecurityOfficerPIN else {
                throw .failed("token \(token) has no SO PIN yet (set one: p11keychain init)")
            }
            guard !status.isSecurityOfficerPINLocked else {
                throw .failed("the SO PIN of token \(token) is locked after too many failed attempts")
            }
        } else {
            try Authentication.requireUserPIN(status, keychain)
        }
        let current =
            needsSecurityOfficer
            ? try PINs.securityOfficer(token: keychain.name).required(invocation)
            : try PINs.user(token: keychain.name).required(invocation)
        try PINs.checkLength(current, needsSecurityOfficer ? "SO PIN" : "PIN")
        let name = securityOfficer ? "SO PIN" : "user PIN"
        let new = try PINs.new(name).required(invocation, confirming: true)
        try PINs.checkLength(new, name)
        do {
            if reset {
                try keychain.setUserPIN(new, securityOfficerPIN: current)
            } else if securityOfficer {
                try keychain.changeSecurityOfficerPIN(from: current, to: new)
            } else {
                try keychain.changePIN(from: current, to: new)
            }
        } catch {
            throw Failure(
                authentication: error, keychain: keychain,
                doing: "cannot \(reset ? "set" : "change") the \(name) of token \(token)",
                securityOfficer: needsSecurityOfficer)
        }
        Console.print(
            reset
                ? "set a new user PIN for token \(token)\n"
                : "changed the \(name) of token \(token)\n")
    }

    // MARK: token-info

    static let tokenInfo = Command(
        name: "token-info", aliases: ["show-keychain-info"], synopsis: "[--json]",
        summary: "Show the token's label, store, access, objects and PINs",
        options: [JSONOutput.option],
        notes: [
            """
            The object count is that of the public objects (certificates, public keys): private
            ones are invisible without the PIN, which this command does not ask for. A PIN
            locks after \(PINs.maximumFailures) failed attempts in a row.
            """
        ],
        run: { invocation throws(Failure) in try showToken(invocation) })

    private static func showToken(_ invocation: Invocation) throws(Failure) {
        let keychain = try invocation.openKeychain()
        let status = try Authentication.status(of: keychain)
        let objects =
            (try? TokenCommands.objectCount(
                of: keychain.configuration, readOnly: keychain.isReadOnly))
        func pinLine(set: Bool, failures: Int, locked: Bool, unset: String) -> String {
            guard set else { return unset }
            if locked { return "locked after \(status.maximumFailedAttempts) failed attempts" }
            return failures == 0
                ? "set"
                : "set; \(Format.count(failures, "failed attempt")) "
                    + "(it locks after \(status.maximumFailedAttempts))"
        }
        let fields = [
            ("token", keychain.name),
            ("label", status.label ?? "\(keychain.name) (not initialized)"),
            // Never a server's whole connection string: it may hold a password.
            ("store", keychain.path),
            ("access", keychain.isReadOnly ? "read-only" : "read-write"),
            ("public objects", objects.map(String.init) ?? "?"),
            (
                "SO PIN",
                pinLine(
                    set: status.hasSecurityOfficerPIN, failures: status.failedSecurityOfficerAttempts,
                    locked: status.isSecurityOfficerPINLocked, unset: "not set (set it: p11keychain init)")
            ),
            (
                "user PIN",
                pinLine(
                    set: status.hasUserPIN, failures: status.failedUnlockAttempts,
                    locked: status.isUserPINLocked,
                    unset: status.hasSecurityOfficerPIN
                        ? "not set (set it: p11keychain set-pin --reset)"
                        : "not set (first: p11keychain init)")
            ),
        ]
        if invocation.json {
            try JSONOutput.print(
                [
                    [
                        "class": "token-info", "name": keychain.name,
                        "label": JSONOutput.optional(status.label),
                        "store": keychain.path, "access": keychain.isReadOnly ? "read-only" : "read-write",
                        "public_objects": JSONOutput.optional(objects),
                        "so_pin": [
                            "set": status.hasSecurityOfficerPIN,
                            "failed_attempts": status.failedSecurityOfficerAttempts,
                            "locked": status.isSecurityOfficerPINLocked,
                        ],
                        "user_pin": [
                            "set": status.hasUserPIN, "failed_attempts": status.failedUnlockAttempts,
                            "locked": status.isUserPINLocked,
                        ],
                        "maximum_failed_attempts": status.maximumFailedAttempts,
                    ]
                ], command: "token-info")
            return
        }
        Console.print(CertificateCommands.table(fields, indent: ""))
    }
}

// MARK: - Unlocking

/// Reading the PIN state and unlocking, with messages that name the token and say which
/// command helps.
enum Authentication {
    /// The keychain's PIN state.
    static func status(of keychain: Keychain) throws(Failure) -> AuthenticationStatus {
        do {
            return try keychain.authenticationStatus
        } catch {
            throw Failure(error, doing: "cannot read the state of token \(Format.quoted(keychain.name))")
        }
    }

    /// Fails, before any PIN is read, when the keychain has no user PIN or it is locked.
    static func requireUserPIN(_ status: AuthenticationStatus, _ keychain: Keychain) throws(Failure) {
        let token = Format.quoted(keychain.name)
        guard status.hasUserPIN else {
            throw .failed(
                "token \(token) has no user PIN, which keys and passwords need (set one: "
                    + (status.hasSecurityOfficerPIN
                        ? "p11keychain set-pin --reset)" : "p11keychain init --pin PIN)"))
        }
        guard !status.isUserPINLocked else {
            throw .failed(
                "the PIN of token \(token) is locked after \(status.maximumFailedAttempts) failed attempts "
                    + "(the security officer can set a new one: p11keychain set-pin --reset)")
        }
    }

    /// Unlocks the keychain with the user PIN from the command's sources; asks for none when
    /// the login session has it unlocked already (p11keychain unlock).
    static func unlock(_ keychain: Keychain, _ invocation: Invocation) throws(Failure) {
        if keychain.isUnlocked { return }
        try requireUserPIN(try status(of: keychain), keychain)
        let pin = try PINs.user(token: keychain.name).required(invocation)
        try PINs.checkLength(pin, "PIN")
        do {
            try keychain.unlock(pin: pin)
        } catch {
            throw Failure(
                authentication: error, keychain: keychain,
                doing: "cannot unlock token \(Format.quoted(keychain.name))")
        }
    }
}

extension Invocation {
    /// The keychain, unlocked with the user PIN.
    func unlockedKeychain(creating: Bool = false) throws(Failure) -> Keychain {
        let keychain = try openKeychain(creating: creating)
        try Authentication.unlock(keychain, self)
        return keychain
    }

    /// The keychain, unlocked when it has a user PIN (else only its public items are
    /// visible: without a user PIN there are no private ones).
    func keychainUnlockedIfPINSet() throws(Failure) -> Keychain {
        let keychain = try openKeychain()
        if try Authentication.status(of: keychain).hasUserPIN { try Authentication.unlock(keychain, self) }
        return keychain
    }
}

extension Failure {
    /// A PIN or login error as one line; for the user PIN, with the command that helps.
    ///
    /// - Parameter securityOfficer: The error is about the SO PIN: the user PIN's hints do
    ///   not apply.
    init(
        authentication error: KeychainError, keychain: Keychain, doing action: String,
        securityOfficer: Bool = false
    ) {
        var hint = ""
        if error.code == .authFailed || error.code == .notAvailable, !securityOfficer,
            let status = try? keychain.authenticationStatus
        {
            if !status.hasSecurityOfficerPIN {
                hint = " (set the PINs: p11keychain init)"
            } else if !status.hasUserPIN {
                hint = " (the security officer sets one: p11keychain set-pin --reset)"
            } else if status.isUserPINLocked {
                hint = " (the security officer can set a new one: p11keychain set-pin --reset)"
            }
        }
        guard error.code == .authFailed || error.code == .notAvailable else {
            self.init(error, doing: action)
            return
        }
        self = .failed(Format.oneLine("\(action): \(error.message)\(hint)"))
    }
}
