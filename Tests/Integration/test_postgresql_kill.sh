# kill -9 under load on a token stored in PostgreSQL (docs/fleet.md): writers on two "hosts"
# (processes with their own configuration files) add certificates and key pairs in loops and
# log each object only once the module acknowledged it (CKR_OK, exit status 0); the test
# SIGKILLs writers at random moments and SIGKILLs the postmaster twice, starting it again each
# time. At the end every acknowledged object is found, every object is read, and every key
# pair signs and verifies. Bounded: about 25 s of writing.

# pg_start, the PINs and the token's name: test_postgresql.sh's (only its helpers run here).
source "$IT_DIR/test_postgresql.sh"

KILL_SECONDS=${KILL_SECONDS:-24}

# cert_writer NAME CONF: p11drive imports certificates until $STOP exists, each run with a
# new prefix (200 each, so that a run ends soon after $STOP); a run that fails (the server down, its process killed) is followed by another.
cert_writer() {
    local name=$1 conf=$2 run=0
    while [[ ! -e $STOP ]]; do
        run=$((run + 1))
        P11KEYCHAIN_CONF=$conf P11DRIVE_TOKEN=$TOKEN_LABEL "$P11DRIVE" import --count 200 \
            --prefix "$name-$run" --log "$TEST_TMP/$name.log" >>"$TEST_TMP/$name.out" 2>&1 || sleep 0.2 || true
    done
}

# key_writer NAME CONF: pkcs11-tool makes EC key pairs until $STOP exists; a label is logged
# once pkcs11-tool exits 0.
key_writer() {
    local name=$1 conf=$2 i=0
    while [[ ! -e $STOP ]]; do
        i=$((i + 1))
        if P11KEYCHAIN_CONF=$conf pkcs11-tool --module "$P11KEYCHAIN_MODULE" --token-label "$TOKEN_LABEL" \
            --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --label "$name-$i" \
            >>"$TEST_TMP/$name.out" 2>&1; then
            echo "$name-$i" >>"$TEST_TMP/$name.log"
        else
            sleep 0.2 || true
        fi
    done
}

# kill_child LOOP_PID: SIGKILL the writer (p11drive or pkcs11-tool) the loop LOOP_PID runs now.
kill_child() {
    local child
    # ps fails when the loop has no child at this instant (between two writers): none to kill.
    child=$({ ps -o pid=,comm= --ppid "$1" || true; } | awk '$2 == "p11drive" || $2 == "pkcs11-tool" { print $1; exit }')
    [[ -z $child ]] || kill -9 "$child" 2>/dev/null || true
    echo "--- killed writer $1's process ${child:-(none running)}" >&2
}

# kill_postmaster: SIGKILL the server's postmaster, wait for its backends to go, start it again.
kill_postmaster() {
    local pid i
    pid=$(head -n 1 "$PG_DIR/data/postmaster.pid")
    kill -9 "$pid"
    echo "--- killed the postmaster $pid" >&2
    sleep 1
    # Its backends leave when they see it gone; until then the shared memory is in use.
    for i in $(seq 20); do
        bash "$IT_REPO/scripts/pg-test-cluster.sh" up "$PG_DIR" 2>/dev/null && return 0
        sleep 0.5
    done
    fail "the server did not start again after kill -9 of its postmaster"
}

test_kill_9_of_writers_on_two_hosts_and_of_the_postmaster_loses_no_acknowledged_object() {
    pg_start
    init_pins
    gcc "${IT_TOOL_CFLAGS[@]}" -o "$TEST_TMP/p11sweep" "$IT_DIR/tools/p11sweep.c" -ldl ||
        fail "tools/p11sweep.c did not compile"
    STOP=$TEST_TMP/stop
    local writers=() pid name logs acknowledged found out
    cert_writer certs-a "$HOST_A" &
    writers+=($!)
    cert_writer certs-b "$HOST_B" &
    writers+=($!)
    key_writer keys-a "$HOST_A" &
    writers+=($!)
    key_writer keys-b "$HOST_B" &
    writers+=($!)
    for pid in "${writers[@]}"; do defer "kill $pid 2>/dev/null || true"; done

    local start=$SECONDS round=0
    while ((SECONDS - start < KILL_SECONDS)); do
        round=$((round + 1))
        sleep "0.$((RANDOM % 9 + 1))"
        kill_child "${writers[RANDOM % ${#writers[@]}]}"
        sleep "1.$((RANDOM % 9))"
        kill_child "${writers[RANDOM % ${#writers[@]}]}"
        # The postmaster twice: a third of the way and two thirds of the way in.
        if ((round == 3 || round == 6)); then kill_postmaster; fi
    done
    : >"$STOP"
    for pid in "${writers[@]}"; do wait "$pid" || true; done
    ((round >= 6)) || fail "only $round rounds of kills ran (the postmaster was killed $((round / 3)) times)"

    # Every acknowledged certificate is found exactly once, from either host.
    for name in certs-a certs-b; do
        [[ -s $TEST_TMP/$name.log ]] || fail "writer $name acknowledged nothing: $(summarize "$(tail -n 5 "$TEST_TMP/$name.out")")"
        out=$(P11KEYCHAIN_CONF=$HOST_B P11DRIVE_TOKEN=$TOKEN_LABEL "$P11DRIVE" check-labels "$TEST_TMP/$name.log" 2>&1) ||
            fail "acknowledged certificates of $name missing: $(summarize "$out")"
        echo "--- $name: $out" >&2
    done
    # Every object is read; every key pair signs and verifies; every acknowledged pair is there.
    out=$(P11KEYCHAIN_CONF=$HOST_A P11DRIVE_TOKEN=$TOKEN_LABEL P11DRIVE_PIN=$USER_PIN "$TEST_TMP/p11sweep" 2>&1) ||
        fail "not every object is readable: $(summarize "$(grep -v '^cert \|^key ' <<<"$out")")"
    grep '^key ' <<<"$out" | sed 's/^key //' | sort >"$TEST_TMP/keys.found"
    cat "$TEST_TMP"/keys-*.log 2>/dev/null | sort >"$TEST_TMP/keys.acknowledged"
    [[ -s $TEST_TMP/keys.acknowledged ]] || fail "no key pair was acknowledged"
    local lost
    lost=$(comm -23 "$TEST_TMP/keys.acknowledged" "$TEST_TMP/keys.found" | head -n 5)
    [[ -z $lost ]] || fail "acknowledged key pairs not found or not signing: $lost"
    acknowledged=$(cat "$TEST_TMP"/certs-*.log "$TEST_TMP"/keys-*.log | wc -l)
    found=$(tail -n 1 <<<"$out")
    echo "--- acknowledged $acknowledged objects ($(cat "$TEST_TMP"/certs-*.log | wc -l) certificates," \
        "$(wc -l <"$TEST_TMP/keys.acknowledged") key pairs); $found" >&2
    echo "acknowledged $acknowledged; $found"
}
