internal import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// SQLite's "copy the bytes now" destructor, which the C header spells as a cast that Swift
/// does not import.
private let transientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One SQLite connection: the single owner of a `sqlite3*`.
///
/// Not thread-safe by itself: `ObjectStore` serialises access. Statements are prepared once
/// and cached by their SQL text, which is always a constant of this module (`StaticString`).
final class Database {
    private let handle: OpaquePointer
    /// Keyed by the address of the statement's constant text: hashing the text itself (up to
    /// 150 bytes) was about 2 % of a find by label. Two constants of equal text at two
    /// addresses are two statements, which is harmless.
    private var statements: [UnsafeRawPointer: Statement] = [:]
    let path: String
    let isReadOnly: Bool

    /// Opens `path`. Read-write when possible; when the process cannot write the file or its
    /// directory, read-only; and, with `immutable`, as an immutable snapshot (for a read-only
    /// WAL store with no `-shm` file and no right to create one). `path` is a file path, never
    /// a URI: the URI SQLite is given is made here, so that any byte of a path opens the file
    /// it names.
    init(path: String, allowCreate: Bool, immutable: Bool = false, readOnly: Bool = false)
        throws(StorageError)
    {
        self.path = path
        // Not SQLITE_OPEN_NOFOLLOW: it refuses a symbolic link in any directory of the path
        // (a linked ~/.local, say), and SQLite resolves links itself (StoreFile).
        let common = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        let uri = Database.uri(path, immutable: immutable)
        var flags = SQLITE_OPEN_READWRITE | common
        if allowCreate { flags |= SQLITE_OPEN_CREATE }
        if immutable || readOnly
            || (path != ":memory:" && access(path, F_OK) == 0 && !Database.canWrite(path))
        {
            flags = SQLITE_OPEN_READONLY | common
        }
        var db: OpaquePointer?
        var result = sqlite3_open_v2(uri, &db, flags, nil)
        let reason = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
        if result != SQLITE_OK, path != ":memory:", access(path, R_OK) == 0 {
            sqlite3_close_v2(db)
            db = nil
            flags = SQLITE_OPEN_READONLY | common
            // When the read-only retry fails too, the first failure is the one to report:
            // a directory, say, opens read-only and then fails with a misleading I/O error.
            if sqlite3_open_v2(uri, &db, flags, nil) == SQLITE_OK {
                result = SQLITE_OK
            } else {
                sqlite3_close_v2(db)
                db = nil
            }
        }
        guard result == SQLITE_OK, let db else {
            sqlite3_close_v2(db)
            throw StorageError(
                StorageError.code(forSQLite: result), "cannot open store \(path): \(reason)")
        }
        // No SQL stored in the file runs (ARCHITECTURE.md §4.1, §6.1): a trigger or view planted in a store is
        // never fired or read, a function named in its schema runs only if SQLite marks it
        // innocuous, and SQL cannot corrupt the file on purpose (SQLite 3.31+).
        for (option, value) in Database.hardening {
            guard p11k_db_config_flag(db, option, value) == value else {
                sqlite3_close_v2(db)
                throw StorageError(
                    .failed,
                    "cannot open store \(path): SQLite refused to turn off stored SQL (option \(option))")
            }
        }
        handle = db
        isReadOnly = sqlite3_db_readonly(db, "main") == 1
        sqlite3_extended_result_codes(db, 1)
    }

    /// The `sqlite3_db_config` settings every connection opens with: triggers and views off,
    /// schema not trusted, defensive mode on.
    private static let hardening: [(Int32, Int32)] = [
        (SQLITE_DBCONFIG_ENABLE_TRIGGER, 0), (SQLITE_DBCONFIG_ENABLE_VIEW, 0),
        (SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0), (SQLITE_DBCONFIG_DEFENSIVE, 1),
    ]

    deinit {
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    private static func canWrite(_ path: String) -> Bool {
        guard access(path, W_OK) == 0 else { return false }
        // WAL needs the directory too, for the -wal and -shm files.
        let directory = StoreFile.directory(of: path)
        return access(directory.isEmpty ? "." : directory, W_OK) == 0
    }

    /// The `file:` URI of `path` (SQLite's URI filenames, RFC 3986): every byte outside the
    /// unreserved set and "/" is percent-encoded, UTF-8 byte by byte. An absolute path gets an
    /// empty authority (`file:///…`), so a path that starts with "//" is not read as a host.
    static func uri(_ path: String, immutable: Bool = false) -> String {
        if path == ":memory:" { return path }
        var out = path.hasPrefix("/") ? "file://" : "file:"
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                bytes.append(byte)
            default:
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        out += String(decoding: bytes, as: UTF8.self)
        return immutable ? out + "?immutable=1" : out
    }

    func error(_ result: Int32, _ what: String) -> StorageError {
        let reason = String(cString: sqlite3_errmsg(handle))
        return StorageError(StorageError.code(forSQLite: result), "\(what) \(path): \(reason)")
    }

    /// Runs SQL text that takes no parameters (schema, pragmas).
    func execute(_ sql: String) throws(StorageError) {
        let result = sqlite3_exec(handle, sql, nil, nil, nil)
        guard result == SQLITE_OK else { throw error(result, "cannot update") }
    }

    /// The cached prepared statement for `sql`, reset and with its bindings cleared.
    func statement(_ sql: StaticString) throws(StorageError) -> Statement {
        // A one-character constant has no address (`utf8Start` would trap); none is SQL.
        guard sql.hasPointerRepresentation else {
            throw StorageError(.failed, "store \(path): \(sql) is not a statement")
        }
        let key = UnsafeRawPointer(sql.utf8Start)
        if let cached = statements[key] {
            cached.reset()
            return cached
        }
        var raw: OpaquePointer?
        let result = sql.utf8Start.withMemoryRebound(to: CChar.self, capacity: sql.utf8CodeUnitCount) {
            sqlite3_prepare_v3(
                handle, $0, Int32(clamping: sql.utf8CodeUnitCount), UInt32(SQLITE_PREPARE_PERSISTENT), &raw,
                nil)
        }
        guard result == SQLITE_OK, let raw else { throw error(result, "cannot read") }
        let statement = Statement(raw, database: self)
        statements[key] = statement
        return statement
    }

    /// Resets every cached statement. A statement left on a row holds its read snapshot
    /// open even after COMMIT; the next transaction would then not see other processes'
    /// changes. Called at the end of every transaction.
    func resetStatements() {
        for statement in statements.values { statement.finish() }
    }

    /// How long a connection waits for other processes: for every lock (SQLite's busy
    /// handler), and for the steps that SQLite's busy handler does not cover, which
    /// `retryingWhileBusy` repeats for as long. Seconds, not minutes (ARCHITECTURE.md §4.4).
    static let busyTimeoutMilliseconds: Int32 = 5_000

    func setBusyTimeout(milliseconds: Int32 = Database.busyTimeoutMilliseconds) {
        sqlite3_busy_timeout(handle, milliseconds)
    }

    /// Runs `body` again while it fails because another connection holds a lock, for up to
    /// `busyTimeoutMilliseconds`, sleeping 1 to 10 ms (at random, so that processes that
    /// collided do not collide again) between tries.
    ///
    /// SQLite does not call the busy handler when waiting could deadlock: a connection that
    /// holds a read lock and needs a write lock (`PRAGMA journal_mode = WAL` on a new file
    /// reads the header first) gets SQLITE_BUSY at once. Opening a store, which creates,
    /// migrates and switches it to WAL, goes through here, so that any number of processes may
    /// open a fresh store at once.
    func retryingWhileBusy<T>(_ body: () throws(StorageError) -> T) throws(StorageError) -> T {
        let deadline = Database.monotonicMilliseconds() + Int64(Database.busyTimeoutMilliseconds)
        while true {
            do {
                return try body()
            } catch  where error.code == .busy && Database.monotonicMilliseconds() < deadline {
                usleep(UInt32.random(in: 1_000...10_000))
            }
        }
    }

    private static func monotonicMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) &* 1_000 &+ Int64(now.tv_nsec / 1_000_000)
    }

    var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    var changes: Int32 { sqlite3_changes(handle) }
}

/// A prepared statement owned by its `Database`.
final class Statement {
    private let handle: OpaquePointer
    private unowned let database: Database

    init(_ handle: OpaquePointer, database: Database) {
        self.handle = handle
        self.database = database
    }

    deinit { sqlite3_finalize(handle) }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Ends the statement's current run without clearing its bindings.
    func finish() { sqlite3_reset(handle) }

    func bind(_ index: Int32, _ value: Int64) {
        sqlite3_bind_int64(handle, index, value)
    }

    func bind(_ index: Int32, _ value: String) {
        sqlite3_bind_text(handle, index, value, -1, transientDestructor)
    }

    func bind(_ index: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { raw in
            // A zero-length blob must still bind as a blob, not NULL.
            sqlite3_bind_blob(
                handle, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count),
                transientDestructor)
        }
    }

    /// Advances; true while a row is available.
    func step() throws(StorageError) -> Bool {
        let result = sqlite3_step(handle)
        switch result {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let failure = database.error(result, "cannot access")
            sqlite3_reset(handle)
            throw failure
        }
    }

    /// Runs a statement that returns no rows.
    func run() throws(StorageError) {
        while try step() {}
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func bytes(_ column: Int32) -> [UInt8] {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let base = sqlite3_column_blob(handle, column) else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: base, count: count))
    }

    /// `body` of the column's bytes in place, valid only during the call.
    func withBytes<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let base = sqlite3_column_blob(handle, column) else {
            return body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return body(UnsafeRawBufferPointer(start: base, count: count))
    }

    func text(_ column: Int32) -> String {
        guard let base = sqlite3_column_text(handle, column) else { return "" }
        return String(cString: base)
    }
}
