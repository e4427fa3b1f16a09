# Raw scans of the store for secret-key bytes: after secret keys
# are generated, imported (known values, private and CKA_PRIVATE=FALSE),
# unwrapped, derived and copied, no file of the store (the SQLite file, its
# -wal while a client holds it open, and after the last one closed it) holds
# any of their bytes. Each key is extractable, so the test reads its value
# back through the module and knows what to look for; a public data object
# shows that the scan finds what is stored in the clear.

source "$IT_DIR/secret_lib.sh"

# keep_store_open: a client (p11drive watch) keeps the store open, so the
# pages written meanwhile stay in the -wal file, which the scan reads too.
keep_store_open() {
    "$P11DRIVE" watch --expect 1000000 --timeout 600 >"$TEST_TMP/watch.out" 2>&1 &
    WATCHER=$!
    defer "kill $WATCHER 2>/dev/null || true"
    wait_for_line "$TEST_TMP/watch.out" '^count' 30 "$WATCHER" ||
        fail "p11drive watch did not start: $(summarize "$(cat "$TEST_TMP/watch.out")")"
}

# scan_store WHEN: no secret of $SECRETS (hex) in any store file, nor its
# first 16 bytes; the public bytes $PUBLIC_HEX are found.
scan_store() {
    local hex
    note "scan $1: $(ls -l "$STORE" | tail -n +2 | awk '{print $NF " " $5}' | tr '\n' ' ')"
    assert_store_has "$PUBLIC_HEX" "scan $1: the public data object"
    for hex in "${SECRETS[@]}"; do
        assert_store_lacks "$hex" "scan $1: a secret key's value"
        assert_store_lacks "${hex:0:32}" "scan $1: the first 16 bytes of a secret key's value"
    done
}

test_raw_scan_of_the_store_finds_no_secret_key_bytes_after_generate_import_unwrap_derive_and_copy() {
    secret_setup
    export P11DRIVE_PIN=$USER_PIN
    SECRETS=()
    keep_store_open
    [[ -e $(store_file)-wal ]] || fail "no -wal file beside the store while a client has it open"
    head -c 200 /dev/urandom >"$TEST_TMP/public.bin"
    PUBLIC_HEX=$(hex_of "$TEST_TMP/public.bin")
    ok pk11 --write-object "$TEST_TMP/public.bin" --type data --label public-data

    note "generate"
    ok secret generate gen-aes aes 32 private=1 sensitive=0 extractable=1 encrypt=1 decrypt=1
    SECRETS+=("$(value_of gen-aes)")
    ok secret generate gen-hmac generic 48 private=1 sensitive=0 extractable=1 sign=1 verify=1
    SECRETS+=("$(value_of gen-hmac)")
    # pkcs11-tool asks for CKA_PRIVATE=FALSE: sealing goes by attribute type.
    ok pk11 --login --pin "$USER_PIN" --keygen --key-type AES:16 --extractable --label gen-public --id 01
    SECRETS+=("$(value_of gen-public)")

    note "import"
    local known
    known=$(random_hex 32)
    ok secret create imp-aes aes "$known" private=1 extractable=1 encrypt=1 decrypt=1 wrap=1 unwrap=1
    SECRETS+=("$known")
    head -c 40 /dev/urandom >"$TEST_TMP/imp-public.bin"
    ok pk11 --login --pin "$USER_PIN" --write-object "$TEST_TMP/imp-public.bin" --type secrkey \
        --extractable --usage-sign --label imp-public --id 02
    SECRETS+=("$(hex_of "$TEST_TMP/imp-public.bin")")

    note "unwrap"
    local wrapped_key
    wrapped_key=$(random_hex 32)
    hex_to_file "$wrapped_key" "$TEST_TMP/to-wrap.bin"
    ok openssl enc -id-aes256-wrap -K "$known" -iv A6A6A6A6A6A6A6A6 -in "$TEST_TMP/to-wrap.bin" -out "$TEST_TMP/wrapped"
    ok secret unwrap aes-kw imp-aes "$TEST_TMP/wrapped" unwrapped aes private=1 sensitive=0 extractable=1 encrypt=1
    assert_eq "$wrapped_key" "$(value_of unwrapped)" "value of the unwrapped key"
    SECRETS+=("$wrapped_key")

    note "derive"
    ok secret keypair p256 ecdh-key
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$TEST_TMP/peer.pem"
    ok secret derive ecdh ecdh-key "$(openssl pkey -in "$TEST_TMP/peer.pem" -pubout -outform der | tail -c 65 | xxd -p | tr -d '\n')" \
        derived 32 token=1 private=1 sensitive=0 extractable=1
    SECRETS+=("$(awk '$1 == "value" { print $2 }' <<<"$RUN_OUT")")
    [[ ${#SECRETS[-1]} == 64 ]] || fail "the derived key's value was not read back: $(summarize "$RUN_OUT")"

    note "copy"
    ok secret copy imp-aes imp-copy sensitive=1
    ok secret copy gen-hmac gen-hmac-copy
    assert_eq "${SECRETS[1]}" "$(value_of gen-hmac-copy)" "value of the copied HMAC key"

    assert_eq 7 "${#SECRETS[@]}" "secret values the test looks for"
    scan_store "with the store open"
    kill "$WATCHER"
    wait "$WATCHER" 2>/dev/null || true
    # The last client to close the store checkpoints the -wal into it.
    ok "$P11DRIVE" count
    scan_store "after every client closed it"
    assert_integrity
}
