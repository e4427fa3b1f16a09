import CPKCS11
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Exit codes of the forked children: which step failed.
private enum ChildStep: Int32 {
    case getInfoBeforeInitialize = 10
    case slotListBeforeInitialize
    case initialize
    case openSession
    case findInit
    case find
    case wrongObjectCount
    case findFinal
    case finalize
}

/// The module calls a forked child makes, read from the function list before the fork so that
/// the child only calls C function pointers and touches memory prepared in advance.
private struct ChildCalls {
    let getInfo: CK_C_GetInfo
    let getSlotList: CK_C_GetSlotList
    let initialize: CK_C_Initialize
    let openSession: CK_C_OpenSession
    let findInit: CK_C_FindObjectsInit
    let find: CK_C_FindObjects
    let findFinal: CK_C_FindObjectsFinal
    let finalize: CK_C_Finalize

    init(_ m: FunctionTable<CK_FUNCTION_LIST>) throws {
        getInfo = try m.C_GetInfo
        getSlotList = try m.C_GetSlotList
        initialize = try m.C_Initialize
        openSession = try m.C_OpenSession
        findInit = try m.C_FindObjectsInit
        find = try m.C_FindObjects
        findFinal = try m.C_FindObjectsFinal
        finalize = try m.C_Finalize
    }

    /// The child's whole life: not initialised until C_Initialize, which then works and sees
    /// exactly `expectedObjects` objects. Uses only `scratch`, allocated before the fork.
    func runChild(expectedObjects: CK_ULONG, scratch: ChildScratch) -> Int32 {
        if getInfo(scratch.info) != CKR_CRYPTOKI_NOT_INITIALIZED {
            return ChildStep.getInfoBeforeInitialize.rawValue
        }
        if getSlotList(0, nil, scratch.count) != CKR_CRYPTOKI_NOT_INITIALIZED {
            return ChildStep.slotListBeforeInitialize.rawValue
        }
        if initialize(nil) != CKR_OK { return ChildStep.initialize.rawValue }
        if openSession(0, readOnlySession, nil, nil, scratch.session) != CKR_OK {
            return ChildStep.openSession.rawValue
        }
        let session = scratch.session.pointee
        if findInit(session, nil, 0) != CKR_OK { return ChildStep.findInit.rawValue }
        if find(session, scratch.objects, CK_ULONG(scratch.capacity), scratch.count) != CKR_OK {
            return ChildStep.find.rawValue
        }
        if scratch.count.pointee != expectedObjects { return ChildStep.wrongObjectCount.rawValue }
        if findFinal(session) != CKR_OK { return ChildStep.findFinal.rawValue }
        if finalize(nil) != CKR_OK { return ChildStep.finalize.rawValue }
        return 0
    }
}

/// Memory a forked child writes to, allocated before the fork.
private final class ChildScratch {
    let capacity = 64
    let info = UnsafeMutablePointer<CK_INFO>.allocate(capacity: 1)
    let count = UnsafeMutablePointer<CK_ULONG>.allocate(capacity: 1)
    let session = UnsafeMutablePointer<CK_SESSION_HANDLE>.allocate(capacity: 1)
    let objects: UnsafeMutablePointer<CK_OBJECT_HANDLE>

    init() { objects = .allocate(capacity: capacity) }

    deinit {
        info.deallocate()
        count.deallocate()
        session.deallocate()
        objects.deallocate()
    }
}

/// Failure messages collected from several threads.
private final class FailureLog: Sendable {
    private let messages = Mutex<[String]>([])

    func append(_ message: String) { messages.withLock { $0.append(message) } }
    var all: [String] { messages.withLock { $0 } }
}

/// A flag and an error counter shared with a busy thread.
private final class BusyThreadState: Sendable {
    let stop = Atomic<Bool>(false)
    let rounds = Atomic<Int>(0)
    let failures = Atomic<Int>(0)
    let finished = DispatchSemaphore(value: 0)
}

extension ModuleTests {
    @Suite("fork() and threads (v2.40 §6.7.7, ARCHITECTURE.md §8)")
    struct ForkAndThreads {
        @Test(
            "After fork() the child is not initialised until C_Initialize, which then finds the parent's token objects"
        )
        func forkedChild() throws {
            try withToken { token throws in
                let session = try token.openSession()
                _ = try token.createCertificate(try Fixtures.alice.get(), in: session)
                _ = try token.createCertificate(try Fixtures.bob.get(), in: session)
                // A session object of the parent: never visible to another process.
                _ = try token.createCertificate(try Fixtures.carol.get(), token: false, in: session)
                #expect(try token.m.C_FindObjectsInit(session, nil, 0) == CKR_OK)
                let calls = try ChildCalls(token.m)
                let scratch = ChildScratch()
                let outcome = try fork(timeout: 30) { calls.runChild(expectedObjects: 2, scratch: scratch) }
                #expect(outcome == .exited(0), "child \(outcome)")
                // The parent's module, sessions and search are unaffected.
                var found = [CK_OBJECT_HANDLE](repeating: 0, count: 8)
                var count: CK_ULONG = 0
                #expect(try token.m.C_FindObjects(session, &found, 8, &count) == CKR_OK)
                #expect(count == 3)
                #expect(try token.m.C_FindObjectsFinal(session) == CKR_OK)
            }
        }

        @Test("A child forked while another thread is busy in C_FindObjects does not deadlock")
        func forkWhileBusy() throws {
            try withToken { token throws in
                let setup = try token.openSession()
                for certificate in [
                    try Fixtures.alice.get(), try Fixtures.bob.get(), try Fixtures.carol.get(),
                ] {
                    _ = try token.createCertificate(certificate, in: setup)
                }
                let busySession = try token.openSession(readWrite: false)
                let findInit = try token.m.C_FindObjectsInit
                let find = try token.m.C_FindObjects
                let findFinal = try token.m.C_FindObjectsFinal
                let state = BusyThreadState()
                let busy = Thread {
                    var found = [CK_OBJECT_HANDLE](repeating: 0, count: 8)
                    var count: CK_ULONG = 0
                    while !state.stop.load(ordering: .relaxed) {
                        let ok =
                            findInit(busySession, nil, 0) == CKR_OK
                            && find(busySession, &found, 8, &count) == CKR_OK && count == 3
                            && findFinal(busySession) == CKR_OK
                        if !ok { state.failures.add(1, ordering: .relaxed) }
                        state.rounds.add(1, ordering: .relaxed)
                    }
                    state.finished.signal()
                }
                busy.start()
                defer {
                    state.stop.store(true, ordering: .relaxed)
                    state.finished.wait()
                }
                while state.rounds.load(ordering: .relaxed) < 10 { usleep(1_000) }
                let calls = try ChildCalls(token.m)
                let scratch = ChildScratch()
                for round in 1...20 {
                    let outcome = try fork(timeout: 20) {
                        calls.runChild(expectedObjects: 3, scratch: scratch)
                    }
                    #expect(outcome == .exited(0), "fork \(round): child \(outcome)")
                    if outcome != .exited(0) { break }
                }
                state.stop.store(true, ordering: .relaxed)
                #expect(state.failures.load(ordering: .relaxed) == 0)
            }
        }

        @Test(
            "Calls on sessions that other threads close, and across C_Finalize and C_Initialize, answer an error and never crash"
        )
        func callsRacingCloseAndFinalize() throws {
            // The session lookup borrows the module state under the session table's lock;
            // C_CloseSession and C_Finalize change the table and the state under that lock.
            // Run under ASan and TSan in the test command.
            try withToken { token throws in
                let (getInfo, digestInit, digest) = (
                    try token.m.C_GetSessionInfo, try token.m.C_DigestInit, try token.m.C_Digest
                )
                let (findInit, findFinal) = (try token.m.C_FindObjectsInit, try token.m.C_FindObjectsFinal)
                let current = Atomic<UInt>(UInt(try token.openSession()))
                let state = BusyThreadState()
                let failures = FailureLog()
                let expected: Set<CK_RV> = [
                    CKR_OK, CKR_SESSION_HANDLE_INVALID, CKR_CRYPTOKI_NOT_INITIALIZED, CKR_OPERATION_ACTIVE,
                    CKR_OPERATION_NOT_INITIALIZED,
                ]
                // One round of the racing calls on `session`: their answers.
                let callRound: @Sendable (CK_SESSION_HANDLE) -> [CK_RV] = { session in
                    var info = CK_SESSION_INFO()
                    var mechanism = CK_MECHANISM(
                        mechanism: CK_MECHANISM_TYPE(CKM_SHA256), pParameter: nil, ulParameterLen: 0)
                    var data = [CK_BYTE](repeating: 7, count: 32)
                    var output = [CK_BYTE](repeating: 0, count: 32)
                    var length = CK_ULONG(output.count)
                    return [
                        getInfo(session, &info), digestInit(session, &mechanism),
                        digest(session, &data, CK_ULONG(data.count), &output, &length),
                        findInit(session, nil, 0), findFinal(session),
                    ]
                }
                // One round on this thread first: the module's lazily made globals (the
                // mechanism registry) are made before the threads race, as in a host.
                let warm = callRound(CK_SESSION_HANDLE(current.load(ordering: .relaxed)))
                #expect(warm.allSatisfy { $0 == CKR_OK }, "\(warm.map(name(of:)))")
                let workers = 3
                for worker in 0..<workers {
                    Thread {
                        while !state.stop.load(ordering: .relaxed) {
                            let session = CK_SESSION_HANDLE(current.load(ordering: .relaxed))
                            for rv in callRound(session) where !expected.contains(rv) {
                                failures.append("worker \(worker): \(name(of: rv))")
                            }
                            state.rounds.add(1, ordering: .relaxed)
                        }
                        state.finished.signal()
                    }.start()
                }
                defer {
                    state.stop.store(true, ordering: .relaxed)
                    for _ in 0..<workers { state.finished.wait() }
                }
                for round in 1...300 {
                    let next = try token.openSession()
                    let previous = current.exchange(UInt(next), ordering: .relaxed)
                    usleep(100)
                    #expect(try token.m.C_CloseSession(CK_SESSION_HANDLE(previous)) == CKR_OK)
                    if round.isMultiple(of: 25) {
                        #expect(try token.m.C_Finalize(nil) == CKR_OK)
                        usleep(200)
                        #expect(try token.m.C_Initialize(nil) == CKR_OK)
                        current.store(UInt(try token.openSession()), ordering: .relaxed)
                    }
                }
                state.stop.store(true, ordering: .relaxed)
                #expect(state.rounds.load(ordering: .relaxed) > 0)
                #expect(failures.all.isEmpty, "\(Set(failures.all))")
            }
        }

        @Test("Four threads, each with its own session, create 50 certificates each and find them all")
        func threads() throws {
            let threadCount = 4
            let perThread = 50
            let certificates = try TestCertificate.batch(
                count: threadCount * perThread, prefix: "Thread cert ")
            try withToken { token throws in
                let create = try token.m.C_CreateObject
                let findInit = try token.m.C_FindObjectsInit
                let find = try token.m.C_FindObjects
                let findFinal = try token.m.C_FindObjectsFinal
                var sessions: [CK_SESSION_HANDLE] = []
                for _ in 0..<threadCount { sessions.append(try token.openSession()) }
                let failures = FailureLog()
                let group = DispatchGroup()
                for thread in 0..<threadCount {
                    let session = sessions[thread]
                    let mine = Array(certificates[thread * perThread..<(thread + 1) * perThread])
                    group.enter()
                    Thread {
                        defer { group.leave() }
                        for (index, der) in mine.enumerated() {
                            var object: CK_OBJECT_HANDLE = 0
                            let rv = withTemplate(TestToken.certificateTemplate(der)) {
                                create(session, $0, $1, &object)
                            }
                            if rv != CKR_OK {
                                failures.append("thread \(thread) create \(index): \(name(of: rv))")
                            }
                        }
                        for index in 0..<mine.count {
                            let label = "Thread cert \(thread * perThread + index + 1)"
                            var found = [CK_OBJECT_HANDLE](repeating: 0, count: 4)
                            var count: CK_ULONG = 0
                            let rv = withTemplate([Attribute(CKA_LABEL, string: label)]) {
                                findInit(session, $0, $1)
                            }
                            let rv2 = find(session, &found, 4, &count)
                            let rv3 = findFinal(session)
                            if rv != CKR_OK || rv2 != CKR_OK || rv3 != CKR_OK || count != 1 {
                                failures.append(
                                    "thread \(thread) find \(label): \(name(of: rv)) \(name(of: rv2)) count \(count)"
                                )
                            }
                        }
                    }.start()
                }
                #expect(group.wait(timeout: .now() + 120) == .success)
                #expect(failures.all == [])
                let all = try token.find(
                    [Attribute(CKA_CLASS, ulong: CKO_CERTIFICATE)], in: try token.openSession())
                #expect(all.count == threadCount * perThread)
                #expect(Set(all).count == threadCount * perThread)
            }
        }
    }
}
