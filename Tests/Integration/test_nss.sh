# NSS's tools (Debian's libnss3-tools, NSS 3.87) against the module: modutil registers it
# in a new NSS database, certutil lists certificates (-L) and keys (-K) and makes a
# self-signed certificate with a token key (-S), pk12util imports a PKCS#12 into the token,
# and vfychain builds a chain through a certificate only the token holds.
# Trust settings (certutil -M, CKO_NSS_TRUST) are tested with the trust work, not here.

# nss_setup [MECHANISMS]: the token gets its PINs, $NSSDB a new empty NSS database with the
# module added (as "p11keychain", with modutil's -mechanisms MECHANISMS, default FRIENDLY:
# NSS then lists the token's public certificates without asking for the PIN), and
# $NSS_PINFILE the user PIN for certutil's -f.
nss_setup() {
    command -v certutil >/dev/null && command -v modutil >/dev/null ||
        fail "certutil/modutil not found (install libnss3-tools; scripts/setup.sh does)"
    init_pins
    NSSDB=sql:$TEST_TMP/nssdb
    NSS_PINFILE=$TEST_TMP/pin.txt
    mkdir "$TEST_TMP/nssdb"
    echo "$USER_PIN" >"$NSS_PINFILE"
    ok certutil -N -d "$NSSDB" --empty-password
    local mechanisms=()
    [[ ${1-FRIENDLY} == none ]] || mechanisms=(-mechanisms "${1-FRIENDLY}")
    ok modutil -dbdir "$NSSDB" -add p11keychain -libfile "$P11KEYCHAIN_MODULE" "${mechanisms[@]}" -force
}

# nss_refused CMD...: an NSS tool must fail; they exit with 255 (-1), which is no signal.
nss_refused() {
    run "$@"
    [[ $RUN_STATUS != 0 ]] || fail "expected '$(cmd_text "$@")' to fail, but it succeeded: $(summarize "$RUN_OUT")"
}

# nss_certs: the nicknames certutil -L lists for the token, one a line (no PIN given).
nss_certs() {
    local out
    out=$(certutil -L -d "$NSSDB" -h "$TOKEN_LABEL" </dev/null 2>&1) ||
        fail "certutil -L -h $TOKEN_LABEL failed: $(summarize "$out")"
    sed -nE "s/^($TOKEN_LABEL:.*[^ ]) +[a-zA-Z]*,[a-zA-Z]*,[a-zA-Z]* *\$/\1/p" <<<"$out"
}

test_nss_modutil_registers_the_module_and_lists_its_token() {
    nss_setup
    ok modutil -dbdir "$NSSDB" -list
    assert_line "$RUN_OUT" "library name: $P11KEYCHAIN_MODULE\$" "module path in modutil -list" 'library name'
    assert_line "$RUN_OUT" '^[[:space:]]+token: login$' "token in modutil -list" 'token:'
    assert_line "$RUN_OUT" '^[[:space:]]+status: loaded$' "module status in modutil -list" 'status:'
}

test_nss_certutil_lists_public_certificates_without_a_pin_when_friendly() {
    nss_setup
    make_cert nssuser "/CN=NSS User"
    ok pk11 --write-object "$CERTS/nssuser.der" --type cert --label "nss user"
    assert_eq "login:nss user" "$(nss_certs)" "certificates certutil -L -h login lists with no PIN"
    # The exact certificate: certutil -L -n exports it.
    ok certutil -L -d "$NSSDB" -n "login:nss user" -r -o "$TEST_TMP/read.der"
    assert_same_file "$CERTS/nssuser.der" "$TEST_TMP/read.der" "certificate certutil -L -r read from the token"
}

test_nss_certutil_without_friendly_asks_for_the_pin_before_listing() {
    # What users hit without -mechanisms FRIENDLY once the token has a user PIN (the README
    # says so): NSS logs in first and, with no PIN to give, lists nothing.
    nss_setup none
    make_cert hidden "/CN=Hidden"
    ok pk11 --write-object "$CERTS/hidden.der" --type cert --label hidden
    nss_refused certutil -L -d "$NSSDB" -h "$TOKEN_LABEL"
    assert_contains "$RUN_OUT" "could not authenticate to token login" "certutil -L without FRIENDLY and no PIN"
    ok certutil -L -d "$NSSDB" -h "$TOKEN_LABEL" -f "$NSS_PINFILE"
    assert_contains "$RUN_OUT" "login:hidden" "certutil -L without FRIENDLY, PIN given"
}

test_nss_certutil_lists_token_keys_with_the_pin() {
    nss_setup
    make_cert keyed "/CN=Keyed"
    local id
    id=$(cert_key_id "$CERTS/keyed.pem")
    ok pk11 --login --pin "$USER_PIN" --write-object "$CERTS/keyed.key" --type privkey --id "$id" --label keyed
    ok pk11 --write-object "$CERTS/keyed.der" --type cert --id "$id" --label keyed
    ok certutil -K -d "$NSSDB" -h "$TOKEN_LABEL" -f "$NSS_PINFILE"
    assert_line "$RUN_OUT" "^< *0> ec +$id +keyed\$" "certutil -K listing of the token key" '^<'
    # A wrong PIN is refused and lists nothing.
    echo 9999 >"$TEST_TMP/wrong.txt"
    nss_refused certutil -K -d "$NSSDB" -h "$TOKEN_LABEL" -f "$TEST_TMP/wrong.txt"
    assert_no_line "$RUN_OUT" '^< *0>' "certutil -K with a wrong PIN"
}

test_nss_certutil_makes_a_self_signed_certificate_with_a_token_key() {
    nss_setup
    head -c 64 /dev/urandom >"$TEST_TMP/noise"
    ok certutil -S -d "$NSSDB" -h "$TOKEN_LABEL" -f "$NSS_PINFILE" -n "nss self" -s "CN=NSS Self" -x \
        -t ",," -k ec -q nistp256 -z "$TEST_TMP/noise" -v 1
    assert_eq "login:nss self" "$(nss_certs)" "certificates on the token after certutil -S"
    # The key was generated on the token and pairs with the certificate.
    ok certutil -K -d "$NSSDB" -h "$TOKEN_LABEL" -f "$NSS_PINFILE"
    assert_line "$RUN_OUT" '^< *0> ec +[0-9a-f]{40} +login:nss self$' "certutil -K after certutil -S" '^<'
    ok pk11 --read-object --type cert --label "nss self" -o "$TEST_TMP/self.der"
    ok openssl x509 -inform der -in "$TEST_TMP/self.der" -noout -subject
    assert_contains "$RUN_OUT" "subject=CN = NSS Self" "subject of the certificate certutil -S stored"
    # Self-signed by the token key: openssl checks the signature against its own public key.
    openssl x509 -inform der -in "$TEST_TMP/self.der" -out "$TEST_TMP/self.pem"
    ok openssl verify -CAfile "$TEST_TMP/self.pem" "$TEST_TMP/self.pem"
    local id
    id=$(cert_key_id "$TEST_TMP/self.pem")
    ok pk11 --login --pin "$USER_PIN" -O --type privkey
    assert_line "$RUN_OUT" "^ +ID: +$id\$" "the token key's CKA_ID is the certificate's key hash" 'ID:'
}

test_nss_pk12util_imports_a_pkcs12_into_the_token() {
    nss_setup
    make_cert p12user "/CN=P12 User"
    ok openssl pkcs12 -export -in "$CERTS/p12user.pem" -inkey "$CERTS/p12user.key" -name "p12 user" \
        -passout pass:p12secret -out "$TEST_TMP/user.p12"
    echo p12secret >"$TEST_TMP/p12pass.txt"
    ok pk12util -i "$TEST_TMP/user.p12" -d "$NSSDB" -h "$TOKEN_LABEL" -k "$NSS_PINFILE" -w "$TEST_TMP/p12pass.txt"
    assert_contains "$RUN_OUT" "PKCS12 IMPORT SUCCESSFUL" "pk12util -i into the token"
    assert_eq "login:p12 user" "$(nss_certs)" "certificates on the token after pk12util -i"
    ok pk11 --read-object --type cert --label "p12 user" -o "$TEST_TMP/read.der"
    assert_same_file "$CERTS/p12user.der" "$TEST_TMP/read.der" "certificate pk12util imported"
    # The key is on the token (private, so only with the PIN), under the certificate's ID.
    local id
    id=$(cert_key_id "$CERTS/p12user.pem")
    ok pk11 --login --pin "$USER_PIN" -O --type privkey
    assert_line "$RUN_OUT" "^ +ID: +$id\$" "CKA_ID of the key pk12util imported" 'ID:'
    # Nothing went to NSS's own database instead.
    ok certutil -L -d "$NSSDB"
    assert_not_contains "$RUN_OUT" "p12 user" "NSS's internal database after pk12util -i -h login"
    # The imported key signs: pkcs11-tool signs with it and openssl verifies.
    head -c 500 /dev/urandom >"$TEST_TMP/data"
    ok pk11 --login --pin "$USER_PIN" --sign --id "$id" -m ECDSA-SHA256 --signature-format openssl \
        -i "$TEST_TMP/data" -o "$TEST_TMP/data.sig"
    openssl x509 -in "$CERTS/p12user.pem" -noout -pubkey >"$TEST_TMP/p12user.pub"
    ok openssl dgst -sha256 -verify "$TEST_TMP/p12user.pub" -signature "$TEST_TMP/data.sig" "$TEST_TMP/data"
}

test_nss_vfychain_builds_a_chain_through_an_intermediate_only_the_token_holds() {
    nss_setup
    cat >"$TEST_TMP/ext.cnf" <<'EOF'
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[leaf]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:leaf.example
authorityKeyIdentifier = keyid
EOF
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=Chain Root" -days 30 \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
        -keyout "$CERTS/root.key" -out "$CERTS/root.pem" 2>/dev/null
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=Chain Intermediate" \
        -keyout "$CERTS/int.key" -out "$CERTS/int.csr" 2>/dev/null
    openssl x509 -req -in "$CERTS/int.csr" -CA "$CERTS/root.pem" -CAkey "$CERTS/root.key" -set_serial 2 \
        -days 30 -extfile "$TEST_TMP/ext.cnf" -extensions ca -out "$CERTS/int.pem" 2>/dev/null
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=leaf.example" \
        -keyout "$CERTS/leaf.key" -out "$CERTS/leaf.csr" 2>/dev/null
    openssl x509 -req -in "$CERTS/leaf.csr" -CA "$CERTS/int.pem" -CAkey "$CERTS/int.key" -set_serial 3 \
        -days 30 -extfile "$TEST_TMP/ext.cnf" -extensions leaf -out "$CERTS/leaf.pem" 2>/dev/null

    # Before the intermediate is on the token, NSS cannot find the leaf's issuer.
    nss_refused vfychain -d "$NSSDB" -pp -u 1 -a "$CERTS/leaf.pem" -t -a "$CERTS/root.pem"
    assert_contains "$RUN_OUT" "issuer is not recognized" "vfychain before the intermediate is stored"
    ok pk11 --write-object "$CERTS/int.pem" --type cert --label intermediate
    ok vfychain -d "$NSSDB" -pp -v -u 1 -a "$CERTS/leaf.pem" -t -a "$CERTS/root.pem"
    assert_contains "$RUN_OUT" "Chain is good!" "vfychain with the intermediate on the token"
    assert_contains "$RUN_OUT" 'Subject: "CN=Chain Intermediate"' "the chain vfychain built"
}
