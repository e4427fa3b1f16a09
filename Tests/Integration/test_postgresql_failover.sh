# Failover of a PostgreSQL token (docs/fleet.md, ARCHITECTURE.md §4.5): a primary and a
# synchronous streaming standby (scripts/pg-test-cluster.sh standby), the module configured
# with both hosts and target_session_attrs=read-write. One process writes all along; the
# primary is killed (SIGKILL) under it: its calls fail with CKR_DEVICE_ERROR, each within the
# token's timeout-ms, with the reason in the trace; the standby is promoted, and the same
# process's next writes succeed. Every write it had acknowledged is then found.
# run.sh: alone: it bounds how long a call waits for a server that went away, to 1.5 s.

source "$IT_DIR/postgresql_lib.sh"

# standby_start: a synchronous standby of $PG_DIR; sets STANDBY_DIR and STANDBY_CONNINFO.
standby_start() {
    local out
    out=$(bash "$IT_REPO/scripts/pg-test-cluster.sh" standby "$PG_DIR" 2>"$TEST_TMP/standby.err") ||
        fail "the standby did not start: $(summarize "$(cat "$TEST_TMP/standby.err")")"
    STANDBY_DIR=$(sed -n 1p <<<"$out")
    STANDBY_CONNINFO=$(sed -n 2p <<<"$out")
    defer "bash '$IT_REPO/scripts/pg-test-cluster.sh' stop '$STANDBY_DIR'"
}

test_killing_the_primary_and_promoting_the_standby_loses_no_acknowledged_write() {
    pg_start
    standby_start
    init_pins
    local conf=$TEST_TMP/failover.conf out=$TEST_TMP/writer.out log=$TEST_TMP/acknowledged writer status
    printf '[token %s]\nstore = postgresql:host=%s,%s user=p11keychain dbname=postgres target_session_attrs=read-write\ntimeout-ms = 2000\n' \
        "$TOKEN_LABEL" "$PG_DIR/socket" "$STANDBY_DIR/socket" >"$conf"
    # One process, writing one certificate at a time, and going on through failures.
    P11KEYCHAIN_CONF=$conf P11KEYCHAIN_DEBUG=1 P11DRIVE_TOKEN=$TOKEN_LABEL \
        "$P11DRIVE" import --count 400 --prefix fo --log "$log" --through-failures >"$out" 2>"$TEST_TMP/writer.trace" &
    writer=$!
    defer "kill $writer 2>/dev/null || true"
    local i
    for i in $(seq 300); do [[ -s $log && $(wc -l <"$log") -ge 20 ]] && break; sleep 0.1; done
    [[ $(wc -l <"$log") -ge 20 ]] || fail "the writer acknowledged too little: $(summarize "$(cat "$out")")"

    bash "$IT_REPO/scripts/pg-test-cluster.sh" kill "$PG_DIR"
    local before
    before=$(wc -l <"$log")
    for i in $(seq 300); do grep -q '^failed ' "$out" && break; sleep 0.1; done
    sleep 2
    assert_line "$(cat "$out")" "^failed fo-[0-9]+ CKR_DEVICE_ERROR in [0-9]+ ms$" "the writer's calls while no primary answers"
    ! grep -E '^failed ' "$out" | grep -vqE 'CKR_DEVICE_ERROR' || fail "a call failed with another code: $(grep '^failed' "$out" | grep -v CKR_DEVICE_ERROR | head -n 1)"
    local slowest
    slowest=$(sed -nE 's/^failed .* in ([0-9]+) ms$/\1/p' "$out" | sort -n | tail -n 1)
    echo "--- $(grep -c '^failed ' "$out") calls failed during the outage, the slowest in $slowest ms" >&2
    ((slowest < 2000 + 1500)) || fail "a call during the outage took $slowest ms (timeout-ms = 2000)"
    assert_contains "$(cat "$TEST_TMP/writer.trace")" "token $TOKEN_LABEL" "the trace of a failed call names the token"
    assert_not_contains "$(cat "$TEST_TMP/writer.trace")" "password" "the trace"
    grep -m 1 -E 'unreachable|lost|read-only' "$TEST_TMP/writer.trace" >&2 ||
        fail "the trace does not say why: $(summarize "$(tail -n 3 "$TEST_TMP/writer.trace")")"

    bash "$IT_REPO/scripts/pg-test-cluster.sh" promote "$STANDBY_DIR" || fail "the standby was not promoted"
    for i in $(seq 300); do (($(wc -l <"$log") > before)) && break; sleep 0.1; done
    (($(wc -l <"$log") > before)) || fail "the writer wrote nothing after the promotion: $(summarize "$(tail -n 3 "$out")")"
    wait "$writer" && status=0 || status=$?
    [[ $status == 0 ]] || fail "the writer ended with $(describe_status "$status"): $(summarize "$(tail -n 3 "$out")")"

    local acknowledged found
    acknowledged=$(wc -l <"$log")
    out=$(P11KEYCHAIN_CONF=$conf P11DRIVE_TOKEN=$TOKEN_LABEL "$P11DRIVE" check-labels "$log" 2>&1) ||
        fail "an acknowledged write is missing after the failover: $(summarize "$out")"
    found=$(P11KEYCHAIN_CONF=$conf P11DRIVE_TOKEN=$TOKEN_LABEL "$P11DRIVE" count 2>&1) || fail "count failed: $found"
    echo "--- acknowledged $acknowledged ($before before the kill), found $found certificates" >&2
    ((found >= acknowledged)) || fail "found $found certificates of $acknowledged acknowledged"
}

test_a_write_to_a_standby_is_refused_as_read_only_naming_the_token() {
    pg_start
    standby_start
    init_pins
    local conf=$TEST_TMP/standby.conf out
    printf '[token %s]\nstore = postgresql:%s\n' "$TOKEN_LABEL" "$STANDBY_CONNINFO" >"$conf"
    head -c 16 /dev/urandom >"$TEST_TMP/data.bin"
    out=$(P11KEYCHAIN_CONF=$conf P11KEYCHAIN_DEBUG=1 pk11 --write-object "$TEST_TMP/data.bin" --type data --label on-standby 2>&1) &&
        fail "a write to the standby succeeded: $(summarize "$out")"
    echo "--- $(grep -m 1 'read-only' <<<"$out")" >&2
    assert_contains "$out" "token $TOKEN_LABEL" "the error of a write to a standby names the token"
    assert_contains "$out" "read-only, a standby (SQLSTATE 25006)" "the error of a write to a standby says why"
    out=$(P11KEYCHAIN_CONF=$conf pk11 -O 2>&1) || fail "reading from the standby failed: $(summarize "$out")"
    assert_not_contains "$out" "on-standby" "the standby's objects"
}
