import Glibc
import Testing

@testable import LocalAuthentication

@Suite("The pinentry program LAContext runs")
struct PinentryProgramTests {
    @Test("PINENTRY_PROGRAM, else pinentry on the PATH, names it in an ordinary process")
    func ordinaryProcess() {
        #expect(
            Pinentry.program(environment: ["PINENTRY_PROGRAM": "/bin/true"], privileged: false) == "/bin/true"
        )
        #expect(
            Pinentry.program(environment: ["PINENTRY_PROGRAM": "/nonexistent/x"], privileged: false) == nil)
        #expect(Pinentry.program(environment: ["PATH": "/nonexistent"], privileged: false) == nil)
    }

    @Test("a privileged host runs only the system's pinentry, whatever its caller's environment names")
    func privilegedHost() {
        let system = access(Pinentry.systemProgram, X_OK) == 0 ? Pinentry.systemProgram : nil
        let hostile = ["PINENTRY_PROGRAM": "/bin/true", "PATH": "/tmp:/nonexistent"]
        #expect(Pinentry.program(environment: hostile, privileged: true) == system)
        #expect(Pinentry.program(environment: [:], privileged: true) == system)
    }
}
