import Foundation
import Testing

@testable import KeychainStorage

/// A process that only writes (an import) reads the change counter from its mapping too:
/// before, only a reader's look at the file mapped it, and every write transaction of a
/// writing-only process read the counter twice with `pread`.
@Suite("A change counter mapped by a process that only writes")
struct WriterMappedCounterTests {
    @Test("writes alone map the counter, and other connections see each write's count")
    func writesMapTheCounter() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory.file("store.sqlite3")
            let writer = try SQLiteStore(path: path, create: true)
            let reader = try SQLiteStore(path: path, create: false)
            var seen: Set<UInt64> = []
            for index in 0..<3 {
                _ = try writer.insert(
                    uniqueKey: nil, attributes: [StoredAttribute(3, Array("w\(index)".utf8))])
                #expect(writer.changes.isMapped, "mapped by write \(index + 1), no read of the count asked")
                let count = try #require(reader.changeCount)
                #expect(seen.insert(count).inserted, "each write moves the count")
            }
            #expect(writer.changeCount == reader.changeCount)
        }
    }
}
