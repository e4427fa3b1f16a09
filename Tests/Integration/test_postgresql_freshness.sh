# The freshness bound of a PostgreSQL token (docs/fleet.md, ARCHITECTURE.md §4.5): host B keeps
# signing with a key while host A destroys it. With freshness-ms = 0, B's next C_SignInit is
# refused; with the default (100 ms), any C_SignInit more than the bound later is refused;
# with a bound of a minute, the write's announcement (LISTEN/NOTIFY) alone gets it refused at
# once. Each prints the delay from the destruction to the refusal, and B's signing rate.
# run.sh: alone: it times how long a host relies on what it holds, to a tenth of a second.

source "$IT_DIR/postgresql_lib.sh"

# share_key LABEL: initialised PINs and an EC key LABEL made on host A that host B signs with.
share_key() {
    init_pins
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --id 0d --label "$1"
}

# destroy_on_a LABEL: host A destroys the private key LABEL; prints when it was done (ms).
destroy_on_a() {
    P11KEYCHAIN_CONF=$HOST_A ok pk11 --login --pin "$USER_PIN" --delete-object --type privkey --label "$1" >&2
    date +%s%3N
}

# step_signer PAUSE: B signs once, A destroys the key, B signs again PAUSE seconds later: refused.
step_signer() {
    local pause=$1 out=$TEST_TMP/signer.out fifo=$TEST_TMP/step signer status done
    mkfifo "$fifo"
    P11KEYCHAIN_CONF=$HOST_B P11DRIVE_TOKEN=$TOKEN_LABEL P11DRIVE_PIN=$USER_PIN \
        "$P11DRIVE" sign-until-refused shared 60 step <"$fifo" >"$out" 2>&1 &
    signer=$!
    defer "kill $signer 2>/dev/null || true"
    exec {step}>"$fifo"
    wait_for_line "$out" '^signing$' 30 "$signer" || fail "host B did not sign: $(summarize "$(cat "$out")")"
    done=$(destroy_on_a shared)
    sleep "$pause"
    echo next >&"$step"
    wait "$signer" && status=0 || status=$?
    exec {step}>&-
    [[ $status == 0 ]] || fail "host B's signer ended with $(describe_status "$status"): $(summarize "$(cat "$out")")"
    assert_contains "$(cat "$out")" "refused CKR_KEY_HANDLE_INVALID after 1 signatures" \
        "host B's next C_SignInit, $pause s after host A destroyed the key"
}

test_with_freshness_0_a_key_destroyed_on_one_host_is_refused_at_the_next_call_on_the_other() {
    pg_start "freshness-ms = 0"
    share_key shared
    step_signer 0
}

test_with_the_default_freshness_a_key_destroyed_on_one_host_is_refused_on_the_other_after_the_bound() {
    pg_start
    share_key shared
    # 100 ms, and a margin for the scheduler of a busy machine.
    step_signer 0.15
}

test_a_key_destroyed_on_one_host_is_refused_at_once_by_the_other_s_running_signer_through_notify() {
    # A bound of a minute: only the announcement of the write can end what B keeps in time.
    pg_start "freshness-ms = 60000"
    share_key shared
    local out=$TEST_TMP/signer.out signer status done refused
    P11KEYCHAIN_CONF=$HOST_B P11DRIVE_TOKEN=$TOKEN_LABEL P11DRIVE_PIN=$USER_PIN \
        "$P11DRIVE" sign-until-refused shared 60 >"$out" 2>&1 &
    signer=$!
    defer "kill $signer 2>/dev/null || true"
    wait_for_line "$out" '^signing$' 30 "$signer" || fail "host B did not sign: $(summarize "$(cat "$out")")"
    sleep 1
    done=$(destroy_on_a shared)
    wait "$signer" && status=0 || status=$?
    [[ $status == 0 ]] || fail "host B's signer ended with $(describe_status "$status"): $(summarize "$(cat "$out")")"
    assert_contains "$(cat "$out")" "refused CKR_KEY_HANDLE_INVALID" "host B's C_SignInit after host A destroyed the key"
    refused=$(sed -nE 's/^refused .* at ([0-9]+) ms.*/\1/p' "$out")
    echo "--- host B: $(tail -n 1 "$out"); refused $((refused - done)) ms after host A's deletion returned" >&2
    (( refused - done < 5000 )) || fail "host B was refused $((refused - done)) ms after the deletion: not announced"
}
