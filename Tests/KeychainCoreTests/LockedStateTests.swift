import Dispatch
import Testing

@testable import KeychainCore

/// A value the tests keep under a lock (`Locked` holds a class instance).
private final class Box<Value> {
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// Runs `body(index)` on `count` threads at once and waits for all of them.
private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    DispatchQueue.concurrentPerform(iterations: count, execute: body)
}

@Suite("State reachable only under its lock (ARCHITECTURE.md §4.4)")
struct LockedStateTests {
    @Test("eight threads changing one Locked counter lose no change")
    func lockedCounterLosesNothing() {
        let counter = Locked(Box(0))
        onThreads(8) { _ in
            for _ in 0..<20_000 { counter.withLock { $0.value += 1 } }
        }
        #expect(counter.withLock { $0.value } == 160_000)
    }

    @Test("an OrderedLock lends its inner state, and changes through it and around it both count")
    func orderedLockLendsTheInnerState() {
        let inner = Locked(Box(0))
        let outer = OrderedLock(before: inner)
        onThreads(8) { index in
            for _ in 0..<5_000 {
                if index.isMultiple(of: 2) {
                    outer.withLock { lent in lent.withLock { $0.value += 1 } }
                } else {
                    inner.withLock { $0.value += 1 }
                }
            }
        }
        #expect(inner.withLock { $0.value } == 40_000)
        #expect(outer.withLock { lent in lent === inner })
    }

    @Test("an error thrown inside withLock reaches the caller and leaves the lock free")
    func errorsLeaveTheLockFree() {
        let state = Locked(Box([Int]()))
        #expect(throws: CoreError.self) {
            try state.withLock { (box: Box<[Int]>) throws(CoreError) in
                box.value.append(1)
                throw CoreError(.invalidArgument, "refused")
            }
        }
        // Taken again on this thread: a lock left held would deadlock here.
        #expect(state.withLock { $0.value } == [1])
    }
}
