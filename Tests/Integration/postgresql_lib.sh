# What the PostgreSQL integration tests share (sourced by test_postgresql*.sh after lib.sh):
# a throwaway cluster per test (scripts/pg-test-cluster.sh: initdb as nobody, a Unix socket
# in a temporary directory, no TCP), stopped at the end, and two "hosts" configured on it.

TOKEN_LABEL=Fleet
# Distinctive PINs, so that a raw scan can look for them.
SO_PIN=so-pin-Qx7Wm2
USER_PIN=user-pin-Kv83Zt
PG_PASSWORD=never-shown-Zq1

# pg_start [LINE...]: a cluster for this test; sets PG_DIR and PG_CONNINFO, and HOST_A and
# HOST_B, two configuration files naming the same token on it, each LINE added to its section.
pg_start() {
    local out
    out=$(bash "$IT_REPO/scripts/pg-test-cluster.sh" start 2>"$TEST_TMP/pg-start.err") ||
        fail "the test cluster did not start: $(summarize "$(cat "$TEST_TMP/pg-start.err")")"
    PG_DIR=$(sed -n 1p <<<"$out")
    PG_CONNINFO=$(sed -n 2p <<<"$out")
    defer "bash '$IT_REPO/scripts/pg-test-cluster.sh' stop '$PG_DIR'"
    for host in a b; do
        # A password the server (trust) never asks for: no message or listing may show it.
        { printf '[token %s]\nstore = postgresql:%s password=%s\n' "$TOKEN_LABEL" "$PG_CONNINFO" "$PG_PASSWORD" &&
            printf '%s\n' "$@"; } >"$TEST_TMP/host-$host.conf"
    done
    HOST_A=$TEST_TMP/host-a.conf
    HOST_B=$TEST_TMP/host-b.conf
    export P11KEYCHAIN_CONF=$HOST_A
}

cli() { "${P11KEYCHAIN_CLI:-$(dirname "$P11KEYCHAIN_MODULE")/p11keychain}" "$@"; }
