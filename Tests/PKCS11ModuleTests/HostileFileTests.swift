import CPKCS11
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

extension ModuleTests {
    /// Files are never trusted: whatever is where the store or the
    /// configuration should be, the host gets a CK_RV at once and a trace that says why.
    @Suite("Store and configuration files that are not what they should be")
    struct HostileFiles {
        /// In a forked child, which is killed after 5 s (a host that blocks fails the test
        /// instead of hanging the run): C_Initialize, then C_OpenSession when it succeeded.
        /// The child exits with the CK_RV of the last call, and the time it took is returned.
        private func callInChild(_ token: TestToken) throws -> (ChildOutcome, Double) {
            let initialize = try token.m.C_Initialize
            let openSession = try token.m.C_OpenSession
            let finalize = try token.m.C_Finalize
            let start = DispatchTime.now().uptimeNanoseconds
            let outcome = try fork(timeout: 5) {
                let rv = initialize(nil)
                guard rv == CKR_OK else { return Int32(truncatingIfNeeded: rv) }
                var session: CK_SESSION_HANDLE = 0
                let opened = openSession(0, readWriteSession, nil, nil, &session)
                _ = finalize(nil)
                return Int32(truncatingIfNeeded: opened)
            }
            return (outcome, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }

        /// C_OpenSession's CK_RV and the trace of C_Initialize and C_OpenSession.
        private func openSessionTraced(_ token: TestToken) throws -> (CK_RV, String) {
            setenv("P11KEYCHAIN_DEBUG", "1", 1)
            defer { unsetenv("P11KEYCHAIN_DEBUG") }
            return try capturingStandardError { () throws -> CK_RV in
                try #require(try token.m.C_Initialize(nil) == CKR_OK)
                var session: CK_SESSION_HANDLE = 0
                let rv = try token.m.C_OpenSession(0, readWriteSession, nil, nil, &session)
                _ = try token.m.C_Finalize(nil)
                return rv
            }
        }

        @Test("A FIFO as the store: C_OpenSession returns CKR_TOKEN_NOT_PRESENT within a second and says why")
        func fifoStore() throws {
            try withStore { token throws in
                #expect(mkfifo(token.storePath, 0o600) == 0)
                let (outcome, elapsed) = try callInChild(token)
                #expect(outcome == .exited(Int32(CKR_TOKEN_NOT_PRESENT)), "\(outcome)")
                #expect(elapsed < 1)
                let (rv, trace) = try openSessionTraced(token)
                #expect(rv == CKR_TOKEN_NOT_PRESENT)
                #expect(trace.contains("C_OpenSession -> CKR_TOKEN_NOT_PRESENT"), "\(trace)")
                #expect(trace.contains("\(token.storePath) is a FIFO, not a regular file"), "\(trace)")
            }
        }

        @Test(
            "A FIFO, a device or a directory as the configuration: C_Initialize fails within a second naming it",
            arguments: ["fifo", "/dev/zero", "/"])
        func unreadableConfiguration(_ kind: String) throws {
            try withStore { token throws in
                var path = kind
                if kind == "fifo" {
                    path = token.directory + "/p11keychain.conf"
                    #expect(mkfifo(path, 0o600) == 0)
                }
                setenv("P11KEYCHAIN_CONF", path, 1)
                let (outcome, elapsed) = try callInChild(token)
                #expect(outcome == .exited(Int32(CKR_GENERAL_ERROR)), "\(outcome)")
                #expect(elapsed < 1)
                let (rv, output) = try capturingStandardError { try token.m.C_Initialize(nil) }
                #expect(rv == CKR_GENERAL_ERROR)
                #expect(output.contains("\(path): is a"), "\(output)")
                #expect(output.contains("not a regular file"), "\(output)")
            }
        }

        @Test(
            "A damaged store is CKR_DEVICE_ERROR with a trace naming the file, and is never overwritten",
            arguments: [
                Array("x".utf8), Array(repeating: 0, count: 100),
                (0..<8192).map { _ in UInt8.random(in: 0...255) },
            ])
        func damagedStore(_ contents: [UInt8]) throws {
            try withStore { token throws in
                #expect(FileManager.default.createFile(atPath: token.storePath, contents: Data(contents)))
                let (rv, trace) = try openSessionTraced(token)
                #expect(rv == CKR_DEVICE_ERROR, "\(name(of: rv))")
                #expect(trace.contains("C_OpenSession -> CKR_DEVICE_ERROR"), "\(trace)")
                #expect(trace.contains("store \(token.storePath) is"), "\(trace)")
                #expect(readFile(token.storePath) == contents, "the file is left as it was")
            }
        }

        @Test("A store under a non-ASCII path is created, found again and named exactly as configured")
        func nonASCIIStorePath() throws {
            try withStore { token throws in
                let directory = token.directory + "/josé"
                setenv("P11KEYCHAIN_DIR", directory, 1)
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
                let alice = try Fixtures.alice.get()
                let object = try token.createCertificate(alice, in: try token.openSession())
                #expect(try token.m.C_Finalize(nil) == CKR_OK)
                #expect(try token.m.C_Initialize(nil) == CKR_OK)
                let found = try token.find(
                    [Attribute(CKA_LABEL, string: "Alice")], in: try token.openSession())
                #expect(found == [object])
                #expect(access(directory + "/login.sqlite3", F_OK) == 0)
                let names = try FileManager.default.contentsOfDirectory(atPath: token.directory)
                #expect(names == ["josé"], "no directory under another spelling: \(names)")
            }
        }

        @Test(
            "A change counter cut short by another process while the module uses it: no SIGBUS, writes go on")
        func truncatedCounter() throws {
            try withToken { token throws in
                let session = try token.openSession()
                let alice = try token.createCertificate(try Fixtures.alice.get(), in: session)
                for size in [0, 3] {
                    #expect(truncate(token.storePath + "-changes", off_t(size)) == 0)
                    // The mapped counter of the first releases raised SIGBUS in the next write.
                    let bob = try token.createCertificate(try Fixtures.bob.get(), in: session)
                    #expect(try token.find([], in: session).sorted() == [alice, bob].sorted())
                    #expect(try token.m.C_DestroyObject(session, bob) == CKR_OK)
                }
            }
        }
    }
}
