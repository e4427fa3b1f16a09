# A token used from another machine (README "Using it from another machine"):
# `p11-kit server` on a Unix socket, forwarded with `ssh -R` to the client,
# where p11-kit-client.so talks to it. The client "machine" is a network
# namespace with only its own loopback, and a mount namespace in which the
# token's store and the server's socket are hidden: the forwarded socket is
# its only way to the token. sshd runs inside that namespace on its
# 127.0.0.1; the ssh that opens the forward joins it there.

# client_netns NAME: a fresh network namespace with its loopback up, removed
# when the test ends (with /run/netns, if the test made it).
client_netns() {
    if [[ ! -e /run/netns ]]; then
        defer "umount /run/netns 2>/dev/null; rmdir /run/netns 2>/dev/null || true"
    fi
    ok ip netns add "$1"
    defer "ip netns del '$1'"
    ok ip netns exec "$1" ip link set lo up
}

# start_netns_sshd NETNS PORT DIR: sshd in NETNS on 127.0.0.1:PORT with a host key
# and root's authorized key in DIR (key DIR/id), bounded and stopped by the test.
start_netns_sshd() {
    local ns=$1 port=$2 dir=$3
    ensure_run_sshd
    mkdir -p "$dir"
    ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key"
    ssh-keygen -q -t ed25519 -N '' -f "$dir/id"
    cp "$dir/id.pub" "$dir/authorized_keys"
    cat >"$dir/sshd_config" <<CONF
ListenAddress 127.0.0.1
Port $port
HostKey $dir/host_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowStreamLocalForwarding yes
StreamLocalBindUnlink yes
CONF
    timeout -k 5 120 ip netns exec "$ns" /usr/sbin/sshd -D -e -f "$dir/sshd_config" >"$dir/sshd.log" 2>&1 &
    local pid=$!
    defer "kill $pid 2>/dev/null; wait $pid 2>/dev/null || true"
    wait_for_line "$dir/sshd.log" "Server listening on 127.0.0.1 port $port" 10 "$pid" ||
        fail "sshd did not start in namespace $ns: $(summarize "$(cat "$dir/sshd.log")")"
}

test_a_client_in_another_namespace_lists_and_signs_through_a_forwarded_socket() {
    [[ $(id -u) == 0 ]] || fail "needs root for network and mount namespaces"
    init_pins
    ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type EC:prime256v1 --label remote-key --id 02
    make_cert remote-cert "/CN=remote-cert"
    ok pk11 --write-object "$CERTS/remote-cert.der" --type cert --label remote-cert
    pubkey_pem 02 "$TEST_TMP/remote-key.pub"

    # The token machine: a read-only export of the token on a Unix socket.
    local server_dir=$TEST_TMP/server client_dir=$TEST_TMP/client ns=p11k-client-$$
    mkdir -p "$server_dir" "$client_dir"
    start_p11kit_server "$server_dir/p11kit.sock" "pkcs11:token=$TOKEN_LABEL?write-protected=yes"

    # The client machine, reached over ssh; the forward puts the server's
    # socket at $client_dir/p11kit.sock there.
    client_netns "$ns"
    start_netns_sshd "$ns" 2222 "$TEST_TMP/sshd"
    timeout -k 5 120 ip netns exec "$ns" ssh -N -i "$TEST_TMP/sshd/id" -p 2222 \
        -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes \
        -o ExitOnForwardFailure=yes -R "$client_dir/p11kit.sock:$server_dir/p11kit.sock" \
        root@127.0.0.1 >"$TEST_TMP/ssh.log" 2>&1 &
    local forward=$!
    defer "kill $forward 2>/dev/null; wait $forward 2>/dev/null || true"
    wait_for_socket "$client_dir/p11kit.sock" 15 "$forward" "ssh -R ($(summarize "$(cat "$TEST_TMP/ssh.log")"))"

    printf 'signed on another machine' >"$TEST_TMP/data"
    openssl dgst -sha256 -binary -out "$client_dir/digest" "$TEST_TMP/data"
    make_cert written-remotely "/CN=written-remotely"
    cp "$CERTS/written-remotely.der" "$client_dir/"
    # On the client: no network but its loopback, the store and the server's
    # socket hidden under empty file systems, P11KEYCHAIN_DIR gone.
    cat >"$client_dir/client.sh" <<SCRIPT
set -u
mount -t tmpfs tmpfs '$server_dir' && mount -t tmpfs tmpfs '$STORE' || exit 90
[ -e '$server_dir/p11kit.sock' ] && exit 91
unset P11KEYCHAIN_DIR
export P11_KIT_SERVER_ADDRESS=unix:path=$client_dir/p11kit.sock
echo '== objects'
pkcs11-tool --module '$P11KIT_CLIENT' -O || exit 92
echo '== p11tool'
p11tool --provider '$P11KIT_CLIENT' --batch --list-all-certs || exit 93
echo '== sign'
pkcs11-tool --module '$P11KIT_CLIENT' --login --pin '$USER_PIN' --sign --id 02 -m ECDSA \
    --signature-format openssl -i '$client_dir/digest' -o '$client_dir/sig' || exit 94
echo '== write'
if pkcs11-tool --module '$P11KIT_CLIENT' --write-object '$client_dir/written-remotely.der' --type cert \
    --label written-remotely; then exit 95; fi
exit 0
SCRIPT
    ok timeout 60 ip netns exec "$ns" unshare --mount --propagation private bash "$client_dir/client.sh"
    local out=$RUN_OUT
    assert_line "$out" '^ +label: +remote-cert$' "pkcs11-tool -O on the client, through the forwarded socket" 'label'
    assert_line "$out" 'object=remote-cert;type=cert' "p11tool --list-all-certs on the client" 'remote-cert'
    assert_contains "$out" "CKR_TOKEN_WRITE_PROTECTED" "a write from the client through the write-protected export"
    assert_sha256_signature_verifies "$TEST_TMP/remote-key.pub" "$client_dir/sig" "$TEST_TMP/data" \
        "signature made on the client through the forwarded socket"
    ok pk11 -O
    assert_not_contains "$RUN_OUT" "written-remotely" "the token after the client's write attempt"
}
