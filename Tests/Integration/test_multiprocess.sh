# Several processes on one store: a long-lived reader sees other processes'
# inserts without restarting, and concurrent writers lose nothing.

test_a_long_lived_lister_sees_each_insert_of_another_process() {
    local n=10 i watch_out=$TEST_TMP/watch.out insert_log=$TEST_TMP/insert.log
    local steps=$TEST_TMP/steps watcher inserter

    # The lister: one C_Initialize, one session, C_FindObjects every 20 ms.
    "$P11DRIVE" watch --expect "$n" --timeout 120 >"$watch_out" 2>&1 &
    watcher=$!
    defer "kill $watcher 2>/dev/null || true"
    wait_for_line "$watch_out" '^count 0$' 30 "$watcher" ||
        fail "the lister did not report an empty token within 30 s: $(summarize "$(cat "$watch_out")")"

    # The inserter: one process too, released one insert at a time through a
    # FIFO, so that each insert is checked before the next one happens.
    mkfifo "$steps"
    "$P11DRIVE" import --count "$n" --prefix W --log "$insert_log" --stepped \
        <"$steps" >"$TEST_TMP/import.out" 2>&1 &
    inserter=$!
    defer "kill $inserter 2>/dev/null || true"
    exec 3>"$steps"
    for ((i = 1; i <= n; i++)); do
        kill -0 "$inserter" 2>/dev/null ||
            fail "the inserter ended before insert $i: $(summarize "$(cat "$TEST_TMP/import.out")")"
        echo go >&3
        wait_for_line "$insert_log" "^W-$((i - 1))\$" 30 "$inserter" ||
            fail "insert $i did not complete: $(summarize "$(cat "$TEST_TMP/import.out")")"
        wait_for_line "$watch_out" "^count $i\$" 10 "$watcher" ||
            fail "after insert $i by another process, the long-lived lister still reports '$(tail -n 1 "$watch_out")', expected 'count $i'"
    done
    exec 3>&-

    wait "$inserter" || fail "the inserter failed: $(summarize "$(cat "$TEST_TMP/import.out")")"
    wait "$watcher" || fail "the lister failed: $(summarize "$(cat "$watch_out")")"
}

test_four_concurrent_importers_lose_nothing_and_report_no_error() {
    local p pids=() status expected=$TEST_TMP/expected.labels
    for p in 1 2 3 4; do
        "$P11DRIVE" import --count 50 --prefix "C$p" >"$TEST_TMP/importer$p.out" 2>&1 &
        pids+=($!)
    done
    for p in 1 2 3 4; do
        wait "${pids[p - 1]}" && status=0 || status=$?
        [[ $status == 0 ]] ||
            fail "importer $p of 4 ended with $(describe_status "$status"): $(summarize "$(cat "$TEST_TMP/importer$p.out")")"
        # Any warning or error message counts as a reported error.
        assert_eq "imported 50" "$(cat "$TEST_TMP/importer$p.out")" "output of importer $p of 4"
    done

    assert_eq 200 "$(cert_count)" "certificates in the store after 4 x 50 concurrent imports"
    for p in 1 2 3 4; do
        seq 0 49 | sed "s/^/C$p-/"
    done >"$expected"
    assert_labels_present "$expected" "labels of 4 x 50 concurrent imports"
}

test_a_process_signing_in_a_loop_is_refused_as_soon_as_another_deletes_the_key() {
    local out=$TEST_TMP/signer.out signer status
    init_pins
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --id 51 --label loop
    # One process signs again and again, the key kept between signatures.
    P11DRIVE_PIN=$USER_PIN "$P11DRIVE" sign-until-refused loop 60 >"$out" 2>&1 &
    signer=$!
    defer "kill $signer 2>/dev/null || true"
    wait_for_line "$out" '^signing$' 30 "$signer" ||
        fail "the signer did not sign: $(summarize "$(cat "$out")")"
    # Another process deletes the key; the signer's next C_SignInit must fail.
    ok pk11 --login --pin "$USER_PIN" --delete-object --type privkey --label loop
    wait "$signer" && status=0 || status=$?
    [[ $status == 0 ]] ||
        fail "after another process deleted the key, the signer ended with $(describe_status "$status"): $(summarize "$(cat "$out")")"
    assert_contains "$(cat "$out")" "refused CKR_KEY_HANDLE_INVALID" "the long-lived signer's last C_SignInit"
}
