# `p11keychain init` and `p11keychain migrate` for a token stored in PostgreSQL
# (docs/fleet.md): a SQLite token moved into PostgreSQL with its sealed values as they are,
# used there under the same PIN, with no key byte in the server's dump.

# pg_start, cli, the PINs and the token's name: test_postgresql.sh's (only its helpers
# run here; run.sh finds test functions in the file it runs).
source "$IT_DIR/test_postgresql.sh"

# init_source: the SQLite token (the default one, P11KEYCHAIN_CONF=/dev/null) initialised with
# the target's label and PINs.
init_source() {
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" --token-label login --init-token --label "$TOKEN_LABEL" \
        --so-pin "$SO_PIN"
    ok pk11 --login --login-type so --so-pin "$SO_PIN" --init-pin --pin "$USER_PIN"
}

# ec_scalar KEYFILE: the private scalar of an EC key, in lower-case hex (no leading zeros byte).
ec_scalar() {
    openssl ec -in "$1" -noout -text 2>/dev/null | sed -n '/^priv:/,/^pub:/p' | sed '1d;$d' |
        tr -d ' :\n' | sed -E 's/^00//'
}

test_init_creates_a_postgresql_token_and_sets_its_pins() {
    pg_start
    local out
    out=$(cli --token "$TOKEN_LABEL" init --so-pin "$SO_PIN" --pin "$USER_PIN" 2>&1) ||
        fail "init of a PostgreSQL token failed: $(summarize "$out")"
    assert_contains "$out" "initialized token \"$TOKEN_LABEL\"" "init"
    assert_contains "$out" "user PIN set" "init"
    out=$(psql "$PG_CONNINFO" -qtAX -c "SELECT count(*) FROM \"$TOKEN_LABEL\".metadata") ||
        fail "the schema of the token was not made"
    [[ $out -ge 3 ]] || fail "the token's schema holds $out metadata rows after init (PINs and label expected)"
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --id 01 --label after-init
    out=$(cli --token "$TOKEN_LABEL" token-info 2>&1) || fail "token-info failed: $(summarize "$out")"
    assert_line "$out" "^user PIN: +set" "token-info after init"
}

test_a_sqlite_token_migrated_into_postgresql_signs_under_the_same_pin_and_its_dump_shows_no_key_byte() {
    local out before after secret scalar dump
    init_source
    export P11KEYCHAIN_PIN=$USER_PIN
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --id 0a --label made-here
    make_cert imported "/CN=imported.example.org"
    ok pk11 --login --pin "$USER_PIN" --write-object "$CERTS/imported.key" --type privkey --id 0b --label imported
    ok pk11 --write-object "$CERTS/imported.der" --type cert --id 0b --label imported
    head -c 32 /dev/urandom >"$TEST_TMP/secret.bin"
    secret=$(hex_of "$TEST_TMP/secret.bin")
    ok pk11 --login --pin "$USER_PIN" --write-object "$TEST_TMP/secret.bin" --type secrkey --key-type AES:32 \
        --label mig-secret --id 0c
    ok cli add-generic-password -s mail.example.org -a alice -w generic-pw-Jq4
    make_cert anchor "/CN=Migrated Root"
    ok cli add-trusted-cert "$CERTS/anchor.pem"
    scalar=$(ec_scalar "$CERTS/imported.key")
    [[ ${#scalar} -ge 60 ]] || fail "could not read the imported key's scalar"
    before=$(pk11 --login --pin "$USER_PIN" -O 2>&1) || fail "pkcs11-tool -O on the SQLite token: $(summarize "$before")"
    local source
    source=$(store_file)
    # A fresh default token beside the PostgreSQL one: none other is labelled like it.
    new_store
    pg_start
    out=$(cli migrate --from "$source" --to "$TOKEN_LABEL" 2>&1) || fail "migrate failed: $(summarize "$out")"
    echo "--- migrate: $out" >&2
    assert_contains "$out" "CKO_PRIVATE_KEY: 2" "migrate's counts"
    assert_contains "$out" "CKO_SECRET_KEY: 1" "migrate's counts"
    assert_line "$out" "^verified ([0-9]+) of \1 objects: every attribute byte-equal" "migrate's check"

    # The same PIN opens the copy; every object is there with the same attributes and unique IDs.
    after=$(pk11 --login --pin "$USER_PIN" -O 2>&1) || fail "pkcs11-tool -O on the PostgreSQL token: $(summarize "$after")"
    assert_eq "$before" "$after" "pkcs11-tool -O: the PostgreSQL token lists what the SQLite token listed"
    head -c 64 /dev/urandom >"$TEST_TMP/data"
    ok pk11 --login --pin "$USER_PIN" --sign --mechanism ECDSA-SHA256 --signature-format openssl --id 0b \
        -i "$TEST_TMP/data" -o "$TEST_TMP/sig"
    openssl x509 -in "$CERTS/imported.pem" -noout -pubkey >"$TEST_TMP/imported.pub"
    out=$(openssl dgst -sha256 -verify "$TEST_TMP/imported.pub" -signature "$TEST_TMP/sig" "$TEST_TMP/data" 2>&1) ||
        fail "the migrated key's signature does not verify with the imported certificate: $(summarize "$out")"
    ok pk11 --login --pin "$USER_PIN" --sign --mechanism ECDSA --id 0a -i "$TEST_TMP/data" -o "$TEST_TMP/sig2"
    ok pk11 --verify --mechanism ECDSA --id 0a -i "$TEST_TMP/data" --signature-file "$TEST_TMP/sig2"
    out=$(p11tool --provider "$P11KEYCHAIN_MODULE" --login --set-pin "$USER_PIN" --list-all "pkcs11:token=$TOKEN_LABEL" 2>&1) ||
        fail "p11tool --list-all failed: $(summarize "$out")"
    assert_contains "$out" "mig-secret" "p11tool --list-all on the migrated token"
    out=$(cli --token "$TOKEN_LABEL" find-generic-password -s mail.example.org -w 2>&1) ||
        fail "find-generic-password on the migrated token: $(summarize "$out")"
    assert_eq "generic-pw-Jq4" "$out" "the password read from the migrated token"
    # Trust granted under the token key (its seal) holds on the copy: the anchor is trusted.
    out=$(p11tool --provider "$P11KEYCHAIN_MODULE" --login --set-pin "$USER_PIN" --list-all-trusted \
        "pkcs11:token=$TOKEN_LABEL" 2>&1) || fail "p11tool --list-all-trusted failed: $(summarize "$out")"
    assert_contains "$out" "Migrated Root" "the trusted certificates of the migrated token"

    # No key byte and no PIN in the server's dump.
    dump=$(pg_dump "$PG_CONNINFO" --schema="\"$TOKEN_LABEL\"" 2>&1) || fail "pg_dump failed: $(summarize "$dump")"
    assert_contains "$dump" "$(hex_of "$CERTS/imported.der")" "pg_dump: the certificate (the dump holds the token)"
    for needle in "$secret" "${secret:0:32}" "$scalar" "${scalar:0:32}" "$(printf %s "$USER_PIN" | xxd -p)" \
        "$(printf %s generic-pw-Jq4 | xxd -p)"; do
        assert_not_contains "$dump" "$needle" "pg_dump of the migrated token (a key's bytes, a PIN or a password)"
    done

    # A second migration into the token, now not empty, is refused and changes nothing.
    refused cli migrate --from "$source" --to "$TOKEN_LABEL"
    assert_contains "$RUN_OUT" "is not empty" "migrate into a token that holds objects"
    after=$(pk11 --login --pin "$USER_PIN" -O 2>&1) || fail "pkcs11-tool -O after the refused migration"
    assert_eq "$before" "$after" "the token after a refused migration"
}

test_migrate_force_replaces_an_initialized_postgresql_token() {
    local source out
    init_source
    head -c 16 /dev/urandom >"$TEST_TMP/d.bin"
    ok pk11 --write-object "$TEST_TMP/d.bin" --type data --label from-sqlite
    source=$(store_file)
    new_store
    pg_start
    ok cli --token "$TOKEN_LABEL" init --so-pin other-so-pin --pin other-user-pin
    ok pk11 --login --pin other-user-pin --keypairgen --key-type EC:prime256v1 --id 0f --label in-the-way
    refused cli migrate --from "$source" --to "$TOKEN_LABEL"
    out=$(cli migrate --from "$source" --to "$TOKEN_LABEL" --force 2>&1) || fail "migrate --force failed: $(summarize "$out")"
    out=$(pk11 --login --pin "$USER_PIN" -O 2>&1) || fail "the source's PIN does not open the replaced token: $(summarize "$out")"
    assert_contains "$out" "from-sqlite" "the replaced token"
    assert_not_contains "$out" "in-the-way" "the replaced token"
}
