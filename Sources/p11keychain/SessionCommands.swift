import Foundation
import Keychain

#if canImport(Glibc)
    import Glibc
#endif

/// A keychain unlocked for the login session (ARCHITECTURE.md §6.5): `unlock` leaves what opens the
/// token in the session keyring of the kernel's key retention service, `lock` removes it,
/// `status` says where it stands.
enum SessionCommands {
    static let all = [unlock, lock, status]

    static let pinDescriptor = Option(
        long: "pin-fd", value: "N", help: "read the user PIN from the first line of open file descriptor N")
    static let timeoutOption = Option(
        long: "timeout", value: "SECONDS",
        help: "lock again after SECONDS (or a number with s, m, h or d: 30m, 8h)")

    /// The longest timeout: a year. The kernel takes any 32-bit count of seconds.
    static let maximumTimeout: UInt32 = 366 * 86_400

    // MARK: unlock

    static let unlock = Command(
        name: "unlock", aliases: ["unlock-keychain"],
        synopsis: "[--timeout SECONDS] [--pin-file FILE | --pin-fd N | --pin PIN]",
        summary: "Unlock the token for every process of this login session",
        options: [timeoutOption, PINs.pinFile, pinDescriptor, PINs.pin.spelled("p")],
        notes: [
            """
            Checks the user PIN (a wrong one is counted, as every unlock counts it) and puts
            what opens the token into this login session's keyring in the kernel (keyctl
            show @s), never on disk. Every process of the session then finds the token
            unlocked: programs using the Swift Keychain or Security API need no unlock call,
            and p11keychain commands ask for no PIN. PKCS#11 applications still log in, as the
            standard says, but their C_Login no longer waits for the slow PIN check. The unlock
            ends with p11keychain lock, the timeout, or the end of the login session.
            """,
            """
            The PIN comes from --pin-file, --pin-fd, --pin or $P11KEYCHAIN_PIN, else it is asked
            on the terminal without echo. Another user, and a process outside this session (a
            new keyring from keyctl new_session, another login), cannot use the unlock.
            """,
        ],
        run: { invocation throws(Failure) in try unlockSession(invocation) })

    private static func unlockSession(_ invocation: Invocation) throws(Failure) {
        let timeout = try invocation.value(timeoutOption.key).map { text throws(Failure) in try seconds(text)
        }
        let keychain = try invocation.openKeychain()
        let token = Format.quoted(keychain.name)
        try Authentication.requireUserPIN(try Authentication.status(of: keychain), keychain)
        let pin = try userPIN(invocation, token: keychain.name)
        try PINs.checkLength(pin, "PIN")
        let status: SessionUnlockStatus
        do {
            status = try keychain.unlockForSession(pin: pin, timeout: timeout)
        } catch {
            throw Failure(authentication: error, keychain: keychain, doing: "cannot unlock token \(token)")
        }
        Console.print("unlocked token \(token) for this login session \(until(status))\n")
        if status.inUserDefaultKeyring { Console.printError(userDefaultNote) }
    }

    /// The PIN from --pin-fd, else from the usual sources (PINs.user).
    private static func userPIN(_ invocation: Invocation, token: String) throws(Failure) -> String {
        let secret = PINs.user(token: token)
        guard let descriptor = invocation.value(pinDescriptor.key) else {
            return try secret.required(invocation)
        }
        if let other = [PINs.pin, PINs.pinFile].first(where: { invocation.value($0.key) != nil }) {
            throw .usage("\(pinDescriptor.name) and \(other.name) both give the PIN; give one")
        }
        guard let number = Int32(descriptor), number >= 0 else {
            throw .usage(
                "\(pinDescriptor.name) takes a file descriptor number, not \(Format.quoted(descriptor))")
        }
        return try firstLine(of: number)
    }

    /// The first line of descriptor `fd`, without its line break, read byte by byte so that
    /// nothing after it is consumed.
    private static func firstLine(of fd: Int32) throws(Failure) -> String {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < Files.maximumSecretLength {
            let count = read(fd, &byte, 1)
            if count < 0, errno == EINTR { continue }
            if count < 0 { throw .failed("cannot read the PIN from descriptor \(fd): \(Files.reason())") }
            if count == 0 || byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        guard let text = String(bytes: line, encoding: .utf8) else {
            throw .failed("the PIN on descriptor \(fd) is not UTF-8 text")
        }
        return text
    }

    // MARK: lock

    static let lock = Command(
        name: "lock", aliases: ["lock-keychain"], synopsis: "",
        summary: "Lock the token again for every process of this login session",
        notes: [
            """
            Removes the session's unlock (p11keychain unlock) at once: programs using the Swift
            Keychain or Security API find the token locked the next time they open it
            (errSecInteractionNotAllowed), p11keychain commands ask for the PIN again.
            PKCS#11 sessions already logged in stay logged in until they log out.
            """
        ],
        run: { invocation throws(Failure) in try lockSession(invocation) })

    private static func lockSession(_ invocation: Invocation) throws(Failure) {
        let keychain = try invocation.openKeychain()
        let token = Format.quoted(keychain.name)
        let removed: Bool
        do {
            removed = try keychain.lockSession()
        } catch {
            throw Failure(error, doing: "cannot lock token \(token)")
        }
        Console.print(
            removed
                ? "locked token \(token) for this login session\n"
                : "token \(token) was not unlocked for this login session; nothing to lock\n")
    }

    // MARK: status

    static let status = Command(
        name: "status", synopsis: "[--json]",
        summary: "Say whether the token is unlocked for this login session, and until when",
        options: [JSONOutput.option],
        notes: [
            """
            exit status: 0 unlocked for this login session; 1 locked (or its PIN changed
            since the unlock), or the state cannot be read; 2 usage error. With --json one item
            of class "session": token, state (unlocked, locked or stale) and expires (null: until
            p11keychain lock or logout).
            """
        ],
        run: { invocation throws(Failure) in try showStatus(invocation) })

    private static func showStatus(_ invocation: Invocation) throws(Failure) {
        let keychain = try invocation.openKeychain()
        let token = Format.quoted(keychain.name)
        let status: SessionUnlockStatus
        do {
            status = try keychain.sessionUnlockStatus
        } catch {
            throw Failure(error, doing: "cannot read the session state of token \(token)")
        }
        if invocation.json {
            var state = "locked"
            var expires: Any = NSNull()
            switch status.state {
            case .unlocked(let seconds):
                state = "unlocked"
                if let seconds { expires = JSONOutput.date(Date(timeIntervalSince1970: Double(seconds))) }
            case .locked: state = "locked"
            case .stale: state = "stale"
            }
            try JSONOutput.print(
                [["class": "session", "token": keychain.name, "state": state, "expires": expires]],
                command: "status")
            if state != "unlocked" { throw .negativeAnswer }
            return
        }
        switch status.state {
        case .unlocked:
            Console.print("token \(token): unlocked for this login session \(until(status))\n")
            if status.inUserDefaultKeyring { Console.printError(userDefaultNote) }
        case .locked:
            Console.print("token \(token): locked (unlock it for this login session: p11keychain unlock)\n")
            throw .negativeAnswer
        case .stale:
            Console.print(
                "token \(token): locked (its PIN changed since it was unlocked for this session: "
                    + "p11keychain unlock)\n")
            throw .negativeAnswer
        }
    }

    // MARK: Helpers

    private static let userDefaultNote =
        "note: this process has no login session keyring, so the unlock is in the user's default session "
        + "keyring, which every process of this user without a session keyring of its own shares"

    /// `until 2026-01-31 12:00:00 UTC (in 8h 0m)`, or `until p11keychain lock or logout`.
    private static func until(_ status: SessionUnlockStatus) -> String {
        guard case .unlocked(let expires?) = status.state else { return "until p11keychain lock or logout" }
        let now = UInt64(max(time(nil), 0))
        let left = expires > now ? expires - now : 0
        let date = Format.date(Date(timeIntervalSince1970: Double(expires)))
        return "until \(date) (in \(left / 3600)h \(left % 3600 / 60)m \(left % 60)s)"
    }

    /// `90`, `30m`, `8h`, `2d` as seconds, within 1 s … a year.
    static func seconds(_ text: String) throws(Failure) -> UInt32 {
        let units: [Character: UInt64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var digits = Substring(text)
        var unit: UInt64 = 1
        if let last = digits.last, let factor = units[last] {
            unit = factor
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let count = UInt64(digits),
            case (let total, let overflow) = count.multipliedReportingOverflow(by: unit), !overflow,
            (1...UInt64(maximumTimeout)).contains(total)
        else {
            throw .usage(
                "--timeout takes 1 second to 366 days, as seconds or with s, m, h or d (30m, 8h), "
                    + "not \(Format.quoted(text))")
        }
        return UInt32(truncatingIfNeeded: total)
    }
}
