# gnutls-cli (GnuTLS 3.7.9) authenticates to a TLS server with a client
# certificate and key on the token: `--x509certfile pkcs11:…
# --x509keyfile pkcs11:…`, the PIN from GNUTLS_PIN, the module given with
# --provider or registered with p11-kit. The server (client_lib.sh) accepts the
# connection only if the token signed the handshake. The certificates are made
# by certtool with the token's key, so no OpenSSL engine is involved: GnuTLS
# uses Ed25519 keys on the token, which libp11 0.4.12 cannot (test_openssl.sh).

source "$IT_DIR/client_lib.sh"

# gnutls_identity TYPE LABEL: a key pair on the token and a self-signed
# certificate "CN=LABEL" that certtool signs with it, in $TEST_TMP/LABEL.pem
# and on the token.
gnutls_identity() {
    init_pins
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type "$1" --label "$2"
    printf 'cn = %s\nexpiration_days = 30\nsigning_key\ntls_www_client\n' "$2" >"$TEST_TMP/$2.tmpl"
    ok env GNUTLS_PIN="$USER_PIN" certtool --provider "$P11KEYCHAIN_MODULE" --generate-self-signed \
        --load-privkey "$(private_url "$2")" --load-pubkey "pkcs11:token=$TOKEN_LABEL;object=$2;type=public" \
        --template "$TEST_TMP/$2.tmpl" --outfile "$TEST_TMP/$2.pem"
    ok openssl verify -CAfile "$TEST_TMP/$2.pem" "$TEST_TMP/$2.pem"
    store_client_cert "$2" "$TEST_TMP/$2.pem"
}

# gnutls_get VERSION ARGS...: gnutls-cli to the server with TLS exactly
# VERSION (1.2 or 1.3), the server's certificate as CA, one HTTP request;
# the server's answer in $PAGE.
gnutls_get() {
    local version=$1
    shift
    printf 'GET / HTTP/1.0\r\n\r\n' >"$TEST_TMP/request"
    ok timeout 60 gnutls-cli --priority "NORMAL:-VERS-ALL:+VERS-TLS$version" \
        --x509cafile "$CERTS/server.pem" -p "$PORT" "$@" 127.0.0.1 <"$TEST_TMP/request"
    PAGE=$RUN_OUT
}

# token_args LABEL: gnutls-cli's options for the certificate and key LABEL on
# the token through the module under test.
token_args() {
    TOKEN_ARGS=(--provider "$P11KEYCHAIN_MODULE" --x509certfile "$(cert_url "$1")"
        --x509keyfile "$(private_url "$1")")
}

test_gnutls_cli_authenticates_with_the_tokens_ec_key_over_tls13_and_tls12() {
    gnutls_identity EC:prime256v1 gnutls-ec
    start_verifying_server "$TEST_TMP/gnutls-ec.pem"
    token_args gnutls-ec
    export GNUTLS_PIN=$USER_PIN
    gnutls_get 1.3 "${TOKEN_ARGS[@]}"
    assert_accepted_client "$PAGE" gnutls-ec 1.3 ECDSA
    gnutls_get 1.2 "${TOKEN_ARGS[@]}"
    assert_accepted_client "$PAGE" gnutls-ec 1.2 ECDSA
    stop_verifying_server
}

test_gnutls_cli_authenticates_with_the_tokens_rsa_key_with_pss_and_pkcs1_signatures() {
    gnutls_identity rsa:2048 gnutls-rsa
    start_verifying_server "$TEST_TMP/gnutls-rsa.pem"
    token_args gnutls-rsa
    export GNUTLS_PIN=$USER_PIN
    gnutls_get 1.3 "${TOKEN_ARGS[@]}"
    assert_accepted_client "$PAGE" gnutls-rsa 1.3 RSA-PSS
    gnutls_get 1.2 "${TOKEN_ARGS[@]}"
    assert_accepted_client "$PAGE" gnutls-rsa 1.2 RSA-PSS
    stop_verifying_server

    # A server that asks for PKCS#1 v1.5 client signatures (TLS 1.2 only).
    start_verifying_server "$TEST_TMP/gnutls-rsa.pem" -client_sigalgs RSA+SHA256
    gnutls_get 1.2 "${TOKEN_ARGS[@]}"
    assert_accepted_client "$PAGE" gnutls-rsa 1.2 RSA
    stop_verifying_server
}

test_gnutls_cli_authenticates_with_the_tokens_ed25519_key() {
    gnutls_identity EC:edwards25519 gnutls-ed
    start_verifying_server "$TEST_TMP/gnutls-ed.pem"
    token_args gnutls-ed
    export GNUTLS_PIN=$USER_PIN
    gnutls_get 1.3 "${TOKEN_ARGS[@]}"
    assert_accepted_client "$PAGE" gnutls-ed 1.3 ed25519
    gnutls_get 1.2 "${TOKEN_ARGS[@]}"
    assert_accepted_client "$PAGE" gnutls-ed 1.2 ed25519
    stop_verifying_server
}

test_gnutls_cli_with_a_wrong_pin_gets_no_connection_and_the_token_counts_it() {
    gnutls_identity EC:prime256v1 gnutls-pin
    start_verifying_server "$TEST_TMP/gnutls-pin.pem"
    token_args gnutls-pin
    printf 'GET / HTTP/1.0\r\n\r\n' >"$TEST_TMP/request"
    GNUTLS_PIN=9999 refused timeout 60 gnutls-cli --x509cafile "$CERTS/server.pem" -p "$PORT" \
        "${TOKEN_ARGS[@]}" 127.0.0.1 <"$TEST_TMP/request"
    assert_no_line "$RUN_OUT" '^Client certificate' "gnutls-cli with a wrong PIN"
    assert_flag "user PIN count low" "after gnutls-cli's login with a wrong PIN"
    stop_verifying_server
}

test_gnutls_cli_finds_a_p11kit_registered_token_with_no_provider() {
    protect_etc_pkcs11
    gnutls_identity EC:prime256v1 gnutls-proxy
    ok "$IT_REPO/scripts/register-module.sh" --system "$P11KEYCHAIN_MODULE"
    start_verifying_server "$TEST_TMP/gnutls-proxy.pem"
    # The PIN as the URL's pin-value this time (RFC 7512 section 2.3), no GNUTLS_PIN.
    gnutls_get 1.3 --x509certfile "$(cert_url gnutls-proxy)" \
        --x509keyfile "$(private_url gnutls-proxy);pin-value=$USER_PIN"
    assert_accepted_client "$PAGE" gnutls-proxy 1.3 ECDSA
    stop_verifying_server
}
