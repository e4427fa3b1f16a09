# curl (Debian 12: 7.88, OpenSSL backend) authenticates to a TLS server with a
# client certificate and key on the token, through OpenSSL's PKCS#11 engine
# (libp11 0.4.12, engine id "pkcs11"): `--engine pkcs11 --cert-type ENG
# --cert pkcs11:… --key-type ENG --key pkcs11:…`. The server
# (client_lib.sh) accepts the connection only if the token signed the
# handshake; TLS 1.3 and 1.2, EC and RSA keys, the PIN in the key's URL
# (pin-value) or in curl's --pass, the engine configured in an openssl.cnf or
# reaching the module through p11-kit's proxy.

source "$IT_DIR/client_lib.sh"

# curl_identity TYPE LABEL: a key pair on the token, its self-signed
# certificate (made through the engine) in $TEST_TMP/LABEL.pem and on the token.
curl_identity() {
    init_pins
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type "$1" --label "$2"
    engine_self_signed "$2" "$TEST_TMP/$2.pem"
    store_client_cert "$2" "$TEST_TMP/$2.pem"
}

# curl_get VERSION ARGS...: curl to the server with TLS exactly VERSION (1.2
# or 1.3) and the client credentials ARGS; the server's page in $PAGE.
curl_get() {
    local version=$1
    shift
    rm -f "$TEST_TMP/page.html"
    ok timeout 60 curl -sS --tlsv"$version" --tls-max "$version" --cacert "$CERTS/server.pem" \
        "$@" -o "$TEST_TMP/page.html" "https://127.0.0.1:$PORT/"
    PAGE=$(cat "$TEST_TMP/page.html")
}

# engine_args LABEL PIN_QUERY: curl's options that take the certificate and
# key LABEL from the token through the engine; PIN_QUERY is appended to the
# key's URL (";pin-value=…", or empty).
engine_args() {
    ENGINE_ARGS=(--engine pkcs11 --cert-type ENG --cert "$(cert_url "$1")"
        --key-type ENG --key "$(private_url "$1")$2")
}

test_curl_authenticates_with_the_tokens_ec_key_over_tls13_and_tls12() {
    local conf
    curl_identity EC:prime256v1 curl-ec
    conf=$(engine_conf)
    export OPENSSL_CONF=$conf
    start_verifying_server "$TEST_TMP/curl-ec.pem"
    engine_args curl-ec ";pin-value=$USER_PIN"
    curl_get 1.3 "${ENGINE_ARGS[@]}" </dev/null
    assert_accepted_client "$PAGE" curl-ec 1.3 ECDSA
    curl_get 1.2 "${ENGINE_ARGS[@]}" </dev/null
    assert_accepted_client "$PAGE" curl-ec 1.2 ECDSA
    stop_verifying_server
}

test_curl_authenticates_with_the_tokens_rsa_key_and_the_pin_from_pass() {
    local conf
    curl_identity rsa:2048 curl-rsa
    conf=$(engine_conf)
    export OPENSSL_CONF=$conf
    start_verifying_server "$TEST_TMP/curl-rsa.pem"
    # curl hands --pass to the engine, which logs in with it.
    engine_args curl-rsa ""
    curl_get 1.3 "${ENGINE_ARGS[@]}" --pass "$USER_PIN" </dev/null
    assert_accepted_client "$PAGE" curl-rsa 1.3 RSA-PSS
    curl_get 1.2 "${ENGINE_ARGS[@]}" --pass "$USER_PIN" </dev/null
    assert_accepted_client "$PAGE" curl-rsa 1.2 RSA-PSS
    stop_verifying_server

    # A server that asks for PKCS#1 v1.5 client signatures (TLS 1.2 only).
    start_verifying_server "$TEST_TMP/curl-rsa.pem" -client_sigalgs RSA+SHA256
    curl_get 1.2 "${ENGINE_ARGS[@]}" --pass "$USER_PIN" </dev/null
    assert_accepted_client "$PAGE" curl-rsa 1.2 RSA
    stop_verifying_server
}

test_curl_without_the_pin_or_with_a_wrong_one_gets_no_connection_and_the_token_counts_it() {
    curl_identity EC:prime256v1 curl-pin
    export OPENSSL_CONF
    OPENSSL_CONF=$(engine_conf)
    start_verifying_server "$TEST_TMP/curl-pin.pem"
    engine_args curl-pin ""
    # No PIN and no terminal: the engine's prompt reads nothing.
    refused timeout 60 curl -sS --cacert "$CERTS/server.pem" "${ENGINE_ARGS[@]}" \
        -o "$TEST_TMP/page.html" "https://127.0.0.1:$PORT/" </dev/null
    assert_contains "$RUN_OUT" "failed to load private key" "curl with no PIN"
    assert_no_flag "user PIN count low" "after a connection attempt with no PIN"

    engine_args curl-pin ";pin-value=9999"
    refused timeout 60 curl -sS --cacert "$CERTS/server.pem" "${ENGINE_ARGS[@]}" \
        -o "$TEST_TMP/page.html" "https://127.0.0.1:$PORT/" </dev/null
    [[ ! -s $TEST_TMP/page.html ]] || fail "curl got the server's page with a wrong PIN"
    assert_flag "user PIN count low" "after curl's login with a wrong PIN"
    stop_verifying_server
}

test_curl_reaches_a_p11kit_registered_token_with_no_engine_configuration() {
    protect_etc_pkcs11
    curl_identity EC:prime256v1 curl-proxy
    ok "$IT_REPO/scripts/register-module.sh" --system "$P11KEYCHAIN_MODULE"
    start_verifying_server "$TEST_TMP/curl-proxy.pem"
    # No openssl.cnf naming the module: libp11 loads p11-kit-proxy.so, which
    # loads the registered module. With no --engine either, curl 7.88 picks
    # the engine "pkcs11" itself for pkcs11: URLs.
    unset OPENSSL_CONF
    curl_get 1.3 --cert "$(cert_url curl-proxy)" --key "$(private_url curl-proxy);pin-value=$USER_PIN" </dev/null
    assert_accepted_client "$PAGE" curl-proxy 1.3 ECDSA
    stop_verifying_server
}
