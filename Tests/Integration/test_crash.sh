# A process killed with SIGKILL in the middle of a bulk import leaves a store
# that SQLite finds intact and that holds every certificate whose
# C_CreateObject had returned CKR_OK (p11drive logs each label right after).

# More certificates than any module imports in the few seconds before the
# kill, so the kill always lands mid-import.
CRASH_IMPORT_COUNT=20000

# import_and_kill ROUND DELAY_MS: starts a bulk import, kills it DELAY_MS after
# its first acknowledged insert, and checks it really died mid-import.
import_and_kill() {
    local round=$1 delay_ms=$2 log=$TEST_TMP/round$1.log out=$TEST_TMP/round$1.out pid status
    "$P11DRIVE" import --count "$CRASH_IMPORT_COUNT" --prefix "K$round" --log "$log" >"$out" 2>&1 &
    pid=$!
    defer "kill -KILL $pid 2>/dev/null || true"
    wait_for_line "$log" . 60 "$pid" ||
        fail "round $round: the import acknowledged no certificate within 60 s: $(summarize "$(cat "$out")")"
    sleep "$(printf '0.%03d' "$delay_ms")"
    kill -0 "$pid" 2>/dev/null ||
        fail "round $round: the import ended before the kill ($(summarize "$(cat "$out")")); raise CRASH_IMPORT_COUNT"
    kill -KILL "$pid"
    wait "$pid" && status=0 || status=$?
    [[ $status == 137 ]] ||
        fail "round $round: expected the import to die by SIGKILL (status 137), got $(describe_status "$status"): $(summarize "$(cat "$out")")"
    note "round $round: killed after $delay_ms ms, $(wc -l <"$log") certificates acknowledged"
}

# whole_lines FILE: FILE without a last line the kill may have cut short.
whole_lines() {
    if [[ -s $1 && $(tail -c 1 "$1" | od -An -c | tr -d ' ') != '\n' ]]; then
        head -n -1 "$1"
    else
        cat "$1"
    fi
}

test_sigkill_during_bulk_import_keeps_every_acknowledged_certificate() {
    local round delay_ms acknowledged all=$TEST_TMP/all.log count before=0 expected
    : >"$all"
    # Rounds share the store: each one also imports into a store that has
    # just recovered from the previous crash.
    for round in 1 2 3; do
        delay_ms=$((RANDOM % 300 + (round - 1) * 300)) # 0-299, 300-599, 600-899 ms
        import_and_kill "$round" "$delay_ms"
        whole_lines "$TEST_TMP/round$round.log" >>"$all"
        acknowledged=$(whole_lines "$TEST_TMP/round$round.log" | wc -l)

        assert_integrity
        assert_labels_present "$all" "round $round: certificates acknowledged before each kill"
        # At most one insert of this round was in flight when the process died: it may
        # have committed without its acknowledgement reaching the log. Earlier rounds'
        # such inserts are in `before`.
        count=$(cert_count)
        expected=$((before + acknowledged))
        ((count == expected || count == expected + 1)) ||
            fail "round $round: expected $expected or $((expected + 1)) certificates after the kill ($before before the round, $acknowledged acknowledged in it), the module lists $count"
        before=$count
    done
}
