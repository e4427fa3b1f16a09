# Helpers for the client-certificate tests (test_curl.sh, test_gnutls.sh);
# sourced by them after lib.sh, never run. Not named test_*.sh, so run.sh does
# not look for tests in it.
#
# The server is `openssl s_server -Verify 1` with a software key: it demands a
# client certificate and ends the handshake unless that certificate verifies
# against the one CA file it trusts (the token's self-signed client
# certificate) and the client proves it holds the key, i.e. the token signed
# the handshake (CertificateVerify, RFC 8446 section 4.4.3; RFC 5246 section
# 7.4.8). Its -www page then shows the client certificate it accepted, the
# protocol and the client's signature type ("Peer signature type").

# store_client_cert LABEL PEM: the certificate PEM stored on the token under
# LABEL (pkcs11-tool sends no CKA_ID: the module gives it its key's ID).
store_client_cert() {
    openssl x509 -in "$2" -outform der -out "$TEST_TMP/$1.der"
    ok pk11 --login --pin "$USER_PIN" --write-object "$TEST_TMP/$1.der" --type cert --label "$1"
}

# cert_url LABEL / private_url LABEL: RFC 7512 URLs of the token's certificate
# and private key LABEL, without a PIN (the clients take it separately).
cert_url() { echo "pkcs11:token=$TOKEN_LABEL;object=$1;type=cert"; }
private_url() { echo "pkcs11:token=$TOKEN_LABEL;object=$1;type=private"; }

# start_verifying_server CLIENT_CA [S_SERVER ARGS...]: s_server on a free port
# of 127.0.0.1 (-accept 127.0.0.1:0: it picks the port), with a P-256 key in a
# file and a certificate for IP 127.0.0.1 ($CERTS/server.pem, the clients' CA
# file), trusting only CLIENT_CA for client certificates; $SERVER_PID, $PORT.
start_verifying_server() {
    local client_ca=$1 out=$TEST_TMP/server.out
    shift
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
        -addext subjectAltName=IP:127.0.0.1 -days 30 -keyout "$CERTS/server.key" \
        -out "$CERTS/server.pem" 2>/dev/null || fail "openssl req could not make the server certificate"
    # The server keeps its key in a file: no engine configuration a test exported.
    env -u OPENSSL_CONF timeout 120 openssl s_server -accept 127.0.0.1:0 -key "$CERTS/server.key" -cert "$CERTS/server.pem" \
        -Verify 1 -verify_return_error -CAfile "$client_ca" -www "$@" </dev/null >"$out" 2>&1 &
    SERVER_PID=$!
    defer "kill $SERVER_PID 2>/dev/null || true"
    wait_for_s_server_port "$out" "$SERVER_PID"
    note "s_server (pid $SERVER_PID) listens on 127.0.0.1:$PORT, trusting $(basename "$client_ca")"
}

# stop_verifying_server: the server must still be running (a client's failed
# handshake ends that connection, never the server).
stop_verifying_server() {
    kill -0 "$SERVER_PID" 2>/dev/null ||
        fail "openssl s_server exited during the test: $(summarize "$(cat "$TEST_TMP/server.out")")"
    kill "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
}

# assert_accepted_client PAGE LABEL PROTOCOL SIGNATURE: s_server's -www PAGE
# shows the client certificate CN=LABEL, TLS version PROTOCOL (1.2 or 1.3) and
# the client's handshake signature SIGNATURE (as s_server names it: ECDSA,
# RSA-PSS, RSA, ed25519).
assert_accepted_client() {
    assert_line "$1" '^Client certificate' "s_server's page: a client certificate was accepted" 'certificate'
    assert_line "$1" "^ +Subject: CN ?= ?$2\$" "subject of the client certificate s_server accepted" 'Subject'
    assert_line "$1" "^ +Protocol +: TLSv${3//./\\.}\$" "protocol of the connection" 'Protocol'
    assert_line "$1" "^Peer signature type: $4\$" "the client's handshake signature" 'Peer signature'
}
