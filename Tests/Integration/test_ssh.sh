# OpenSSH (Debian 12: 9.2) with the keys on the token: `ssh-keygen -D` lists
# the public keys; a real login to an sshd on 127.0.0.1 (a free port, a
# temporary configuration with its own host key and authorized_keys, run
# as root in the foreground, bounded, killed by the test) signs the
# authentication with the token's RSA and EC keys, through `ssh -I` /
# PKCS11Provider and through ssh-agent (`-P` allowlist) + `ssh-add -s`. sshd's
# log names the key it accepted ("Accepted publickey ... RSA SHA256:..."): the
# test checks it is the token's. The PIN reaches ssh and ssh-add through
# SSH_ASKPASS (SSH_ASKPASS_REQUIRE=force: no terminal needed).
#
# Under P11KEYCHAIN_TEST_SOFTHSM=1 the logins fail: SoftHSM2 gives keys made
# with no --id an empty CKA_ID, and OpenSSH pairs a public key with its
# private key by CKA_ID (p11keychain derives it from the public key).
#
# ssh and the agent read no user configuration (-F none or a file of the
# test's) and no known_hosts outside $TEST_TMP.

SSHD=/usr/sbin/sshd

# ssh_keys: the token's PINs, an RSA key "ssh-rsa" and an EC key "ssh-ec"
# (their CKA_IDs in $TEST_TMP/LABEL.id), and beside them an Ed25519 key, which
# OpenSSH 9.2 skips ("skipping unsupported key type") without losing the
# others; `ssh-keygen -D` writes the public keys it lists (comment: the label)
# to $TEST_TMP/token.pub, those of the RSA and EC key to $TEST_TMP/ssh-rsa.pub
# and $TEST_TMP/ssh-ec.pub.
ssh_keys() {
    init_pins
    local spec label
    for spec in rsa:2048/ssh-rsa EC:edwards25519/ssh-ed EC:prime256v1/ssh-ec; do
        label=${spec#*/}
        ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type "${spec%/*}" --label "$label"
        sed -nE 's/^ +ID: +([0-9a-f]+)$/\1/p' <<<"$RUN_OUT" | sort -u >"$TEST_TMP/$label.id"
    done
    ok ssh-keygen -D "$P11KEYCHAIN_MODULE"
    printf '%s\n' "$RUN_OUT" | grep -E '^(ssh-|ecdsa-)' >"$TEST_TMP/token.pub" ||
        fail "ssh-keygen -D printed no public key: $(summarize "$RUN_OUT")"
    for label in ssh-rsa ssh-ec; do
        grep -E " $label\$" "$TEST_TMP/token.pub" >"$TEST_TMP/$label.pub" ||
            fail "ssh-keygen -D lists no key labelled $label: $(summarize "$RUN_OUT")"
    done
}

# fingerprint PUB: the SHA256 fingerprint of the public key file PUB, as a
# regex (base64's "+" escaped).
fingerprint() { ssh-keygen -l -E sha256 -f "$1" | awk '{ print $2 }' | sed 's/[+]/\\+/g'; }

# sshd_log: what sshd logged (-e ends its lines with CR LF).
sshd_log() { tr -d '\r' <"$SSHD_LOG"; }

# free_port: a TCP port of 127.0.0.1 that nothing listens on right now.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_sshd AUTHORIZED_KEYS: sshd on 127.0.0.1:$PORT that lets root in with
# the keys of AUTHORIZED_KEYS and nothing else; $SSHD_PID, $SSHD_LOG and
# $KNOWN_HOSTS (its host key, for StrictHostKeyChecking=yes).
start_sshd() {
    [[ $(id -u) == 0 ]] || fail "needs root: sshd runs as root to log root in"
    [[ -x $SSHD ]] || fail "$SSHD is missing (install openssh-server; scripts/setup.sh does)"
    ensure_run_sshd
    local dir=$TEST_TMP/sshd attempt
    mkdir -p "$dir"
    ssh-keygen -q -t ed25519 -N '' -C sshd-host -f "$dir/host_key"
    KNOWN_HOSTS=$TEST_TMP/known_hosts
    SSHD_LOG=$dir/log
    # A port picked free may be taken before sshd binds it: try again then.
    for attempt in 1 2 3; do
        PORT=$(free_port)
        cat >"$dir/sshd_config" <<CONF
ListenAddress 127.0.0.1:$PORT
HostKey $dir/host_key
AuthorizedKeysFile $1
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PidFile none
LogLevel VERBOSE
CONF
        timeout 120 "$SSHD" -D -e -f "$dir/sshd_config" </dev/null >"$SSHD_LOG" 2>&1 &
        SSHD_PID=$!
        defer "kill $SSHD_PID 2>/dev/null || true"
        if wait_for_line "$SSHD_LOG" "^Server listening on 127\.0\.0\.1 port $PORT\." 30 "$SSHD_PID"; then
            echo "[127.0.0.1]:$PORT $(cut -d' ' -f1-2 "$dir/host_key.pub")" >"$KNOWN_HOSTS"
            note "sshd (pid $SSHD_PID) listens on 127.0.0.1:$PORT"
            return 0
        fi
        grep -q 'Address already in use' "$SSHD_LOG" ||
            fail "sshd did not start: $(summarize "$(sshd_log)")"
    done
    fail "sshd found no free port in 3 attempts: $(summarize "$(sshd_log)")"
}

# askpass PIN: SSH_ASKPASS answers every prompt (the token's PIN) with PIN.
askpass() {
    printf '#!/bin/sh\necho %s\n' "$1" >"$TEST_TMP/askpass"
    chmod 0700 "$TEST_TMP/askpass"
    export SSH_ASKPASS=$TEST_TMP/askpass SSH_ASKPASS_REQUIRE=force
}

# ssh_login [SSH OPTIONS...]: ssh to root@127.0.0.1:$PORT (no user
# configuration unless the options give -F), running a command whose output
# shows the login worked. Output in $RUN_OUT, status in $RUN_STATUS.
ssh_login() {
    local config=(-F none)
    [[ " $* " != *" -F "* ]] || config=()
    run timeout 60 ssh "${config[@]}" -p "$PORT" -o UserKnownHostsFile="$KNOWN_HOSTS" \
        -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -o ConnectTimeout=20 \
        -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no "$@" \
        root@127.0.0.1 'echo "logged in as $(id -un)"' </dev/null
}

# assert_logged_in_with PUB WHAT: the last ssh_login logged in, and sshd
# accepted the key of the file PUB for it.
assert_logged_in_with() {
    [[ $RUN_STATUS == 0 ]] ||
        fail "$2: ssh failed ($(describe_status "$RUN_STATUS")): $(summarize "$RUN_OUT"); sshd: $(summarize "$(sshd_log)")"
    assert_line "$RUN_OUT" '^logged in as root$' "$2: output of the remote command" 'logged'
    local fp
    fp=$(fingerprint "$1")
    assert_line "$(sshd_log)" "^Accepted publickey for root from 127\.0\.0\.1 port [0-9]+ ssh2: [A-Z0-9]+ $fp\$" \
        "$2: sshd accepted the token's key $(basename "$1" .pub)" 'Accepted|Failed|Connection'
}

# assert_denied WHAT: the last ssh_login was refused and sshd let nobody in.
assert_denied() {
    [[ $RUN_STATUS != 0 ]] || fail "$1: ssh logged in: $(summarize "$RUN_OUT")"
    assert_contains "$RUN_OUT" "Permission denied (publickey)" "$1"
    assert_no_line "$(sshd_log)" '^Accepted publickey' "$1: sshd's log"
}

test_ssh_keygen_lists_the_tokens_rsa_and_ec_public_keys_without_a_pin() {
    ssh_keys
    # The same keys as the token's public key objects, read by pkcs11-tool.
    local label
    for label in ssh-rsa ssh-ec; do
        pubkey_pem "$(cat "$TEST_TMP/$label.id")" "$TEST_TMP/$label.pem"
        ok ssh-keygen -i -m PKCS8 -f "$TEST_TMP/$label.pem"
        assert_eq "$(cut -d' ' -f1-2 <<<"$RUN_OUT")" "$(cut -d' ' -f1-2 "$TEST_TMP/$label.pub")" \
            "ssh-keygen -D's key $label against the token's public key object"
    done
    assert_line "$(cat "$TEST_TMP/ssh-rsa.pub")" '^ssh-rsa AAAA[^ ]+ ssh-rsa$' "the RSA key's line" '.'
    assert_line "$(cat "$TEST_TMP/ssh-ec.pub")" '^ecdsa-sha2-nistp256 AAAA[^ ]+ ssh-ec$' "the EC key's line" '.'
}

test_ssh_logs_in_with_the_tokens_rsa_key_through_pkcs11provider_and_ec_key_through_dash_i() {
    ssh_keys
    start_sshd "$TEST_TMP/token.pub"
    askpass "$USER_PIN"
    # The ssh_config recipe the README gives: the module, and the one key to offer.
    cat >"$TEST_TMP/ssh_config" <<CONF
Host 127.0.0.1
    PKCS11Provider $P11KEYCHAIN_MODULE
    IdentitiesOnly yes
    IdentityFile $TEST_TMP/ssh-rsa.pub
CONF
    ssh_login -F "$TEST_TMP/ssh_config"
    assert_logged_in_with "$TEST_TMP/ssh-rsa.pub" "ssh with PKCS11Provider in its configuration"
    ssh_login -I "$P11KEYCHAIN_MODULE" -o IdentitiesOnly=yes -o IdentityFile="$TEST_TMP/ssh-ec.pub"
    assert_logged_in_with "$TEST_TMP/ssh-ec.pub" "ssh -I with the EC key"
}

test_ssh_logs_in_with_the_tokens_p384_and_p521_keys() {
    init_pins
    local label
    for label in p384 p521; do
        ok pk11 --login --pin "$USER_PIN" --keypairgen --key-type "EC:secp${label#p}r1" --label "ssh-$label"
    done
    ok ssh-keygen -D "$P11KEYCHAIN_MODULE"
    printf '%s\n' "$RUN_OUT" | grep -E '^ecdsa-' >"$TEST_TMP/token.pub" || true
    start_sshd "$TEST_TMP/token.pub"
    askpass "$USER_PIN"
    for label in p384 p521; do
        grep -E "^ecdsa-sha2-nist$label .* ssh-$label\$" "$TEST_TMP/token.pub" >"$TEST_TMP/ssh-$label.pub" ||
            fail "ssh-keygen -D lists no ecdsa-sha2-nist$label key ssh-$label: $(summarize "$RUN_OUT")"
        ssh_login -I "$P11KEYCHAIN_MODULE" -o IdentitiesOnly=yes -o IdentityFile="$TEST_TMP/ssh-$label.pub"
        assert_logged_in_with "$TEST_TMP/ssh-$label.pub" "ssh -I with the $label key"
    done
}

test_ssh_with_identities_only_offers_no_token_key_that_no_identity_file_names() {
    ssh_keys
    start_sshd "$TEST_TMP/token.pub"
    askpass "$USER_PIN"
    # OpenSSH 9.2 drops PKCS#11 keys under IdentitiesOnly unless an
    # IdentityFile holds their public key (the README's recipe says so).
    ssh_login -I "$P11KEYCHAIN_MODULE" -o IdentitiesOnly=yes
    assert_denied "ssh -I with IdentitiesOnly and no IdentityFile"
    # Without IdentitiesOnly it offers every key of the token; the first (RSA) is accepted.
    ssh_login -I "$P11KEYCHAIN_MODULE" -o IdentitiesOnly=no
    assert_line "$RUN_OUT" '^logged in as root$' "ssh -I offering every token key" 'logged|denied'
}

test_ssh_with_a_wrong_pin_is_denied_and_the_token_counts_it() {
    ssh_keys
    start_sshd "$TEST_TMP/token.pub"
    askpass 9999
    ssh_login -I "$P11KEYCHAIN_MODULE" -o IdentitiesOnly=yes -o IdentityFile="$TEST_TMP/ssh-ec.pub"
    assert_denied "ssh -I with a wrong PIN"
    assert_flag "user PIN count low" "after ssh's login with a wrong PIN"
}

# start_agent [ssh-agent OPTIONS...]: ssh-agent in the foreground (-D),
# bounded, on a socket in $TEST_TMP; SSH_AUTH_SOCK exported.
start_agent() {
    export SSH_AUTH_SOCK=$TEST_TMP/agent.sock
    timeout 120 ssh-agent -D -a "$SSH_AUTH_SOCK" "$@" </dev/null >"$TEST_TMP/agent.log" 2>&1 &
    AGENT_PID=$!
    defer "kill $AGENT_PID 2>/dev/null || true"
    wait_for_socket "$SSH_AUTH_SOCK" 30 "$AGENT_PID" "ssh-agent"
    note "ssh-agent (pid $AGENT_PID) on $SSH_AUTH_SOCK"
}

test_ssh_agent_refuses_the_module_when_its_allowlist_does_not_name_it() {
    ssh_keys
    # A copy outside /usr/lib*/ and /usr/local/lib*/, the default allowlist
    # of OpenSSH 9.2, wherever the module under test is installed.
    mkdir -p "$TEST_TMP/elsewhere"
    cp "$P11KEYCHAIN_MODULE" "$TEST_TMP/elsewhere/libp11keychain-pkcs11.so"
    start_agent
    askpass "$USER_PIN"
    refused ssh-add -s "$TEST_TMP/elsewhere/libp11keychain-pkcs11.so"
    assert_contains "$RUN_OUT" "agent refused operation" "ssh-add -s of a module outside the default allowlist"
    run ssh-add -l
    assert_contains "$RUN_OUT" "The agent has no identities." "the agent after the refusal"
}

test_ssh_agent_with_the_module_allowlisted_logs_in_with_the_tokens_rsa_and_ec_keys() {
    local module
    ssh_keys
    start_sshd "$TEST_TMP/token.pub"
    # ssh-agent matches the provider's real path against the -P patterns.
    module=$(readlink -f "$P11KEYCHAIN_MODULE")
    start_agent -P "$(dirname "$module")/*"
    askpass "$USER_PIN"
    ok ssh-add -s "$P11KEYCHAIN_MODULE"
    assert_contains "$RUN_OUT" "Card added: $P11KEYCHAIN_MODULE" "ssh-add -s"
    ok ssh-add -l
    assert_line "$RUN_OUT" "^2048 $(fingerprint "$TEST_TMP/ssh-rsa.pub") ssh-rsa \(RSA\)\$" "the agent's RSA key" 'RSA'
    assert_line "$RUN_OUT" "^256 $(fingerprint "$TEST_TMP/ssh-ec.pub") ssh-ec \(ECDSA\)\$" "the agent's EC key" 'ECDSA'

    # The agent signs: the client has no module (no -I) and no PIN.
    unset SSH_ASKPASS SSH_ASKPASS_REQUIRE
    ssh_login -o IdentitiesOnly=yes -o IdentityFile="$TEST_TMP/ssh-rsa.pub"
    assert_logged_in_with "$TEST_TMP/ssh-rsa.pub" "ssh through the agent with the RSA key"
    ssh_login -o IdentitiesOnly=yes -o IdentityFile="$TEST_TMP/ssh-ec.pub"
    assert_logged_in_with "$TEST_TMP/ssh-ec.pub" "ssh through the agent with the EC key"

    # Removed from the agent, the keys no longer log anyone in.
    ok ssh-add -e "$P11KEYCHAIN_MODULE"
    run ssh-add -l
    assert_contains "$RUN_OUT" "The agent has no identities." "the agent after ssh-add -e"
    ssh_login -o IdentitiesOnly=yes -o IdentityFile="$TEST_TMP/ssh-ec.pub" -o BatchMode=yes
    [[ $RUN_STATUS != 0 ]] || fail "ssh logged in through the agent after ssh-add -e"
    assert_contains "$RUN_OUT" "Permission denied (publickey)" "ssh after ssh-add -e"
}
