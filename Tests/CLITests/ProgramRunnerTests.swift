import Foundation
import Testing

// TestSupport's runProgram, which every test target uses to run programs: what it hands the
// child and what it gives back, and that a hung child is killed at the timeout.

@Suite("the tests' program runner")
struct ProgramRunnerTests {
    @Test(
        "the child gets the arguments, environment, input and directory; output, errors and status come back apart"
    )
    func passesAndCollects() throws {
        try withTemporaryDirectory { directory in
            let result = try runProgram(
                "/bin/sh", ["-c", "cat; echo \"$GREETING $1\"; pwd; echo oops >&2; exit 3", "sh", "there"],
                environment: ["GREETING": "hello"], input: Data("from stdin\n".utf8),
                directory: directory.path)
            let canonical = URL(fileURLWithPath: directory.path).resolvingSymlinksInPath().path
            #expect(result.status == 3)
            #expect(!result.endedBySignal && !result.timedOut)
            #expect(result.output == "from stdin\nhello there\n\(canonical)\n")
            #expect(result.error == "oops\n")
            #expect(result.outputBytes == Array(result.output.utf8))
        }
    }

    @Test("merged errors arrive in the output, in the order written")
    func mergesErrors() throws {
        let result = try runProgram(
            "/bin/sh", ["-c", "echo one; echo two >&2; echo three"], mergingErrors: true)
        #expect(result.output == "one\ntwo\nthree\n")
        #expect(result.error.isEmpty)
    }

    @Test("a child that outlives the timeout is killed and reported as timed out")
    func killsAtTimeout() throws {
        let started = Date()
        let result = try runProgram("sleep", ["30"], timeout: 0.5)
        #expect(result.timedOut)
        #expect(result.endedBySignal)
        #expect(Date().timeIntervalSince(started) < 10)
    }

    @Test("a program that is not installed is an error, not a pass")
    func missingProgram() {
        #expect(throws: TestSupport.TestFailure.self) { try runProgram("no-such-program-p11keychain", []) }
    }
}
