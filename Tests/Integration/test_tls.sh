# TLS with the key on the token: `openssl s_server` loads its private key
# through the libp11 engine, `openssl s_client` on 127.0.0.1 completes the
# handshake (certificate verified: "Verify return code: 0 (ok)") and gets the
# server's HTTP answer. TLS 1.3 signs with RSA-PSS, TLS 1.2 with ECDSA and
# with RSA PKCS#1 v1.5: each handshake signature is made by the token.

# start_server LABEL CERT [S_SERVER ARGS...]: s_server on a free port of
# 127.0.0.1 (it picks it: -accept 127.0.0.1:0); $SERVER_PID and $PORT.
start_server() {
    local label=$1 cert=$2 out=$TEST_TMP/server.out conf
    shift 2
    conf=$(engine_conf)
    OPENSSL_CONF=$conf timeout 120 openssl s_server -engine pkcs11 -keyform engine \
        -key "$(key_url "$label")" -cert "$cert" -accept 127.0.0.1:0 -www "$@" \
        </dev/null >"$out" 2>&1 &
    SERVER_PID=$!
    defer "kill $SERVER_PID 2>/dev/null || true"
    wait_for_s_server_port "$out" "$SERVER_PID"
    note "s_server (pid $SERVER_PID) listens on 127.0.0.1:$PORT"
}

# stop_server: the server must still be running (it survived the handshake).
stop_server() {
    kill -0 "$SERVER_PID" 2>/dev/null ||
        fail "openssl s_server exited during the test: $(summarize "$(cat "$TEST_TMP/server.out")")"
    kill "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
}

# connect CERT [S_CLIENT ARGS...]: a handshake that verifies the server's
# certificate against CERT, then an HTTP request; output in $RUN_OUT.
connect() {
    local cert=$1
    shift
    printf 'GET / HTTP/1.0\r\n\r\n' >"$TEST_TMP/request"
    ok timeout 30 openssl s_client -connect "127.0.0.1:$PORT" -CAfile "$cert" -verify_return_error \
        -ign_eof "$@" <"$TEST_TMP/request"
    assert_contains "$RUN_OUT" "Verify return code: 0 (ok)" "s_client's verification of the server certificate"
    assert_line "$RUN_OUT" '^HTTP/1\.0 200 ok' "HTTP answer of s_server -www" 'HTTP'
}

# token_identity TYPE LABEL: a key pair on the token and its certificate
# (made through the engine) in $TEST_TMP/LABEL.pem.
token_identity() {
    init_pins
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type "$1" --label "$2"
    engine_self_signed "$2" "$TEST_TMP/$2.pem"
}

test_tls13_handshake_signed_by_the_tokens_rsa_key() {
    token_identity rsa:2048 tls-rsa
    start_server tls-rsa "$TEST_TMP/tls-rsa.pem"
    connect "$TEST_TMP/tls-rsa.pem" -tls1_3
    assert_line "$RUN_OUT" 'Protocol *: TLSv1\.3' "protocol negotiated" 'Protocol'
    assert_contains "$RUN_OUT" "Peer signature type: RSA-PSS" "signature of the TLS 1.3 handshake"
    # A second client on the same server: the key stays usable.
    connect "$TEST_TMP/tls-rsa.pem" -tls1_3
    stop_server
}

test_tls12_handshake_signed_by_the_tokens_ec_key() {
    token_identity EC:prime256v1 tls-ec
    start_server tls-ec "$TEST_TMP/tls-ec.pem"
    connect "$TEST_TMP/tls-ec.pem" -tls1_2
    assert_line "$RUN_OUT" 'Protocol *: TLSv1\.2' "protocol negotiated" 'Protocol'
    assert_contains "$RUN_OUT" "Peer signature type: ECDSA" "signature of the TLS 1.2 handshake"
    stop_server
}

test_tls12_handshake_with_an_rsa_pkcs1_signature_from_the_token() {
    token_identity rsa:2048 tls-pkcs1
    start_server tls-pkcs1 "$TEST_TMP/tls-pkcs1.pem"
    connect "$TEST_TMP/tls-pkcs1.pem" -tls1_2 -sigalgs RSA+SHA256
    assert_line "$RUN_OUT" 'Protocol *: TLSv1\.2' "protocol negotiated" 'Protocol'
    assert_line "$RUN_OUT" '^Peer signature type: RSA$' "signature of the TLS 1.2 handshake (PKCS#1 v1.5)" 'Peer signature'
    stop_server
}

test_tls_client_refuses_a_server_whose_certificate_it_does_not_trust() {
    token_identity EC:prime256v1 tls-untrusted
    make_cert other "/CN=Some Other CA"
    start_server tls-untrusted "$TEST_TMP/tls-untrusted.pem"
    refused timeout 30 openssl s_client -connect "127.0.0.1:$PORT" -CAfile "$CERTS/other.pem" \
        -verify_return_error </dev/null
    assert_line "$RUN_OUT" 'verify error|certificate verify failed' "s_client with another CA" 'verify'
    stop_server
}
