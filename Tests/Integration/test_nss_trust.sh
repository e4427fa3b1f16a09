# NSS trust kept in the keychain (NSS): `certutil -M` on a
# certificate in the token writes an NSS trust object (CKO_NSS_TRUST) the module
# keeps with the certificate, so a second, fresh NSS database with the module
# added sees the same trust flags, and `vfychain` there accepts a leaf the CA
# issued. `certutil -M -t ,,` clears it for every database.

# ca_and_leaf: $CERTS/ca.{pem,der,key} (a CA) and $CERTS/leaf.{pem,der} (a TLS
# server certificate it issued).
ca_and_leaf() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=Keychain Test CA" \
        -days 30 -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
        -keyout "$CERTS/ca.key" -out "$CERTS/ca.pem" 2>/dev/null || fail "openssl could not make the CA"
    openssl x509 -in "$CERTS/ca.pem" -outform der -out "$CERTS/ca.der"
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=leaf.example" \
        -keyout "$CERTS/leaf.key" -out "$CERTS/leaf.csr" 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:leaf.example\n' \
        >"$CERTS/leaf.ext"
    openssl x509 -req -in "$CERTS/leaf.csr" -CA "$CERTS/ca.pem" -CAkey "$CERTS/ca.key" -CAcreateserial \
        -days 10 -extfile "$CERTS/leaf.ext" -out "$CERTS/leaf.pem" 2>/dev/null || fail "openssl could not sign the leaf"
    openssl x509 -in "$CERTS/leaf.pem" -outform der -out "$CERTS/leaf.der"
}

# nss_db NAME: a fresh NSS database $TEST_TMP/NAME with the module added.
nss_db() {
    mkdir -p "$TEST_TMP/$1"
    ok certutil -N -d "sql:$TEST_TMP/$1" --empty-password
    # modutil asks for confirmation on stdin unless -force; -mechanisms FRIENDLY as
    # NSS's own documentation adds a token module.
    ok modutil -force -dbdir "sql:$TEST_TMP/$1" -add p11keychain -libfile "$P11KEYCHAIN_MODULE" -mechanisms FRIENDLY
}

# trust_flags DB NICKNAME: the trust column certutil -L -h all shows for NICKNAME.
trust_flags() {
    local out
    out=$(certutil -L -d "sql:$TEST_TMP/$1" -h all 2>&1) || fail "certutil -L -d $1 -h all failed: $(summarize "$out")"
    echo "--- certutil -L -d $1 -h all:" >&2
    printf '%s\n' "$out" >&2
    awk -v nick="$2" 'index($0, nick) == 1 { print $NF }' <<<"$out"
}

test_certutil_trust_on_a_token_certificate_is_seen_by_a_second_nss_database() {
    ca_and_leaf
    ok pk11 --write-object "$CERTS/ca.der" --type cert --label nss-ca
    nss_db db1
    nss_db db2

    assert_eq ",," "$(trust_flags db2 "$TOKEN_LABEL:nss-ca")" "trust of the token's CA before certutil -M"
    ok certutil -M -t CT,C,C -n "$TOKEN_LABEL:nss-ca" -d "sql:$TEST_TMP/db1"
    assert_eq "CT,C,C" "$(trust_flags db2 "$TOKEN_LABEL:nss-ca")" "trust db2 reads from the token after certutil -M in db1"
    # The trust went to the token, not into db1's own database: db1's internal
    # token holds no copy of the CA.
    ok certutil -L -d "sql:$TEST_TMP/db1"
    assert_no_line "$RUN_OUT" '^nss-ca ' "db1's own certificates after certutil -M"
    # Every face sees one trust: the certificate now reads CKA_TRUSTED TRUE.
    ok pk11 --list-objects --type cert
    note "pkcs11-tool lists the certificate; the trust views are the module's CKO_NSS_TRUST / CKO_TRUST"

    note "vfychain in the second database: the leaf chains to the token's anchor"
    ok vfychain -d "sql:$TEST_TMP/db2" -u 1 "$CERTS/leaf.der"
    assert_contains "$RUN_OUT" "Chain is good!" "vfychain of the leaf in db2"

    ok certutil -M -t ,, -n "$TOKEN_LABEL:nss-ca" -d "sql:$TEST_TMP/db1"
    assert_eq ",," "$(trust_flags db2 "$TOKEN_LABEL:nss-ca")" "trust db2 reads after certutil -M -t ,, in db1"
    assert_eq ",," "$(trust_flags db1 "$TOKEN_LABEL:nss-ca")" "trust db1 reads after certutil -M -t ,,"
    refused vfychain -d "sql:$TEST_TMP/db2" -u 1 "$CERTS/leaf.der"
    assert_contains "$RUN_OUT" "Chain is bad!" "vfychain of the leaf once the CA's trust is cleared"
}

test_a_distrusted_token_certificate_is_distrusted_in_every_nss_database() {
    ca_and_leaf
    ok pk11 --write-object "$CERTS/ca.der" --type cert --label nss-ca
    nss_db db1
    nss_db db2
    ok certutil -M -t p,p,p -n "$TOKEN_LABEL:nss-ca" -d "sql:$TEST_TMP/db1"
    assert_eq "p,p,p" "$(trust_flags db2 "$TOKEN_LABEL:nss-ca")" "distrust db2 reads after certutil -M -t p,p,p in db1"
    refused vfychain -d "sql:$TEST_TMP/db2" -u 1 "$CERTS/leaf.der"
}

# With a user PIN set, trust changes need a login (README "Trust"). certutil -M
# does not log in for them: the token refuses the trust object
# (CKR_USER_NOT_LOGGED_IN) and NSS keeps the trust in db1's own database, as for
# any token that refuses. The token's trust, which other databases read, stays.
test_certutil_trust_without_login_leaves_a_pin_protected_token_unchanged() {
    ca_and_leaf
    ok pk11 --write-object "$CERTS/ca.der" --type cert --label nss-ca
    init_pins
    nss_db db1
    nss_db db2
    printf '%s\n' "$USER_PIN" >"$TEST_TMP/pin.txt"
    run certutil -M -t CT,C,C -n "$TOKEN_LABEL:nss-ca" -d "sql:$TEST_TMP/db1" -f "$TEST_TMP/pin.txt"
    assert_eq ",," "$(trust_flags db2 "$TOKEN_LABEL:nss-ca")" "the token's trust after certutil -M without a login"
    refused vfychain -d "sql:$TEST_TMP/db2" -u 1 "$CERTS/leaf.der"
}
