import Foundation
import KeychainStorage
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A server host that is dead over TCP: its port takes the connection (the kernel completes
/// the handshake into the listen queue) and nothing ever answers, as a hung host or a proxy
/// in front of a dead one does. Every wait is bounded by `timeout-ms` (ARCHITECTURE.md §4.5).
@Suite("The PostgreSQL engine with a dead host over TCP")
struct PostgresDeadHostTests {
    @Test(
        "a host that takes the connection and never answers fails the call within timeout-ms and a second, and the other stores work"
    )
    func silentHostIsBounded() throws {
        let listener = try SilentListener()
        defer { listener.close() }
        let start = Date()
        let store = try ObjectStore.open(
            "postgresql:host=127.0.0.1 port=\(listener.port) user=p11keychain dbname=postgres", token: "dead",
            create: false, server: ServerOptions(timeoutMilliseconds: 2000))
        // Opening tries once (and fails quietly); the next call within a second is refused at
        // once with that reason, a later one tries again.
        #expect(Date().timeIntervalSince(start) < 3, "opening waited \(Date().timeIntervalSince(start)) s")
        for _ in 0..<2 {
            usleep(1_100_000)
            let call = Date()
            expectStorageError(.failed, containing: "unreachable") { _ = try store.find([]) }
            let waited = Date().timeIntervalSince(call)
            #expect(waited < 3, "waited \(waited) s with timeout-ms = 2000")
            #expect(waited > 1.5, "the wait was the connection's timeout (\(waited) s), not a refusal")
        }
        try withTemporaryStore(on: .postgresql) { working, _ in
            let id = try working.insert(uniqueKey: nil, attributes: [StoredAttribute(3, bytes("alive"))])
            #expect(try working.find([StoredAttribute(3, bytes("alive"))]) == [id])
        }
    }
}

/// A TCP port on 127.0.0.1 that is listened on and never accepted from.
private struct SilentListener {
    let descriptor: Int32
    let port: UInt16

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && listen(descriptor, 16) == 0
                    && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(descriptor)
            throw TestFailure("bind/listen on 127.0.0.1: errno \(errno)")
        }
        self.descriptor = descriptor
        port = UInt16(bigEndian: address.sin_port)
    }

    func close() { Glibc.close(descriptor) }
}
