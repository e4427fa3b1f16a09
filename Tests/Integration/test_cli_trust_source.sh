# The CLI's documented recipe for trust the whole system sees: an anchor set with
# `p11keychain add-trusted-cert`, the token registered with `p11keychain register --system
# --trust` (trust-policy: yes). Then p11-kit's `trust list --filter=ca-anchors` lists it and
# GnuTLS's certtool verifies a chain that ends at it; after remove-trusted-cert it does not.
# run.sh: alone: it registers a module in /etc/pkcs11/modules, which every p11-kit client reads.

CLI=$(dirname "$P11KEYCHAIN_MODULE")/p11keychain
[[ -x $CLI ]] || CLI=$IT_REPO/.build/debug/p11keychain

# anchor_listed CN: true when `trust list --filter=ca-anchors` (in RUN_OUT) names CN.
anchor_listed() { grep -qF "    label: $1" <<<"$RUN_OUT"; }

test_add_trusted_cert_and_register_trust_make_an_anchor_for_p11kit_and_gnutls() {
    protect_etc_pkcs11
    ok "$CLI" register --system --trust --module "$P11KEYCHAIN_MODULE"
    assert_line "$(cat /etc/pkcs11/modules/p11keychain-trust.module)" '^trust-policy: yes$' \
        "the registration register --trust wrote"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=CLI Anchor CA" -days 30 \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
        -keyout "$TEST_TMP/ca.key" -out "$TEST_TMP/ca.pem" 2>/dev/null || fail "openssl could not make the CA"
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=leaf.example" \
        -keyout "$TEST_TMP/leaf.key" -out "$TEST_TMP/leaf.csr" 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:leaf.example\n' \
        >"$TEST_TMP/leaf.ext"
    openssl x509 -req -in "$TEST_TMP/leaf.csr" -CA "$TEST_TMP/ca.pem" -CAkey "$TEST_TMP/ca.key" \
        -CAcreateserial -days 10 -extfile "$TEST_TMP/leaf.ext" -out "$TEST_TMP/leaf.pem" 2>/dev/null ||
        fail "openssl could not sign the leaf"

    ok trust list --filter=ca-anchors
    anchor_listed "CLI Anchor CA" && fail "the CA is an anchor before add-trusted-cert"
    ok "$CLI" add-trusted-cert "$TEST_TMP/ca.pem"
    ok trust list --filter=ca-anchors
    anchor_listed "CLI Anchor CA" || fail "trust list --filter=ca-anchors does not list the anchor: $(summarize "$RUN_OUT")"
    run certtool --verify --load-ca-certificate "pkcs11:token=$TOKEN_LABEL" --infile "$TEST_TMP/leaf.pem"
    assert_contains "$RUN_OUT" "Chain verification output: Verified." "certtool --verify to the CLI's anchor"

    ok "$CLI" remove-trusted-cert "$TEST_TMP/ca.pem"
    ok trust list --filter=ca-anchors
    anchor_listed "CLI Anchor CA" && fail "the CA is still an anchor after remove-trusted-cert"
    return 0
}
