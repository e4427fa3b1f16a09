# NSS trust on a token with a user PIN (docs/token.md "Trust", docs/clients.md "Using it from
# NSS"). `certutil -M -t CT,C,C -h TOKEN -f PINFILE` reaches the token when NSS logs in before
# it writes the trust; the token's answer to an unauthenticated write stays
# CKR_USER_NOT_LOGGED_IN. NSS 3.87 logs in on one of two paths:
# - the database that runs certutil has the module without `-mechanisms FRIENDLY`: looking the
#   certificate up by "TOKEN:nickname" logs in first (NSS authenticates an unfriendly token
#   before it searches it), so the trust object is created by a logged-in user;
# - the database has a password of its own: NSS's fallback for a token that refuses the trust
#   object (put the certificate and its trust into its own database) fails too, with "not
#   logged in" (softoken seals trust with the database password), and certutil then logs in
#   to the -h token and to its own database and tries again, this time on the token.
# With a FRIENDLY module and a database with no password, NSS's fallback succeeds and certutil
# never logs in: test_nss_trust.sh's last test shows that the token is then unchanged.
# A grant of trust on a token with a user PIN counts once the reader has logged in (README
# "Trust"), so the second database lists the token with -h TOKEN -f PINFILE.

source "$IT_DIR/test_nss_trust.sh"

# nss_db_login NAME: a fresh NSS database $TEST_TMP/NAME with the module added as modutil adds
# it by default (not FRIENDLY): NSS logs in to the token before it searches it.
nss_db_login() {
    mkdir -p "$TEST_TMP/$1"
    ok certutil -N -d "sql:$TEST_TMP/$1" --empty-password
    ok modutil -force -dbdir "sql:$TEST_TMP/$1" -add p11keychain -libfile "$P11KEYCHAIN_MODULE"
}

# logged_in_trust_flags DB NICKNAME: the trust column for NICKNAME that certutil -L -h TOKEN
# shows in DB, logged in with the user PIN.
logged_in_trust_flags() {
    local out
    out=$(certutil -L -d "sql:$TEST_TMP/$1" -h "$TOKEN_LABEL" -f "$TEST_TMP/pin.txt" 2>&1) ||
        fail "certutil -L -d $1 -h $TOKEN_LABEL -f pin.txt failed: $(summarize "$out")"
    echo "--- certutil -L -d $1 -h $TOKEN_LABEL (logged in):" >&2
    printf '%s\n' "$out" >&2
    awk -v nick="$2" 'index($0, nick) == 1 { print $NF }' <<<"$out"
}

# pin_token_with_ca: the CA certificate on the token, then a user PIN, and the PIN file.
pin_token_with_ca() {
    ca_and_leaf
    ok pk11 --write-object "$CERTS/ca.der" --type cert --label nss-ca
    init_pins
    printf '%s\n' "$USER_PIN" >"$TEST_TMP/pin.txt"
}

test_certutil_trust_with_the_pin_reaches_the_token_from_a_database_that_logs_in() {
    pin_token_with_ca
    nss_db_login db1
    nss_db_login db2
    assert_eq ",," "$(logged_in_trust_flags db2 "$TOKEN_LABEL:nss-ca")" "the token's trust before certutil -M"

    P11KEYCHAIN_DEBUG=1 ok certutil -M -t CT,C,C -n "$TOKEN_LABEL:nss-ca" -d "sql:$TEST_TMP/db1" \
        -h "$TOKEN_LABEL" -f "$TEST_TMP/pin.txt"
    assert_contains "$RUN_OUT" "C_Login -> CKR_OK" "certutil -M's trace: NSS logged in"
    assert_not_contains "$RUN_OUT" "CKR_USER_NOT_LOGGED_IN" "certutil -M's trace: no write before the login"
    assert_eq "CT,C,C" "$(logged_in_trust_flags db2 "$TOKEN_LABEL:nss-ca")" \
        "trust a second, fresh database reads from the token after certutil -M in db1"
    # The trust went to the token, not into db1's own database.
    ok certutil -L -d "sql:$TEST_TMP/db1" -h internal
    assert_no_line "$RUN_OUT" '^nss-ca ' "db1's own certificates after certutil -M"

    ok certutil -M -t ,, -n "$TOKEN_LABEL:nss-ca" -d "sql:$TEST_TMP/db1" -h "$TOKEN_LABEL" -f "$TEST_TMP/pin.txt"
    assert_eq ",," "$(logged_in_trust_flags db2 "$TOKEN_LABEL:nss-ca")" "the token's trust after certutil -M -t ,,"
}

test_certutil_trust_with_the_pin_reaches_the_token_from_a_password_protected_database() {
    pin_token_with_ca
    mkdir -p "$TEST_TMP/db1"
    printf 'db1-password\n' >"$TEST_TMP/db1-password.txt"
    ok certutil -N -d "sql:$TEST_TMP/db1" -f "$TEST_TMP/db1-password.txt"
    ok modutil -force -dbdir "sql:$TEST_TMP/db1" -add p11keychain -libfile "$P11KEYCHAIN_MODULE" -mechanisms FRIENDLY
    nss_db_login db2
    # One password file for both tokens: NSS's tools read "TOKEN:password" lines.
    printf 'NSS Certificate DB:db1-password\n%s:%s\n' "$TOKEN_LABEL" "$USER_PIN" >"$TEST_TMP/both.txt"

    P11KEYCHAIN_DEBUG=1 ok certutil -M -t CT,C,C -n "$TOKEN_LABEL:nss-ca" -d "sql:$TEST_TMP/db1" \
        -h "$TOKEN_LABEL" -f "$TEST_TMP/both.txt"
    assert_contains "$RUN_OUT" "C_CreateObject -> CKR_USER_NOT_LOGGED_IN" "the token refuses the write before the login"
    assert_contains "$RUN_OUT" "C_Login -> CKR_OK" "certutil -M logged in after the refusal"
    assert_eq "CT,C,C" "$(logged_in_trust_flags db2 "$TOKEN_LABEL:nss-ca")" \
        "trust a second, fresh database reads from the token after certutil -M in db1"
}
