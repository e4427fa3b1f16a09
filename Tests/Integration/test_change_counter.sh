# The store's change counter (<store>-changes) is a file like any other: a
# process may cut it short, delete it or replace it while others keep keys
# they read. No host faults, and a key destroyed afterwards
# by a process that made a new counter is refused at once.

# signer_refused_after DAMAGE: a long-lived signer keeps a key; DAMAGE (a
# command run on the counter file) happens; another process started afterwards
# deletes the key; the signer's next C_SignInit must refuse it.
signer_refused_after() {
    local out=$TEST_TMP/signer.out signer status counter
    init_pins
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --id 52 --label kept
    counter=$(store_file)-changes
    [[ -f $counter ]] || fail "no change counter file beside the store: $(ls "$STORE" | tr '\n' ' ')"
    P11DRIVE_PIN=$USER_PIN "$P11DRIVE" sign-until-refused kept 20 >"$out" 2>&1 &
    signer=$!
    defer "kill $signer 2>/dev/null || true"
    wait_for_line "$out" '^signing$' 30 "$signer" ||
        fail "the signer did not sign: $(summarize "$(cat "$out")")"
    note "the counter file: $*"
    "$@" "$counter"
    ok pk11 --login --pin "$USER_PIN" --delete-object --type privkey --label kept
    wait "$signer" && status=0 || status=$?
    [[ $status == 0 ]] ||
        fail "after '$*' on the counter and the key's deletion by another process, the signer ended with $(describe_status "$status"): $(summarize "$(cat "$out")")"
    assert_contains "$(cat "$out")" "refused CKR_KEY_HANDLE_INVALID" "the long-lived signer's last C_SignInit"
    assert_integrity
}

replace_with_copy() { cp -p "$1" "$1.copy" && mv -f "$1.copy" "$1"; }

test_a_signer_is_refused_when_the_key_is_deleted_after_the_counter_file_was_deleted() {
    signer_refused_after rm -f
}

test_a_signer_is_refused_when_the_key_is_deleted_after_the_counter_file_was_replaced() {
    signer_refused_after replace_with_copy
}

test_a_signer_survives_its_counter_file_cut_short_and_is_refused_when_the_key_is_deleted() {
    signer_refused_after truncate -s 0
}
