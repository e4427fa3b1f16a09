# OpenSSL through the libp11 engine (engine id "pkcs11", MODULE_PATH the
# module under test, set in an openssl.cnf): `openssl req -x509` signs a
# self-signed certificate with an RSA and an EC key that never leave the
# token; `openssl x509` and `openssl verify` check the result, which holds the
# token's public key and pairs up with its key once stored on the token.
# (libp11 0.4.12, Debian 12's engine, cannot enumerate the private keys of a
# token that holds an Ed25519 key at all, SoftHSM2's included: these tokens
# hold none.)

# keypairgen_id TYPE LABEL: pkcs11-tool --keypairgen with no --id (the module
# derives CKA_ID from the public key); $KEY_ID is the ID it shows.
keypairgen_id() {
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type "$1" --label "$2"
    KEY_ID=$(sed -nE 's/^ +ID: +([0-9a-f]+)$/\1/p' <<<"$RUN_OUT" | sort -u)
    [[ $(grep -c . <<<"$KEY_ID") == 1 && ${#KEY_ID} == 40 ]] ||
        fail "expected one 20-byte ID for the public and private key $2, pkcs11-tool shows: $(tr '\n' ' ' <<<"$KEY_ID")"
}

# req_and_check TYPE LABEL SIGALG: a key pair, a certificate for it through
# the engine, and the checks on that certificate.
req_and_check() {
    local label=$2 cert=$TEST_TMP/$2.pem
    init_pins
    keypairgen_id "$1" "$label"
    engine_self_signed "$label" "$cert"

    ok openssl x509 -in "$cert" -noout -subject -text
    assert_contains "$RUN_OUT" "subject=CN = $label" "subject of the engine's certificate"
    assert_contains "$RUN_OUT" "Signature Algorithm: $3" "signature algorithm of the engine's certificate"
    ok openssl verify -CAfile "$cert" "$cert"
    assert_contains "$RUN_OUT" "$label.pem: OK" "openssl verify of the self-signed certificate"

    # The certificate holds the token's public key.
    pubkey_pem "$KEY_ID" "$TEST_TMP/token.pub"
    openssl pkey -pubin -in "$TEST_TMP/token.pub" -outform der -out "$TEST_TMP/token.pub.der"
    openssl x509 -in "$cert" -noout -pubkey | openssl pkey -pubin -outform der -out "$TEST_TMP/cert.pub.der"
    assert_same_file "$TEST_TMP/token.pub.der" "$TEST_TMP/cert.pub.der" "public key of the engine's certificate"

    # Stored on the token (pkcs11-tool sends no CKA_ID), the certificate gets
    # its key's ID: certificate and key pair up as an identity.
    openssl x509 -in "$cert" -outform der -out "$TEST_TMP/$label.der"
    ok pk11 --write-object "$TEST_TMP/$label.der" --type cert --label "$label"
    ok pk11 -O --type cert
    assert_line "$RUN_OUT" "^ +ID: +$KEY_ID\$" "ID of the stored certificate (the key's is $KEY_ID)" 'ID:'
}

test_openssl_req_self_signs_with_an_rsa_key_through_the_engine() {
    req_and_check rsa:2048 engine-rsa sha256WithRSAEncryption
}

test_openssl_req_self_signs_with_an_ec_key_through_the_engine() {
    req_and_check EC:prime256v1 engine-ec ecdsa-with-SHA256
}

test_openssl_req_through_the_engine_with_a_wrong_pin_fails_and_is_counted() {
    local conf
    init_pins
    keypairgen_id rsa:2048 wrong-pin
    conf=$(engine_conf)
    refused env OPENSSL_CONF="$conf" openssl req -new -x509 -engine pkcs11 -keyform engine \
        -key "pkcs11:token=$TOKEN_LABEL;object=wrong-pin;type=private;pin-value=9999" \
        -subj /CN=x -days 30 -out "$TEST_TMP/c.pem"
    [[ ! -s $TEST_TMP/c.pem ]] || fail "openssl req wrote a certificate with a wrong PIN"
    assert_flag "user PIN count low" "after the engine's login with a wrong PIN"
}
