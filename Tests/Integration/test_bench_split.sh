# bench/split.sh's instruments (bench/sign_timer.c, p11sign --split): the time inside the
# OpenSSL call that makes each signature, read from within the process that signs through
# the module, and the time of each C_SignInit and C_Sign around it. A shim that did not reach
# the module's signing calls, or timings that do not nest, would make the benchmark's split
# of a signature's time a fiction; these check both on the module under test.

# split_tools: p11sign and sign_timer.so built into $TEST_TMP, as bench/lib.sh builds them.
split_tools() {
    local build=$TEST_TMP root=$IT_REPO
    log() { note "$*"; }
    # shellcheck source=bench/lib.sh
    source "$IT_REPO/bench/lib.sh"
    build_p11sign || fail "p11sign does not build"
    build_sign_timer || fail "sign_timer.so does not build"
}

# split_run ARGS...: p11sign --split under the shim for half a second; prints its line and the
# shim's, joined.
split_run() {
    local line
    : >"$TEST_TMP/timer.out"
    line=$(SIGN_TIMER_OUT=$TEST_TMP/timer.out LD_PRELOAD=$TEST_TMP/sign_timer.so "$TEST_TMP/p11sign" \
        --module "$P11KEYCHAIN_MODULE" --token "$TOKEN_LABEL" --pin "$USER_PIN" --key ecp256 \
        --seconds 0.5 --split "$@") || fail "p11sign --split $* failed: $line"
    echo "$line $(cat "$TEST_TMP/timer.out")"
}

# check_split LINE MECHANISM: every signature went through one timed ECDSA_do_sign (the
# module signs through the key's EC_KEY, never EVP_PKEY_sign's DER), and the times nest: that
# call inside C_Sign, C_SignInit and C_Sign inside the whole operation.
check_split() {
    local line=$1 mechanism=$2
    assert_contains "$line" "mechanism=$mechanism" "p11sign's mechanism"
    local ops calls init sign op call
    ops=$(sed -nE 's/.* ops=([0-9]+) .*/\1/p' <<<"$line")
    calls=$(sed -nE 's/.*openssl_calls=([0-9]+).*/\1/p' <<<"$line")
    [[ -n $calls ]] || fail "the shim reported no signing call: $line"
    assert_eq "$ops" "$calls" "OpenSSL signing calls timed beside p11sign's signatures"
    assert_contains "$line" "openssl_function=ECDSA_do_sign" "the OpenSSL function the module signs with"
    init=$(sed -nE 's/.*init_us=([0-9.]+).*/\1/p' <<<"$line")
    sign=$(sed -nE 's/.* sign_us=([0-9.]+) op_us.*/\1/p' <<<"$line")
    op=$(sed -nE 's/.*op_us=([0-9.]+).*/\1/p' <<<"$line")
    call=$(sed -nE 's/.*openssl_us=([0-9.]+).*/\1/p' <<<"$line")
    awk -v i="$init" -v s="$sign" -v o="$op" -v e="$call" \
        'BEGIN { exit !(i > 0 && e > 0 && s > e && o >= i + s) }' ||
        fail "times do not nest: C_SignInit $init µs, C_Sign $sign µs, ECDSA_do_sign $call µs, operation $op µs"
}

test_bench_split_times_the_modules_signing_call_within_c_sign() {
    init_pins
    split_tools
    check_split "$(split_run)" CKM_ECDSA_SHA256
    check_split "$(split_run --raw)" CKM_ECDSA
}
