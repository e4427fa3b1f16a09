# The token served by p11-kit's RPC: `p11-kit server` on a Unix socket with
# p11-kit-client.so on the other end, and `p11-kit remote` over a pipe (a
# module registered with "remote: |command"). The client side never loads
# our module: every call crosses p11-kit's RPC protocol.
# run.sh: alone: it registers a module in /etc/pkcs11/modules and installs one under /usr/lib.

# start_server SOCKET URI: start_p11kit_server (lib.sh), and the clients of
# this test talk to it.
start_server() {
    start_p11kit_server "$1" "$2"
    export P11_KIT_SERVER_ADDRESS="unix:path=$1"
}

# client ARGS...: pkcs11-tool through p11-kit-client.so.
client() { pkcs11-tool --module "$P11KIT_CLIENT" "$@"; }

# token_with_key_and_certificate: a user PIN, an EC P-256 key pair "web" (id 01)
# and a certificate "served-cert".
token_with_key_and_certificate() {
    init_pins
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --label web --id 01
    make_cert served-cert "/CN=served-cert"
    ok pk11 --write-object "$CERTS/served-cert.der" --type cert --label served-cert
}

# assert_remote_ecdsa_signature WHAT: signs a SHA-256 digest with key 01
# through the client (CKM_ECDSA: p11-kit 0.24's RPC does not carry
# CKM_ECDSA_SHA256) and verifies it in software with the public key read
# directly from the module.
assert_remote_ecdsa_signature() {
    printf 'signed through p11-kit server' >"$TEST_TMP/data"
    openssl dgst -sha256 -binary -out "$TEST_TMP/digest" "$TEST_TMP/data"
    ok client --login --pin "$USER_PIN" --sign --id 01 -m ECDSA --signature-format openssl \
        -i "$TEST_TMP/digest" -o "$TEST_TMP/sig"
    pubkey_pem 01 "$TEST_TMP/web.pub"
    assert_sha256_signature_verifies "$TEST_TMP/web.pub" "$TEST_TMP/sig" "$TEST_TMP/data" "$1"
}

test_p11kit_server_lists_the_token_and_signs_through_p11kit_client() {
    token_with_key_and_certificate
    start_server "$TEST_TMP/p11kit.sock" "pkcs11:token=$TOKEN_LABEL"

    ok client -L
    assert_line "$RUN_OUT" '^ +token label +: login$' "pkcs11-tool -L through p11-kit-client.so" 'token label'
    ok client -O
    assert_line "$RUN_OUT" '^ +label: +served-cert$' "certificate listed through p11-kit-client.so (no login)" 'label'
    ok p11tool --provider "$P11KIT_CLIENT" --batch --list-all "pkcs11:token=$TOKEN_LABEL"
    assert_line "$RUN_OUT" 'object=served-cert;type=cert' "p11tool --list-all through p11-kit-client.so" 'served-cert'
    assert_remote_ecdsa_signature "ECDSA signature made through p11-kit server, verified by openssl"
}

test_a_write_protected_export_refuses_writes() {
    token_with_key_and_certificate
    start_server "$TEST_TMP/ro.sock" "pkcs11:token=$TOKEN_LABEL?write-protected=yes"

    make_cert refused-cert "/CN=refused-cert"
    refused client --write-object "$CERTS/refused-cert.der" --type cert --label refused-cert
    # p11-kit refuses the read-write session the write needs.
    assert_contains "$RUN_OUT" "CKR_TOKEN_WRITE_PROTECTED" "a write through a write-protected export"
    # Reading and signing still work.
    assert_remote_ecdsa_signature "signing through a write-protected export"
    ok pk11 -O
    assert_not_contains "$RUN_OUT" "refused-cert" "the token after a write through a write-protected export"
}

test_p11kit_remote_serves_the_module_over_a_pipe() {
    protect_etc_pkcs11
    token_with_key_and_certificate
    mkdir -p /etc/pkcs11/modules
    # The command's environment is the client's: P11KEYCHAIN_DIR reaches the module.
    printf 'remote: |p11-kit remote %s\n' "$P11KEYCHAIN_MODULE" >/etc/pkcs11/modules/p11keychain-remote.module

    ok p11-kit list-modules
    assert_line "$RUN_OUT" '^p11keychain-remote:' "p11-kit list-modules with a remote: module" 'remote'
    ok p11tool --batch --list-all "pkcs11:token=$TOKEN_LABEL"
    assert_line "$RUN_OUT" 'object=served-cert;type=cert' "p11tool --list-all through p11-kit remote over a pipe" 'served-cert'
    # The proxy module (p11-kit-proxy.so) carries the remote module's slots.
    local proxy=/usr/lib/x86_64-linux-gnu/p11-kit-proxy.so
    printf 'signed over a pipe' >"$TEST_TMP/data"
    openssl dgst -sha256 -binary -out "$TEST_TMP/digest" "$TEST_TMP/data"
    ok pkcs11-tool --module "$proxy" --token-label "$TOKEN_LABEL" --login --pin "$USER_PIN" --sign --id 01 \
        -m ECDSA --signature-format openssl -i "$TEST_TMP/digest" -o "$TEST_TMP/sig"
    pubkey_pem 01 "$TEST_TMP/web.pub"
    assert_sha256_signature_verifies "$TEST_TMP/web.pub" "$TEST_TMP/sig" "$TEST_TMP/data" \
        "ECDSA signature made through p11-kit remote"
}

test_p11kit_rpc_carries_only_the_mechanisms_it_knows() {
    # p11-kit 0.24's RPC serializes only the mechanisms whose parameters it
    # knows; the README's p11-kit limits rest on this list.
    start_server "$TEST_TMP/mech.sock" "pkcs11:token=$TOKEN_LABEL"
    ok pk11 -M
    local direct=$RUN_OUT
    ok client -M
    local remote=$RUN_OUT
    assert_line "$direct" '^ +ECDSA-SHA256,' "direct mechanism list" 'ECDSA'
    assert_line "$remote" '^ +ECDSA,' "mechanism list through p11-kit server" 'ECDSA'
    assert_line "$remote" '^ +RSA-PKCS-PSS,' "mechanism list through p11-kit server" 'PSS'
    assert_no_line "$remote" '^ +ECDSA-SHA256,' "mechanism list through p11-kit server (p11-kit 0.24 drops it)"
    assert_no_line "$remote" '^ +EDDSA,' "mechanism list through p11-kit server (p11-kit 0.24 drops it)"
}

test_the_shipped_systemd_units_verify_and_their_command_serves_the_token() {
    local socket_unit=$IT_REPO/conf/p11keychain-server.socket service_unit=$IT_REPO/conf/p11keychain-server@.service
    mkdir -m 0700 "$TEST_TMP/run"
    # systemd-analyze needs a runtime directory for --user; it prints nothing for sound units.
    ok env XDG_RUNTIME_DIR="$TEST_TMP/run" systemd-analyze verify --user "$socket_unit" "$service_unit"
    assert_eq "" "$RUN_OUT" "systemd-analyze verify --user of the shipped units"
    assert_line "$(cat "$socket_unit")" '^Accept=yes$' "the socket unit (one p11-kit remote per connection)" 'Accept'

    # The service's command, with the module under test in place of the
    # installed one, run per connection as systemd would (stdin/stdout = the connection).
    local exec
    exec=$(sed -nE 's/^ExecStart=//p' "$service_unit")
    [[ $exec == *"/usr/lib/x86_64-linux-gnu/pkcs11/libp11keychain-pkcs11.so"* ]] ||
        fail "ExecStart of $service_unit does not name the installed module: $exec"
    exec=${exec//\/usr\/lib\/x86_64-linux-gnu\/pkcs11\/libp11keychain-pkcs11.so/$P11KEYCHAIN_MODULE}
    make_cert unit-cert "/CN=unit-cert"
    ok pk11 --write-object "$CERTS/unit-cert.der" --type cert --label unit-cert
    # systemd-socket-activate passes on only the variables named by -E (the user
    # manager gives the service HOME and XDG_*, hence the default store).
    # shellcheck disable=SC2086 # the command line is split as systemd splits it (no quotes in it)
    timeout -k 5 60 systemd-socket-activate --listen="$TEST_TMP/run/pkcs11.sock" --accept --inetd \
        -E P11KEYCHAIN_DIR -E P11KEYCHAIN_CONF $exec \
        >"$TEST_TMP/activate.log" 2>&1 &
    local pid=$!
    defer "kill $pid 2>/dev/null; wait $pid 2>/dev/null || true"
    wait_for_line "$TEST_TMP/activate.log" '^Listening on .* as [0-9]+\.$' 10 "$pid" ||
        fail "systemd-socket-activate did not listen: $(summarize "$(cat "$TEST_TMP/activate.log")")"
    export P11_KIT_SERVER_ADDRESS="unix:path=$TEST_TMP/run/pkcs11.sock"
    ok pkcs11-tool --module "$P11KIT_CLIENT" -O
    assert_line "$RUN_OUT" '^ +label: +unit-cert$' "a certificate through the units' command" 'label'
}
