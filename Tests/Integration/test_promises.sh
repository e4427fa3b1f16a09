# The promises of README.md and the man pages that involve another uid, the CLI or a
# writer of the store file (Tests/SECURITY.md lists them all), each attacked by every path a
# shell offers: one test per promise, one row per path. The ABI attacks of the same and
# other promises are Tests/PKCS11ModuleTests/Promise*Tests.swift.
#
# Another user is uid 65534 (nobody), reached with setpriv; the tests need root. The CLI is
# taken from beside the module, else from the debug build, unless P11KEYCHAIN_CLI names it.

PROMISE_PIN=7391-promise-pin
PROMISE_SO_PIN=so-8264-promise
PROMISE_SECRET=s3cret-promise-password-0417

# as_other CMD...: CMD as another user (uid and gid 65534, no groups), same environment.
as_other() {
    setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"
}

# promise_tools: root check; copies the module, p11drive and the CLI where user 65534 can run
# them ($BIN/module.so, $BIN/p11drive, $CLI), writes the PIN files, and opens $TEST_TMP.
promise_tools() {
    [[ $(id -u) == 0 ]] || fail "needs root to act as another user"
    local cli=${P11KEYCHAIN_CLI:-} dir
    if [[ -z $cli ]]; then
        for dir in "$(dirname "$P11KEYCHAIN_MODULE")" "$IT_REPO/.build/debug"; do
            [[ -x $dir/p11keychain ]] && { cli=$dir/p11keychain; break; }
        done
    fi
    [[ -x $cli ]] || fail "p11keychain not found beside the module or in .build/debug (set P11KEYCHAIN_CLI)"
    chmod 0755 "$TEST_TMP" "$CERTS"
    BIN=$TEST_TMP/bin
    mkdir -m 0755 "$BIN"
    cp "$P11KEYCHAIN_MODULE" "$BIN/module.so"
    cp "$P11DRIVE" "$BIN/p11drive"
    cp "$cli" "$BIN/p11keychain"
    export P11KEYCHAIN_MODULE=$BIN/module.so
    CLI=$BIN/p11keychain
    printf '%s\n' "$PROMISE_PIN" >"$TEST_TMP/pin"
    printf '%s\n' "$PROMISE_SO_PIN" >"$TEST_TMP/so-pin"
}

# promise_init: both PINs through the CLI.
promise_init() {
    ok "$CLI" init --so-pin-file "$TEST_TMP/so-pin" --pin-file "$TEST_TMP/pin"
}

# file_state FILE: its owner, mode and SHA-256, to show it was left alone.
file_state() {
    stat -c '%U %a' "$1"
    sha256sum <"$1"
}

# ---------------------------------------------------------------- another uid

test_another_user_reads_nothing_of_the_store_by_any_path() {
    promise_tools
    promise_init
    make_cert web "/CN=promise web"
    ok "$CLI" add-certificates -l promise-web "$CERTS/web.pem"
    ok "$CLI" generate-key --type ec -l promise-key --pin-file "$TEST_TMP/pin"
    ok "$CLI" add-generic-password -s promise.example -a alice -w "$PROMISE_SECRET" --pin-file "$TEST_TMP/pin"
    local db path
    db=$(store_file)
    chmod 0644 "$TEST_TMP/pin" # another user even knows the PIN
    local -a paths=(
        "cat $db"
        "ls -la $STORE"
        "sqlite3 $db .dump"
        "$BIN/p11drive count"
        "pkcs11-tool --module $P11KEYCHAIN_MODULE -O --login --pin $PROMISE_PIN"
        "$CLI --store $db dump-keychain"
        "$CLI --store $db find-generic-password -s promise.example -g --pin-file $TEST_TMP/pin"
        "$CLI --store $db find-key"
    )
    for path in "${paths[@]}"; do
        # shellcheck disable=SC2086 # one word per argument; the store path has no blanks
        run as_other $path
        assert_not_contains "$RUN_OUT" "$PROMISE_SECRET" "another user: $path"
        assert_not_contains "$RUN_OUT" "promise-key" "another user: $path"
        assert_not_contains "$RUN_OUT" "promise web" "another user: $path"
    done
    note "the owner still reads everything"
    ok "$CLI" find-generic-password -s promise.example -w --pin-file "$TEST_TMP/pin"
    assert_contains "$RUN_OUT" "$PROMISE_SECRET" "the owner's password"
}

test_the_session_unlock_entry_is_readable_by_its_uid_only() {
    promise_tools
    command -v keyctl >/dev/null || fail "keyctl is missing (scripts/setup.sh installs keyutils)"
    # Not through `ok`: its subshell, not this shell, would join the new keyring.
    keyctl new_session >/dev/null || fail "keyctl new_session failed"
    local ring id path
    ring=$(keyctl show @s | awk 'NR == 2 { print $1 }')
    defer "keyctl clear $ring >/dev/null 2>&1 || true"
    promise_init
    ok "$CLI" unlock --pin-file "$TEST_TMP/pin"
    id=$(keyctl show @s | awk '/user: p11keychain:/ { print $1 }' | head -n 1)
    [[ -n $id ]] || fail "no p11keychain entry in the session keyring after unlock: $(keyctl show @s)"
    # The owner reads it (the refusals below are not a broken entry); payloads go to /dev/null.
    ok sh -c 'keyctl pipe "$1" >/dev/null' owner "$id"
    # Another uid in the SAME session keyring (sudo -u, a daemon dropping to
    # nobody) possesses the keyring; the entry must still be refused to it.
    local -a paths=("keyctl pipe $id" "keyctl print $id" "keyctl read $id" "keyctl session - keyctl pipe $id")
    for path in "${paths[@]}"; do
        # shellcheck disable=SC2086 # one word per argument
        refused as_other sh -c '"$@" >/dev/null' other $path
    done
}

# ---------------------------------------------------------------- a writer of the store file

test_a_store_not_owned_by_the_user_or_writable_by_others_is_refused() {
    promise_tools
    make_cert web "/CN=promise web"
    local shared=$TEST_TMP/shared db before row
    mkdir -m 1777 "$shared"
    note "row 1: a 0666 store another user made in a shared directory receives no PIN and no key"
    mkdir -p "$shared/store"
    chown 65534:65534 "$shared/store"
    chmod 0777 "$shared/store"
    ok as_other env P11KEYCHAIN_DIR="$shared/store" "$BIN/p11drive" count
    db=$shared/store/login.sqlite3
    [[ -f $db ]] || fail "the other user's module made no store in $shared/store"
    as_other chmod 0666 "$db"
    before=$(file_state "$db")
    refused "$CLI" --store "$db" init --so-pin-file "$TEST_TMP/so-pin" --pin-file "$TEST_TMP/pin"
    assert_eq "$before" "$(file_state "$db")" "the other user's store after the victim's init"
    export P11KEYCHAIN_DIR=$shared/store
    refused pkcs11-tool --module "$P11KEYCHAIN_MODULE" --init-token --label login --so-pin "$PROMISE_SO_PIN"
    assert_eq "$before" "$(file_state "$db")" "the other user's store after the victim's C_InitToken"

    for row in "owned by another uid, mode 0600" "the user's own, mode 0660" "the user's own, mode 0606"; do
        note "row: a store $row is refused"
        new_store
        ok "$CLI" add-certificates "$CERTS/web.pem"
        db=$(store_file)
        case $row in
        *another*) chown 65534:65534 "$db" ;;
        *0660*) chmod 0660 "$db" ;;
        *0606*) chmod 0606 "$db" ;;
        esac
        before=$(file_state "$db")
        refused "$CLI" --store "$db" init --so-pin-file "$TEST_TMP/so-pin" --pin-file "$TEST_TMP/pin"
        assert_eq "$before" "$(file_state "$db")" "a store $row after init"
        refused "$BIN/p11drive" import --count 1 --prefix X
        assert_eq "$before" "$(file_state "$db")" "a store $row after a C_CreateObject"
    done

    note "a root-owned read-only system store stays allowed to another user"
    new_store
    ok "$CLI" add-certificates "$CERTS/web.pem"
    # As an administrator ships one (README): everything in the main file, no -wal or -shm
    # that readers would need to write.
    ok sqlite3 "$(store_file)" "PRAGMA journal_mode=DELETE"
    chmod 0644 "$(store_file)"
    chmod 0755 "$STORE"
    ok as_other "$BIN/p11drive" count
    assert_eq 1 "$RUN_OUT" "certificates another user reads from a root-owned read-only store"
}

test_sql_planted_in_a_store_never_runs() {
    promise_tools
    make_cert web "/CN=promise web"
    ok "$CLI" add-certificates "$CERTS/web.pem"
    local db
    db=$(store_file)
    # A writer of the file plants triggers that copy every new object and PIN record aside.
    ok sqlite3 "$db" "CREATE TABLE stolen (value BLOB);
        CREATE TRIGGER steal_objects AFTER INSERT ON objects BEGIN INSERT INTO stolen VALUES (new.attributes); END;
        CREATE TRIGGER steal_changes AFTER UPDATE ON objects BEGIN INSERT INTO stolen VALUES (new.attributes); END;
        CREATE TRIGGER steal_metadata AFTER INSERT ON metadata BEGIN INSERT INTO stolen VALUES (new.value); END;
        CREATE TRIGGER steal_pins AFTER UPDATE ON metadata BEGIN INSERT INTO stolen VALUES (new.value); END;"
    # Every write path: PINs, a key, a password, a certificate. Each may be refused (a store
    # with foreign SQL in it); none may run the triggers.
    run "$CLI" init --so-pin-file "$TEST_TMP/so-pin" --pin-file "$TEST_TMP/pin"
    run "$CLI" generate-key --type aes:256 -l planted --pin-file "$TEST_TMP/pin"
    run "$CLI" add-generic-password -s planted -a a -w "$PROMISE_SECRET" --pin-file "$TEST_TMP/pin"
    make_cert other "/CN=promise other"
    run "$BIN/p11drive" import --count 1 --prefix P
    ok sqlite3 "$db" "SELECT count(*) FROM stolen"
    assert_eq 0 "$RUN_OUT" "rows the planted triggers wrote"
}

test_a_writer_of_the_store_cannot_add_an_anchor_by_hiding_the_pin_record() {
    promise_tools
    promise_init
    make_cert ca "/CN=promise planted anchor"
    ok "$CLI" add-certificates "$CERTS/ca.pem"
    refused "$CLI" verify-cert -c "$CERTS/ca.pem"
    local db
    db=$(store_file)
    # The writer hides the user-PIN record, so the token looks PIN-less and
    # takes trust from anyone, adds an anchor, and puts the record back.
    ok sqlite3 "$db" "UPDATE metadata SET name = 'user.pin.hidden' WHERE name = 'user.pin'"
    run "$CLI" add-trusted-cert "$CERTS/ca.pem"
    ok sqlite3 "$db" "UPDATE metadata SET name = 'user.pin' WHERE name = 'user.pin.hidden'"
    note "the anchor no PIN vouched for is not trusted"
    refused "$CLI" verify-cert -c "$CERTS/ca.pem"
    note "the user still logs in with the PIN"
    ok "$CLI" generate-key --type ec -l after-the-writer --pin-file "$TEST_TMP/pin"
}

# ---------------------------------------------------------------- the CLI

test_a_sensitive_key_never_leaves_through_the_cli() {
    promise_tools
    promise_init
    ok "$CLI" generate-key --type ec -l victim-ec --pin-file "$TEST_TMP/pin"
    ok "$CLI" generate-key --type aes:256 -l victim-aes --pin-file "$TEST_TMP/pin"
    ok "$CLI" generate-key --type aes:256 --wrap-key -l attacker-kek --pin-file "$TEST_TMP/pin"
    local path out=$TEST_TMP/out.wrapped
    local -a paths=(
        "wrap-key -l victim-aes --wrapping-key attacker-kek -o $out"
        "wrap-key -l victim-aes --wrapping-key attacker-kek --mechanism aes-kw -o $out"
        "wrap-key -l victim-ec --wrapping-key attacker-kek --mechanism aes-kwp -o $out"
    )
    for path in "${paths[@]}"; do
        # shellcheck disable=SC2086 # one word per argument
        refused "$CLI" $path --pin-file "$TEST_TMP/pin"
        [[ ! -e $out ]] || fail "p11keychain $path wrote $out"
    done
    for path in "export" "dump-keychain" "find-key" "export -l victim-ec"; do
        # shellcheck disable=SC2086 # one word per argument
        run "$CLI" $path --pin-file "$TEST_TMP/pin"
        assert_not_contains "$RUN_OUT" "PRIVATE KEY" "p11keychain $path"
    done
}

test_no_pin_is_ever_printed_or_stored() {
    promise_tools
    promise_init
    local -a paths=(
        "$CLI unlock --pin-file $TEST_TMP/so-pin"
        "$CLI set-pin --pin wrong-$PROMISE_PIN --new-pin other-pin-1"
        "$CLI find-generic-password -s none -g --pin $PROMISE_PIN"
        "$CLI token-info"
        "pkcs11-tool --module $P11KEYCHAIN_MODULE --login --pin wrong-$PROMISE_PIN -O"
        "pkcs11-tool --module $P11KEYCHAIN_MODULE --login --pin $PROMISE_PIN -O"
    )
    local path
    for path in "${paths[@]}"; do
        # shellcheck disable=SC2086 # one word per argument
        P11KEYCHAIN_DEBUG=1 run $path
        assert_not_contains "$RUN_OUT" "$PROMISE_PIN" "the output and trace of $path"
        assert_not_contains "$RUN_OUT" "$PROMISE_SO_PIN" "the output and trace of $path"
    done
    assert_store_lacks "$(printf '%s' "$PROMISE_PIN" | od -An -tx1 | tr -d ' \n')" "the user PIN in the store"
    assert_store_lacks "$(printf '%s' "$PROMISE_SO_PIN" | od -An -tx1 | tr -d ' \n')" "the SO PIN in the store"
}

test_trust_needs_the_pin_through_the_cli() {
    promise_tools
    promise_init
    make_cert ca "/CN=promise distrusted CA"
    ok "$CLI" add-trusted-cert -r deny --pin-file "$TEST_TMP/pin" "$CERTS/ca.pem"
    ok "$CLI" dump-trust-settings
    local settings=$RUN_OUT path
    # Without the PIN (no terminal, no PIN file, no $P11KEYCHAIN_PIN): every path is refused.
    local -a paths=(
        "remove-trusted-cert $CERTS/ca.pem"
        "add-trusted-cert -r trustRoot $CERTS/ca.pem"
        "add-trusted-cert -r unspecified $CERTS/ca.pem"
        "delete-certificate -l promise distrusted CA"
    )
    for path in "${paths[@]}"; do
        if [[ $path == delete-certificate* ]]; then
            refused "$CLI" delete-certificate -l "promise distrusted CA"
        else
            # shellcheck disable=SC2086 # one word per argument
            refused "$CLI" $path
        fi
        ok "$CLI" dump-trust-settings
        assert_eq "$settings" "$RUN_OUT" "the trust settings after p11keychain $path without the PIN"
    done
    note "through the module, without a login, the certificate cannot be deleted either"
    refused pkcs11-tool --module "$P11KEYCHAIN_MODULE" --delete-object --type cert --label "promise distrusted CA"
    ok "$CLI" dump-trust-settings
    assert_eq "$settings" "$RUN_OUT" "the trust settings after pkcs11-tool --delete-object without login"
}
