# The keychain as a p11-kit trust source (p11-kit and GnuTLS):
# registered with `trust-policy: yes` (scripts/register-module.sh --trust), its
# anchor is listed by `trust list` as an anchor and a distrusted certificate as
# distrusted (p11-kit's blocklist); GnuTLS verifies a chain ending at the
# keychain's anchor, with certtool and in a TLS handshake with an openssl
# s_server on 127.0.0.1, and refuses chains to a distrusted or untrusted CA.
# Trust is set through NSS (certutil -M), so every face's view is the same.
# run.sh: alone: it registers modules in /etc/pkcs11/modules, which every p11-kit client reads.

REGISTER=$IT_REPO/scripts/register-module.sh

# make_ca NAME CN: a CA in $CERTS/NAME.{pem,der,key}, stored in the token as NAME.
make_ca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$2" -days 30 \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
        -keyout "$CERTS/$1.key" -out "$CERTS/$1.pem" 2>/dev/null || fail "openssl could not make CA $1"
    openssl x509 -in "$CERTS/$1.pem" -outform der -out "$CERTS/$1.der"
    ok pk11 --write-object "$CERTS/$1.der" --type cert --label "$1"
}

# make_leaf NAME CA: a TLS server certificate for leaf.example issued by CA.
make_leaf() {
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=leaf.example" \
        -keyout "$CERTS/$1.key" -out "$CERTS/$1.csr" 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:leaf.example\n' \
        >"$CERTS/$1.ext"
    openssl x509 -req -in "$CERTS/$1.csr" -CA "$CERTS/$2.pem" -CAkey "$CERTS/$2.key" -CAcreateserial \
        -days 10 -extfile "$CERTS/$1.ext" -out "$CERTS/$1.pem" 2>/dev/null || fail "openssl could not sign $1"
}

# set_nss_trust NICKNAME FLAGS: certutil -M through an NSS database with the module.
set_nss_trust() {
    if [[ ! -d $TEST_TMP/nssdb ]]; then
        mkdir -p "$TEST_TMP/nssdb"
        ok certutil -N -d "sql:$TEST_TMP/nssdb" --empty-password
        ok modutil -force -dbdir "sql:$TEST_TMP/nssdb" -add p11keychain -libfile "$P11KEYCHAIN_MODULE" -mechanisms FRIENDLY
    fi
    ok certutil -M -t "$2" -n "$TOKEN_LABEL:$1" -d "sql:$TEST_TMP/nssdb"
}

# listed_trust LABEL: the "trust:" line `trust list` prints for the certificate LABEL.
listed_trust() {
    awk -v label="    label: $1" '$0 == label { found = 1; next } found && /^    trust: / { print $2; exit }' <<<"$RUN_OUT"
}

# verify_with_gnutls LEAF: certtool --verify of LEAF against the token's anchors.
verify_with_gnutls() {
    run certtool --verify --load-ca-certificate "pkcs11:token=$TOKEN_LABEL" --infile "$CERTS/$1.pem"
}

test_trust_list_shows_the_keychain_anchor_and_distrusted_certificate() {
    protect_etc_pkcs11
    ok "$REGISTER" --system --trust "$P11KEYCHAIN_MODULE"
    [[ -f /etc/pkcs11/modules/p11keychain-trust.module && ! -e /etc/pkcs11/modules/p11keychain.module ]] ||
        fail "register-module.sh --trust did not write p11keychain-trust.module alone: $(ls /etc/pkcs11/modules)"
    assert_line "$(cat /etc/pkcs11/modules/p11keychain-trust.module)" '^trust-policy: yes$' \
        "trust-policy line of p11keychain-trust.module"
    make_ca anchor-ca "Keychain Anchor CA"
    make_ca bad-ca "Keychain Distrusted CA"
    make_ca plain-ca "Keychain Plain CA"

    ok trust list
    assert_eq "" "$(listed_trust anchor-ca)" "trust list before any trust is set (only anchors and blocklist are listed)"
    set_nss_trust anchor-ca CT,C,C
    set_nss_trust bad-ca p,p,p
    ok trust list
    assert_eq anchor "$(listed_trust anchor-ca)" "trust of the keychain's anchor in trust list"
    assert_eq distrusted "$(listed_trust bad-ca)" "trust of the distrusted certificate in trust list"
    assert_eq "" "$(listed_trust plain-ca)" "a certificate with no trust settings is neither"
    ok trust list --filter=blocklist
    assert_eq distrusted "$(listed_trust bad-ca)" "trust list --filter=blocklist"
    assert_eq "" "$(listed_trust anchor-ca)" "the anchor is not on the blocklist"
    ok trust list --filter=ca-anchors
    assert_eq anchor "$(listed_trust anchor-ca)" "trust list --filter=ca-anchors"
}

test_gnutls_verifies_a_chain_ending_at_the_keychain_anchor() {
    protect_etc_pkcs11
    ok "$REGISTER" --system --trust "$P11KEYCHAIN_MODULE"
    make_ca anchor-ca "Keychain Anchor CA"
    make_ca bad-ca "Keychain Distrusted CA"
    make_ca plain-ca "Keychain Plain CA"
    for ca in anchor bad plain; do make_leaf "$ca-leaf" "$ca-ca"; done
    set_nss_trust anchor-ca CT,C,C
    set_nss_trust bad-ca p,p,p

    verify_with_gnutls anchor-leaf
    [[ $RUN_STATUS == 0 ]] || fail "certtool --verify of a leaf of the keychain's anchor failed: $(summarize "$RUN_OUT")"
    assert_contains "$RUN_OUT" "Chain verification output: Verified." "certtool --verify, anchor in the keychain"
    for leaf in bad-leaf plain-leaf; do
        verify_with_gnutls "$leaf"
        assert_contains "$RUN_OUT" "Chain verification output: Not verified." "certtool --verify of $leaf"
    done

    note "a TLS handshake: openssl s_server with the leaf, gnutls-cli trusting the keychain"
    timeout 60 openssl s_server -key "$CERTS/anchor-leaf.key" -cert "$CERTS/anchor-leaf.pem" \
        -accept 127.0.0.1:0 -www </dev/null >"$TEST_TMP/server.out" 2>&1 &
    local server=$! port
    defer "kill $server 2>/dev/null || true"
    wait_for_line "$TEST_TMP/server.out" '^ACCEPT ' 30 "$server" ||
        fail "openssl s_server did not start listening: $(summarize "$(cat "$TEST_TMP/server.out")")"
    port=$(sed -nE 's/^ACCEPT 127\.0\.0\.1:([0-9]+)$/\1/p' "$TEST_TMP/server.out")
    run timeout 30 gnutls-cli --x509cafile "pkcs11:token=$TOKEN_LABEL" --verify-hostname leaf.example \
        -p "$port" 127.0.0.1 </dev/null
    assert_contains "$RUN_OUT" "Status: The certificate is trusted." "gnutls-cli trusting the keychain's anchor"
    assert_contains "$RUN_OUT" "Handshake was completed" "gnutls-cli handshake"
    # An anchor for e-mail only is not one for TLS servers: the stapled
    # extendedKeyUsage extension tells GnuTLS (CKA_TRUSTED alone would not).
    set_nss_trust anchor-ca ,C,
    run timeout 30 gnutls-cli --x509cafile "pkcs11:token=$TOKEN_LABEL" --verify-hostname leaf.example \
        -p "$port" 127.0.0.1 </dev/null
    assert_contains "$RUN_OUT" "The certificate is NOT trusted" "gnutls-cli with the CA an anchor for e-mail only"
    set_nss_trust anchor-ca ,,
    run timeout 30 gnutls-cli --x509cafile "pkcs11:token=$TOKEN_LABEL" --verify-hostname leaf.example \
        -p "$port" 127.0.0.1 </dev/null
    assert_contains "$RUN_OUT" "The certificate is NOT trusted" "gnutls-cli once the anchor's trust is cleared"
    kill "$server"
}
