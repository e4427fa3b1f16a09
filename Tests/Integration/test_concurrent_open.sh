# Opening a store is a write like any other: creating it,
# migrating its schema and switching it to WAL wait for other processes, so
# hosts that open one fresh store at the same moment all succeed, and all see
# the one serial number the first of them wrote.

test_sixteen_hosts_opening_one_fresh_store_at_once_all_succeed_twenty_times() {
    local round i start outputs failures serials
    build_p11open
    for round in $(seq 1 20); do
        new_store "$TEST_TMP/round-$round"
        outputs=$TEST_TMP/out-$round
        mkdir "$outputs"
        # Each waits for the same moment, a little after the last one started.
        start=$(($(date +%s%N) + 400000000))
        for i in $(seq 1 16); do
            "$P11OPEN" "$P11KEYCHAIN_MODULE" "$start" >"$outputs/$i" 2>&1 &
        done
        wait
        failures=$(grep -Lx 'ok serial=.*' "$outputs"/* || true)
        [[ -z $failures ]] ||
            fail "round $round: $(wc -l <<<"$failures") of 16 hosts failed to open the new store: $(cat $failures | sort | uniq -c | tr -s ' \n' '  ')"
        serials=$(sort -u "$outputs"/*)
        assert_eq 1 "$(wc -l <<<"$serials")" "round $round: distinct serial numbers the 16 hosts saw ($(tr '\n' ' ' <<<"$serials"))"
        assert_integrity
    done
}
