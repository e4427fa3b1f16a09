import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What every test target shares (one copy instead of one per target): temporary
/// directories, the failure of the test machinery itself, and named test inputs.

/// A failure of the test machinery itself (not of the code under test).
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A fresh directory under the system's temporary directory, removed by `remove()`.
public struct TemporaryDirectory: Sendable {
    public let path: String

    public init() throws {
        var template = Array((NSTemporaryDirectory() + "/p11keychain-test-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp failed: errno \(errno)") }
        path = String(cString: made)
    }

    /// A path inside the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    public func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// Runs `body` with a fresh temporary directory, removed afterwards whatever happens.
public func withTemporaryDirectory<T>(_ body: (TemporaryDirectory) throws -> T) throws -> T {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    return try body(directory)
}

/// A named test input: Swift Testing shows the name, not the value (which may be large).
public struct Named<Value: Sendable>: Sendable, CustomTestStringConvertible {
    public let name: String
    public let value: Value

    public init(_ name: String, _ value: Value) {
        self.name = name
        self.value = value
    }

    public var testDescription: String { name }
}
