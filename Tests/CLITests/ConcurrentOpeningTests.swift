import Foundation
import Testing

/// Opening a store is a write like any other: creating it, migrating its
/// schema and switching it to WAL wait for other processes, so any number of processes may
/// open a fresh store at once.
@Suite("Processes opening one new store at once")
struct ConcurrentOpeningTests {
    @Test("16 processes opening one fresh store at once, 20 times over, all succeed and agree on it")
    func sixteenProcessesOpenAFreshStore() async throws {
        let sandbox = try Sandbox()
        for round in 0..<20 {
            let directory = sandbox.path + "/round-\(round)"
            let environment = ["P11KEYCHAIN_DIR": directory]
            // Half read the new store, half write to it: both open it first.
            let outcomes = try await withThrowingTaskGroup(of: Outcome.self) { group in
                for process in 0..<16 {
                    group.addTask {
                        process % 2 == 0
                            ? try sandbox.p11keychain("token-info", environment: environment)
                            : try sandbox.p11keychain(
                                "add-certificates", Fixture.alice.path, environment: environment)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for outcome in outcomes {
                #expect(outcome.status == 0, "round \(round): \(outcome.error)")
            }
            let added = outcomes.filter { $0.output.hasPrefix("added 1 certificate") }
            #expect(added.count == 1, "round \(round): \(outcomes.map(\.output))")
            let info = try sandbox.p11keychain("token-info", environment: environment)
            #expect(info.output.contains("public objects: 1"), "round \(round): \(info.output)")
        }
    }
}
