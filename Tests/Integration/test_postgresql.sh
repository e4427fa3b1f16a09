# A token stored in PostgreSQL (docs/fleet.md): the real tools against it, two "hosts"
# (processes with their own configuration files) sharing it, and raw scans of the server's
# dump and data directory. Each test starts a throwaway cluster (scripts/pg-test-cluster.sh:
# initdb as nobody, a Unix socket in a temporary directory, no TCP) and stops it at the end.

source "$IT_DIR/postgresql_lib.sh"

test_a_postgresql_token_works_with_p11tool_pkcs11tool_and_the_cli() {
    pg_start
    local out
    out=$(p11tool --provider "$P11KEYCHAIN_MODULE" --list-tokens 2>&1)
    assert_contains "$out" "Label: $TOKEN_LABEL" "p11tool --list-tokens: the PostgreSQL token is present"
    init_pins
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --id 0a --label fleet-ec
    head -c 32 /dev/urandom >"$TEST_TMP/data"
    ok pk11 --login --pin "$USER_PIN" --sign --mechanism ECDSA --id 0a -i "$TEST_TMP/data" -o "$TEST_TMP/sig"
    ok pk11 --verify --mechanism ECDSA --id 0a -i "$TEST_TMP/data" --signature-file "$TEST_TMP/sig"
    out=$(p11tool --provider "$P11KEYCHAIN_MODULE" --login --set-pin "$USER_PIN" --list-all "pkcs11:token=$TOKEN_LABEL" 2>&1) ||
        fail "p11tool --list-all failed: $(summarize "$out")"
    assert_contains "$out" "fleet-ec" "p11tool --list-all"

    make_cert fleet "/CN=fleet.example.org"
    ok cli --token "$TOKEN_LABEL" add-certificates "$CERTS/fleet.pem"
    out=$(cli --token "$TOKEN_LABEL" find-certificate -c fleet.example.org 2>&1) ||
        fail "find-certificate failed: $(summarize "$out")"
    assert_contains "$out" "fleet.example.org" "the CLI finds the certificate it added"
    out=$(cli list-tokens 2>&1) || fail "list-tokens failed: $(summarize "$out")"
    assert_line "$out" "^$TOKEN_LABEL +read-write +[1-9][0-9]* +SO\+user +postgresql:" "list-tokens: the PostgreSQL token, its engine, its public objects"
    assert_not_contains "$out" "$PG_PASSWORD" "list-tokens"
    out=$(cli --token "$TOKEN_LABEL" token-info 2>&1) || fail "token-info failed: $(summarize "$out")"
    assert_line "$out" "^store: +postgresql:" "token-info: the store's engine"
    assert_line "$out" "^public objects: +[1-9]" "token-info: the public objects counted"
    assert_not_contains "$out" "$PG_PASSWORD" "token-info"
}

test_two_hosts_share_a_postgresql_token_and_a_key_destroyed_on_one_is_refused_on_the_other() {
    pg_start
    local out signer status
    init_pins
    # Host A makes a key; host B, with its own configuration, signs with it.
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --id 0b --label shared
    head -c 32 /dev/urandom >"$TEST_TMP/data"
    P11KEYCHAIN_CONF=$HOST_B ok pk11 --login --pin "$USER_PIN" --sign --mechanism ECDSA --id 0b \
        -i "$TEST_TMP/data" -o "$TEST_TMP/sig"
    ok pk11 --verify --mechanism ECDSA --id 0b -i "$TEST_TMP/data" --signature-file "$TEST_TMP/sig"

    # Host B signs in a loop, keeping the key; host A destroys it.
    out=$TEST_TMP/signer.out
    P11KEYCHAIN_CONF=$HOST_B P11DRIVE_TOKEN=$TOKEN_LABEL P11DRIVE_PIN=$USER_PIN \
        "$P11DRIVE" sign-until-refused shared 60 >"$out" 2>&1 &
    signer=$!
    defer "kill $signer 2>/dev/null || true"
    wait_for_line "$out" '^signing$' 30 "$signer" || fail "host B did not sign: $(summarize "$(cat "$out")")"
    ok pk11 --login --pin "$USER_PIN" --delete-object --type privkey --label shared
    wait "$signer" && status=0 || status=$?
    [[ $status == 0 ]] || fail "host B's signer ended with $(describe_status "$status"): $(summarize "$(cat "$out")")"
    assert_contains "$(cat "$out")" "refused CKR_KEY_HANDLE_INVALID" "host B's C_SignInit after host A destroyed the key"
}

test_a_dump_and_a_raw_scan_of_the_postgresql_data_find_no_key_byte_and_no_pin() {
    pg_start
    local secret public dump scan
    init_pins
    head -c 32 /dev/urandom >"$TEST_TMP/secret.bin"
    secret=$(hex_of "$TEST_TMP/secret.bin")
    ok pk11 --login --pin "$USER_PIN" --write-object "$TEST_TMP/secret.bin" --type secrkey --key-type AES:32 \
        --extractable --usage-sign --label fleet-secret --id 0c
    head -c 200 /dev/urandom >"$TEST_TMP/public.bin"
    public=$(hex_of "$TEST_TMP/public.bin")
    ok pk11 --write-object "$TEST_TMP/public.bin" --type data --label public-data

    dump=$(pg_dump "$PG_CONNINFO" --schema="\"$TOKEN_LABEL\"" 2>&1) || fail "pg_dump failed: $(summarize "$dump")"
    assert_contains "$dump" "$public" "pg_dump: the public data object (the dump holds the token)"
    assert_not_contains "$dump" "$secret" "pg_dump: the secret key's value"
    assert_not_contains "$dump" "${secret:0:32}" "pg_dump: the first 16 bytes of the secret key's value"
    assert_not_contains "$dump" "$USER_PIN" "pg_dump: the user PIN"
    assert_not_contains "$dump" "$(printf %s "$USER_PIN" | xxd -p)" "pg_dump: the user PIN in hex"
    assert_not_contains "$dump" "$(printf %s "$SO_PIN" | xxd -p)" "pg_dump: the SO PIN in hex"

    psql "$PG_CONNINFO" -qtAX -c CHECKPOINT >/dev/null || fail "CHECKPOINT failed"
    scan=$TEST_TMP/scan.hex
    find "$PG_DIR/data" -type f -exec cat {} + | xxd -p | tr -d '\n' >"$scan"
    grep -qF "$public" "$scan" || fail "raw scan of the data directory: the public data object is not found"
    local needle
    for needle in "$secret" "${secret:0:32}" "$(printf %s "$USER_PIN" | xxd -p)" "$(printf %s "$SO_PIN" | xxd -p)"; do
        ! grep -qF "$needle" "$scan" || fail "raw scan of the data directory: found $needle (a key's bytes or a PIN)"
    done
}

test_a_server_down_leaves_the_module_loaded_and_the_token_usable_once_it_is_back() {
    pg_start
    local out
    init_pins
    head -c 16 /dev/urandom >"$TEST_TMP/data.bin"
    ok pk11 --write-object "$TEST_TMP/data.bin" --type data --label before-outage
    bash "$IT_REPO/scripts/pg-test-cluster.sh" down "$PG_DIR" || fail "the test server did not stop"
    # C_Initialize succeeds and lists the slot; the token's calls fail, within the bounded time.
    out=$(timeout 30 pkcs11-tool --module "$P11KEYCHAIN_MODULE" -L 2>&1) ||
        fail "pkcs11-tool -L with the server down: $(summarize "$out")"
    assert_contains "$out" "p11keychain $TOKEN_LABEL" "the slot of the PostgreSQL token while its server is down"
    refused pk11 -O
    out=$(P11KEYCHAIN_DEBUG=1 pkcs11-tool --module "$P11KEYCHAIN_MODULE" -L 2>&1 || true)
    assert_contains "$out" "the server is unreachable" "the trace says why the token is missing"
    assert_not_contains "$out" "$PG_PASSWORD" "the trace"
    bash "$IT_REPO/scripts/pg-test-cluster.sh" up "$PG_DIR" || fail "the test server did not start again"
    out=$(pk11 -O 2>&1) || fail "pkcs11-tool -O once the server is back: $(summarize "$out")"
    assert_contains "$out" "before-outage" "the object stored before the outage"
}

test_wrong_pins_guessed_at_once_from_two_hosts_lock_the_token_after_ten() {
    pg_start
    local i conf pids=() incorrect
    overlapping_pin_cost
    init_pins
    # Six wrong guesses from each host, all at once: ten are counted, then the PIN is locked.
    for i in $(seq 12); do
        if ((i % 2)); then conf=$HOST_A; else conf=$HOST_B; fi
        P11KEYCHAIN_CONF=$conf pkcs11-tool --module "$P11KEYCHAIN_MODULE" --token-label "$TOKEN_LABEL" \
            --login --pin "wrong-pin-$i" -O >"$TEST_TMP/guess$i.out" 2>&1 &
        pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || true; done
    incorrect=$(cat "$TEST_TMP"/guess*.out | grep -c CKR_PIN_INCORRECT || true)
    assert_eq 10 "$incorrect" "wrong PINs counted from two hosts guessing at once"
    assert_flag "user PIN locked" "after ten wrong PINs from two hosts"
    refused pk11 --login --pin "$USER_PIN" -O
}

test_unlocking_a_postgresql_token_names_its_session_entry_without_the_connection_password() {
    command -v keyctl >/dev/null || fail "keyctl is missing (scripts/setup.sh installs keyutils)"
    keyctl new_session >/dev/null || fail "keyctl new_session failed"
    pg_start
    init_pins
    printf '%s' "$USER_PIN" >"$TEST_TMP/pin"
    ok cli --token "$TOKEN_LABEL" unlock --pin-file "$TEST_TMP/pin"
    local id description
    id=$(keyctl show @s | awk '/user: p11keychain:/ { print $1 }' | head -n 1)
    [[ -n $id ]] || fail "no p11keychain entry in the session keyring after unlock: $(keyctl show @s)"
    description=$(keyctl rdescribe "$id") || fail "keyctl rdescribe $id failed"
    echo "--- the entry: $description" >&2
    assert_contains "$description" "postgresql:" "the session entry names the server store"
    assert_not_contains "$description" "$PG_PASSWORD" "the session entry's name"
    local out
    out=$(cli --token "$TOKEN_LABEL" status 2>&1) || fail "status after unlock: $(summarize "$out")"
    assert_contains "$out" "unlocked" "status after unlock"
}

test_libpq_is_loaded_only_by_a_host_with_a_postgresql_token() {
    local out
    out=$(ldd "$P11KEYCHAIN_MODULE" 2>&1) || fail "ldd failed: $(summarize "$out")"
    assert_not_contains "$out" "libpq" "ldd of the module: libpq is opened when needed, not linked"
    # A host with only a SQLite token never maps libpq (ld.so names every object it loads).
    out=$(P11KEYCHAIN_CONF=/dev/null LD_DEBUG=files pkcs11-tool --module "$P11KEYCHAIN_MODULE" -L 2>&1) ||
        fail "pkcs11-tool -L on a SQLite token failed: $(summarize "$out")"
    assert_not_contains "$out" "file=libpq.so" "the libraries a SQLite-only host loads"
    pg_start
    out=$(LD_DEBUG=files pkcs11-tool --module "$P11KEYCHAIN_MODULE" -L 2>&1) ||
        fail "pkcs11-tool -L on a PostgreSQL token failed: $(summarize "$out")"
    assert_contains "$out" "file=libpq.so.5" "the libraries a host of a PostgreSQL token loads"
    assert_contains "$out" "Fleet" "pkcs11-tool -L lists the PostgreSQL token"
}
