internal import CLibPQ

#if canImport(Glibc)
    import Glibc
#endif

/// One connection to a PostgreSQL server, owned by one store (or by one PIN-attempt lock).
///
/// Opened on first use, not by `init`: a server that is down when the module loads makes the
/// token's calls fail until it is back, not the module's loading (ARCHITECTURE.md §4.5). A
/// connection found broken is dropped and made again by the next call. Every wait is bounded:
/// `connect_timeout`, `statement_timeout`, `lock_timeout` and TCP keepalives come from the
/// token's `timeout-ms` (ServerOptions; a connection string may set its own). A child of
/// `fork()` never uses or ends its parent's connection: it makes its own. The connection string is kept private and never
/// printed: messages name the token and `label` (host, port, database, user; no password).
/// Not thread-safe: the owner serialises calls.
final class PostgresConnection {
    private let conninfo: String
    /// Where the server is, fit for messages.
    let label: String
    /// The statements that set up every new connection (the schema search path).
    private let setup: [(sql: String, parameters: [PostgresValue])]
    private var handle: OpaquePointer?
    /// The last failed attempt to connect: when (monotonic seconds) and why. Within a second
    /// of it, calls fail at once with the same reason, so that one operation's several
    /// statements do not each wait out `connect_timeout` on a server that is down.
    private var lastFailure: (time: Double, error: StorageError)?

    /// The timeouts (ServerOptions.connectionDefaults).
    private let options: ServerOptions
    /// The process that made `handle`: a child of `fork()` must not use or end it.
    private var owner: pid_t = 0
    /// How many connections were made: what a caller kept from an earlier one (its LISTEN,
    /// a change count confirmed on it) does not hold on a later one.
    private(set) var generation = 0
    /// The statements prepared on this connection: their parameter types and text, to their
    /// names. A new connection has none.
    private var statements: [String: String] = [:]

    init(
        conninfo: String, label: String, options: ServerOptions,
        setup: [(sql: String, parameters: [PostgresValue])] = []
    ) {
        self.conninfo = conninfo
        self.label = label
        self.options = options
        self.setup = setup
    }

    deinit { close() }

    /// Drops the connection (the server then lets go of its session's locks). In a child of
    /// `fork()` the connection is the parent's: the child closes its copy of the socket and
    /// forgets the rest, sending nothing (PQfinish would end the parent's session, and with
    /// TLS, its TLS state), and the child's next call connects anew.
    func close() {
        if let handle, let pq = Self.library {
            if owner == getpid() {
                pq.finish(handle)
            } else {
                // The parent's PGconn is left allocated: freeing it takes PQfinish.
                let socket = pq.socket(handle)
                if socket >= 0 { Glibc.close(socket) }
            }
        }
        handle = nil
        statements = [:]
    }

    /// Lets go of this session's advisory locks, then drops the connection. The server would
    /// drop them anyway when the connection ends, but only once its backend has exited, a
    /// moment later: another host could still see an attempt lock held that was let go.
    func closeReleasingLocks() {
        if let handle, let pq = Self.library, owner == getpid(), pq.status(handle) == CONNECTION_OK {
            // try?: the connection is dropped next, and the server lets go of them then.
            _ = try? execute("SELECT pg_advisory_unlock_all()")
        }
        close()
    }

    /// libpq, once a store has loaded it (LibPQ.swift); nil before, or when it cannot be.
    private static var library: LibPQ? { try? LibPQ.loaded.get() }

    /// The host, port, database and user of `conninfo`, for messages; nil when it does not
    /// parse. libpq's own parse error is not repeated: it may quote the string.
    static func label(of conninfo: String) -> String? {
        guard let pq = library else { return "postgresql:(libpq is not loaded)" }
        guard let options = pq.conninfoParse(conninfo, nil) else { return nil }
        defer { pq.conninfoFree(options) }
        var parts: [String] = []
        var option = options
        while let keyword = option.pointee.keyword {
            let name = String(cString: keyword)
            if ["host", "hostaddr", "port", "dbname", "user"].contains(name), let value = option.pointee.val {
                parts.append("\(name)=\(String(cString: value))")
            }
            option += 1
        }
        return "postgresql:" + parts.joined(separator: " ")
    }

    /// The connection, made (again) when there is none or the last one broke.
    private func connected() throws(StorageError) -> OpaquePointer {
        let pq = try LibPQ.functions()
        if let handle, owner == getpid(), pq.status(handle) == CONNECTION_OK { return handle }
        close()
        if let lastFailure, Self.now() - lastFailure.time < 1 { throw lastFailure.error }
        let defaults = options.connectionDefaults
        let keywords = defaults.map(\.0) + ["dbname"]
        let values = defaults.map(\.1) + [conninfo]
        let made: OpaquePointer? = withCStrings(keywords) { keywordPointers in
            withCStrings(values) { valuePointers in pq.connectdbParams(keywordPointers, valuePointers, 1) }
        }
        guard let made else { throw StorageError(.failed, "\(label): out of memory") }
        guard pq.status(made) == CONNECTION_OK else {
            let reason = Self.message(pq.errorMessage(made))
            pq.finish(made)
            let error = StorageError(.failed, "\(label): the server is unreachable: \(reason)")
            lastFailure = (Self.now(), error)
            throw error
        }
        lastFailure = nil
        handle = made
        owner = getpid()
        generation += 1
        for step in setup { _ = try run(step.sql, step.parameters, on: made) }
        return made
    }

    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// True while a connection is open (it may still turn out broken at its next use).
    var isOpen: Bool { handle != nil }

    /// Whether another session may have sent this one a notification since the last call:
    /// looks at the socket without waiting and without a round trip (a `poll`, and a `recv`
    /// through PQconsumeInput when something came), and takes every notification libpq holds,
    /// those that came during earlier statements too. Notifications this session sent itself
    /// do not count. True also when the server ended the session or nothing of this process
    /// is there to read (its next statement connects, and what was confirmed on the old
    /// connection does not hold).
    func takeNotifications() -> Bool {
        guard let handle, let pq = Self.library, owner == getpid(), pq.status(handle) == CONNECTION_OK else {
            return true
        }
        var entry = pollfd(fd: pq.socket(handle), events: Int16(POLLIN) | p11k_poll_peer_closed, revents: 0)
        guard entry.fd >= 0, poll(&entry, 1, 0) >= 0,
            entry.revents & (p11k_poll_peer_closed | Int16(POLLHUP) | Int16(POLLERR) | Int16(POLLNVAL)) == 0
        else { return true }
        if entry.revents & Int16(POLLIN) != 0 {
            guard pq.consumeInput(handle) == 1, pq.status(handle) == CONNECTION_OK else { return true }
        }
        let own = pq.backendPID(handle)
        var foreign = false
        while let notification = pq.notifies(handle) {
            if notification.pointee.be_pid != own { foreign = true }
            pq.freemem(notification)
        }
        return foreign
    }

    /// True inside a transaction block the server knows of.
    var isInTransaction: Bool {
        guard let handle, let pq = Self.library else { return false }
        return pq.transactionStatus(handle) != PQTRANS_IDLE
    }

    /// Runs one statement (several, separated by `;`, when `parameters` is empty and
    /// `script` is true) and returns its rows.
    @discardableResult
    func execute(_ sql: String, _ parameters: [PostgresValue] = [], script: Bool = false) throws(StorageError)
        -> PostgresRows
    {
        let handle = try connected()
        if script {
            let pq = try LibPQ.functions()
            return try check(awaitResult(on: handle) { pq.sendQuery(handle, sql) }, on: handle)
        }
        return try run(sql, parameters, on: handle)
    }

    private func run(_ sql: String, _ parameters: [PostgresValue], on handle: OpaquePointer)
        throws(StorageError)
        -> PostgresRows
    {
        let statement = try bind(sql, parameters, on: handle)
        let pq = try LibPQ.functions()
        return try check(awaitResult(on: handle) { statement.send(pq, handle) }, on: handle)
    }

    /// Runs `steps` one after the other in one round trip (libpq's pipeline mode; one round
    /// trip each with a libpq older than 14) and returns the last one's rows. The first step
    /// that fails is the error; the server skips the steps after it.
    func executeInOneTrip(_ steps: [(sql: String, parameters: [PostgresValue])]) throws(StorageError)
        -> PostgresRows
    {
        let handle = try connected()
        let pq = try LibPQ.functions()
        var statements: [BoundStatement] = []
        for step in steps { statements.append(try bind(step.sql, step.parameters, on: handle)) }
        guard let pipeline = pq.pipeline, !statements.isEmpty, pipeline.enter(handle) == 1 else {
            var rows: PostgresRows?
            for statement in statements {
                rows = try check(awaitResult(on: handle) { statement.send(pq, handle) }, on: handle)
            }
            guard let rows else { throw StorageError(.failed, "\(label): no statement to run") }
            return rows
        }
        guard statements.allSatisfy({ $0.send(pq, handle) == 1 }), pipeline.sync(handle) == 1 else {
            let reason = Self.message(pq.errorMessage(handle))
            close()
            throw StorageError(.failed, "\(label): \(reason)")
        }
        let deadline = self.deadline()
        var results: [OpaquePointer?] = []
        defer { results.forEach { $0.map(pq.clear) } }
        // Each statement's results end with a null; the sync point's result follows the last.
        for _ in statements { results.append(try collect(on: handle, until: deadline)) }
        let sync = try collect(on: handle, until: deadline, stoppingAtSync: true)
        let synced = sync.map { pq.resultStatus($0) == PGRES_PIPELINE_SYNC } ?? false
        sync.map(pq.clear)
        guard synced, pipeline.exit(handle) == 1 else {
            close()
            throw StorageError(.failed, "\(label): the server's answers were out of order")
        }
        // The first failure in order; its successors were skipped (PGRES_PIPELINE_ABORTED).
        var last: PostgresRows?
        for index in results.indices {
            let result = results[index]
            results[index] = nil
            last = try check(result, on: handle)
        }
        guard let last else { throw StorageError(.failed, "\(label): no statement to run") }
        return last
    }

    /// A statement with its values in libpq's binary format, ready to send.
    private struct BoundStatement {
        var sql: String
        /// Its name on the connection, or nil to send it whole.
        var name: String?
        var buffer: [UInt8]
        var ranges: [Range<Int>?]
        var types: [Oid]

        /// PQsendQueryPrepared (or PQsendQueryParams): 1 once sent. libpq copies the values
        /// into its output buffer before it returns.
        func send(_ pq: LibPQ, _ handle: OpaquePointer) -> Int32 {
            let count = Int32(ranges.count)
            let lengths = ranges.map { Int32($0?.count ?? 0) }
            let formats = [Int32](repeating: 1, count: ranges.count)
            return buffer.withUnsafeBufferPointer { raw in
                let base = UnsafeRawPointer(raw.baseAddress)?.assumingMemoryBound(to: CChar.self)
                let values: [UnsafePointer<CChar>?] = ranges.map { range in
                    guard let range, let base else { return nil }
                    return base + range.lowerBound
                }
                guard let name else {
                    return pq.sendQueryParams(handle, sql, count, types, values, lengths, formats, 1)
                }
                return pq.sendQueryPrepared(handle, name, count, values, lengths, formats, 1)
            }
        }
    }

    /// `sql` with `parameters` encoded, prepared on the connection at its first use.
    private func bind(_ sql: String, _ parameters: [PostgresValue], on handle: OpaquePointer)
        throws(StorageError) -> BoundStatement
    {
        var buffer: [UInt8] = []
        var ranges: [Range<Int>?] = []
        for parameter in parameters {
            if case .null = parameter {
                ranges.append(nil)
                continue
            }
            let start = buffer.count
            guard parameter.encode(into: &buffer) else {
                throw StorageError(.failed, "\(label): a statement's value is too large")
            }
            ranges.append(start..<buffer.count)
        }
        guard buffer.count < Int(Int32.max) else {
            throw StorageError(.failed, "\(label): a statement's values are too large")
        }
        buffer.append(0)  // a valid base pointer for empty values
        let types = parameters.map(\.type)
        return BoundStatement(
            sql: sql, name: try prepared(sql, types, on: handle), buffer: buffer, ranges: ranges, types: types
        )
    }

    /// The name of `sql` (with parameters of `types`) prepared on this connection: prepared at
    /// its first use (one more round trip, once), so that later uses skip the server's parse
    /// and plan, most of a short statement's time (a find by label: 117 µs as a new statement,
    /// 21 µs prepared, on a server whose round trip is 15 µs). nil past `preparedLimit`
    /// statements: the statement is then sent whole. Statements are constant text, so the
    /// limit is never reached in practice; it only bounds the server's memory if one were not.
    private func prepared(_ sql: String, _ types: [Oid], on handle: OpaquePointer) throws(StorageError)
        -> String?
    {
        let key = types.map { String($0) }.joined(separator: ",") + ";" + sql
        if let name = statements[key] { return name }
        guard statements.count < Self.preparedLimit else { return nil }
        let pq = try LibPQ.functions()
        let name = "p11keychain_\(statements.count + 1)"
        let result = try awaitResult(on: handle) {
            pq.sendPrepare(handle, name, sql, Int32(types.count), types)
        }
        _ = try check(result, on: handle)
        statements[key] = name
        return name
    }

    /// At most this many statements are kept prepared per connection.
    private static let preparedLimit = 256

    /// Sends a statement with `send` (1 once sent) and waits for its result until `deadline()`.
    /// Returns the last result, an error in preference (as PQexec does); nil when the
    /// statement could not be sent (the connection's error says why).
    private func awaitResult(on handle: OpaquePointer, _ send: () -> Int32) throws(StorageError)
        -> OpaquePointer?
    {
        guard send() == 1 else { return nil }
        return try collect(on: handle, until: deadline())
    }

    /// When a statement sent now must have been answered: after `timeout-ms` and a grace.
    /// `statement_timeout` is the server's to enforce, and a server that is frozen (stopped,
    /// swapped out, a hung host whose kernel still acknowledges TCP) never does: past the
    /// deadline the connection is dropped and the call fails. The grace is half the timeout,
    /// at most a second, so that a server that is alive reports its clearer error (a lock or
    /// statement timeout) first.
    private func deadline() -> (time: Double, milliseconds: Int) {
        let waiting = options.timeoutMilliseconds + min(1000, options.timeoutMilliseconds / 2)
        return (Self.now() + Double(waiting) / 1000, waiting)
    }

    /// The results of one statement, up to the null that ends them (or, `stoppingAtSync`, the
    /// pipeline's sync point): the last, an error in preference.
    private func collect(
        on handle: OpaquePointer, until deadline: (time: Double, milliseconds: Int),
        stoppingAtSync: Bool = false
    ) throws(StorageError) -> OpaquePointer? {
        let pq = try LibPQ.functions()
        var kept: OpaquePointer?
        while true {
            while pq.isBusy(handle) != 0 {
                let remaining = min(max(deadline.time - Self.now(), 0), 600)
                var entry = pollfd(fd: pq.socket(handle), events: Int16(POLLIN), revents: 0)
                let ready = remaining > 0 ? poll(&entry, 1, Int32((remaining * 1000).rounded(.up))) : 0
                if ready < 0, errno == EINTR { continue }
                if ready == 0 {
                    if let kept { pq.clear(kept) }
                    close()
                    throw StorageError(
                        .failed,
                        "\(label): the server did not answer within \(deadline.milliseconds) ms")
                }
                // A broken connection: PQgetResult reports it without waiting.
                if ready < 0 || pq.consumeInput(handle) == 0 { break }
            }
            guard let next = pq.getResult(handle) else { break }
            if let kept, pq.resultStatus(kept) == PGRES_FATAL_ERROR {
                pq.clear(next)
            } else {
                if let kept { pq.clear(kept) }
                kept = next
            }
            if stoppingAtSync, let kept, pq.resultStatus(kept) == PGRES_PIPELINE_SYNC { break }
        }
        return kept
    }

    private func check(_ result: OpaquePointer?, on handle: OpaquePointer) throws(StorageError)
        -> PostgresRows
    {
        let pq = try LibPQ.functions()
        guard let result else {
            let reason = Self.message(pq.errorMessage(handle))
            if pq.status(handle) != CONNECTION_OK { close() }
            throw StorageError(.failed, "\(label): \(reason)")
        }
        let status = pq.resultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK { return PostgresRows(result, pq) }
        let state = pq.resultErrorField(result, p11k_pg_diag_sqlstate).map { String(cString: $0) } ?? ""
        let reason = Self.message(pq.resultErrorMessage(result))
        pq.clear(result)
        if pq.status(handle) != CONNECTION_OK {
            close()
            throw StorageError(.failed, "\(label): the connection to the server was lost: \(reason)")
        }
        if state == "25006" {
            // The server's own words name the statement, not why: say it is a standby.
            throw StorageError(
                .readOnly,
                "\(label): the server is read-only, a standby (SQLSTATE 25006): name the primary, or every host "
                    + "with target_session_attrs=read-write: \(reason)")
        }
        throw StorageError(Self.code(forSQLState: state), "\(label): \(reason)")
    }

    /// The one table from SQLSTATE classes to storage error codes.
    static func code(forSQLState state: String) -> StorageError.Code {
        switch state {
        case "23505": .constraint  // unique_violation
        case "25006": .readOnly  // read_only_sql_transaction (a standby)
        case "53100": .full  // disk_full
        // Statement or lock timeouts, conflicts.
        case "57014", "55P03", "40001", "40P01": .busy
        // Credentials, privileges, a missing object.
        case _ where state.hasPrefix("28"), _ where state.hasPrefix("42"): .cannotOpen
        // Connection failures (08), a shutdown (57P), anything else.
        default: .failed
        }
    }

    private static func message(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "unknown error" }
        return String(cString: text).split(whereSeparator: \.isNewline).joined(separator: "; ")
    }
}

/// Rows of one statement's result, in binary format. Owns the PGresult.
final class PostgresRows {
    private let result: OpaquePointer
    private let pq: LibPQ

    init(_ result: OpaquePointer, _ pq: LibPQ) {
        self.result = result
        self.pq = pq
    }

    deinit { pq.clear(result) }

    var count: Int { Int(pq.ntuples(result)) }

    /// The number of rows the statement changed (UPDATE, DELETE, INSERT).
    var changed: Int { pq.cmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0 }

    func isNull(_ row: Int, _ column: Int32) -> Bool { pq.getisnull(result, Int32(row), column) != 0 }

    func bytes(_ row: Int, _ column: Int32) -> [UInt8] {
        let length = Int(pq.getlength(result, Int32(row), column))
        guard length > 0, let value = pq.getvalue(result, Int32(row), column) else { return [] }
        return Array(UnsafeRawBufferPointer(start: value, count: length))
    }

    /// An int8 (or int4) column; nil when it holds something else.
    func int64(_ row: Int, _ column: Int32) -> Int64? {
        let value = bytes(row, column)
        switch value.count {
        case 8: return value.reduce(Int64(0)) { $0 << 8 | Int64($1) }
        case 4: return Int64(value.reduce(Int32(0)) { $0 << 8 | Int32($1) })
        default: return nil
        }
    }

    func bool(_ row: Int, _ column: Int32) -> Bool { bytes(row, column) == [1] }

    func text(_ row: Int, _ column: Int32) -> String { String(decoding: bytes(row, column), as: UTF8.self) }
}

/// `body` of NUL-terminated copies of `strings`, followed by a null pointer.
private func withCStrings<T>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    return body(copies.map { UnsafePointer($0) } + [nil])
}
