import Glibc
import Testing

@testable import LocalAuthentication

@Suite("The Assuan reader leaves nothing of a line it has read")
struct PinentryLineReaderTests {
    @Test("lines come back in order, and the bytes each leaves are wiped from the reader's buffer")
    func readLinesAreWiped() throws {
        var ends: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        let answer = Array("D 4321%25pin\nOK\n# tail".utf8)
        #expect(answer.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) } == answer.count)
        shutdown(ends[1], Int32(SHUT_WR))
        let reader = LineReader(ends[0])
        #expect(reader.next() == Array("D 4321%25pin".utf8))
        #expect(reader.consumedBytesAreWiped)
        #expect(reader.next() == Array("OK".utf8))
        #expect(reader.consumedBytesAreWiped)
        #expect(reader.next() == nil)
    }

    @Test("a line longer than the buffer ends the conversation instead of growing it")
    func overlongLineEnds() throws {
        var ends: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        defer {
            close(ends[0])
            close(ends[1])
        }
        let long = [UInt8](repeating: UInt8(ascii: "x"), count: 3000)
        #expect(long.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) } == long.count)
        shutdown(ends[1], Int32(SHUT_WR))
        #expect(LineReader(ends[0]).next() == nil)
    }
}
