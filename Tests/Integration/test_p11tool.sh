# p11tool (GnuTLS) against the module: a public certificate is written, listed,
# exported and deleted with no PIN and no login (GNUTLS_PIN is unset and
# --batch forbids prompting, so any PIN request fails the test).

TOKEN_URL="pkcs11:token=$TOKEN_LABEL"

# p11tool_write NAME LABEL: writes $CERTS/NAME.pem to the token as a public certificate.
p11tool_write() {
    ok p11tool --provider "$P11KEYCHAIN_MODULE" --batch --write --no-mark-private \
        --load-certificate "$CERTS/$1.pem" --label "$2" "$TOKEN_URL"
}

# p11tool_list_certs [URL]: the certificates p11tool lists, in $RUN_OUT.
p11tool_list_certs() {
    ok p11tool --provider "$P11KEYCHAIN_MODULE" --batch --list-all-certs "${1:-$TOKEN_URL}"
}

# listed_ids: the "ID:" values of the last listing, without colons.
listed_ids() {
    sed -nE 's/^[[:space:]]*ID: //p' <<<"$RUN_OUT" | tr -d ':'
}

test_p11tool_lists_a_written_certificate_with_its_label_subject_and_id() {
    local subject="/CN=Alice Example/O=p11keychain tests" id
    make_cert alice "$subject"
    p11tool_write alice "alice cert"

    p11tool_list_certs
    assert_contains "$RUN_OUT" "Label: alice cert" "p11tool --list-all-certs after --write"
    assert_contains "$RUN_OUT" "object=alice%20cert;type=cert" "URL in the p11tool listing"
    id=$(cert_key_id "$CERTS/alice.pem")
    assert_eq "$id" "$(listed_ids)" "ID listed by p11tool (SHA-1 of the certificate's public key)"

    # Finding by ID, as p11tool does to pair a certificate with its key.
    p11tool_list_certs "$TOKEN_URL;id=$(sed 's/../%&/g' <<<"$id")"
    assert_contains "$RUN_OUT" "Label: alice cert" "p11tool --list-all-certs filtered by id"

    # p11tool prints no subject; pkcs11-tool shows the module's CKA_SUBJECT.
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" --token-label "$TOKEN_LABEL" -O --type cert
    assert_contains "$RUN_OUT" "DN: $(cert_dn "$subject")" "subject of the certificate written by p11tool"
}

test_p11tool_exports_the_same_der_that_was_written() {
    make_cert bob "/CN=Bob Example"
    p11tool_write bob "bob"

    ok p11tool --provider "$P11KEYCHAIN_MODULE" --batch --export "$TOKEN_URL;object=bob;type=cert" \
        --outfile "$TEST_TMP/exported.pem"
    ok openssl x509 -in "$TEST_TMP/exported.pem" -outform der -out "$TEST_TMP/exported.der"
    assert_same_file "$CERTS/bob.der" "$TEST_TMP/exported.der" "DER exported by p11tool --export"
}

test_p11tool_delete_removes_only_the_named_certificate() {
    make_cert carol "/CN=Carol Example"
    make_cert dave "/CN=Dave Example"
    p11tool_write carol "carol"
    p11tool_write dave "dave"

    ok p11tool --provider "$P11KEYCHAIN_MODULE" --batch --delete "$TOKEN_URL;object=carol;type=cert"
    p11tool_list_certs
    assert_not_contains "$RUN_OUT" "Label: carol" "p11tool --list-all-certs after deleting carol"
    assert_contains "$RUN_OUT" "Label: dave" "p11tool --list-all-certs after deleting carol"
    assert_eq 1 "$(cert_count)" "number of certificates after deleting one of two"
}

test_p11tool_refuses_to_store_the_same_certificate_twice() {
    make_cert erin "/CN=Erin Example"
    p11tool_write erin "erin"

    # Same issuer and serial under another label: the uniqueness rule refuses it.
    refused p11tool --provider "$P11KEYCHAIN_MODULE" --batch --write --no-mark-private \
        --load-certificate "$CERTS/erin.pem" --label "erin again" "$TOKEN_URL"
    p11tool_list_certs
    assert_not_contains "$RUN_OUT" "Label: erin again" "listing after writing a duplicate"
    assert_eq 1 "$(cert_count)" "number of certificates after writing one twice"
}
