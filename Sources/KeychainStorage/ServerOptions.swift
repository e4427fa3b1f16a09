/// What a token's configuration tells a database server's engine (ARCHITECTURE.md §4.5): how
/// long a host may rely on what it holds, and how long any wait for the server may last. The
/// SQLite engine needs neither: its change counter is read from shared memory on every call,
/// and its waits are its own busy timeout (§4.1). KeychainCore's `Configuration` checks the
/// values (`freshness-ms`, `timeout-ms`); this only carries them.
public struct ServerOptions: Sendable, Equatable {
    /// How long, in milliseconds, the change count last confirmed with the server may be
    /// relied on without asking again; 0 asks on every read of the count. A write by any host
    /// is also announced (LISTEN/NOTIFY), which ends the wait at once when it arrives.
    public var freshnessMilliseconds: Int
    /// How long, in milliseconds, any wait for the server may last: connecting (in whole
    /// seconds, at least libpq's 2), a statement, a lock, a connection that went silent.
    public var timeoutMilliseconds: Int

    /// Checks the count on every call and waits at most 10 s: what a store opened without a
    /// token's configuration (tests, tools) gets.
    public init(freshnessMilliseconds: Int = 0, timeoutMilliseconds: Int = 10_000) {
        self.freshnessMilliseconds = max(0, freshnessMilliseconds)
        self.timeoutMilliseconds = max(1, timeoutMilliseconds)
    }

    /// libpq's settings for the timeout, given before the connection string so that it may
    /// override each (the last value of a keyword wins). Keepalives: silent for half the
    /// timeout, then three probes over the other half.
    var connectionDefaults: [(String, String)] {
        let milliseconds = timeoutMilliseconds
        let seconds = max(1, milliseconds / 1000 + (milliseconds % 1000 == 0 ? 0 : 1))
        return [
            ("connect_timeout", String(seconds)),
            (
                "options",
                "-c statement_timeout=\(milliseconds) -c lock_timeout=\(milliseconds)"
                    + " -c idle_in_transaction_session_timeout=\(max(60_000, milliseconds))"
            ),
            ("keepalives_idle", String(max(1, seconds / 2))),
            ("keepalives_interval", String(max(1, seconds / 6))),
            ("keepalives_count", "3"),
            ("tcp_user_timeout", String(milliseconds)),
            ("application_name", "p11keychain"),
        ]
    }
}
