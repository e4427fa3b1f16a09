# A keychain unlocked for the login session (ARCHITECTURE.md §6.5). Each test
# makes its own session keyring (`keyctl new_session` joins this test's shell to a new,
# empty one), as a login does, so nothing reaches the keyrings of the machine's other
# processes. In it, `p11keychain unlock --pin-file` unlocks the token; a separate process
# running Apple-style code with no unlock call (Examples/SessionUnlock) then adds and reads a
# generic password; after `p11keychain lock` the same program gets errSecInteractionNotAllowed
# (-25308); a process in another session keyring (`keyctl session -`) and a process of another
# user find it locked; no PIN or key byte is in the store, the files under the test's
# directories or a session process's environment (raw scans).
#
# The CLI and the example are taken from beside the module ($P11KEYCHAIN_MODULE's directory),
# else from the debug build, unless P11KEYCHAIN_CLI / P11KEYCHAIN_SESSION_EXAMPLE name them.

SESSION_PIN=7391-session-pin
SESSION_SO_PIN=so-8264-session

# built_program NAME: NAME beside the module, else in the debug build (`swift build
# --build-tests` makes every product; CI builds only the module in release).
built_program() {
    local dir
    for dir in "$(dirname "$P11KEYCHAIN_MODULE")" "$IT_REPO/.build/debug"; do
        [[ -x $dir/$1 ]] && { echo "$dir/$1"; return; }
    done
    echo "$(dirname "$P11KEYCHAIN_MODULE")/$1"
}

# session_setup: the tools, a new session keyring for this test, a token with both PINs
# set through the CLI (PIN files that are removed again), and a service name.
session_setup() {
    CLI=${P11KEYCHAIN_CLI:-$(built_program p11keychain)}
    EXAMPLE=${P11KEYCHAIN_SESSION_EXAMPLE:-$(built_program session-unlock-example)}
    [[ -x $CLI ]] || fail "p11keychain not found at $CLI (build it beside the module, or set P11KEYCHAIN_CLI)"
    [[ -x $EXAMPLE ]] ||
        fail "session-unlock-example not found at $EXAMPLE (swift build --product session-unlock-example)"
    command -v keyctl >/dev/null || fail "keyctl is missing (scripts/setup.sh installs keyutils)"
    # Not through `ok`: its command substitution would make the subshell, not this shell,
    # the parent that joins the new keyring.
    keyctl new_session >/dev/null || fail "keyctl new_session failed"
    SESSION_RING=$(keyctl show @s | awk 'NR == 2 { print $1 }')
    [[ $SESSION_RING != "$(keyctl show @us | awk 'NR == 2 { print $1 }')" ]] ||
        fail "keyctl new_session left this shell in the user's default session keyring"
    defer "keyctl clear $SESSION_RING >/dev/null 2>&1 || true"
    printf '%s\n' "$SESSION_SO_PIN" >"$TEST_TMP/so-pin"
    printf '%s\n' "$SESSION_PIN" >"$TEST_TMP/pin"
    ok "$CLI" init --so-pin-file "$TEST_TMP/so-pin" --pin-file "$TEST_TMP/pin"
    rm -f "$TEST_TMP/so-pin"
}

# example SERVICE: runs the Apple-style example (account alice, password "pw-SERVICE").
example() { run "$EXAMPLE" "$1" alice "pw-$1"; }

# entry_id: the ID of this token's entry in the session keyring ("" when none).
entry_id() {
    keyctl show @s | awk '/user: p11keychain:/ { print $1 }' | head -n 1
}

test_apple_style_code_without_an_unlock_call_works_after_p11keychain_unlock_and_gets_25308_after_lock() {
    session_setup
    note "locked: the Apple-style program gets errSecInteractionNotAllowed"
    example before
    assert_eq 1 "$RUN_STATUS" "the example's exit status in a locked session"
    assert_line "$RUN_OUT" '^SecItemAdd: -25308 ' "SecItemAdd before unlock"
    run "$CLI" status; assert_eq 1 "$RUN_STATUS" "status of a locked token"
    assert_line "$RUN_OUT" '^token "login": locked' "status before unlock"

    ok "$CLI" unlock --pin-file "$TEST_TMP/pin"
    assert_line "$RUN_OUT" '^unlocked token "login" for this login session until p11keychain lock or logout$' \
        "what unlock says"
    ok "$CLI" status
    assert_line "$RUN_OUT" '^token "login": unlocked for this login session until p11keychain lock or logout$' \
        "status after unlock"

    note "unlocked: a separate process with no unlock call adds and reads a password"
    example first
    assert_eq 0 "$RUN_STATUS" "the example's exit status in the unlocked session"
    assert_line "$RUN_OUT" '^SecItemAdd: 0 ' "SecItemAdd after unlock"
    assert_line "$RUN_OUT" '^SecItemCopyMatching: 0 ' "SecItemCopyMatching after unlock"
    assert_line "$RUN_OUT" '^password: matches$' "the password read back"
    note "the CLI, in the same session, asks for no PIN"
    ok "$CLI" find-generic-password -s first -a alice -w
    assert_line "$RUN_OUT" '^pw-first$' "the password through the CLI without a PIN"

    note "another session keyring (keyctl session -) sees it locked"
    run keyctl session - "$EXAMPLE" other alice pw-other
    assert_eq 1 "$RUN_STATUS" "the example's exit status in another session"
    assert_line "$RUN_OUT" '^SecItemAdd: -25308 ' "SecItemAdd in another session"
    run keyctl session - "$CLI" status
    assert_line "$RUN_OUT" '^token "login": locked' "status in another session"

    ok "$CLI" lock
    assert_line "$RUN_OUT" '^locked token "login" for this login session$' "what lock says"
    example after
    assert_eq 1 "$RUN_STATUS" "the example's exit status after lock"
    assert_line "$RUN_OUT" '^SecItemAdd: -25308 ' "SecItemAdd after lock"
    # A locked keychain hides private items: the read is errSecInteractionNotAllowed, as
    # Apple's, not errSecItemNotFound.
    assert_line "$RUN_OUT" '^SecItemCopyMatching: -25308 ' "SecItemCopyMatching after lock"
    assert_line "$RUN_OUT" '^password: does not match$' "the password after lock"
    run "$CLI" status; assert_eq 1 "$RUN_STATUS" "status of a locked token"
    assert_line "$RUN_OUT" '^token "login": locked' "status after lock"
    assert_eq "" "$(entry_id)" "the session keyring's entry after lock"
}

test_the_entry_is_possessor_only_and_neither_another_user_nor_another_session_can_read_it() {
    session_setup
    ok "$CLI" unlock --pin-file "$TEST_TMP/pin"
    local id
    id=$(entry_id)
    [[ -n $id ]] || fail "no p11keychain entry in the session keyring after unlock: $(keyctl show @s)"
    ok keyctl rdescribe "$id"
    # type;uid;gid;perm;description: possessor view|read|write|search|setattr, nothing else.
    assert_line "$RUN_OUT" "^user;$(id -u);$(id -g);2f000000;p11keychain:[0-9a-f]{16}:$STORE/login.sqlite3\$" \
        "the entry's type, owner, permissions and name"
    note "the session itself can read the payload (the check below would see a leak)"
    ok keyctl pipe "$id"
    note "another session of the same user, knowing the entry's ID, cannot read it"
    refused keyctl session - keyctl pipe "$id"
    assert_contains "$RUN_OUT" "Permission denied" "reading the entry from another session"
    note "another user, in a session of its own, cannot read it"
    refused setpriv --reuid=65534 --regid=65534 --clear-groups keyctl session - keyctl pipe "$id"
    assert_contains "$RUN_OUT" "Permission denied" "reading the entry as another user"
    note "another user in this very session (sudo -u, a daemon dropping to nobody) cannot read it either"
    refused setpriv --reuid=65534 --regid=65534 --clear-groups keyctl pipe "$id"
    assert_contains "$RUN_OUT" "Permission denied" "reading the entry as another user of the same session"
    refused setpriv --reuid=65534 --regid=65534 --clear-groups keyctl read "$id"
    note "the entry sits in a keyring only its owner may search"
    local ring
    ring=$(keyctl show @s | awk '/keyring: p11keychain:uid=/ { print $1 }' | head -n 1)
    [[ -n $ring ]] || fail "no owner's keyring in the session keyring: $(keyctl show @s)"
    ok keyctl rdescribe "$ring"
    assert_line "$RUN_OUT" "^keyring;$(id -u);$(id -g);003f0000;p11keychain:uid=$(id -u)\$" \
        "the owner's keyring's type, owner and permissions (user: all; possessor, group, other: none)"
    note "the owner's Apple-style code in the session still finds the keychain unlocked"
    example after-narrowing
    assert_eq 0 "$RUN_STATUS" "the example's exit status in the unlocked session"
}

test_a_timeout_locks_the_session_again_and_status_says_until_when() {
    session_setup
    # 8 s leave the status and the example run time to finish on a loaded machine.
    local unlocked_at=$SECONDS
    ok "$CLI" unlock --timeout 8 --pin-file "$TEST_TMP/pin"
    assert_line "$RUN_OUT" '^unlocked token "login" for this login session until 20[0-9-]+ [0-9:]+ UTC \(in 0h 0m [0-8]s\)$' \
        "what unlock --timeout says"
    ok "$CLI" status
    assert_line "$RUN_OUT" '^token "login": unlocked for this login session until 20[0-9-]+ [0-9:]+ UTC' "status"
    example during
    assert_eq 0 "$RUN_STATUS" "the example's exit status before the timeout"
    ((SECONDS - unlocked_at < 8)) || fail "the checks before the timeout took $((SECONDS - unlocked_at)) s, past it"
    sleep $((unlocked_at + 10 - SECONDS))
    example expired
    assert_line "$RUN_OUT" '^SecItemAdd: -25308 ' "SecItemAdd after the timeout"
    run "$CLI" status; assert_eq 1 "$RUN_STATUS" "status of a locked token"
    assert_line "$RUN_OUT" '^token "login": locked' "status after the timeout"
}

test_c_login_without_a_pin_logs_in_through_the_unlocked_session_and_a_wrong_pin_still_counts() {
    session_setup
    require_module
    note "locked: no protected authentication path, and a login without a PIN is refused"
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" -T
    assert_not_contains "$RUN_OUT" "PIN pad present" "token flags while locked"
    ok "$CLI" unlock --pin-file "$TEST_TMP/pin"
    note "PKCS#11 still needs C_Login: without it no private object is listed"
    example via-pkcs11
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" -O --type data
    assert_not_contains "$RUN_OUT" "via-pkcs11" "data objects without C_Login"
    note "unlocked: the token reports a protected authentication path (a PIN pad, to pkcs11-tool)"
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" -T
    assert_contains "$RUN_OUT" "PIN pad present" "token flags in the unlocked session"
    note "a wrong PIN fails and is counted"
    refused pkcs11-tool --module "$P11KEYCHAIN_MODULE" --login --pin wrong-pin-1 -O --type data
    assert_contains "$RUN_OUT" "CKR_PIN_INCORRECT" "C_Login with a wrong PIN in an unlocked session"
    ok "$CLI" token-info
    assert_line "$RUN_OUT" '^user PIN: +set; 1 failed attempt' "the failure count after a wrong C_Login"
    note "the right PIN logs in (checked by the derivation), and the count is cleared"
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" --login --pin "$SESSION_PIN" -O --type data
    assert_contains "$RUN_OUT" "via-pkcs11" "data objects after C_Login"
    ok "$CLI" token-info
    assert_line "$RUN_OUT" '^user PIN: +set$' "the failure count after a right C_Login"
    note "no PIN: C_Login(CKU_USER, NULL) logs in through the session keyring, counting nothing"
    local start end
    start=$(date +%s%N)
    ok pkcs11-tool --module "$P11KEYCHAIN_MODULE" --login -O --type data </dev/null
    end=$(date +%s%N)
    assert_contains "$RUN_OUT" "via-pkcs11" "data objects after a C_Login without a PIN"
    note "pkcs11-tool with a PIN-less C_Login took $(((end - start) / 1000000)) ms in the unlocked session"
    note "a wrong PIN for unlock itself does not unlock and is counted too"
    ok "$CLI" lock
    printf 'wrong-pin-2\n' >"$TEST_TMP/wrong"
    refused "$CLI" unlock --pin-file "$TEST_TMP/wrong"
    assert_contains "$RUN_OUT" "wrong PIN (9 attempts left" "unlock with a wrong PIN"
    run "$CLI" status; assert_eq 1 "$RUN_STATUS" "status of a locked token"
    assert_line "$RUN_OUT" '^token "login": locked' "status after a wrong unlock"
    note "locked again: a C_Login without a PIN is refused and counts nothing"
    refused pkcs11-tool --module "$P11KEYCHAIN_MODULE" --login --pin "" -O --type data
    ok "$CLI" token-info
    assert_line "$RUN_OUT" '^user PIN: +set; 1 failed attempt' "the count after a PIN-less C_Login while locked"
}

test_a_changed_pin_makes_the_unlock_stale_and_sec_keychain_lock_keeps_its_process_locked() {
    session_setup
    ok "$CLI" unlock --pin-file "$TEST_TMP/pin"
    example before-change
    assert_eq 0 "$RUN_STATUS" "the example's exit status in the unlocked session"
    printf 'new-pin-5150\n' >"$TEST_TMP/new-pin"
    ok "$CLI" set-pin --pin-file "$TEST_TMP/pin" --new-pin-file "$TEST_TMP/new-pin"
    run "$CLI" status; assert_eq 1 "$RUN_STATUS" "status of a locked token"
    assert_line "$RUN_OUT" '^token "login": locked \(its PIN changed since it was unlocked' "status after set-pin"
    example after-change
    assert_line "$RUN_OUT" '^SecItemAdd: -25308 ' "SecItemAdd after the PIN changed"
    note "unlocking again with the new PIN works"
    ok "$CLI" unlock --pin-file "$TEST_TMP/new-pin"
    example again
    assert_eq 0 "$RUN_STATUS" "the example's exit status after unlocking with the new PIN"
    note "a process that calls SecKeychainLock stays locked in the unlocked session"
    run "$EXAMPLE" --lock-first locked-itself alice pw
    assert_line "$RUN_OUT" '^SecKeychainLock: 0 ' "SecKeychainLock"
    assert_line "$RUN_OUT" '^SecItemAdd: -25308 ' "SecItemAdd after SecKeychainLock"
    ok "$CLI" status
    assert_line "$RUN_OUT" '^token "login": unlocked for this login session' "status after SecKeychainLock elsewhere"
}

# scan_everywhere HEX WHAT: no file of the store, the test's directory or its home holds
# the bytes HEX.
scan_everywhere() {
    local file
    assert_store_lacks "$1" "$2 in the store"
    while IFS= read -r -d '' file; do
        if xxd -p "$file" | tr -d '\n' | grep -qi -- "$1"; then
            fail "$2 found in $file"
        fi
    done < <(find "$TEST_TMP" "$HOME" -type f -print0 2>/dev/null)
}

test_raw_scans_find_no_pin_or_key_byte_in_the_store_the_files_or_the_environment() {
    session_setup
    ok "$CLI" unlock --pin-file "$TEST_TMP/pin"
    rm -f "$TEST_TMP/pin"
    example scanned
    assert_eq 0 "$RUN_STATUS" "the example's exit status in the unlocked session"

    note "the token key and the PIN-derived key, computed here from the stored PIN record"
    local record keys pin_key token_key
    record=$(sqlite3 "$(store_file)" "SELECT hex(value) FROM metadata WHERE name = 'user.pin'")
    [[ -n $record ]] || fail "no user PIN record in the store"
    keys=$(python3 - "$record" "$SESSION_PIN" <<'EOF'
import hashlib, struct, sys
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
record = bytes.fromhex(sys.argv[1])
iterations = struct.unpack("<I", record[:4])[0]
salt, sealed = record[4:20], record[20:]
pin_key = hashlib.pbkdf2_hmac("sha256", sys.argv[2].encode(), salt, iterations, 32)
token_key = AESGCM(pin_key).decrypt(sealed[:12], sealed[12:], b"p11keychain token key/user")
print(pin_key.hex(), token_key.hex())
EOF
    ) || fail "cannot open the stored PIN record with the PIN (python3-cryptography)"
    read -r pin_key token_key <<<"$keys"
    [[ ${#pin_key} == 64 && ${#token_key} == 64 ]] || fail "unexpected keys: ${#pin_key}, ${#token_key} hex digits"

    note "the session keyring holds the PIN-derived key (what the scans look for is real)"
    local payload
    payload=$(keyctl pipe "$(entry_id)" | xxd -p | tr -d '\n')
    assert_contains "$payload" "$pin_key" "the PIN-derived key in the keyring entry"
    assert_not_contains "$payload" "$token_key" "the token key in the keyring entry"
    assert_not_contains "$payload" "$(printf '%s' "$SESSION_PIN" | xxd -p | tr -d '\n')" \
        "the PIN in the keyring entry"
    note "and nothing else: no check of the PIN faster than its derivation (version, expiry, key)"
    assert_eq $(((1 + 8 + 32) * 2)) "${#payload}" "the entry's length in hex digits"
    assert_eq "02" "${payload:0:2}" "the entry's version"
    assert_eq "$pin_key" "${payload:18}" "the rest of the entry is the PIN-derived key"

    note "scan: PIN, token key, PIN-derived key (and their first 16 bytes)"
    local pin_hex
    pin_hex=$(printf '%s' "$SESSION_PIN" | xxd -p | tr -d '\n')
    printf 'control %s\n' "$SESSION_PIN" >"$TEST_TMP/control"
    if ! xxd -p "$TEST_TMP/control" | tr -d '\n' | grep -qi -- "$pin_hex"; then
        fail "the scan does not find the PIN in a file that holds it"
    fi
    rm -f "$TEST_TMP/control"
    scan_everywhere "$pin_hex" "the PIN"
    scan_everywhere "$token_key" "the token key"
    scan_everywhere "${token_key:0:32}" "the token key's first 16 bytes"
    scan_everywhere "$pin_key" "the PIN-derived key"
    scan_everywhere "${pin_key:0:32}" "the PIN-derived key's first 16 bytes"

    note "environment of a process of the session, and of the unlocking shell"
    sleep 30 &
    local sleeper=$!
    defer "kill $sleeper 2>/dev/null || true"
    local environment
    for environment in "/proc/$sleeper/environ" "/proc/$$/environ"; do
        if tr '\0' '\n' <"$environment" | grep -qF -- "$SESSION_PIN"; then
            fail "the PIN is in $environment"
        fi
        if xxd -p "$environment" | tr -d '\n' | grep -qi -- "$token_key\|$pin_key"; then
            fail "a key is in $environment"
        fi
    done
    assert_integrity
}
