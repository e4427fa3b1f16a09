# PINs through pkcs11-tool: C_InitToken sets the SO PIN and label, C_InitPIN
# the user PIN; wrong PINs are counted and lock the PIN after 10; the SO
# unlocks it; C_SetPIN changes it; short PINs are refused; a second
# C_InitToken needs the SO PIN and wipes the token. A process killed in the
# middle of C_SetPIN or C_InitToken never leaves a token that no PIN opens, and
# logins killed during the key derivation never lock the PIN.

# try_login PIN: a user login with PIN through pkcs11-tool; $LOGIN_RV is the
# CK_RV name it reports ("CKR_OK" when it succeeds).
try_login() {
    run pk11 --login --pin "$1" -O
    if [[ $RUN_STATUS == 0 ]]; then
        LOGIN_RV=CKR_OK
    else
        LOGIN_RV=$(sed -nE 's/.*C_Login failed: rv = (CKR_[A-Z_]+).*/\1/p' <<<"$RUN_OUT" | head -n 1)
    fi
}

# assert_login PIN EXPECTED_RV WHAT
assert_login() {
    try_login "$1"
    [[ $LOGIN_RV == "$2" ]] ||
        fail "$3: expected C_Login with PIN '$1' to return $2, pkcs11-tool says: ${LOGIN_RV:-$(summarize "$RUN_OUT")}"
}

test_init_token_and_init_pin_set_label_and_flags() {
    # A fresh token: no PIN of any kind, nothing demands a login.
    assert_no_flag "login required" "fresh token"
    assert_no_flag "PIN initialized" "fresh token"

    # The first C_InitToken sets the SO PIN and the label.
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" --init-token --label "Work Keys" --so-pin "$SO_PIN"
    assert_contains "$RUN_OUT" "Token successfully initialized" "pkcs11-tool --init-token"
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" -L
    assert_line "$RUN_OUT" '^ +token label +: Work Keys$' "token label after --init-token --label 'Work Keys'" 'token label'
    assert_flag "token initialized" "after C_InitToken"
    assert_no_flag "PIN initialized" "after C_InitToken, before C_InitPIN"

    TOKEN_LABEL="Work Keys"
    ok pk11 --login --login-type so --so-pin "$SO_PIN" --init-pin --pin "$USER_PIN"
    assert_contains "$RUN_OUT" "User PIN successfully initialized" "pkcs11-tool --init-pin"
    assert_flag "login required" "after C_InitPIN"
    assert_flag "PIN initialized" "after C_InitPIN"
    assert_no_flag "user PIN count low" "after C_InitPIN"
    assert_login "$USER_PIN" CKR_OK "the user PIN just set"
}

test_wrong_pin_is_counted_and_ten_lock_the_pin_until_the_so_unlocks_it() {
    init_pins
    make_cert keep "/CN=Kept Through Failed Logins"
    ok pk11 --write-object "$CERTS/keep.der" --type cert --label keep

    assert_login 9999 CKR_PIN_INCORRECT "one wrong PIN"
    assert_flag "user PIN count low" "after one wrong PIN"
    # A right PIN resets the count.
    assert_login "$USER_PIN" CKR_OK "the right PIN after a wrong one"
    assert_no_flag "user PIN count low" "after a successful login"

    local i
    for i in 1 2 3 4 5 6 7 8 9; do
        assert_login 9999 CKR_PIN_INCORRECT "wrong PIN number $i"
    done
    assert_flag "final user PIN try" "after 9 wrong PINs"
    assert_no_flag "user PIN locked" "after 9 wrong PINs"
    try_login 9999
    [[ $LOGIN_RV == CKR_PIN_INCORRECT || $LOGIN_RV == CKR_PIN_LOCKED ]] ||
        fail "wrong PIN number 10: expected CKR_PIN_INCORRECT or CKR_PIN_LOCKED, got ${LOGIN_RV:-$(summarize "$RUN_OUT")}"
    assert_flag "user PIN locked" "after 10 wrong PINs"
    assert_login "$USER_PIN" CKR_PIN_LOCKED "the right PIN once the PIN is locked"

    # Nothing but the counter changed: the certificate is still there.
    ok pk11 -O --type cert
    assert_line "$RUN_OUT" '^ +label: +keep$' "certificate after 10 failed logins" 'label'

    # The SO sets a new user PIN, which unlocks it.
    ok pk11 --login --login-type so --so-pin "$SO_PIN" --init-pin --pin 4321
    assert_no_flag "user PIN locked" "after the SO's C_InitPIN"
    assert_no_flag "user PIN count low" "after the SO's C_InitPIN"
    assert_login 4321 CKR_OK "the PIN the SO set"
}

test_change_pin_replaces_the_old_pin() {
    init_pins
    ok pk11 --login --pin "$USER_PIN" --change-pin --new-pin 56789
    assert_contains "$RUN_OUT" "PIN successfully changed" "pkcs11-tool --change-pin"
    assert_login "$USER_PIN" CKR_PIN_INCORRECT "the old user PIN after C_SetPIN"
    assert_login 56789 CKR_OK "the new user PIN after C_SetPIN"

    # The SO's own PIN: C_SetPIN while logged in as SO.
    ok pk11 --login --login-type so --so-pin "$SO_PIN" --change-pin --new-pin 87654321
    refused pk11 --login --login-type so --so-pin "$SO_PIN" --init-pin --pin 2222
    assert_contains "$RUN_OUT" "CKR_PIN_INCORRECT" "SO login with the old SO PIN"
    ok pk11 --login --login-type so --so-pin 87654321 --init-pin --pin 2222
    assert_login 2222 CKR_OK "the user PIN set with the new SO PIN"
}

test_pin_iterations_are_the_default_or_the_environments_and_stay_with_each_pin() {
    note "without P11KEYCHAIN_PIN_ITERATIONS, PINs derive their key 600,000 times"
    unset P11KEYCHAIN_PIN_ITERATIONS
    init_pins
    assert_eq 600000 "$(stored_pin_iterations so.pin)" "the SO PIN's iterations by default"
    assert_eq 600000 "$(stored_pin_iterations user.pin)" "the user PIN's iterations by default"

    note "P11KEYCHAIN_PIN_ITERATIONS sets the count of the PINs set under it"
    P11KEYCHAIN_PIN_ITERATIONS=2000 ok pk11 --login --pin "$USER_PIN" --change-pin --new-pin 24680
    assert_eq 2000 "$(stored_pin_iterations user.pin)" "the user PIN changed with P11KEYCHAIN_PIN_ITERATIONS=2000"
    assert_eq 600000 "$(stored_pin_iterations so.pin)" "the SO PIN, not changed"

    note "a PIN keeps its count whatever a later process says"
    assert_login 24680 CKR_OK "the PIN set at 2,000 iterations, in a process without the variable"
    P11KEYCHAIN_PIN_ITERATIONS=5000 assert_login 24680 CKR_OK "the same PIN, in a process set to 5,000"
    assert_eq 2000 "$(stored_pin_iterations user.pin)" "the record after logins"

    note "a value out of range fails C_Initialize with the variable's name, and changes nothing"
    P11KEYCHAIN_DEBUG=1 P11KEYCHAIN_PIN_ITERATIONS=999 refused pk11 --login --pin 24680 --change-pin --new-pin 13579
    assert_contains "$RUN_OUT" "P11KEYCHAIN_PIN_ITERATIONS: must be a number from 1000 to 10000000, not '999'" \
        "the trace of a module given P11KEYCHAIN_PIN_ITERATIONS=999"
    assert_login 24680 CKR_OK "the PIN after the refused change"
}

test_pins_of_the_wrong_length_are_refused() {
    # Before any PIN exists: a 3-byte SO PIN is refused and sets nothing.
    refused pk11 --init-token --label "$TOKEN_LABEL" --so-pin 123
    assert_contains "$RUN_OUT" "CKR_PIN_LEN_RANGE" "C_InitToken with a 3-byte SO PIN"
    init_pins

    refused pk11 --login --login-type so --so-pin "$SO_PIN" --init-pin --pin 123
    assert_contains "$RUN_OUT" "CKR_PIN_LEN_RANGE" "C_InitPIN with a 3-byte PIN"
    refused pk11 --login --pin "$USER_PIN" --change-pin --new-pin 123
    assert_contains "$RUN_OUT" "CKR_PIN_LEN_RANGE" "C_SetPIN to a 3-byte PIN"
    local long
    long=$(printf 'x%.0s' {1..256})
    refused pk11 --login --login-type so --so-pin "$SO_PIN" --init-pin --pin "$long"
    assert_contains "$RUN_OUT" "CKR_PIN_LEN_RANGE" "C_InitPIN with a 256-byte PIN"
    assert_login "$USER_PIN" CKR_OK "the user PIN after the refused changes"
    assert_login 123 CKR_PIN_INCORRECT "the refused 3-byte PIN"
}

test_second_init_token_needs_the_so_pin_and_wipes_the_token() {
    init_pins
    make_cert wipe "/CN=Wiped By InitToken"
    ok pk11 --write-object "$CERTS/wipe.der" --type cert --label wipecert
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --id 42 --label wipekey
    head -c 64 /dev/urandom >"$TEST_TMP/secret"
    ok pk11 --login --pin "$USER_PIN" --write-object "$TEST_TMP/secret" --type data --label wipedata --private

    refused pk11 --init-token --label "Other" --so-pin 99999999
    assert_contains "$RUN_OUT" "C_InitToken failed: rv = CKR_PIN_INCORRECT" "C_InitToken with a wrong SO PIN"
    ok pk11 --login --pin "$USER_PIN" -O
    assert_line "$RUN_OUT" '^ +label: +wipecert$' "certificate after the refused C_InitToken" 'label'
    assert_contains "$RUN_OUT" "Private Key Object; EC" "private key after the refused C_InitToken"
    assert_line "$RUN_OUT" "^ +label: +'wipedata'\$" "private data object after the refused C_InitToken" 'label'
    assert_flag "PIN initialized" "after the refused C_InitToken"

    ok pk11 --init-token --label "Fresh" --so-pin "$SO_PIN"
    TOKEN_LABEL=Fresh
    ok pk11 -O
    assert_no_line "$RUN_OUT" 'Object' "objects left after C_InitToken with the SO PIN"
    assert_no_flag "PIN initialized" "after the token was wiped"
    assert_login "$USER_PIN" CKR_USER_PIN_NOT_INITIALIZED "the old user PIN after the wipe"
    # The SO PIN survives the wipe: it sets a new user PIN, and the token is empty.
    ok pk11 --login --login-type so --so-pin "$SO_PIN" --init-pin --pin "$USER_PIN"
    ok pk11 --login --pin "$USER_PIN" -O
    assert_no_line "$RUN_OUT" 'Object' "objects seen by the user after the wipe"
}

# ---------------------------------------------------------------- killed mid-call

KILL_ROUNDS=10

# call_ms OUTPUT CALL: the milliseconds p11drive reported for CALL.
call_ms() {
    sed -nE "s/^$2 returned CKR_OK in ([0-9]+) ms\$/\\1/p" <<<"$1"
}

# kill_delay_ms ROUND CALL_MS: when to kill in round ROUND a call that took
# CALL_MS ms uninterrupted: odd rounds anywhere in the call, even rounds near
# its end (80-110 %), where it commits.
kill_delay_ms() {
    if (($1 % 2)); then
        echo $((RANDOM % ($2 + 1)))
    else
        echo $(($2 * 8 / 10 + RANDOM % ($2 * 3 / 10 + 1)))
    fi
}

# more_kill_rounds ROUND KILLED: whether to run round ROUND, KILLED kills
# having landed so far: the first KILL_ROUNDS always, then more (up to three
# times as many) until a third of the rounds' kills landed inside the call.
more_kill_rounds() {
    (($1 <= KILL_ROUNDS)) || (($2 < KILL_ROUNDS / 3 && $1 <= 3 * KILL_ROUNDS))
}

# kill_during CALL ROUND DELAY_MS CMD...: runs CMD (a p11drive call that
# prints "calling CALL" just before making it) and SIGKILLs it DELAY_MS ms
# after that line. Sets KILLED=1 if the kill ended it, 0 if it had finished.
# A call that finished first may have been faster than the measured
# $CALL_MS (a warm cache, a quieter machine): $CALL_MS then drops to 80 % of
# the time it reported, so that later rounds aim inside it.
kill_during() {
    local call=$1 round=$2 delay_ms=$3 out=$TEST_TMP/kill$2.out pid status
    shift 3
    "$@" >"$out" 2>&1 &
    pid=$!
    defer "kill -KILL $pid 2>/dev/null || true"
    wait_for_line "$out" "^calling $call\$" 30 "$pid" ||
        fail "round $round: $call was not reached within 30 s: $(summarize "$(cat "$out")")"
    sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" && status=0 || status=$?
    if [[ $status == 137 ]]; then
        KILLED=1
    elif [[ $status == 0 ]]; then
        KILLED=0
        local took
        took=$(call_ms "$(cat "$out")" "$call")
        if [[ -n $took ]] && ((took * 8 / 10 < CALL_MS)); then
            CALL_MS=$((took * 8 / 10))
            ((CALL_MS >= 1)) || CALL_MS=1
        fi
    else
        fail "round $round: $call ended with $(describe_status "$status") before the kill: $(summarize "$(cat "$out")")"
    fi
    note "round $round: kill $delay_ms ms into $call: $([[ $KILLED == 1 ]] && echo killed || echo "it had finished: $(summarize "$(cat "$out")")")"
}

# measure CALL CMD...: runs CMD uninterrupted (it must succeed); $CALL_MS is
# how long CALL took in it.
measure() {
    local call=$1
    shift
    ok "$@"
    CALL_MS=$(call_ms "$RUN_OUT" "$call")
    [[ -n $CALL_MS ]] || fail "p11drive did not report how long $call took: $(summarize "$RUN_OUT")"
    ((CALL_MS >= 1)) || CALL_MS=1
}

test_sigkill_during_set_pin_leaves_the_old_or_the_new_pin() {
    full_pin_cost
    init_pins
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --id 07 --label survivor
    local current=$USER_PIN new round killed=0 old_ok new_ok opened_new=0
    export P11DRIVE_TOKEN=$TOKEN_LABEL
    measure C_SetPIN "$P11DRIVE" set-pin "$current" 24680
    current=24680

    for ((round = 1; ; round++)); do
        more_kill_rounds "$round" "$killed" || break
        new=$((50000 + round))
        kill_during C_SetPIN "$round" "$(kill_delay_ms "$round" "$CALL_MS")" "$P11DRIVE" set-pin "$current" "$new"
        killed=$((killed + KILLED))
        assert_integrity
        # Exactly one of the two PINs opens the token (a failed try is
        # counted; the success that follows resets the count).
        run "$P11DRIVE" login user "$new"
        new_ok=$RUN_STATUS
        run "$P11DRIVE" login user "$current"
        old_ok=$RUN_STATUS
        if [[ $new_ok == 0 && $old_ok != 0 ]]; then
            current=$new
            opened_new=$((opened_new + KILLED))
            note "round $round: the new PIN opens the token"
        elif [[ $new_ok != 0 && $old_ok == 0 ]]; then
            [[ $KILLED == 1 ]] || fail "round $round: C_SetPIN returned CKR_OK, yet only the old PIN opens the token"
            note "round $round: the old PIN opens the token"
        elif [[ $new_ok == 0 ]]; then
            fail "round $round: both the old and the new PIN open the token after the kill"
        else
            fail "round $round: after a SIGKILL during C_SetPIN neither the old PIN $current nor the new PIN $new opens the token: $(summarize "$RUN_OUT")"
        fi
    done
    note "$killed of $((round - 1)) kills landed inside C_SetPIN ($CALL_MS ms uninterrupted); after $opened_new of them the new PIN opened the token"
    ((killed >= KILL_ROUNDS / 3)) ||
        fail "only $killed of $((round - 1)) kills landed inside C_SetPIN (it took $CALL_MS ms uninterrupted)"
    # The key made before the kills is still there for the PIN that opens the token.
    ok pk11 --login --pin "$current" -O --type privkey
    assert_line "$RUN_OUT" '^ +label: +survivor$' "private key after $((round - 1)) rounds of killed C_SetPIN calls" 'label'
}

# check_so_pin_opens ROUND: the SO PIN logs in, re-initialises the token, and
# sets a user PIN that logs in.
check_so_pin_opens() {
    run "$P11DRIVE" login so "$SO_PIN"
    [[ $RUN_STATUS == 0 ]] ||
        fail "round $1: after a SIGKILL during C_InitToken the SO PIN no longer opens the token: $(summarize "$RUN_OUT")"
    run "$P11DRIVE" init-token "$SO_PIN" "$TOKEN_LABEL"
    [[ $RUN_STATUS == 0 ]] ||
        fail "round $1: after a SIGKILL during C_InitToken, C_InitToken with the SO PIN fails: $(summarize "$RUN_OUT")"
    ok pk11 --login --login-type so --so-pin "$SO_PIN" --init-pin --pin "$USER_PIN"
    run "$P11DRIVE" login user "$USER_PIN"
    [[ $RUN_STATUS == 0 ]] ||
        fail "round $1: a user PIN set after the recovered C_InitToken does not open the token: $(summarize "$RUN_OUT")"
}

test_sigkill_during_first_init_token_leaves_a_token_that_takes_an_so_pin() {
    full_pin_cost
    local round killed=0
    export P11DRIVE_TOKEN=$TOKEN_LABEL
    # The first C_InitToken of a fresh token sets the SO PIN; measured once.
    measure C_InitToken "$P11DRIVE" init-token "$SO_PIN" "$TOKEN_LABEL"
    for ((round = 1; ; round++)); do
        more_kill_rounds "$round" "$killed" || break
        new_store
        kill_during C_InitToken "$round" "$(kill_delay_ms "$round" "$CALL_MS")" "$P11DRIVE" init-token "$SO_PIN" "$TOKEN_LABEL"
        killed=$((killed + KILLED))
        assert_integrity
        # Either the SO PIN was set, or none was and the token takes one now:
        # C_InitToken with the SO PIN succeeds in both cases.
        run "$P11DRIVE" init-token "$SO_PIN" "$TOKEN_LABEL"
        [[ $RUN_STATUS == 0 ]] ||
            fail "round $round: after a SIGKILL during the first C_InitToken, C_InitToken with the SO PIN fails: $(summarize "$RUN_OUT")"
        check_so_pin_opens "$round"
    done
    ((killed >= KILL_ROUNDS / 3)) ||
        fail "only $killed of $((round - 1)) kills landed inside C_InitToken (it took $CALL_MS ms uninterrupted)"
}

test_sigkill_during_init_token_of_a_used_token_leaves_the_so_pin_working() {
    full_pin_cost
    local round killed=0
    export P11DRIVE_TOKEN=$TOKEN_LABEL
    init_pins
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --id 09 --label before
    # A C_InitToken that wipes a token with a user PIN and a key, measured once.
    measure C_InitToken "$P11DRIVE" init-token "$SO_PIN" "$TOKEN_LABEL"
    for ((round = 1; ; round++)); do
        more_kill_rounds "$round" "$killed" || break
        ok pk11 --login --login-type so --so-pin "$SO_PIN" --init-pin --pin "$USER_PIN"
        ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --id 09 --label "r$round"
        kill_during C_InitToken "$round" "$(kill_delay_ms "$round" "$CALL_MS")" "$P11DRIVE" init-token "$SO_PIN" "$TOKEN_LABEL"
        killed=$((killed + KILLED))
        assert_integrity
        # The token is either wiped or untouched: never half of each.
        run "$P11DRIVE" login user "$USER_PIN"
        if [[ $RUN_STATUS == 0 ]]; then
            [[ $KILLED == 1 ]] || fail "round $round: C_InitToken returned CKR_OK, yet the user PIN still opens the token"
            ok pk11 --login --pin "$USER_PIN" -O --type privkey
            assert_line "$RUN_OUT" "^ +label: +r$round\$" "round $round: key of a token the killed C_InitToken left untouched" 'label'
            note "round $round: the token was left as it was"
        else
            assert_contains "$RUN_OUT" "CKR_USER_PIN_NOT_INITIALIZED" "round $round: user login after the killed C_InitToken"
            note "round $round: the token was wiped"
        fi
        check_so_pin_opens "$round"
    done
    ((killed >= KILL_ROUNDS / 3)) ||
        fail "only $killed of $((round - 1)) kills landed inside C_InitToken (it took $CALL_MS ms uninterrupted)"
}

# logins_killed_during_the_derivation WHO PIN KILLS: logs in as WHO (user or so) with the right PIN
# in p11drive processes SIGKILLed during C_Login (aiming at the middle, where the
# key derivation runs) until KILLS kills landed inside the call; then the PIN
# must not be locked and a right login must work.
logins_killed_during_the_derivation() {
    local who=$1 pin=$2 wanted=$3 round killed=0 call="C_Login\\($1\\)"
    measure "$call" "$P11DRIVE" login "$who" "$pin"
    for ((round = 1; killed < wanted; round++)); do
        ((round <= 6 * wanted)) ||
            fail "only $killed of $((round - 1)) kills landed inside C_Login($who) (it took $CALL_MS ms uninterrupted)"
        kill_during "$call" "$round" $((CALL_MS * 2 / 10 + RANDOM % (CALL_MS * 5 / 10 + 1))) \
            "$P11DRIVE" login "$who" "$pin"
        killed=$((killed + KILLED))
    done
    note "$killed of $((round - 1)) logins as $who were killed inside C_Login ($CALL_MS ms uninterrupted)"
    assert_integrity
}

test_logins_killed_during_the_derivation_never_lock_the_pin() {
    full_pin_cost
    init_pins
    export P11DRIVE_TOKEN=$TOKEN_LABEL
    logins_killed_during_the_derivation user "$USER_PIN" 10
    assert_no_flag "user PIN locked" "after 10 logins with the right PIN were killed"
    assert_no_flag "user PIN count low" "after 10 logins with the right PIN were killed"
    assert_login "$USER_PIN" CKR_OK "the right user PIN after 10 killed logins"

    logins_killed_during_the_derivation so "$SO_PIN" 10
    run "$P11DRIVE" login so "$SO_PIN"
    [[ $RUN_STATUS == 0 ]] ||
        fail "after 10 SO logins with the right PIN were killed, the SO PIN no longer logs in: $(summarize "$RUN_OUT")"
}
