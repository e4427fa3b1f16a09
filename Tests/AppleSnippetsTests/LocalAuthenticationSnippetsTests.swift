import Foundation
import LocalAuthentication
import Security
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body` with `PINENTRY_PROGRAM` set to a scripted pinentry speaking Assuan: it answers
/// GETPIN with `answer` (a `D` line and OK, or an ERR line) and logs every command it gets to
/// the returned file.
private func withScriptedPinentry(answer: String, _ body: (String) throws -> Void) throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let script = directory.path + "/pinentry"
    let log = directory.path + "/commands"
    let text = """
        #!/bin/sh
        echo "OK Pleased to meet you"
        while IFS= read -r line; do
          echo "$line" >> '\(log)'
          case "$line" in
            GETPIN*) printf '%s\\n' "\(answer)" ;;
            BYE*) echo OK; exit 0 ;;
            *) echo OK ;;
          esac
        done
        """
    try text.write(toFile: script, atomically: true, encoding: .utf8)
    chmod(script, 0o700)
    setenv("PINENTRY_PROGRAM", script, 1)
    defer { unsetenv("PINENTRY_PROGRAM") }
    try body(log)
}

@Suite("LocalAuthentication: an LAContext authenticates SecItem and SecKey calls", .serialized)
struct LocalAuthenticationSnippetsTests {
    @Test("an application password set on an LAContext reads a .userPresence item; a wrong one is refused")
    func applicationPasswordReadsProtectedItem() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: TestPIN.user)
            try saveProtectedSecret(Data("launch codes".utf8), account: "alice")
            let (status, secret) = readProtectedSecret(
                account: "alice", context: passwordContext(TestPIN.user))
            #expect(status == errSecSuccess)
            #expect(secret == Data("launch codes".utf8))
            #expect(
                readProtectedSecret(account: "alice", context: passwordContext("0000")).0 == errSecAuthFailed)
            // A context with no credential authenticates nothing.
            #expect(
                readProtectedSecret(account: "alice", context: LAContext()).0 == errSecInteractionNotAllowed)
        }
    }

    @Test("a .userPresence key found with an LAContext signs with it")
    func keyFoundWithContextSigns() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: TestPIN.user)
            let tag = Data("com.example.la-key".utf8)
            #expect(addUserPresenceKey(try makeEphemeralKey(), tag: tag) == errSecSuccess)
            let message = Data("transfer 100".utf8)
            let key = try #require(protectedKey(tag: tag, context: passwordContext(TestPIN.user)))
            #expect(signOrCode(key, message).0 != nil)
            let refused = try #require(protectedKey(tag: tag, context: LAContext()))
            #expect(signOrCode(refused, message).1 == Int(errSecInteractionNotAllowed))
        }
    }

    @Test("evaluatePolicy asks pinentry with the reason, and the context then reads the item")
    func evaluatePolicyAsksPinentry() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: TestPIN.user)
            try saveProtectedSecret(Data("s".utf8), account: "bob")
            try withScriptedPinentry(answer: "D \(TestPIN.user)\nOK") { log in
                let context = LAContext()
                let (success, error) = authenticateOwner(context, reason: "Unlock 100% of\nthe vault")
                #expect(success, "\(String(describing: error))")
                #expect(context.isCredentialSet(.applicationPassword))
                let commands = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                #expect(commands.contains("SETDESC Unlock 100%25 of%0Athe vault"))
                #expect(commands.contains("GETPIN"))
                #expect(readProtectedSecret(account: "bob", context: context).1 == Data("s".utf8))
                context.invalidate()
                #expect(!context.isCredentialSet(.applicationPassword))
                #expect(failureReason(authenticateOwner(context, reason: "again").1) == "invalid")
            }
        }
    }

    @Test("a wrong PIN typed into pinentry fails as authenticationFailed, a cancel as userCancel")
    func pinentryFailures() throws {
        try withPINKeychain { _ in
            try unlockKeychain(password: TestPIN.user)
            try withScriptedPinentry(answer: "D 0000\nOK") { _ in
                #expect(failureReason(authenticateOwner(LAContext(), reason: "r").1) == "failed")
            }
            try withScriptedPinentry(answer: "ERR 83886179 Operation cancelled <Pinentry>") { _ in
                #expect(failureReason(authenticateOwner(LAContext(), reason: "r").1) == "cancelled")
            }
        }
    }

    @Test("without a way to ask, evaluation is notInteractive; biometry is not available")
    func notInteractiveAndNoBiometry() throws {
        try withPINKeychain { _ in
            setenv("PINENTRY_PROGRAM", "/nonexistent/pinentry", 1)
            defer { unsetenv("PINENTRY_PROGRAM") }
            #expect(failureReason(authenticateOwner(LAContext(), reason: "r").1) == "not interactive")
            try withScriptedPinentry(answer: "D \(TestPIN.user)\nOK") { log in
                let context = LAContext()
                context.interactionNotAllowed = true
                #expect(failureReason(authenticateOwner(context, reason: "r").1) == "not interactive")
                #expect(!FileManager.default.fileExists(atPath: log))
            }
            let (available, code) = biometryAvailable()
            #expect(!available)
            #expect(code == LAError.Code.biometryNotAvailable.rawValue)
            #expect(code == -6)
        }
    }
}
