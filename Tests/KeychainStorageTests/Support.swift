import Foundation
import KeychainStorage
@_exported import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A new store in its own temporary directory.
func withTemporaryStore<T>(_ body: (ObjectStore, TemporaryDirectory) throws -> T) throws -> T {
    try withTemporaryDirectory { directory in
        let store = try ObjectStore(path: directory.file("store.sqlite3"), create: true)
        return try body(store, directory)
    }
}

/// Expects `body` to throw a `StorageError` with `code` whose message contains `text`.
func expectStorageError(
    _ code: StorageError.Code, containing text: String = "",
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("expected StorageError \(code), got success", sourceLocation: sourceLocation)
    } catch let error as StorageError {
        #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
        // (Foundation's `contains("")` is false: an empty `text` checks nothing.)
        #expect(
            text.isEmpty || error.message.contains(text), "message: \(error.message)",
            sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected StorageError \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

/// Runs a tool found on `PATH` and returns its standard output. A missing tool or a non-zero
/// exit fails the test: these tests must not pass by not running.
@discardableResult
func run(_ tool: String, _ arguments: [String]) throws -> String {
    let result = try runProgram(tool, arguments)
    guard result.status == 0 else {
        throw TestFailure("\(tool) \(arguments.joined(separator: " ")) failed: " + result.error)
    }
    return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Runs SQL on a store file through the sqlite3 command-line shell: a connection the store
/// does not own, as another process's would be.
@discardableResult
func sqlite(_ path: String, _ sql: String) throws -> String {
    try run("sqlite3", [path, sql])
}

/// Takes away this process's right to write `paths` (files and directories) for the length
/// of `body`. Root ignores permission bits, so as root the files are made immutable
/// (`chattr +i`, which binds root too); otherwise their write bits are cleared.
func withWriteProtected<T>(_ paths: [String], _ body: () throws -> T) throws -> T {
    let saved = try paths.map { path -> mode_t in
        var status = stat()
        guard stat(path, &status) == 0 else { throw TestFailure("cannot stat \(path)") }
        return status.st_mode & 0o7777
    }
    if getuid() == 0 {
        try run("chattr", ["+i"] + paths)
    } else {
        for (path, mode) in zip(paths, saved) { chmod(path, mode & ~0o222) }
    }
    defer {
        if getuid() == 0 { _ = try? run("chattr", ["-i"] + paths) }
        for (path, mode) in zip(paths, saved) { chmod(path, mode) }
    }
    guard paths.allSatisfy({ access($0, W_OK) != 0 }) else {
        throw TestFailure("\(paths) are still writable: cannot test a read-only store here")
    }
    return try body()
}

/// The files of a store (the database, its -wal and -shm) and their contents, to show that
/// nothing was touched.
func snapshot(of directory: TemporaryDirectory) throws -> [String: Data] {
    var files: [String: Data] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
        files[name] = try Data(contentsOf: URL(fileURLWithPath: directory.file(name)))
    }
    return files
}

/// The UTF-8 bytes of `text`: attribute values in these tests are mostly labels.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
