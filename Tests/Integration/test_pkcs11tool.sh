# pkcs11-tool (OpenSC) against the module: the token, object round trips with
# no login, deletion, digests and random numbers.

# p11 ARGS...: pkcs11-tool on the module's token; output in $RUN_OUT, must succeed.
p11() {
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" --token-label "$TOKEN_LABEL" "$@"
}

test_pkcs11tool_shows_one_slot_with_the_login_token() {
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" -L
    assert_eq 1 "$(grep -cE '^Slot [0-9]+' <<<"$RUN_OUT" || true)" "number of slots pkcs11-tool -L shows"
    assert_line "$RUN_OUT" '^ +token label +: login$' "token label in pkcs11-tool -L" 'token label'
    assert_line "$RUN_OUT" '^ +token manufacturer +: p11keychain$' "token manufacturer in pkcs11-tool -L" 'token manufacturer'
    assert_line "$RUN_OUT" '^ +token flags +:.*token initialized' "token flags in pkcs11-tool -L" 'token flags'
    # Certificates need no PIN: a fresh token must not demand a login.
    local flags
    flags=$(grep -E '^ +token flags' <<<"$RUN_OUT")
    assert_not_contains "$flags" "login required" "token flags of a fresh token"
    assert_not_contains "$flags" "readonly" "token flags of a fresh, writable store"
}

test_pkcs11tool_reads_back_a_written_certificate_byte_for_byte() {
    local subject="/CN=Frank Example/O=p11keychain tests"
    make_cert frank "$subject"
    p11 --write-object "$CERTS/frank.der" --type cert --label "frank cert"
    p11 --read-object --type cert --label "frank cert" -o "$TEST_TMP/read.der"
    assert_same_file "$CERTS/frank.der" "$TEST_TMP/read.der" "certificate read back by pkcs11-tool"
}

test_pkcs11tool_lists_certificates_with_attributes_derived_from_the_der() {
    local subject="/CN=Grace Example/O=p11keychain tests" id serial
    make_cert grace "$subject"
    id=$(cert_key_id "$CERTS/grace.pem")
    serial=$(openssl x509 -in "$CERTS/grace.pem" -noout -serial | cut -d= -f2)
    # pkcs11-tool sends no CKA_ID: the module derives it from the public key.
    p11 --write-object "$CERTS/grace.der" --type cert --label "grace"
    head -c 100 /dev/urandom >"$TEST_TMP/blob"
    p11 --write-object "$TEST_TMP/blob" --type data --label "some data"

    p11 -O
    assert_contains "$RUN_OUT" "Certificate Object; type = X.509 cert" "pkcs11-tool -O"
    assert_line "$RUN_OUT" '^ +label: +grace$' "certificate label in pkcs11-tool -O" 'label:'
    assert_contains "$RUN_OUT" "DN: $(cert_dn "$subject")" "certificate subject in pkcs11-tool -O"
    assert_line "$RUN_OUT" "^ +ID: +$id\$" \
        "derived certificate ID (SHA-1 of the public key) in pkcs11-tool -O" 'ID:|label:'
    assert_line "$RUN_OUT" "^ +serial: +$serial\$" "certificate serial number in pkcs11-tool -O" 'serial:'
    assert_contains "$RUN_OUT" "Data object" "pkcs11-tool -O"
    assert_line "$RUN_OUT" "^ +label: +'some data'\$" "data object label in pkcs11-tool -O" 'label:'
}

test_pkcs11tool_reads_back_a_written_data_object() {
    head -c 3000 /dev/urandom >"$TEST_TMP/blob"
    p11 --write-object "$TEST_TMP/blob" --type data --label "D1"
    p11 --read-object --type data --label "D1" -o "$TEST_TMP/blob.read"
    assert_same_file "$TEST_TMP/blob" "$TEST_TMP/blob.read" "data object read back by pkcs11-tool"
}

test_pkcs11tool_delete_removes_objects() {
    make_cert heidi "/CN=Heidi Example"
    make_cert ivan "/CN=Ivan Example"
    p11 --write-object "$CERTS/heidi.der" --type cert --label "heidi"
    p11 --write-object "$CERTS/ivan.der" --type cert --label "ivan"
    echo "payload" >"$TEST_TMP/blob"
    p11 --write-object "$TEST_TMP/blob" --type data --label "D2"

    p11 --delete-object --type cert --label "heidi"
    p11 --delete-object --type data --label "D2"
    p11 -O
    assert_no_line "$RUN_OUT" '^ +label: +heidi$' "pkcs11-tool -O after deleting certificate heidi"
    assert_no_line "$RUN_OUT" "^ +label: +'D2'\$" "pkcs11-tool -O after deleting data object D2"
    assert_line "$RUN_OUT" '^ +label: +ivan$' "pkcs11-tool -O after deleting another certificate"
    refused pkcs11-tool --module "$P11KEYCHAIN_MODULE" --token-label "$TOKEN_LABEL" \
        --read-object --type cert --label "heidi" -o "$TEST_TMP/gone.der"
}

test_pkcs11tool_digests_match_openssl() {
    # Larger than one pkcs11-tool read buffer, so the digest is multi-part.
    head -c 100000 /dev/urandom >"$TEST_TMP/input"
    local mech alg
    for mech in SHA-1:sha1 SHA224:sha224 SHA256:sha256 SHA384:sha384 SHA512:sha512; do
        alg=${mech#*:}
        mech=${mech%%:*}
        p11 --hash -m "$mech" -i "$TEST_TMP/input" -o "$TEST_TMP/$alg.p11"
        openssl dgst -"$alg" -binary -out "$TEST_TMP/$alg.openssl" "$TEST_TMP/input"
        assert_same_file "$TEST_TMP/$alg.openssl" "$TEST_TMP/$alg.p11" "pkcs11-tool --hash -m $mech"
    done
}

test_pkcs11tool_generates_random_bytes() {
    p11 --generate-random 32 -o "$TEST_TMP/r1"
    p11 --generate-random 32 -o "$TEST_TMP/r2"
    assert_eq 32 "$(stat -c %s "$TEST_TMP/r1")" "bytes from pkcs11-tool --generate-random 32"
    if cmp -s "$TEST_TMP/r1" "$TEST_TMP/r2"; then
        fail "two calls of --generate-random 32 returned the same bytes: $(xxd -p "$TEST_TMP/r1" | tr -d '\n')"
    fi
}
